"""Issue 25: every public answer is true. Each test fails on the code before the fix.

The truth comes from outside interop: pointers from the frameworks' own accessors
(``tests/oracles.regions``: Arrow's buffers, polars' Arrow C stream read by pyarrow,
``array.array.buffer_info()``, ``Tensor.data_ptr()``), writes read back through the other
side, and the checked plan's own outcome in a fresh process.
"""

from __future__ import annotations

import array
import datetime

import numpy as np
import pytest

import interop
import interop.api
import oracles
from helpers import DLPackOnly, run_child
from interop.adapters import cudf_
from interop.adapters.verdicts import NULLS
from interop.errors import (
    ArgumentError,
    NullsError,
    UnsupportedConversionError,
    ZeroCopyError,
)

torch = pytest.importorskip("torch")
pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")


@pytest.fixture(autouse=True)
def _fresh_plans():
    interop.api.REGISTRY.clear_plans()
    yield
    interop.api.REGISTRY.clear_plans()


# ---- shares_memory ---------------------------------------------------------------------------

class OnlyInterface:
    def __init__(self, a):
        self.a = a
        self.__array_interface__ = a.__array_interface__


def _with_nulls():
    arrow = pa.array([1, None, 3, 4, 5, 6, 7, 8, 9, 10], pa.int64())
    return {
        "pyarrow bool": pa.array([True, None, False]),
        "pyarrow bool sliced": pa.array([True, None, False] * 5).slice(3, 7),
        "pyarrow int nulls": arrow,
        "pyarrow string": pa.array(["a", None, "ccc"]),
        "polars nulls": pl.Series([1, None, 3]),
        "polars bool": pl.Series([True, None]),
        "polars string": pl.Series(["a", None, "ccc"]),
        "pandas arrow NA": pd.Series([1, None, 3], dtype="int64[pyarrow]"),
        "pandas masked NA": pd.Series([1, None, 3], dtype="Int64"),
        "pandas category": pd.Series(["a", "b", "a"], dtype="category"),
        "pandas sparse": pd.Series([0.0, 1.0, 0.0, 2.0], dtype="Sparse[float32]"),
        "pandas datetime tz": pd.Series(pd.date_range("2024", periods=3, tz="UTC")),
    }


@pytest.mark.parametrize("name", list(_with_nulls()))
def test_a_value_with_several_buffers_shares_memory_with_itself_and_its_identity(name):
    x = _with_nulls()[name]
    framework = interop.api.REGISTRY.owner(x)
    same = interop.to_framework(x, framework)
    assert same is x and interop.explain(x, framework).zero_copy
    assert oracles.shares_any(x, same)
    assert interop.shares_memory(x, x) and interop.shares_memory(x, same)


def test_a_slice_shares_its_parents_validity_and_values_and_a_copy_shares_none():
    a = pa.array([1, None, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17], pa.int64())
    part = a.slice(9, 8)  # validity bits in the second byte, values 72 bytes in
    assert oracles.shares_any(a, part) and interop.shares_memory(a, part)
    assert not oracles.shares_any(a.slice(0, 2), part)
    assert not interop.shares_memory(a.slice(0, 2), part)
    copied = pa.array(a.to_pylist(), pa.int64())
    assert not interop.shares_memory(a, copied) and not oracles.shares_any(a, copied)
    s = pl.Series([1, None, 3, 4])
    assert interop.shares_memory(s, s.slice(2, 2)) == oracles.shares_any(s, s.slice(2, 2))


def _producers():
    return {
        "bytearray": bytearray(b"abcdefgh"),
        "memoryview": memoryview(bytearray(16)).cast("d"),
        "bytes memoryview": memoryview(b"abcdefgh"),
        "array.array": array.array("d", [1.0, 2.0, 3.0]),
        "array interface only": OnlyInterface(np.arange(6.0)[::2]),
        "DLPack only": DLPackOnly(np.arange(4.0)),
    }


