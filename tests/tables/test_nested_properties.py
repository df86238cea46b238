"""Random list and tensor columns (hypothesis): nesting depths, lengths, slices, chunkings and
null patterns. The oracle is Arrow's own reading (``to_pylist``) and its buffers' addresses;
zero-copy is claimed by ``explain`` exactly where the result is Arrow's memory."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import interop
from interop.errors import NullsError, ZeroCopyError

DTYPES = (np.float32, np.float64, np.int32, np.int16)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def leaf_address(arr: pa.Array) -> int:
    """Where row 0 of nested fixed_size_list levels starts, from Arrow's buffers."""
    index = arr.offset
    while pa.types.is_fixed_size_list(arr.type):
        index *= arr.type.list_size
        arr = arr.values
        index += arr.offset
    return arr.buffers()[1].address + index * arr.type.bit_width // 8


def dense(rows: list, dims: tuple[int, ...], dtype) -> np.ndarray:
    """``to_pylist`` rows as an array, a null (``None``) anywhere as NaN."""
    def fill(x, shape):
        if x is None:
            return np.full(shape, np.nan).tolist()
        if not shape:
            return x
        return [fill(v, shape[1:]) for v in x]

    return np.array([fill(r, dims) for r in rows], dtype=np.float64).reshape(len(rows), *dims)


@st.composite
def fixed_lists(draw):
    dims = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    n = draw(st.integers(0, 12))
    dtype = draw(st.sampled_from(DTYPES))
    width = int(np.prod(dims))
    flat = np.arange(n * width).astype(dtype)
    nulls = draw(st.booleans()) and n > 0
    leaf_mask = None
    if nulls:
        leaf_mask = np.array(draw(st.lists(st.booleans(), min_size=n * width,
                                           max_size=n * width)))
    arr = pa.array(flat, mask=leaf_mask)
    for d in reversed(dims):
        rows = len(arr) // d
        mask = None
        if nulls and draw(st.booleans()):
            mask = pa.array(draw(st.lists(st.booleans(), min_size=rows, max_size=rows)))
        arr = pa.FixedSizeListArray.from_arrays(arr, d, mask=mask)
    start = draw(st.integers(0, n))
    length = draw(st.integers(0, n - start))
    return arr.slice(start, length), dims, dtype


@SETTINGS
@given(fixed_lists(), st.sampled_from(["numpy", "torch"]))
def test_fixed_size_lists_of_any_depth_slice_and_null_pattern(case, target):
    arr, dims, dtype = case
    want = dense(arr.to_pylist(), dims, dtype)
    plan = interop.explain(arr, target)
    has_nulls = np.isnan(want).any() or _any_nulls(arr)
    if has_nulls:
        assert not plan.supported and plan.error == "nulls"
        with pytest.raises(NullsError):
            interop.to_framework(arr, target)
        if np.dtype(dtype).kind != "f":
            assert interop.explain(arr, target, copy=True).error == "nulls"
            return
        out = np.asarray(interop.to_framework(arr, target, copy=True))
        np.testing.assert_array_equal(out.astype(np.float64), want)
        return
    out = interop.to_framework(arr, target)
    got = out.numpy() if isinstance(out, torch.Tensor) else out
    assert got.shape == (len(arr), *dims) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.astype(np.float64), want)
    assert plan.supported and plan.zero_copy
    if len(arr):
        ptr = out.data_ptr() if isinstance(out, torch.Tensor) else out.ctypes.data
        assert ptr == leaf_address(arr)
        assert interop.shares_memory(arr, out)


def _any_nulls(arr: pa.Array) -> bool:
    """Whether any level of ``arr`` holds a null in the rows it covers (Arrow's counts)."""
    while True:
        if arr.null_count:
            return True
        if not pa.types.is_fixed_size_list(arr.type):
            return False
        arr = arr.flatten()


