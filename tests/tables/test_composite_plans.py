"""Kept composite plans (issue 49): decided once per kind of value, with a fast form, and never
an answer that depends on what was converted before. Oracles: Arrow's own ``to_numpy`` /
``to_pylist``, torch's ``to_dense``, SciPy's ``toarray``, buffer addresses from the
frameworks' accessors."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
import torch

from interop.adapters.base import CompositeAdapter, Parts
from interop.default import build
from interop.errors import NullsError


def _write_shows(tensor, read):
    """A write into the torch result's first element is read back by the source's own
    accessor ``read()`` (then undone): the two share memory, not merely an address."""
    flat = tensor.view(-1)
    old = flat[0].item()
    flat[0] = old + 7
    try:
        assert read() == old + 7
    finally:
        flat[0] = old


def fsl(values, size, dtype=np.float32):
    return pa.FixedSizeListArray.from_arrays(pa.array(np.asarray(values, dtype)), size)


def test_a_kept_fixed_size_list_plan_reads_each_value_afresh():
    """After the fast form is made from a plain column, a column of the same type with a null
    row, a slice, and a column of another type each convert as they do alone."""
    reg = build()
    plain = fsl(np.arange(12), 3)
    for _ in range(3):  # the first value walks, the later take the fast form
        t = reg.convert(plain, "torch")
        assert t.data_ptr() == plain.values.buffers()[1].address
    np.testing.assert_array_equal(t.numpy(), np.arange(12, dtype=np.float32).reshape(4, 3))
    _write_shows(t, lambda: plain.values[0].as_py())
    nulls = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(6, dtype=np.float32)), 3,
                                              mask=pa.array([False, True]))
    with pytest.raises(NullsError):
        reg.convert(nulls, "torch")
    inner = pa.FixedSizeListArray.from_arrays(pa.array([0.0, None, 2.0, 3.0, 4.0, 5.0],
                                                       pa.float32()), 3)
    with pytest.raises(NullsError):
        reg.convert(inner, "torch")
    cut = plain.slice(1, 2)
    np.testing.assert_array_equal(reg.convert(cut, "torch").numpy(),
                                  np.array(cut.to_pylist(), np.float32))
    other = fsl(np.arange(8), 4, np.float64)
    np.testing.assert_array_equal(reg.convert(other, "torch").numpy(),
                                  np.array(other.to_pylist()))
    empty = plain.slice(0, 0)
    assert tuple(reg.convert(empty, "torch").shape) == (0, 3)


def test_a_kept_tensor_plan_keeps_each_types_shape_and_permutation():
    reg = build()
    flat = np.arange(24, dtype=np.float32)
    plain = pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.float32(), [3, 4]),
                                           fsl(flat, 12))
    permuted = pa.ExtensionArray.from_storage(
        pa.fixed_shape_tensor(pa.float32(), [3, 4], permutation=[1, 0]), fsl(flat, 12))
    for x in (plain, plain, plain, permuted, plain, permuted):
        np.testing.assert_array_equal(reg.convert(x, "torch").numpy(), x.to_numpy_ndarray())


def _lists(offsets, values, otype, large=False):
    maker = pa.LargeListArray if large else pa.ListArray
    return maker.from_arrays(pa.array(offsets, otype), pa.array(values, pa.int64()))


def _result(reg, x, target):
    """What ``reg`` gives for ``x``, or the error's type."""
    try:
        return reg.convert(x, target)
    except Exception as e:  # noqa: BLE001 - compared with a fresh registry's answer
        return type(e)


def _by_the_fast_form(reg, plain, target, fast, walked):
    """``plain`` converted on ``reg`` once its plan took the fast form: the fast form's check
    ran once (``fast``) and the walk's not (``walked``)."""
    for _ in range(3):  # the first walks, the kernel loads by the second check, then fast
        reg.convert(plain, target)
    fast.clear(), walked.clear()
    got = reg.convert(plain, target)
    assert len(fast) == 1 and not walked, "the kept plan did not take its fast form"
    return got


