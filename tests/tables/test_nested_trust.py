"""Ragged and tensor columns give the same answer every time, never wrong rows, every shape
kept (issue 46). Oracles: Arrow's ``to_pylist`` and ``validate(full=True)``, torch's
``unbind()``, buffer addresses by the frameworks' own accessors, and answers read in a fresh
process (``run_child``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

import interop
from helpers import run_child
from interop.errors import MalformedError, UnsupportedConversionError


def rows_of(nt: torch.Tensor) -> list:
    """A nested tensor's rows, by torch's own ``unbind``."""
    return [r.tolist() for r in nt.unbind()]


def arrow_rows(a: pa.Array) -> list:
    """An Arrow result's rows, after Arrow's own full validation."""
    a.validate(full=True)
    return a.to_pylist()


# ---- item 1: rows never wrong -------------------------------------------------------------
def holes() -> list[torch.Tensor]:
    """Jagged nested tensors with holes: built with ``lengths=`` and by ``narrow``."""
    a = torch.nested.nested_tensor_from_jagged(torch.arange(10.0), torch.tensor([0, 3, 6, 10]),
                                               lengths=torch.tensor([2, 2, 3]))
    b = torch.nested.narrow(torch.arange(12.0).reshape(3, 4), 1, torch.tensor([0, 1, 2]),
                            torch.tensor([2, 2, 1]), layout=torch.jagged)
    return [a, b]


@pytest.mark.parametrize("which", [0, 1])
def test_a_jagged_tensor_with_holes_keeps_its_rows(which):
    nt = holes()[which]
    want = rows_of(nt)
    assert arrow_rows(interop.to_framework(nt, "pyarrow")) == want
    values, offsets = interop.to_framework(nt, "numpy")
    assert [values[a:b].tolist() for a, b in zip(offsets, offsets[1:])] == want
    back = interop.to_framework(nt, "torch", copy=True)
    assert rows_of(back) == want
    plan = interop.explain(nt, "pyarrow")
    assert plan.supported and not plan.zero_copy and "holes" in " ".join(plan.reasons)
    with pytest.raises(interop.errors.ZeroCopyError, match="holes"):
        interop.to_framework(nt, "numpy", copy=False)


def ragged_elsewhere() -> list[torch.Tensor]:
    """Nested tensors ragged in a dimension other than the first of each component."""
    a = torch.nested.nested_tensor([torch.zeros(2, 3), torch.ones(2, 4)], layout=torch.jagged)
    b = torch.nested.nested_tensor([torch.zeros(2, 3), torch.ones(4, 3)],
                                   layout=torch.jagged).transpose(1, 2)
    return [a, b]


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("target", ["pyarrow", "numpy", "jax"])
def test_a_tensor_ragged_in_another_dimension_is_refused_by_all_three_calls(which, target):
    nt = ragged_elsewhere()[which]
    assert nt._ragged_idx != 1
    assert not interop.can_convert(nt, target)
    assert "ragged in dimension" in interop.explain(nt, target).reasons[0]
    with pytest.raises(UnsupportedConversionError, match=r"transpose\(1, "):
        interop.to_framework(nt, target)


def test_the_advised_transpose_converts_with_the_right_rows():
    nt = ragged_elsewhere()[1].transpose(1, 2)
    assert nt._ragged_idx == 1
    assert arrow_rows(interop.to_framework(nt, "pyarrow")) == rows_of(nt)


def test_items_of_two_dimensions_keep_their_shape_both_ways():
    nt = torch.nested.nested_tensor([torch.arange(24.0).reshape(2, 3, 4),
                                     torch.ones(1, 3, 4)], layout=torch.jagged)
    a = interop.to_framework(nt, "pyarrow")
    assert a.type.value_type == pa.list_(pa.list_(pa.float32(), 4), 3)
    assert arrow_rows(a) == rows_of(nt)
    lists = pa.array([[[[1.0, 2], [3, 4]]], []], pa.list_(pa.list_(pa.list_(pa.float64(), 2), 2)))
    copied = interop.to_framework(lists, "pyarrow", copy=True)
    assert copied.type == lists.type and arrow_rows(copied) == lists.to_pylist()
    assert interop.to_framework(copied, "torch").dim() == 4


@pytest.mark.parametrize("offsets", [[0, 3, 9], [0, 3, 1, 5], [-1, 2], [2, 1]])
@pytest.mark.parametrize("target", ["pyarrow", "torch", "numpy"])
def test_jagged_offsets_are_checked_by_all_three_calls(offsets, target):
    j = interop.Jagged(np.arange(5.0), np.array(offsets))
    assert not interop.can_convert(j, target)
    assert interop.explain(j, target).error == "malformed"
    with pytest.raises(MalformedError, match="offsets"):
        interop.to_framework(j, target)


def test_a_list_column_to_dlpack_is_a_jagged_of_capsules_that_shares_memory_reads():
    """shares_memory of a Jagged of capsules previews them (a raw TypeError, len() of a
    capsule, before; found by the reliability search, seed 4006592453)."""
    col = pa.array([[1, 2], [3]], pa.list_(pa.int8()))
    j = interop.to_framework(col, "dlpack")
    assert interop.shares_memory(col, j)
    rows = [r.tolist() for r in interop.to_framework(j, "torch").unbind()]  # capsules unused
    assert rows == [[1, 2], [3]]


def test_a_slice_plan_names_as_shared_only_what_it_shares():
    """A slice's offsets are rebased (a copy): the plan's shared line names the values only
    (it named the offsets too); its pointers say the same."""
    col = pa.array([[1, 2]] * 8, pa.list_(pa.int8())).slice(5, 2)
    reasons = interop.explain(col, "numpy").reasons
    shared = [r for r in reasons if r.startswith("shared with the source")]
    assert shared == ["shared with the source (no copy): jagged values"], reasons
    values, offsets = interop.to_framework(col, "numpy")
    assert values.ctypes.data == col.values.buffers()[1].address + 10
    assert not np.shares_memory(offsets, np.frombuffer(col.buffers()[1], np.int32))


def test_a_jagged_of_pandas_series_is_read_by_position():
    """A list column to pandas with copy=True is a Jagged of two Series; their offsets are
    read by position (``series[-1]`` is a label: a raw KeyError before, found by the
    reliability search, seed 2643472242)."""
    import pandas as pd

    col = pa.array([[1], None, [2, 3]], pa.list_(pa.int8()))
    j = interop.to_framework(col, "pandas", copy=True)
    assert isinstance(j.offsets, pd.Series)
    assert not interop.shares_memory(col, j)
    rows = [r.tolist() for r in interop.to_framework(j, "torch").unbind()]
    assert rows == [[1], [], [2, 3]]
    bad = interop.Jagged(pd.Series([1.0, 2.0, 3.0]), pd.Series([0, 2, 1]))
    with pytest.raises(MalformedError, match="decrease"):
        interop.to_framework(bad, "numpy")


@pytest.mark.parametrize("target", ["torch", "numpy", "pyarrow"])
def test_an_arrow_list_with_decreasing_offsets_is_refused(target):
    bad = pa.Array.from_buffers(pa.list_(pa.float64()), 2,
                                [None, pa.array(np.array([0, 3, 1], np.int32)).buffers()[1]],
                                children=[pa.array(np.arange(5.0))])
    with pytest.raises(pa.ArrowInvalid):
        bad.validate(full=True)  # Arrow's own verdict
    assert not interop.can_convert(bad, target, copy=True)
    with pytest.raises(MalformedError, match="decrease"):
        interop.to_framework(bad, target, copy=True)


def test_a_list_view_row_outside_its_items_is_refused():
    bad = pa.ListViewArray.from_arrays(pa.array([0, 4], pa.int32()),
                                       pa.array([2, 3], pa.int32()), pa.array([1.0, 2, 3, 4]))
    with pytest.raises(pa.ArrowInvalid):
        bad.validate(full=True)
    with pytest.raises(MalformedError, match="outside"):
        interop.to_framework(bad, "numpy")


# ---- item 2: no answer depends on what the process converted before ----------------------
class _Opaque(pa.ExtensionType):
    """An extension type defined here (as Ray's, HF's and Daft's are outside pyarrow)."""

    def __init__(self, storage: pa.DataType | None = None) -> None:
        super().__init__(storage or pa.list_(pa.float32(), 4), "test.opaque")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(storage_type)


class _OpaqueArray(pa.ExtensionArray):
    """An ExtensionArray subclass defined outside pyarrow whose own ``to_numpy`` reads the
    storage (as HF ``datasets``' does)."""

    def to_numpy(self, **kw):
        return np.stack(self.storage.to_numpy(zero_copy_only=False))


class _OpaqueWithArray(_Opaque):
    def __arrow_ext_class__(self):
        return _OpaqueArray


def opaque(cls: type = _Opaque) -> pa.Array:
    return pa.ExtensionArray.from_storage(
        cls(), pa.array([[1, 2, 3, 4], [5, 6, 7, 8]], pa.list_(pa.float32(), 4)))


def tensor_table() -> pa.Table:
    return pa.table({"t": pa.FixedShapeTensorArray.from_numpy_ndarray(
        np.arange(8.0).reshape(2, 2, 2))})


BOOL8 = "pa.table({'b': pa.array([1, 0], pa.int8()).cast(pa.bool8())})"


def test_a_tensor_table_converts_after_a_table_of_another_extension_type():
    interop.can_convert(pa.table({"b": pa.array([1, 0], pa.int8()).cast(pa.bool8())}), "numpy")
    interop.can_convert(pa.table({"o": opaque()}), "numpy")
    out = interop.to_framework(tensor_table(), "numpy")["t"]
    assert out.shape == (2, 2, 2)


def test_another_extension_column_is_not_read_as_a_tensor_after_a_tensor_table():
    interop.to_framework(tensor_table(), "numpy")
    with pytest.raises(UnsupportedConversionError, match="column 'o'.*'test.opaque'"):
        interop.to_framework(pa.table({"o": opaque()}), "numpy")


def test_answers_after_other_extension_types_equal_a_fresh_process():
    code = ("import numpy as np, pyarrow as pa, interop\n"
            "if FIRST: interop.can_convert(" + BOOL8 + ", 'numpy')\n"
            "t = pa.table({'t': pa.FixedShapeTensorArray.from_numpy_ndarray("
            "np.arange(8.0).reshape(2, 2, 2))})\n"
            "print(interop.can_convert(t, 'numpy'), interop.explain(t, 'numpy').zero_copy)\n")
    fresh = run_child(code.replace("FIRST", "False")).stdout.split()
    after = run_child(code.replace("FIRST", "True")).stdout.split()
    assert fresh == after == ["True", "True"]


def test_a_kept_plan_never_reads_an_extension_array_its_check_refuses():
    for _ in range(3):  # the pair's plan kept and promoted to its fast form
        interop.to_framework(pa.chunked_array([pa.array([1.0, 2.0])]), "numpy")
    chunked = pa.chunked_array([opaque(_OpaqueWithArray)])
    for _ in range(3):
        assert not interop.can_convert(chunked, "numpy")
        with pytest.raises(UnsupportedConversionError, match="test.opaque"):
            interop.to_framework(chunked, "numpy")


# ---- item 3: ExtensionArray subclasses defined outside pyarrow ---------------------------
@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_an_extension_array_subclass_from_outside_pyarrow_is_refused_not_recursed(target):
    x = opaque(_OpaqueWithArray)
    assert type(x) is _OpaqueArray
    assert not interop.can_convert(x, target)
    assert "test.opaque" in interop.explain(x, target).reasons[0]
    with pytest.raises(UnsupportedConversionError, match="test.opaque"):
        interop.to_framework(x, target)


# ---- item 4: the ChunkedArray users hold ---------------------------------------------------
def emb() -> pa.Table:
    return pa.table({"emb": pa.FixedShapeTensorArray.from_numpy_ndarray(
        np.arange(24.0).reshape(4, 3, 2)), "vec": pa.array([[1.0, 2]] * 4, pa.list_(
            pa.float64(), 2)), "tok": pa.array([[1.0], [2.0, 3.0], [], [4.0]])})


@pytest.mark.parametrize("column", ["emb", "vec", "tok"])
@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_a_one_chunk_column_converts_zero_copy_as_its_chunk_does(column, target):
    for _ in range(3):  # a numeric ChunkedArray's kept plan never takes it
        interop.to_framework(pa.chunked_array([pa.array([1.0])]), target)
    col = emb()[column]
    assert isinstance(col, pa.ChunkedArray) and col.num_chunks == 1
    plan = interop.explain(col, target)
    assert plan.supported and plan.zero_copy, plan
    got = interop.to_framework(col, target)
    want = interop.to_framework(col.chunk(0), target)
    if column == "tok" and target == "torch":
        assert rows_of(got) == rows_of(want) == col.to_pylist()
    elif column == "tok":
        assert got.values.ctypes.data == want.values.ctypes.data
    else:
        assert np.asarray(got).tolist() == np.asarray(want).tolist()
        leaf = col.chunk(0).storage if column == "emb" else col.chunk(0)
        base = leaf.values.buffers()[1].address
        assert (got.ctypes.data if target == "numpy" else got.data_ptr()) == base
        if target == "torch":  # a write through torch, read back by Arrow's own accessor
            got.view(-1)[0] = -7.0
            assert np.asarray(col.chunk(0).storage.values if column == "emb"
                              else col.chunk(0).values)[0] == -7.0


def test_several_chunks_are_joined_by_one_explained_copy():
    t = pa.concat_tables([emb(), emb()])
    col = t["emb"]
    assert col.num_chunks == 2
    plan = interop.explain(col, "numpy")
    assert plan.supported and not plan.zero_copy
    assert "(8, 3, 2)" in " ".join(plan.reasons) and "2 chunks" in " ".join(plan.reasons)
    assert interop.to_framework(col, "numpy").tolist() == np.asarray(
        col.combine_chunks().to_numpy_ndarray()).tolist()
    with pytest.raises(interop.errors.ZeroCopyError, match="2 chunks"):
        interop.to_framework(col, "numpy", copy=False)
    tok = interop.to_framework(t["tok"], "pyarrow", copy=True)
    assert arrow_rows(tok) == t["tok"].to_pylist()


def test_ragged_goes_with_the_list_columns_of_a_table():
    out = interop.to_framework(emb(), "numpy", ragged="list", columns=["tok"])
    assert [r.tolist() for r in out["tok"]] == emb()["tok"].to_pylist()
    pad = interop.to_framework(emb(), "numpy", ragged="pad", fill_value=-1, columns=["tok"])
    assert pad["tok"].tolist() == [[1.0, -1], [2, 3], [-1, -1], [4, -1]]


# ---- item 5: one null rule -------------------------------------------------------------------
def with_null_row() -> pa.Array:
    return pa.array([[1.0, 2], None], pa.list_(pa.float64(), 2))


@pytest.mark.parametrize("wrap", ["alone", "table", "chunked", "table-chunked"])
def test_a_null_row_follows_one_rule_alone_in_a_table_chunked_or_not(wrap):
    col = with_null_row()
    x = {"alone": col, "chunked": pa.chunked_array([col[:1], col[1:]]),
         "table": pa.table({"f": col}),
         "table-chunked": pa.table({"f": pa.chunked_array([col[:1], col[1:]])})}[wrap]
    assert interop.explain(x, "numpy").error == "nulls"
    assert not interop.can_convert(x, "numpy")
    with pytest.raises(interop.errors.NullsError):
        interop.to_framework(x, "numpy")
    assert interop.can_convert(x, "numpy", copy=True)
    out = interop.to_framework(x, "numpy", copy=True)
    out = out["f"] if isinstance(out, dict) else out
    assert out[0].tolist() == [1.0, 2.0] and np.isnan(out[1]).all()


def test_a_masked_list_column_gives_the_rows_validity():
    values, mask = interop.to_framework(pa.table({"f": with_null_row()}), "numpy",
                                        nulls="mask")["f"]
    assert mask.tolist() == [True, False] and values[0].tolist() == [1.0, 2.0]


@pytest.mark.parametrize("items", [[1.0, None, 2.0, 3.0], [1, None, 2, 3]])
def test_a_list_view_whose_rows_skip_a_null_item_holds_no_null(items):
    lv = pa.ListViewArray.from_arrays(pa.array([0, 2], pa.int32()), pa.array([1, 2], pa.int32()),
                                      pa.array(items))
    assert lv.to_pylist() == [[1], [2, 3]]
    values, offsets = interop.to_framework(lv, "numpy")
    assert [values[a:b].tolist() for a, b in zip(offsets, offsets[1:])] == lv.to_pylist()
    assert interop.can_convert(lv, "numpy")


def test_nulls_in_a_later_chunk_of_a_list_column_are_seen_by_explain():
    fsl = pa.list_(pa.int64(), 2)  # a null item (not a null row) in the second chunk
    col = pa.chunked_array([pa.array([[1, 2]], fsl), pa.array([[3, None]], fsl)])
    t = pa.table({"l": col})
    assert not interop.can_convert(t, "torch")
    with pytest.raises(interop.errors.NullsError):
        interop.to_framework(t, "torch")


# ---- item 6: plans that say what happens ---------------------------------------------------
def test_per_row_views_of_a_slice_are_zero_copy():
    a = pa.array([[1.0], [2.0, 3], [4.0]]).slice(1)
    plan = interop.explain(a, "numpy", ragged="list")
    assert plan.supported and plan.zero_copy, plan
    rows = interop.to_framework(a, "numpy", ragged="list", copy=False)
    assert [r.tolist() for r in rows] == a.to_pylist()
    base = a.values.buffers()[1].address
    assert rows[0].ctypes.data == base + 8 * a.offsets[0].as_py()


def test_a_gathered_list_view_names_the_offsets_copy_too():
    lv = pa.ListViewArray.from_arrays(pa.array([2, 0], pa.int32()), pa.array([1, 2], pa.int32()),
                                      pa.array([1.0, 2, 3]))
    why = " ".join(interop.explain(lv, "numpy").reasons)
    assert "copies the values" in why and "a copy of the offsets" in why


# ---- item 7: the reverse direction ----------------------------------------------------------
def test_a_swapped_first_major_array_keeps_its_buffer_with_arrows_permutation():
    x = np.arange(24.0).reshape(2, 3, 4).transpose(0, 2, 1)
    plan = interop.explain(x, "pyarrow")
    assert plan.zero_copy, plan
    t = interop.to_framework(x, "pyarrow")
    t.validate(full=True)
    assert t.type.permutation == [1, 0]
    assert t.storage.values.buffers()[1].address == x.ctypes.data
    assert np.array_equal(t.to_numpy_ndarray(), x)  # Arrow's own reading
    x[1, 3, 2] = -1.0  # a write through NumPy, seen by Arrow
    assert t.to_numpy_ndarray()[1, 3, 2] == -1.0


@pytest.mark.parametrize("fill", [1000, 7.5, -1, "x"])
def test_a_pad_fill_value_the_dtype_cannot_hold_is_refused_by_all_three_calls(fill):
    j = pa.array([[1], [2, 3]], pa.list_(pa.uint8()))
    assert not interop.can_convert(j, "numpy", ragged="pad", fill_value=fill)
    assert "fill_value" in interop.explain(j, "numpy", ragged="pad", fill_value=fill).reasons[0]
    with pytest.raises(UnsupportedConversionError, match="fill_value"):
        interop.to_framework(j, "numpy", ragged="pad", fill_value=fill)


# ---- item 8: strided-layout nested tensors ----------------------------------------------------
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype")
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_the_advice_for_a_strided_nested_tensor_works(dtype):
    st = torch.nested.nested_tensor([torch.ones(2, 3, dtype=dtype), torch.ones(4, 3, dtype=dtype)])
    with pytest.raises(UnsupportedConversionError, match="layout=torch.jagged") as e:
        interop.to_framework(st, "numpy")
    assert "call .to_dense() first" not in str(e.value)
    advised = torch.nested.nested_tensor(list(st.unbind()), layout=torch.jagged)  # as it says
    assert arrow_rows(interop.to_framework(advised, "pyarrow")) == rows_of(st)


@pytest.mark.parametrize("perm", [None, [1, 0]])
def test_a_copy_to_pyarrow_keeps_the_kind_and_dim_names(perm):
    storage = pa.FixedShapeTensorArray.from_numpy_ndarray(np.arange(12.0).reshape(2, 2, 3))
    t = pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(
        pa.float64(), [2, 3], dim_names=["h", "w"], permutation=perm), storage.storage)
    out = interop.to_framework(t, "pyarrow", copy=True)
    out.validate(full=True)
    logical = ["w", "h"] if perm else ["h", "w"]  # names are of the physical dimensions
    assert out.type.dim_names == [logical[q] for q in (out.type.permutation or [0, 1])]
    assert np.array_equal(out.to_numpy_ndarray(), t.to_numpy_ndarray())
    levels = pa.array([[[1.0, 2], [3, 4]]], pa.list_(pa.list_(pa.float64(), 2), 2))
    assert interop.to_framework(levels, "pyarrow", copy=True).type == levels.type


