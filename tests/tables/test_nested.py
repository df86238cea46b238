"""Arrow list and tensor columns hand over as N-D arrays, jagged tensors or (values, offsets)
without a copy (issue 37): pointers from Arrow's own buffers (``buffers()[1].address``) and
the frameworks' accessors (``data_ptr()``, ``ctypes.data``, ``unsafe_buffer_pointer()``),
writes read back on the other side, and ``explain`` / ``can_convert`` / ``shares_memory``
agreeing with every outcome."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import interop
from interop.errors import InteropError, NullsError, UnsupportedConversionError, ZeroCopyError

CPU_TARGETS = ("numpy", "torch", "jax")


def ptr(x) -> int:
    """The data pointer by the framework's own accessor."""
    if isinstance(x, np.ndarray):
        return x.ctypes.data
    if isinstance(x, torch.Tensor):
        return x.data_ptr()
    if isinstance(x, jax.Array):
        return x.unsafe_buffer_pointer()
    raise TypeError(type(x))


def leaf_address(arr: pa.Array, row: int = 0) -> int:
    """Where row ``row`` of a (nested) fixed_size_list array starts, read from Arrow's own
    buffers and offsets."""
    index = arr.offset + row
    while pa.types.is_fixed_size_list(arr.type):
        index = (index * arr.type.list_size)
        arr = arr.values
        index += arr.offset
    return arr.buffers()[1].address + index * arr.type.bit_width // 8


def agree(x, target, **kw):
    """Convert ``x``, and check explain, can_convert and shares_memory say what happened:
    zero-copy exactly where the result's pointer is the source's."""
    out = interop.to_framework(x, target, **kw)
    plan = interop.explain(x, target, **kw)
    assert plan.supported and interop.can_convert(x, target, **kw)
    return out, plan


def fsl(values: np.ndarray, *dims: int) -> pa.Array:
    arr = pa.array(values.ravel())
    for d in reversed(dims):
        arr = pa.FixedSizeListArray.from_arrays(arr, d)
    return arr


# ---- fixed-size lists -------------------------------------------------------------------
@pytest.mark.parametrize("target", CPU_TARGETS)
def test_an_embeddings_column_is_an_n_by_d_array_over_the_values_buffer(target):
    emb = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    col = fsl(emb, 16)
    out, plan = agree(col, target)
    assert tuple(out.shape) == (8, 16) and np.array_equal(np.asarray(out), emb)
    zero = ptr(out) == col.values.buffers()[1].address
    assert zero == plan.zero_copy
    assert interop.shares_memory(col, out) == zero
    if target in ("numpy", "torch"):
        assert zero, plan


def test_a_write_through_the_tensor_is_read_back_from_arrow():
    col = fsl(np.arange(12, dtype=np.float32), 4)
    t = interop.to_framework(col, "torch")
    t[2, 3] = 99.0  # Arrow's buffer is this memory (the plan's read-only hazard says so)
    assert col[2].as_py()[3] == 99.0
    assert any("read-only" in h for h in interop.explain(col, "torch").hazards)


def test_nested_fixed_size_lists_of_any_depth_and_a_slice_keep_their_offset():
    a = np.arange(2 * 5 * 3 * 4, dtype=np.int16).reshape(10, 3, 4)
    col = fsl(a, 3, 4)
    assert col.type == pa.list_(pa.list_(pa.int16(), 4), 3)
    s = col.slice(3, 5)
    out, plan = agree(s, "torch")
    assert tuple(out.shape) == (5, 3, 4) and plan.zero_copy
    assert out.data_ptr() == leaf_address(s) == a[3:].ctypes.data - a.ctypes.data + \
        col.values.values.buffers()[1].address
    assert np.array_equal(out.numpy(), a[3:8])
    assert np.array_equal(interop.to_framework(s, "numpy"),
                          np.array(s.to_pylist(), dtype=np.int16))