def _each_as_alone(reg, values, target, same):
    """Each of ``values`` converts on ``reg`` (which kept plans) as on a registry that never
    converted anything: the same error type, or results ``same(x, have, want)`` accepts."""
    for x in values:
        want, have = _result(build(), x, target), _result(reg, x, target)
        if isinstance(want, type):
            assert have is want, (x, have, want)
        else:
            same(x, have, want)


@pytest.mark.parametrize("target", ["torch", "numpy"])
@pytest.mark.parametrize("large", [False, True])
def test_a_kept_list_plan_reads_each_value_afresh(monkeypatch, target, large):
    """After the fast form is made from a plain list column, columns of the same type with a
    slice, a sliced child, a null row, a null item, offsets that decrease,
    and no rows each convert as they do alone (the answer or the error); the plain ones take
    the fast form (its compiled offsets check runs) and hand Arrow's own buffers over."""
    from interop.adapters import arrow_nested

    fast, walked = [], []
    real, walks = arrow_nested.offsets_ok_at, arrow_nested.check_offsets
    monkeypatch.setattr(arrow_nested, "offsets_ok_at", lambda *a: fast.append(a) or real(*a))
    monkeypatch.setattr(arrow_nested, "check_offsets",
                        lambda *a: walked.append(a) or walks(*a))
    otype = pa.int64() if large else pa.int32()
    plain = _lists([0, 2, 2, 5], [1, 2, 3, 4, 5], otype, large=large)
    reg = build()
    got = _by_the_fast_form(reg, plain, target, fast, walked)
    values, offsets = (got.values(), got.offsets()) if target == "torch" else tuple(got)
    address = values.data_ptr() if target == "torch" else values.ctypes.data
    assert address == plain.values.buffers()[1].address
    assert offsets.tolist() == [0, 2, 2, 5]
    if target == "torch":
        _write_shows(values, lambda: plain.values[0].as_py())
    child = pa.array([9, 1, 2, 3, 4, 5], pa.int64())[1:]
    sliced_child = (pa.LargeListArray if large else pa.ListArray).from_arrays(
        pa.array([0, 1, 5], otype), child)
    bad = [pa.Array.from_buffers(plain.type, 3, [None, pa.py_buffer(np.array(
        o, otype.to_pandas_dtype()).tobytes())],
        children=[plain.values]) for o in ([0, 3, 2, 5],)]
    others = [plain.slice(1, 2), sliced_child, _lists([0, 1, 3], [1, 2, 3], otype, large=large),
              _lists(pa.array([0, 1, None, 3], otype), [1, 2, 3], otype, large=large),
              _lists([0, 1, 3], [1, None, 3], otype, large=large), plain.slice(0, 0),
              *bad, plain]

    def same(x, have, want):
        w = (want.values(), want.offsets()) if target == "torch" else tuple(want)
        h = (have.values(), have.offsets()) if target == "torch" else tuple(have)
        for a, b in zip(h, w):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        bounds = h[1].tolist()
        assert [np.asarray(h[0][a:b]).tolist() for a, b in zip(bounds, bounds[1:])] \
            == x.to_pylist()

    _each_as_alone(reg, others, target, same)


def test_chunked_list_columns_and_number_columns_share_a_type_in_either_order():
    """A ChunkedArray of numbers and one of a list type are one Python type: whichever comes
    first, each converts as it does alone (and the list column's plan is kept)."""
    numbers = pa.chunked_array([pa.array([1.0, 2.0])])
    nested = pa.chunked_array([fsl(np.arange(4), 2)])
    for order in ((numbers, nested), (nested, numbers)):
        reg = build()
        for _ in range(3):
            for x in order:
                got = reg.convert(x, "torch")
                want = (np.array(x.to_pylist(), np.float32) if x is nested
                        else x.to_numpy())
                np.testing.assert_array_equal(got.numpy(), want)