@st.composite
def lists(draw):
    n = draw(st.integers(0, 12))
    lengths = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    inner = draw(st.sampled_from([None, 2, 3]))
    kind = draw(st.sampled_from(["list", "large_list", "list_view"]))
    dtype = draw(st.sampled_from(DTYPES))
    total = sum(lengths)
    values = pa.array(np.arange(total * (inner or 1)).astype(dtype))
    if inner:
        values = pa.FixedSizeListArray.from_arrays(values, inner)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(
        np.int64 if kind == "large_list" else np.int32)
    null_rows = draw(st.lists(st.booleans(), min_size=n, max_size=n)) \
        if draw(st.booleans()) else None
    mask = pa.array(null_rows) if null_rows and any(null_rows) else None
    if kind == "list_view":
        arr = pa.ListViewArray.from_arrays(pa.array(offsets[:-1]), pa.array(np.diff(offsets)
                                           .astype(np.int32)), values, mask=mask)
    else:
        cls = pa.LargeListArray if kind == "large_list" else pa.ListArray
        arr = cls.from_arrays(pa.array(offsets), values, mask=mask)
    start = draw(st.integers(0, n))
    length = draw(st.integers(0, n - start))
    return arr.slice(start, length), kind


@SETTINGS
@given(lists())
def test_list_columns_of_any_length_slice_and_null_rows_to_a_jagged_tensor(case):
    arr, kind = case
    rows = arr.to_pylist()
    plan = interop.explain(arr, "torch")
    if arr.null_count:
        assert plan.error == "nulls"
        with pytest.raises(NullsError):
            interop.to_framework(arr, "torch")
        nt = interop.to_framework(arr, "torch", copy=True)
        assert [r.tolist() for r in nt.unbind()] == [r if r is not None else [] for r in rows]
        return
    nt = interop.to_framework(arr, "torch")
    assert nt.is_nested and [r.tolist() for r in nt.unbind()] == rows
    first = arr.offsets[0].as_py() if len(arr.offsets) else 0
    rebased = kind == "list_view" or first != 0  # n + 1 offsets from 0: a copy of them
    assert plan.supported and plan.zero_copy == (not rebased)
    child = arr.values
    while pa.types.is_fixed_size_list(child.type):
        child = child.values
    if nt.values().numel():  # the items are Arrow's, whatever the offsets
        index = first * nt.values()[0].numel()
        assert nt.values().data_ptr() == child.buffers()[1].address + index * \
            child.type.bit_width // 8
    if not rebased:  # Arrow's own offsets buffer
        width = 8 if kind == "large_list" else 4
        assert nt.offsets().data_ptr() == arr.buffers()[1].address + arr.offset * width
    if plan.zero_copy:
        assert interop.to_framework(arr, "torch", copy=False).is_nested
    else:
        with pytest.raises(ZeroCopyError):
            interop.to_framework(arr, "torch", copy=False)
    pair = interop.to_framework(arr, "numpy", ragged="offsets")
    assert [pair.values[a:b].tolist() for a, b in
            zip(pair.offsets[:-1], pair.offsets[1:])] == rows
    back = interop.to_framework(nt, "pyarrow")
    assert back.to_pylist() == rows


@SETTINGS
@given(st.integers(1, 30), st.lists(st.integers(1, 10), min_size=1, max_size=4),
       st.integers(1, 5))
def test_a_table_of_a_tensor_column_in_any_chunking(n, cuts, d):
    emb = np.arange(n * d, dtype=np.float32).reshape(n, d)
    col = pa.FixedSizeListArray.from_arrays(pa.array(emb.ravel()), d)
    bounds = sorted({min(c, n) for c in cuts} | {0, n})
    chunks = [col.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    t = pa.table({"emb": pa.chunked_array(chunks, type=col.type)})
    out = interop.to_framework(t, "torch")["emb"]
    np.testing.assert_array_equal(out.numpy(), emb)
    plan = interop.explain(t, "torch")
    one = len(chunks) == 1
    assert plan.zero_copy == one and (out.data_ptr() == col.values.buffers()[1].address) == one
    if not one:
        with pytest.raises(ZeroCopyError):
            interop.to_framework(t, "torch", copy=False)