@pytest.mark.parametrize("name", list(_producers()))
def test_a_generic_producer_shares_memory_with_its_zero_copy_result(name):
    x = _producers()[name]
    res = interop.to_framework(x, "numpy")
    assert interop.explain(x, "numpy").zero_copy
    assert oracles.shares_any(x, res)
    assert interop.shares_memory(x, res) and interop.shares_memory(x, x)
    assert oracles.regions(x)[0][1] == np.lib.array_utils.byte_bounds(res)[0]
    if res.flags.writeable:  # one buffer: a write through the result is read back
        res[0] = 7
        assert getattr(x, "a", x)[0] == 7


# ---- nulls: one behaviour for explain, can_convert and every call ---------------------------

def _outcomes(x, target, n=3, **kw):
    out = []
    for _ in range(n):
        try:
            out.append(type(interop.to_framework(x, target, **kw)).__name__)
        except NullsError:
            out.append("NullsError")
        except UnsupportedConversionError:
            out.append("UnsupportedConversionError")
    return out


@pytest.mark.parametrize("make", [
    lambda: pl.Series([True, None, False]),
    lambda: pl.Series([datetime.date(2024, 1, 1), None], dtype=pl.Date),
    lambda: pl.Series([datetime.datetime(2024, 1, 1), None], dtype=pl.Datetime),
    lambda: pa.chunked_array([pa.array([True, None])]),
    lambda: pa.chunked_array([pa.array([1, None], pa.date32())]),
], ids=["polars bool", "polars Date", "polars Datetime", "pyarrow chunked bool",
        "pyarrow chunked date32"])
def test_nulls_raise_on_every_call_as_the_plan_says(make):
    x = make()
    for copy in (None, True, False):
        plan = interop.explain(x, "numpy", copy=copy)
        assert not plan.supported and plan.error == "nulls", plan
        assert not interop.can_convert(x, "numpy", copy=copy)
    # after a plain value of the same type planned the pair (and made its fast form)
    plain = pl.Series([1.0, 2.0]) if isinstance(x, pl.Series) else pa.chunked_array([[1.0]])
    interop.to_framework(plain, "numpy")
    interop.to_framework(plain, "numpy")
    assert _outcomes(x, "numpy") == ["NullsError"] * 3
    assert _outcomes(x, "numpy", copy=True) == ["NullsError"] * 3