def test_sparse_and_dense_torch_tensors_share_a_type_in_either_order():
    dense = torch.arange(6.0).reshape(2, 3)
    coo = dense.to_sparse_coo()
    for order in ((coo, dense), (dense, coo)):
        reg = build()
        for _ in range(3):
            for x in order:
                got = reg.convert(x, "numpy")
                if x is coo:
                    assert sp.issparse(got)
                    np.testing.assert_array_equal(got.toarray(), dense.numpy())
                else:
                    np.testing.assert_array_equal(got, dense.numpy())


def test_a_kept_sparse_plan_sorts_what_needs_sorting():
    """The CSR plan kept for a canonical matrix still sorts an unsorted one of the same type
    (torch requires sorted indices): the decision reads each value."""
    reg = build()
    ok = sp.csr_array(np.array([[1.0, 0, 2], [0, 3, 0]]))
    for _ in range(3):
        np.testing.assert_array_equal(reg.convert(ok, "torch").to_dense().numpy(),
                                      ok.toarray())
    unsorted = sp.csr_array((np.array([2.0, 1.0, 3.0]), np.array([2, 0, 1]),
                             np.array([0, 2, 3])), shape=(2, 3))
    assert not unsorted.has_sorted_indices
    t = reg.convert(unsorted, "torch")
    np.testing.assert_array_equal(t.to_dense().numpy(), unsorted.toarray())
    assert t.col_indices().tolist() == [0, 2, 1]


def _dense_of(x):
    if isinstance(x, torch.Tensor):
        return x.to_dense().numpy()
    return np.asarray(x.todense())


def _buffers_of(x):
    """A sparse result's index arrays and values as its framework holds them (with the
    values' strides): what the conversion handed its constructor."""
    if isinstance(x, torch.Tensor):
        ptr, idx = ((x.crow_indices(), x.col_indices()) if x.layout == torch.sparse_csr
                    else (x.ccol_indices(), x.row_indices()))
        v = x.values()
        return [ptr.numpy(), idx.numpy(), v.numpy(), v.stride()]
    return [np.asarray(x.indptr), np.asarray(x.indices), np.asarray(x.data)]


@pytest.mark.filterwarnings("ignore::interop.errors.NarrowingWarning")  # JAX without x64
@pytest.mark.parametrize(("target", "fmt"), [("torch", "csr"), ("torch", "csc"), ("jax", "csr")])
def test_a_kept_sparse_plan_reads_each_value_afresh(monkeypatch, target, fmt):
    """After the fast form is made from a sorted matrix, matrices of the same type that are
    unsorted, of another shape, without entries, of another index dtype, with an index out of
    range, a decreasing pointer, strided values or read-only indices each convert as they do
    alone (the answer or the error); the plain ones take the fast form (its compiled check
    runs) and hand SciPy's own buffers over."""
    from interop.adapters import scipy_, sparse_parts

    fast, walked = [], []
    real, walks = scipy_.csr_checker, sparse_parts.check_csr

    def spy(*a):
        check = real(*a)
        return None if check is None else (lambda *b: fast.append(b) or check(*b))

    monkeypatch.setattr(scipy_, "csr_checker", spy)
    monkeypatch.setattr(sparse_parts, "check_csr", lambda *a: walked.append(a) or walks(*a))
    make = sp.csr_array if fmt == "csr" else sp.csc_array
    plain = make(np.array([[1.0, 0, 2], [0, 3, 0]]))
    reg = build()
    got = _by_the_fast_form(reg, plain, target, fast, walked)
    fresh = build()
    fast.clear(), walked.clear()
    fresh.convert(plain, target)  # the walk checks once; the fast form it makes, not again
    assert (len(walked), len(fast)) == (1, 0), (walked, fast)
    if target == "torch":
        assert got.values().data_ptr() == plain.data.ctypes.data
        _write_shows(got.values(), lambda: plain.data[0])
    np.testing.assert_array_equal(_dense_of(got), plain.toarray())

    def raw(data, indices, indptr):
        m = make(plain.shape)
        m.data, m.indices, m.indptr = data, indices, indptr
        return m

    ptr = np.array([0, 2, 3] if fmt == "csr" else [0, 1, 2, 3], np.int32)
    n = 3
    readonly = ptr.copy()
    readonly.flags.writeable = False
    strided = np.arange(6.0)[::2]
    others = [
        raw(np.array([2.0, 1.0, 3.0]), np.array([2, 0, 1] if fmt == "csr" else [1, 0, 1],
                                                np.int32), ptr),
        make(np.eye(4)), make((2, 3)),
        raw(np.array([1.0, 2.0, 3.0]), np.array([0, 2, 1], np.int64), ptr.astype(np.int64)),
        raw(np.array([1.0, 2.0, 3.0]), np.array([0, 7, 1], np.int32), ptr),
        raw(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 1], np.int32),
            np.array([0, 3, 2] if fmt == "csr" else [0, 3, 2, 3], np.int32)),
        raw(strided, np.array([0, 2, 1] if fmt == "csr" else [0, 1, 0], np.int32), ptr),
        raw(np.arange(1.0, n + 1), np.array([0, 1, 0], np.int32), readonly),
        plain]

    def same(x, have, want):
        np.testing.assert_array_equal(_dense_of(have), x.toarray())
        for a, b in zip(_buffers_of(have), _buffers_of(want), strict=True):
            np.testing.assert_array_equal(a, b)

    _each_as_alone(reg, others, target, same)