def test_an_empty_and_a_zero_width_fixed_size_list():
    empty = fsl(np.zeros(0, dtype=np.float32), 4)
    assert tuple(interop.to_framework(empty, "torch").shape) == (0, 4)
    assert tuple(interop.to_framework(fsl(np.zeros(12, np.float64), 3, 4).slice(3, 0),
                                      "numpy").shape) == (0, 3, 4)


def test_fixed_size_list_nulls_follow_the_null_contract():
    col = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2, 3, 4, None, 6], pa.float32()), 2,
                                            mask=pa.array([False, True, False]))
    with pytest.raises(NullsError, match="fill them first"):
        interop.to_framework(col, "torch")
    plan = interop.explain(col, "torch")
    assert not plan.supported and plan.error == "nulls"
    assert not interop.can_convert(col, "torch")
    with pytest.raises(NullsError):
        interop.to_framework(col, "torch", copy=False)
    out = interop.to_framework(col, "torch", copy=True)  # a dense copy: NaN in the null slots
    assert out.data_ptr() != col.values.buffers()[1].address
    assert out[0].tolist() == [1.0, 2.0] and out[1].isnan().all()
    assert out[2, 0].isnan() and out[2, 1].item() == 6.0
    assert interop.can_convert(col, "torch", copy=True)
    ints = pa.FixedSizeListArray.from_arrays(pa.array([1, None, 3, 4], pa.int32()), 2)
    with pytest.raises(NullsError, match="no NaN"):
        interop.to_framework(ints, "numpy", copy=True)
    assert interop.explain(ints, "numpy", copy=True).error == "nulls"


def test_items_that_are_not_numbers_are_refused_naming_the_type():
    col = pa.FixedSizeListArray.from_arrays(pa.array(["a", "b", "c", "d"]), 2)
    with pytest.raises(UnsupportedConversionError, match="string"):
        interop.to_framework(col, "torch")
    assert not interop.can_convert(col, "torch")


def test_to_arrow_it_stays_itself():
    col = fsl(np.arange(6.0), 3)
    assert interop.to_framework(col, "pyarrow") is col
    assert interop.explain(col, "pyarrow").zero_copy