def test_a_list_view_series_after_a_plain_series_kept_a_plan_is_refused_by_interop():
    import pandas as pd

    for _ in range(3):  # the pandas Series pair's plan kept and promoted
        interop.to_framework(pd.Series([1.0, 2.0]), "numpy")
    lv = pa.ListViewArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array([1, 2], pa.int32()),
                                      pa.array([1.0, 2, 3]))
    s = pd.Series(pd.arrays.ArrowExtensionArray(lv))
    assert not interop.can_convert(s, "numpy")
    for _ in range(2):
        with pytest.raises(UnsupportedConversionError, match="not numeric"):
            interop.to_framework(s, "numpy")


def test_a_table_column_in_several_chunks_is_explained_by_its_whole_shape():
    t = pa.concat_tables([emb(), emb()])
    plan = interop.explain(t, "torch")
    assert "(8, 3, 2)" in str(plan.columns["emb"]), plan
    assert "(4, 3, 2)" not in str(plan.columns["emb"])


def test_tensor_chunks_with_a_permutation_are_joined():
    t = pa.fixed_shape_tensor(pa.float64(), [2, 3], permutation=[1, 0])
    one = pa.ExtensionArray.from_storage(t, pa.FixedShapeTensorArray.from_numpy_ndarray(
        np.arange(12.0).reshape(2, 2, 3)).storage)
    col = pa.chunked_array([one, one])
    got = interop.to_framework(col, "numpy")
    assert got.shape == (4, 3, 2)
    assert np.array_equal(got, np.concatenate([interop.to_framework(one, "numpy")] * 2))