def _answer(reg, x, target):
    """``(result, error message, narrowing warnings)`` of converting ``x`` on ``reg``."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            out, err = reg.convert(x, target), None
        except Exception as e:  # noqa: BLE001 - compared with a fresh registry's
            out, err = None, f"{type(e).__name__}: {e}"
    return out, err, [str(w.message) for w in seen]


@pytest.mark.parametrize("target", ["torch", "numpy", "jax"])
def test_a_kept_table_plan_reads_each_table_afresh(monkeypatch, target):
    """After the fast form is made from a plain table, tables of the same schema with a null,
    several chunks, a null inside a list column's items, another schema, and record batches
    each convert as they do alone: the same columns, the same error message, the same
    narrowing warnings; a plain table takes the fast form (the full path's column walk does
    not run) and hands Arrow's own buffers over."""
    from interop.tables import columns

    walked = []
    real = columns._dense_arrow_columns
    monkeypatch.setattr(columns, "_dense_arrow_columns",
                        lambda *a: walked.append(a) or real(*a))
    emb = fsl(np.arange(12), 3)
    plain = pa.table({"emb": emb, "label": pa.array(np.arange(4, dtype=np.int32))})
    reg = build()
    for _ in range(3):
        _answer(reg, plain, target)
    walked.clear()
    got, err, warned = _answer(reg, plain, target)
    assert err is None and not walked, "the kept plan did not take its fast form"
    address = {"torch": lambda a: a.data_ptr(), "numpy": lambda a: a.ctypes.data,
               "jax": lambda a: a.unsafe_buffer_pointer()}[target]
    shared = address(got["emb"]) == emb.values.buffers()[1].address
    assert shared == build().explain(plain, target).columns["emb"].zero_copy  # (JAX: aligned)
    assert shared or target == "jax"
    if target == "torch":
        _write_shows(got["emb"], lambda: emb.values[0].as_py())
    items = pa.FixedSizeListArray.from_arrays(pa.array([0.0, None, 2.0, 3.0, 4.0, 5.0,
                                                        6.0, 7.0, 8.0, 9.0, 10.0, 11.0],
                                                       pa.float32()), 3)
    others = [
        pa.table({"emb": emb, "label": pa.array([1, None, 3, 4], pa.int32())}),
        pa.table({"emb": pa.chunked_array([emb.slice(0, 2), emb.slice(2)]),
                  "label": pa.chunked_array([pa.array([1, 2], pa.int32()),
                                             pa.array([3, 4], pa.int32())])}),
        pa.table({"emb": items, "label": pa.array(np.arange(4, dtype=np.int32))}),
        pa.table({"emb": emb, "label": pa.array(np.arange(4, dtype=np.int64))}),
        pa.table({"label": pa.array(np.arange(4, dtype=np.int32)), "emb": emb}),
        pa.record_batch({"emb": emb, "label": pa.array(np.arange(4, dtype=np.int32))}),
        plain, plain.slice(1, 2)]
    for x in others:
        for _ in range(2):  # the second: the plan the first made, if any
            have, have_err, have_warned = _answer(reg, x, target)
            want, want_err, want_warned = _answer(build(), x, target)
            assert (have_err, have_warned) == (want_err, want_warned), x
            if want is None:
                continue
            assert type(have) is type(want) and list(have) == list(want)
            for name in want:
                np.testing.assert_array_equal(np.asarray(have[name]), np.asarray(want[name]))