# ---- arrow.fixed_shape_tensor ----------------------------------------------------------------
def test_a_tensor_column_is_its_tensors_and_a_permutation_becomes_strides():
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    plain = pa.FixedShapeTensorArray.from_numpy_ndarray(a)
    out, plan = agree(plain, "torch")
    assert tuple(out.shape) == (2, 3, 4, 5) and plan.zero_copy
    assert out.data_ptr() == plain.storage.values.buffers()[1].address
    m = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    perm = pa.FixedShapeTensorArray.from_numpy_ndarray(m.transpose(0, 2, 1))
    assert perm.type.permutation == [1, 0]
    want = perm.to_numpy_ndarray()  # Arrow's own reading of the permutation
    t, plan = agree(perm, "torch")
    assert t.shape == want.shape and t.stride() == tuple(s // 4 for s in want.strides)
    assert np.array_equal(t.numpy(), want) and plan.zero_copy
    assert t.data_ptr() == perm.storage.values.buffers()[1].address
    j, jplan = agree(perm, "jax")  # JAX takes no strides on the CPU: a copy, explained
    assert np.array_equal(np.asarray(j), want) and not jplan.zero_copy
    assert any("non-contiguous" in r for r in jplan.reasons)
    with pytest.raises(ZeroCopyError):
        interop.to_framework(perm, "jax", copy=False)


def test_a_three_dimensional_permutation_reads_as_the_canonical_type_defines_it():
    # The spec: shape is the physical (row-major) shape, and dimension i of the logical
    # view is physical dimension permutation[i]. (pyarrow 26's own to_numpy_ndarray and
    # from_numpy_ndarray disagree with each other for 3-D permutations, so the oracle here
    # is the physical NumPy array transposed.)
    phys = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    t = pa.fixed_shape_tensor(pa.float64(), [3, 4, 5], permutation=[2, 0, 1])
    arr = pa.ExtensionArray.from_storage(t, fsl(phys, 60))
    out, plan = agree(arr, "torch")
    want = phys.transpose(0, 3, 1, 2)
    assert np.array_equal(out.numpy(), want) and plan.zero_copy
    assert out.stride() == tuple(s // 8 for s in want.strides)
    assert any("permutation [2, 0, 1]" in r for r in plan.reasons)


def test_dim_names_are_reported_by_explain():
    t = pa.fixed_shape_tensor(pa.float32(), [2, 3], dim_names=["h", "w"])
    arr = pa.ExtensionArray.from_storage(t, fsl(np.arange(12, dtype=np.float32), 6))
    plan = interop.explain(arr, "numpy")
    assert any("dim_names ['h', 'w']" in r and "(2, 2, 3)" in r for r in plan.reasons)
    assert interop.to_framework(arr, "numpy").shape == (2, 2, 3)


@pytest.mark.parametrize("make", [np.asarray, torch.from_numpy, jax.numpy.asarray],
                         ids=["numpy", "torch", "jax"])
def test_an_n_d_array_becomes_a_fixed_shape_tensor_array_over_its_buffer(make):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = make(a)
    out, plan = agree(x, "pyarrow")
    assert isinstance(out, pa.FixedShapeTensorArray) and out.type.shape == [3, 4]
    assert np.array_equal(out.to_numpy_ndarray(), a)
    zero = out.storage.values.buffers()[1].address == ptr(x)
    assert zero == plan.zero_copy
    if not isinstance(x, jax.Array):
        assert zero
        x[1, 2, 3] = -1  # the same memory: written through the source, read from Arrow
        assert out.to_numpy_ndarray()[1, 2, 3] == -1
    storage = out.storage  # the fixed_size_list column, when one is wanted: no copy either
    assert storage.type == pa.list_(pa.float32(), 12)
    assert storage.values.buffers()[1].address == out.storage.values.buffers()[1].address


def test_a_non_contiguous_n_d_array_becomes_a_tensor_array_by_one_explained_copy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, ::-1]
    out, plan = agree(a, "pyarrow")
    assert np.array_equal(out.to_numpy_ndarray(), a) and not plan.zero_copy
    assert any("C-contiguous" in r for r in plan.reasons)
    with pytest.raises(ZeroCopyError):
        interop.to_framework(a, "pyarrow", copy=False)


# ---- variable-length lists -------------------------------------------------------------------
def _lists():
    rows = [[1.0, 2.0], [3.0], [], [4.0, 5.0, 6.0]]
    return {"list": pa.array(rows, pa.list_(pa.float32())),
            "large_list": pa.array(rows, pa.large_list(pa.float32()))}


@pytest.mark.parametrize("kind", ["list", "large_list"])
def test_a_list_column_is_a_jagged_tensor_over_its_values_and_offsets(kind):
    col = _lists()[kind]
    nt, plan = agree(col, "torch")
    assert nt.is_nested and nt.layout == torch.jagged and plan.zero_copy
    assert nt.values().data_ptr() == col.values.buffers()[1].address
    assert nt.offsets().data_ptr() == col.buffers()[1].address
    assert nt.offsets().dtype == (torch.int64 if kind == "large_list" else torch.int32)
    assert [r.tolist() for r in nt.unbind()] == col.to_pylist()
    assert any("nested_tensor_from_jagged" in r for r in plan.reasons)
    assert interop.shares_memory(col, nt)
    assert interop.shares_memory(col, nt.offsets())  # the offsets buffer is the value's too
    nt.values()[0] = 10.0
    assert col[0].as_py()[0] == 10.0


@pytest.mark.parametrize("target", ["numpy", "jax"])
def test_without_a_ragged_type_a_list_column_is_values_and_offsets(target):
    col = _lists()["list"]
    out, plan = agree(col, target)
    assert isinstance(out, interop.Jagged) and len(out) == 4
    values, offsets = out
    assert np.asarray(offsets).tolist() == [0, 2, 3, 3, 6]
    assert np.asarray(values).tolist() == [1, 2, 3, 4, 5, 6]
    assert (ptr(values) == col.values.buffers()[1].address) == plan.zero_copy
    assert any("interop.Jagged" in r for r in plan.reasons)


def test_ragged_chooses_offsets_per_row_views_or_a_padded_copy():
    col = _lists()["list"]
    pair = interop.to_framework(col, "torch", ragged="offsets")
    assert isinstance(pair, interop.Jagged) and not pair.values.is_nested
    rows = interop.to_framework(col, "torch", ragged="list")
    assert [r.tolist() for r in rows] == col.to_pylist()
    assert rows[3].data_ptr() == col.values.buffers()[1].address + 3 * 4
    pad, plan = agree(col, "torch", ragged="pad", fill_value=-1.0)
    assert pad.tolist() == [[1, 2, -1], [3, -1, -1], [-1, -1, -1], [4, 5, 6]]
    assert not plan.zero_copy and any("ragged='pad'" in r for r in plan.reasons)
    with pytest.raises(ZeroCopyError, match="pad"):
        interop.to_framework(col, "torch", ragged="pad", copy=False)
    assert interop.explain(col, "torch", ragged="pad", copy=False).error == "zero-copy"
    with pytest.raises(InteropError, match="ragged"):
        interop.to_framework(col, "torch", ragged="dense")
    with pytest.raises(InteropError, match="fill_value"):
        interop.to_framework(col, "torch", fill_value=0.5)


def test_a_sliced_list_keeps_its_values_and_rebases_its_offsets_said_by_explain():
    col = _lists()["list"].slice(1, 3)
    nt, plan = agree(col, "torch")
    assert [r.tolist() for r in nt.unbind()] == col.to_pylist()
    assert nt.values().data_ptr() == col.values.buffers()[1].address + 2 * 4
    assert nt.offsets().data_ptr() != col.buffers()[1].address
    assert not plan.zero_copy and any("rebased" in r for r in plan.reasons)
    with pytest.raises(ZeroCopyError, match="rebased"):
        interop.to_framework(col, "torch", copy=False)


def test_list_views_in_order_keep_their_values_and_others_are_gathered():
    values = pa.array(np.arange(6, dtype=np.float64))
    ordered = pa.ListViewArray.from_arrays(pa.array([0, 2, 3], pa.int32()),
                                           pa.array([2, 1, 3], pa.int32()), values)
    nt, plan = agree(ordered, "torch")
    assert [r.tolist() for r in nt.unbind()] == ordered.to_pylist()
    assert nt.values().data_ptr() == values.buffers()[1].address
    assert any("list view" in r for r in plan.reasons)
    shuffled = pa.ListViewArray.from_arrays(pa.array([3, 0, 0], pa.int32()),
                                            pa.array([3, 2, 1], pa.int32()), values)
    nt, plan = agree(shuffled, "torch")
    assert [r.tolist() for r in nt.unbind()] == shuffled.to_pylist()
    assert any("gathering" in r for r in plan.reasons) and not plan.zero_copy


def test_list_nulls_follow_the_null_contract_and_a_null_row_becomes_empty():
    col = pa.array([[1.0, 2.0], None, [3.0, None]], pa.list_(pa.float64()))
    with pytest.raises(NullsError, match="copy=True"):
        interop.to_framework(col, "torch")
    assert interop.explain(col, "torch").error == "nulls"
    nt = interop.to_framework(col, "torch", copy=True)
    rows = [r.tolist() for r in nt.unbind()]
    assert rows[0] == [1.0, 2.0] and rows[1] == [] and rows[2][0] == 3.0
    assert np.isnan(rows[2][1])


def test_a_list_of_fixed_size_lists_is_jagged_with_inner_dimensions():
    inner = fsl(np.arange(12, dtype=np.float32), 2)  # six rows of 2
    col = pa.ListArray.from_arrays(pa.array([0, 1, 4, 6], pa.int32()), inner)
    nt, plan = agree(col, "torch")
    assert nt.values().shape == (6, 2) and plan.zero_copy
    assert nt.values().data_ptr() == inner.values.buffers()[1].address
    assert [r.tolist() for r in nt.unbind()] == col.to_pylist()


def test_lists_of_lists_are_refused_naming_the_way_out():
    col = pa.array([[[1, 2]], [[3]]], pa.list_(pa.list_(pa.int64())))
    with pytest.raises(UnsupportedConversionError, match="list_flatten"):
        interop.to_framework(col, "torch")
    assert not interop.can_convert(col, "torch")


# ---- back from a ragged value ------------------------------------------------------------------
@pytest.mark.parametrize("dtype,kind", [(torch.int64, pa.large_list), (torch.int32, pa.list_)])
def test_a_jagged_tensor_becomes_an_arrow_list_over_its_values_and_offsets(dtype, kind):
    values = torch.arange(6, dtype=torch.float32)
    nt = torch.nested.nested_tensor_from_jagged(values, torch.tensor([0, 2, 3, 6], dtype=dtype))
    out, plan = agree(nt, "pyarrow")
    assert out.type == kind(pa.float32()) and plan.zero_copy
    assert out.values.buffers()[1].address == values.data_ptr()
    assert out.buffers()[1].address == nt.offsets().data_ptr()
    values[5] = 60.0  # one buffer: the write through torch is read back from Arrow
    assert out.to_pylist() == [[0.0, 1.0], [2.0], [3.0, 4.0, 60.0]]
    assert interop.shares_memory(nt, out)


def test_a_jagged_tensor_with_inner_dimensions_becomes_a_list_of_fixed_size_lists():
    values = torch.arange(12, dtype=torch.float64).reshape(6, 2)
    nt = torch.nested.nested_tensor_from_jagged(values, torch.tensor([0, 4, 6]))
    out = interop.to_framework(nt, "pyarrow")
    assert out.type == pa.large_list(pa.list_(pa.float64(), 2))
    assert out.to_pylist() == [r.tolist() for r in nt.unbind()]
    assert out.values.values.buffers()[1].address == values.data_ptr()


def test_arrow_to_torch_to_arrow_and_numpy_pairs_round_trip():
    col = _lists()["large_list"]
    nt = interop.to_framework(col, "torch")
    back = interop.to_framework(nt, "pyarrow")
    assert back.to_pylist() == col.to_pylist()
    assert back.values.buffers()[1].address == col.values.buffers()[1].address
    pair = interop.to_framework(nt, "numpy")
    assert isinstance(pair, interop.Jagged)
    assert pair.values.ctypes.data == col.values.buffers()[1].address
    again = interop.to_framework(pair, "torch")
    assert again.is_nested and again.values().data_ptr() == col.values.buffers()[1].address
    assert interop.to_framework(pair, "pyarrow").to_pylist() == col.to_pylist()
    assert interop.to_framework(nt, "torch") is nt


# ---- tables and dataframes ---------------------------------------------------------------------
def _table():
    emb = np.arange(24, dtype=np.float32).reshape(6, 4)
    return pa.table({"id": np.arange(6), "emb": fsl(emb, 4),
                     "tok": pa.array([[1, 2], [3], [4, 5, 6], [], [7], [8]], pa.list_(pa.int32()))})


@pytest.mark.parametrize("make", [lambda t: t, lambda t: t.to_batches()[0]],
                         ids=["Table", "RecordBatch"])
def test_list_and_tensor_columns_of_an_arrow_table_convert_per_column(make):
    t = make(_table())
    out, plan = agree(t, "torch")
    col = t.column("emb")
    col = col.chunk(0) if isinstance(col, pa.ChunkedArray) else col
    assert out["emb"].shape == (6, 4) and out["emb"].data_ptr() == col.values.buffers()[1].address
    assert out["tok"].is_nested and [r.tolist() for r in out["tok"].unbind()] == \
        t.column("tok").to_pylist()
    assert plan.zero_copy and plan.columns["tok"].zero_copy


def test_a_list_column_of_several_chunks_is_one_explained_copy():
    one = _table()
    t = pa.concat_tables([one.slice(0, 2), one.slice(2)])
    assert t.column("emb").num_chunks == 2
    out, plan = agree(t, "torch")
    assert np.array_equal(out["emb"].numpy(), np.arange(24, dtype=np.float32).reshape(6, 4))
    assert not plan.columns["emb"].zero_copy
    assert any("2 chunks" in r for r in plan.columns["emb"].reasons)
    with pytest.raises(ZeroCopyError, match="chunks"):
        interop.to_framework(t, "torch", copy=False)


def test_a_list_column_with_nulls_in_a_table_is_named():
    t = pa.table({"tok": pa.array([[1], None], pa.list_(pa.int64()))})
    with pytest.raises(NullsError, match="'tok'"):
        interop.to_framework(t, "torch")
    values, mask = interop.to_framework(t, "torch", nulls="mask")["tok"]  # issue 46: the
    assert mask.tolist() == [True, False]  # rows' validity, the values as copy=True reads them
    assert [r.tolist() for r in values.unbind()] == [[1], []]


def test_polars_array_and_list_columns():
    emb = np.arange(12, dtype=np.float32).reshape(3, 4)
    df = pl.DataFrame({"emb": emb, "tok": [[1, 2], [3], [4, 5, 6]]})
    assert df.schema["emb"] == pl.Array(pl.Float32, 4)
    out, plan = agree(df, "torch")
    arrow = df["emb"].to_arrow()  # polars hands its own buffer to Arrow
    assert out["emb"].data_ptr() == arrow.values.buffers()[1].address
    assert np.array_equal(out["emb"].numpy(), emb) and plan.columns["emb"].zero_copy
    assert [r.tolist() for r in out["tok"].unbind()] == [[1, 2], [3], [4, 5, 6]]


def test_a_pandas_arrow_dtype_list_column():
    s = pd.Series([[1.0, 2.0], [3.0]], dtype=pd.ArrowDtype(pa.list_(pa.float64())))
    out, plan = agree(pd.DataFrame({"l": s}), "torch")
    assert [r.tolist() for r in out["l"].unbind()] == [[1.0, 2.0], [3.0]]
    chunk = s.array._pa_array.chunk(0)  # pandas' own Arrow array: the same buffer
    assert out["l"].values().data_ptr() == chunk.values.buffers()[1].address


def test_arrow_pycapsule_producers_of_list_columns():
    import arro3.core as a3

    col = fsl(np.arange(12, dtype=np.float32), 4)
    arr = a3.Array.from_arrow(col)
    out, plan = agree(arr, "torch")
    assert out.shape == (3, 4) and out.data_ptr() == col.values.buffers()[1].address
    t = _table()
    reader = a3.RecordBatchReader.from_arrow(pa.RecordBatchReader.from_batches(
        t.schema, t.to_batches()))
    cols = interop.to_framework(reader, "numpy")
    assert np.array_equal(cols["emb"], np.arange(24, dtype=np.float32).reshape(6, 4))
    assert isinstance(cols["tok"], interop.Jagged)


def test_a_dict_with_a_jagged_column_becomes_an_arrow_table_with_a_list_column():
    pair = interop.to_framework(_lists()["list"], "numpy")
    t = interop.to_framework({"tok": pair, "x": np.arange(4.0)}, "pyarrow")
    assert t.column("tok").to_pylist() == _lists()["list"].to_pylist()
    assert t.column("tok").chunk(0).values.buffers()[1].address == pair.values.ctypes.data


# ---- the GPU half, by reading (stand-ins: no device here) -------------------------------------
class _DeviceBuffer:
    """Stands in for a pyarrow CUDA buffer: ``is_cpu`` False, a device ``address``."""

    is_cpu = False
    address = 0x7F0000000000


@pytest.mark.standin
def test_device_rows_describe_the_device_values_as_numpy_would_lay_them_out():
    from interop.adapters.arrow_nested import DeviceRows

    host = fsl(np.zeros(2 * 12, np.float32), 12)
    rows = DeviceRows(host, _DeviceBuffer(), np.dtype(np.float32), 3 * 4, (2, 12))
    cai = rows.__cuda_array_interface__
    assert cai["data"] == (_DeviceBuffer.address + 12, True) and cai["version"] == 3
    assert cai["shape"] == (2, 12) and cai["typestr"] == "<f4" and cai["strides"] is None
    oracle = np.zeros((2, 12), np.float32).reshape(2, 3, 4).transpose(0, 2, 1)
    t = rows.reshape(2, 3, 4).transpose(0, 2, 1)  # a permuted tensor column: strides, no copy
    assert t.__cuda_array_interface__["shape"] == oracle.shape
    assert t.__cuda_array_interface__["strides"] == oracle.strides
    assert t.__cuda_array_interface__["data"] == cai["data"]
    assert interop.api.REGISTRY.owner(rows) == "cai-producer"  # the dense device route


class _DeviceArrayStandIn:
    """Stands in for a pyarrow array imported from a CUDA device (what pyarrow builds from
    ``__arrow_c_device_array__``): its type, offset, length, child and buffers; the values
    buffer is a device buffer."""

    def __init__(self, type_, n, values=None, bitmap=None):
        self.type, self.offset, self._n, self.values = type_, 0, n, values
        self._bitmap, self.null_count = bitmap, 0

    def __len__(self):
        return self._n

    def buffers(self):
        return [self._bitmap, None if self.values is not None else _DeviceBuffer()]


@pytest.mark.standin
@pytest.mark.parametrize("bitmap_at", [None, "leaf", "list"])
def test_a_device_column_is_read_as_device_rows_and_a_bitmap_refused_before_any_read(
        bitmap_at):
    from interop.adapters import arrow_nested as nested

    mark = object()  # a validity buffer: never read, its presence refuses
    leaf = _DeviceArrayStandIn(pa.float32(), 8, bitmap=mark if bitmap_at == "leaf" else None)
    col = _DeviceArrayStandIn(pa.list_(pa.float32(), 4), 2, values=leaf,
                              bitmap=mark if bitmap_at == "list" else None)
    if bitmap_at:
        with pytest.raises(UnsupportedConversionError, match="fill its nulls on the device"):
            nested._fixed(col)
        return
    parts = nested._fixed(col)
    rows = dict(parts.arrays)["values"]
    assert isinstance(rows, nested.DeviceRows) and rows.shape == (2, 4)
    assert rows.__cuda_array_interface__["data"] == (_DeviceBuffer.address, True)


@pytest.mark.parametrize("dtype", [np.bool_, "datetime64[ns]"])
def test_an_n_d_array_of_booleans_or_dates_is_refused_naming_the_cast(dtype):
    a = np.zeros((3, 4), dtype)  # Arrow's tensor type takes numbers only (pyarrow would raise)
    with pytest.raises(UnsupportedConversionError, match="holds numbers only"):
        interop.to_framework(a, "pyarrow")
    assert interop.explain(a, "pyarrow").error == "unsupported"
    assert not interop.can_convert(a, "pyarrow")