@pytest.mark.parametrize("shape,order", [((2, 2, 1), (2, 1, 0)), ((1, 3, 2), (0, 2, 1)),
                                         ((3, 1, 2), (0, 2, 1))])
def test_arrays_with_dimensions_of_one_go_to_pyarrow_with_their_rows(shape, order):
    """Found by the nested search: a dimension of 1 has any stride, and pyarrow refused a
    first stride that was not the largest (raw ValueError)."""
    x = np.arange(float(np.prod(shape))).reshape(shape).transpose(order)
    out = interop.to_framework(x, "pyarrow")
    out.validate(full=True)
    assert np.array_equal(interop.to_framework(out, "numpy"), x)


def test_a_dict_with_an_nd_array_to_polars_is_a_polars_array_column_over_its_buffer():
    import polars as pl

    b = np.arange(24.0).reshape(2, 3, 4)
    df = interop.to_framework({"a": np.ones((2, 2)), "b": b}, "polars")
    assert df.schema["a"] == pl.Array(pl.Float64, 2)
    assert df.schema["b"] == pl.Array(pl.Float64, (3, 4))
    assert df["a"].arr.sum().to_list() == [2.0, 2.0]  # polars' own .arr operations
    got = df["b"].to_numpy()
    assert np.array_equal(got, b) and got.ctypes.data == b.ctypes.data
    b[1, 2, 3] = -1.0  # a write through NumPy, seen by polars
    assert df["b"].to_list()[1][2][3] == -1.0


def test_a_polars_list_column_in_chunks_with_a_null_item_is_refused_by_explain_too():
    """Found by the nested search (seed 61409): explain read a stand-in without the items."""
    import polars as pl

    t = pa.list_(pa.list_(pa.float16(), 2))
    parts = [pl.from_arrow(pa.array([[]], t)), pl.from_arrow(pa.array([[[0, 1], [4, None]]], t))]
    s = pl.concat(parts, rechunk=False)
    assert s.n_chunks() == 2
    df = pl.DataFrame({"c": s})
    assert not interop.can_convert(df, "numpy")
    with pytest.raises(interop.errors.NullsError):
        interop.to_framework(df, "numpy")
    assert interop.can_convert(df, "numpy", copy=True)