def test_a_polars_bool_with_nulls_raises_on_the_first_call_of_a_fresh_process_and_after():
    r = run_child("""
        import polars as pl, interop
        from interop.errors import NullsError
        s = pl.Series([True, None, False])
        for _ in range(3):
            try:
                print(type(interop.to_framework(s, "numpy")).__name__)
            except NullsError:
                print("NullsError")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["NullsError"] * 3


@pytest.mark.parametrize("first", ["nested", "string"])
def test_polars_array_dtypes_of_one_class_keep_their_own_plan(first):
    nested = pl.Series([[[1]], [[2]]], dtype=pl.Array(pl.Array(pl.Int8, 1), 1))
    strings = pl.Series([["a"], ["b"]], dtype=pl.Array(pl.String, 1))
    order = [nested, strings] if first == "nested" else [strings, nested]
    for s in order * 2:
        plan = interop.explain(s, "numpy")
        if s is nested:
            assert plan.zero_copy
            got = interop.to_framework(s, "numpy")
            assert got.dtype == np.int8 and oracles.shares_any(s, got)
        else:
            assert not plan.supported and plan.error == "unsupported", plan
            with pytest.raises(UnsupportedConversionError, match="not numeric"):
                interop.to_framework(s, "numpy")


def test_an_empty_polars_string_series_is_refused_on_every_call():
    s = pl.Series("x", [], dtype=pl.String)
    assert not interop.explain(s, "numpy").supported
    assert _outcomes(s, "numpy") == ["UnsupportedConversionError"] * 3


def test_cudf_nulls_are_a_verdict_of_every_hand_over():
    class Column:  # a stand-in: what the check reads of a cuDF column
        name, null_count = "c", 2

    verdict = cudf_.export_check(Column())
    assert verdict is not None and verdict[0] == NULLS and "2 nulls" in verdict[1]
    Column.null_count = 0
    assert cudf_.export_check(Column()) is None


# ---- explain says zero-copy only where the conversion is -------------------------------------

def test_strides_off_the_itemsize_into_dlpack_are_copied_as_explain_says():
    raw = np.arange(64, dtype=np.uint8)
    a = np.ndarray((4,), np.int16, buffer=raw, strides=(3,))
    plan = interop.explain(a, "dlpack")
    assert plan.supported and not plan.zero_copy and "multiples" in " ".join(plan.reasons)
    cap = interop.to_framework(a, "dlpack")
    assert np.array_equal(np.from_dlpack(oracles._Producer(cap, (1, 0))), a)
    with pytest.raises(ZeroCopyError):
        interop.to_framework(a, "dlpack", copy=False)


def test_an_odd_stride_on_a_size_one_axis_goes_to_torch_zero_copy():
    raw = np.zeros(64, np.uint8)
    a = np.ndarray((1, 2), np.float64, buffer=raw, strides=(3, 8))
    a[...] = [[1.5, 2.5]]
    assert interop.explain(a, "torch").zero_copy
    for _ in range(3):  # the checked plan, then the fast form
        t = interop.to_framework(a, "torch")
        assert t.data_ptr() == a.ctypes.data and t.tolist() == [[1.5, 2.5]]
    t[0, 1] = 9.0
    assert a[0, 1] == 9.0


@pytest.mark.parametrize("scalar", [np.float64(1.0), np.int8(3), np.bool_(True)])
def test_a_numpy_scalar_of_a_number_is_planned_as_the_view_it_is(scalar):
    """A number's scalar is handed over as its own memory, read-only (as NumPy exports it
    over DLPack); tests/adapters/test_numpy_scalars.py covers every dtype and target."""
    plan = interop.explain(scalar, "numpy", copy=False)
    assert plan.supported and plan.zero_copy
    got = interop.to_framework(scalar, "numpy", copy=False)
    assert got.shape == () and got == scalar and not got.flags.writeable
    assert interop.shares_memory(scalar, got)


@pytest.mark.parametrize("scalar", [np.str_("ab"), np.datetime64("2020-01-02")])
def test_a_numpy_scalar_of_no_number_is_planned_as_the_copy_it_is(scalar):
    plan = interop.explain(scalar, "numpy")
    assert plan.supported and not plan.zero_copy and "scalar" in " ".join(plan.reasons)
    assert not interop.explain(scalar, "numpy", copy=False).supported
    with pytest.raises(ZeroCopyError, match="scalar"):
        interop.to_framework(scalar, "numpy", copy=False)
    got = interop.to_framework(scalar, "numpy")
    assert got.shape == () and got == scalar and not interop.shares_memory(scalar, got)


def test_explain_into_dlpack_names_the_autograd_hazard():
    t = torch.arange(3.0, requires_grad=True)
    for target in ("dlpack", "numpy"):
        plan = interop.explain(t, target)
        assert any("requires grad" in h for h in plan.hazards), (target, plan)


# ---- copy= of the wrong type -----------------------------------------------------------------

@pytest.mark.parametrize("copy", [np.array([1, 2, 3]), "yes", 1, 0, np.bool_(True), [True]],
                         ids=["array", "str", "one", "zero", "np.bool_", "list"])
@pytest.mark.parametrize("kept", [None, True, False])
def test_copy_of_the_wrong_type_is_a_clear_error_whatever_plan_is_kept(copy, kept):
    a = np.arange(3.0)
    interop.to_framework(a, "torch", copy=kept)  # a plan kept for this copy= first
    with pytest.raises(ArgumentError, match=r"copy must be None, True or False") as info:
        interop.to_framework(a, "torch", copy=copy)
    assert isinstance(info.value, TypeError)
    with pytest.raises(ArgumentError):
        interop.explain(a, "torch", copy=copy)
    assert not interop.can_convert(a, "torch", copy=copy)