def _pair_kind() -> CompositeAdapter:
    """A toy kind within torch beside torch's own sparse kind: a float16 tensor of two
    elements that requires grad (one the dense fast form hands to its checked entry, as it
    does a sparse tensor, which Tensor.numpy() refuses) taken as a pair of one-element
    parts, rebuilt as a tuple."""
    def is_pair(x):
        return (x.layout == torch.strided and x.dtype == torch.float16 and x.requires_grad
                and tuple(x.shape) == (2,))

    return CompositeAdapter(
        name="torch-pair", modules=("torch",), package="torch", home="torch", within=True,
        per_value_owner=True, is_value=is_pair,
        parts=lambda x: Parts("pair", (("a", x.detach()[:1]), ("b", x.detach()[1:]))),
        rebuild=lambda reg, p, tgt: tuple(a for _, a in p.arrays))


def test_two_kinds_within_one_framework():
    """torch's sparse kind and another kind within torch both take their values (one slot
    per framework before: the second kind replaced the sparse one)."""
    reg = build()
    reg.add(_pair_kind())
    pair = torch.tensor([3.0, 4.0], dtype=torch.float16, requires_grad=True)
    for _ in range(3):
        a, b = reg.convert(pair, "numpy")
        assert (a.tolist(), b.tolist()) == ([3.0], [4.0])
    coo = torch.eye(2).to_sparse_coo()
    assert sp.issparse(reg.convert(coo, "numpy"))
    dense = torch.arange(3.0)
    np.testing.assert_array_equal(reg.convert(dense, "numpy"), dense.numpy())
    assert reg.explain(pair, "numpy").source == "torch-pair"


def test_the_registry_is_what_kinds_are_handed():
    """The Protocol typing the registry handed to kinds names methods the Registry has, with
    the same parameters, and attributes each Registry holds."""
    import inspect

    from interop.adapters.base import RegistryLike

    reg = build()
    assert isinstance(reg, RegistryLike)
    for name, member in vars(RegistryLike).items():
        if callable(member) and not name.startswith("_"):
            want = list(inspect.signature(member).parameters)[1:]
            assert list(inspect.signature(getattr(reg, name)).parameters) == want, name
    for name in RegistryLike.__annotations__:
        assert name in vars(reg), name


@pytest.mark.parametrize("target", ["pandas", "pyarrow"])
def test_a_table_to_a_table_framework_reads_no_fast_form_after_its_first(monkeypatch, target):
    """A table target builds a table (no fast form): after the first call, its plan is the
    table's own convert alone, reading no schema for a fast form on every call."""
    from interop.tables import columns

    asked = []
    real = columns.plain_arrow
    monkeypatch.setattr(columns, "plain_arrow", lambda *a: asked.append(a) or real(*a))
    t = pa.table({"x": pa.array(np.arange(3.0))})
    reg = build()
    reg.convert(t, target, copy=True)  # (copy=True: pyarrow to pyarrow is itself otherwise)
    reg.convert(t, target)
    asked.clear()
    for _ in range(3):
        got = reg.convert(t, target)
    assert not asked, asked
    assert list(got.columns if target == "pandas" else got.column_names) == ["x"]
