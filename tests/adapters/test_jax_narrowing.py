"""JAX with 64-bit types off (its default): every path into JAX narrows as JAX would, with
one NarrowingWarning per conversion; copy=False refuses; nothing narrowed, nothing warned."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import interop
from helpers import DLPackOnly, aligned
from interop.errors import NarrowingWarning, ZeroCopyError

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

NARROWED = {np.float64: np.float32, np.int64: np.int32, np.uint64: np.uint32,
            np.complex128: np.complex64}


@pytest.fixture(autouse=True)
def _x64_off():
    assert not jax.config.jax_enable_x64, "these tests need JAX's default (64-bit types off)"


def _values(dtype):
    return aligned(np.arange(1, 7).astype(dtype))


SOURCES = {
    # name: (make a value from a NumPy array, the dtypes that source can hold)
    "numpy": (lambda a: a, list(NARROWED)),
    "numpy-strided": (lambda a: np.repeat(a, 2)[::2], list(NARROWED)),
    "numpy-read-only": (lambda a: _read_only(a), list(NARROWED)),
    "torch": (lambda a: torch.from_numpy(a), [np.float64, np.int64, np.complex128]),
    "pyarrow": (lambda a: pa.array(a), [np.float64, np.int64, np.uint64]),
    "pyarrow-chunked": (lambda a: pa.chunked_array([a[:3], a[3:]]),
                        [np.float64, np.int64]),
    "pandas": (lambda a: pd.Series(a), [np.float64, np.int64, np.uint64, np.complex128]),
    "polars": (lambda a: pl.Series(a), [np.float64, np.int64, np.uint64]),
    "capsule": (lambda a: a.__dlpack__(), list(NARROWED)),
    "producer": (lambda a: DLPackOnly(a), list(NARROWED)),
}
CASES = [pytest.param(src, dt, id=f"{src}-{np.dtype(dt).name}")
         for src, (_, dts) in SOURCES.items() for dt in dts]


def _read_only(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def _convert(value, **kw):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = interop.to_framework(value, "jax", **kw)
    return out, [w for w in got if issubclass(w.category, NarrowingWarning)]


def _says_how(msg: str, wide, narrow) -> None:
    assert np.dtype(wide).name in msg and np.dtype(narrow).name in msg, msg
    assert "jax.config.update('jax_enable_x64', True)" in msg, msg


@pytest.mark.parametrize("src, dtype", CASES)
def test_copy_none_narrows_as_jax_would_with_one_warning(src, dtype):
    make, _ = SOURCES[src]
    a = _values(dtype)
    out, warned = _convert(make(a))
    assert out.dtype == NARROWED[dtype]
    np.testing.assert_array_equal(np.asarray(out), a.astype(NARROWED[dtype]))
    assert len(warned) == 1, [str(w.message) for w in warned]
    _says_how(str(warned[0].message), dtype, NARROWED[dtype])
    assert warned[0].filename == __file__  # it points at the caller's line, not at interop


@pytest.mark.parametrize("src, dtype", CASES)
def test_copy_true_gives_a_fresh_narrowed_array_with_one_warning(src, dtype):
    make, _ = SOURCES[src]
    a = _values(dtype)
    out, warned = _convert(make(a), copy=True)
    assert out.dtype == NARROWED[dtype] and len(warned) == 1
    np.testing.assert_array_equal(np.asarray(out), a.astype(NARROWED[dtype]))
    if a.flags.writeable:
        a[0] = 99  # a fresh buffer: the source's write is not seen
        assert np.asarray(out)[0] == 1


@pytest.mark.parametrize("src, dtype", CASES)
def test_copy_false_refuses_with_the_same_explanation(src, dtype):
    make, _ = SOURCES[src]
    value = make(_values(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NarrowingWarning)  # and warns nothing on the way
        with pytest.raises(ZeroCopyError) as ei:
            interop.to_framework(value, "jax", copy=False)
    if src != "pyarrow-chunked":  # its first obstacle is the chunks, named instead
        _says_how(str(ei.value), dtype, NARROWED[dtype])


@pytest.mark.parametrize("src, dtype", CASES)
def test_explain_shows_the_narrowing_copy_and_why(src, dtype):
    make, _ = SOURCES[src]
    value = make(_values(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NarrowingWarning)  # explaining converts nothing
        plan = interop.explain(value, "jax")
        refused = interop.explain(value, "jax", copy=False)
    assert plan.supported and not plan.zero_copy
    narrow = np.dtype(NARROWED[dtype]).name
    assert any(s.copies and f"cast to {narrow}" in s.via for s in plan.steps), str(plan)
    assert any("jax_enable_x64" in r for r in plan.reasons), str(plan)
    assert not refused.supported and refused.error == "zero-copy"


SAME = {
    "numpy-float32": lambda: aligned(np.arange(6, dtype=np.float32)),
    "numpy-int32": lambda: aligned(np.arange(6, dtype=np.int32)),
    "numpy-bool": lambda: aligned(np.arange(6) % 2 == 0),
    "numpy-float32-strided": lambda: np.arange(12, dtype=np.float32)[::2],
    "torch-float32": lambda: torch.arange(6, dtype=torch.float32),
    "pyarrow-int32": lambda: pa.array(np.arange(6, dtype=np.int32)),
    "pandas-float32": lambda: pd.Series(np.arange(6, dtype=np.float32)),
    "polars-int16": lambda: pl.Series(np.arange(6, dtype=np.int16)),
    "capsule-float32": lambda: aligned(np.arange(6, dtype=np.float32)).__dlpack__(),
    "table-float32": lambda: pa.table({"a": np.arange(3, dtype=np.float32)}),
}


@pytest.mark.parametrize("name", SAME)
@pytest.mark.parametrize("copy", [None, True])
def test_nothing_narrowed_warns_nothing(name, copy):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NarrowingWarning)
        out = interop.to_framework(SAME[name](), "jax", copy=copy)
    dtypes = [v.dtype for v in out.values()] if isinstance(out, dict) else [out.dtype]
    assert all(d.itemsize <= 4 or d == np.bool_ for d in dtypes)


def test_the_warning_can_be_made_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error", interop.NarrowingWarning)
        with pytest.raises(interop.NarrowingWarning, match="float64 is narrowed to float32"):
            interop.to_framework(np.arange(3.0), "jax")


def test_the_warning_is_a_user_warning_exported_where_users_look():
    assert interop.NarrowingWarning is NarrowingWarning
    assert issubclass(NarrowingWarning, UserWarning)


def test_warm_fast_plans_still_narrow_with_one_warning():
    """The fast plan of a type warmed by a float32 value leaves a float64 one to the checked
    plan, which narrows once (the fast step must not narrow silently or warn twice)."""
    interop.to_framework(aligned(np.arange(4, dtype=np.float32)), "jax")
    interop.to_framework(torch.arange(4, dtype=torch.float32), "jax")
    for value in (np.arange(4.0), torch.arange(4.0, dtype=torch.float64),
                  pa.array([1.0, 2.0]), pd.Series([1.0, 2.0])):
        for _ in range(2):
            out, warned = _convert(value)
            assert out.dtype == np.float32 and len(warned) == 1


# ---- tables and dataframes: column by column, one warning naming the columns ---------------

TABLES = {
    "pyarrow-table": lambda: pa.table({"f": [1.0, 2.0], "i": [1, 2],
                                       "s": np.array([1, 2], np.float32)}),
    "record-batch": lambda: pa.RecordBatch.from_pydict({"f": [1.0, 2.0], "i": [1, 2],
                                                        "s": np.array([1, 2], np.float32)}),
    "pandas": lambda: pd.DataFrame({"f": [1.0, 2.0], "i": [1, 2],
                                    "s": np.array([1, 2], np.float32)}),
    "polars": lambda: pl.DataFrame({"f": [1.0, 2.0], "i": [1, 2],
                                    "s": np.array([1, 2], np.float32)}),
    "dict": lambda: {"f": np.array([1.0, 2.0]), "i": np.array([1, 2]),
                     "s": np.array([1, 2], np.float32)},
}


NAMED = {"dict": "leaf ['{}']"}
"""How a message names a column: a dict of NumPy arrays to JAX is a structure, whose leaves
are named by their paths (interop.structures)."""


def _named(name, column):
    return NAMED.get(name, "column '{}'").format(column)


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("copy", [None, True])
def test_tables_narrow_column_by_column_with_one_warning(name, copy):
    out, warned = _convert(TABLES[name](), copy=copy)
    assert {k: v.dtype for k, v in out.items()} == {
        "f": np.float32, "i": np.int32, "s": np.float32}
    assert len(warned) == 1, [str(w.message) for w in warned]
    msg = str(warned[0].message)
    assert _named(name, "f") in msg and _named(name, "i") in msg, msg
    assert _named(name, "s") not in msg, msg
    _says_how(msg, np.float64, np.float32)


@pytest.mark.parametrize("name", TABLES)
def test_tables_refuse_narrowing_with_copy_false(name):
    with pytest.raises(ZeroCopyError, match=re.escape(_named(name, "f")) + ".*jax_enable_x64"):
        interop.to_framework(TABLES[name](), "jax", copy=False)


def test_table_plan_shows_each_narrowed_column():
    plan = interop.explain(TABLES["pandas"](), "jax")
    assert plan.supported and not plan.zero_copy
    assert not plan.columns["f"].zero_copy and not plan.columns["i"].zero_copy
    assert any("jax_enable_x64" in r for r in plan.columns["f"].reasons)
    assert not any("jax_enable_x64" in r for r in plan.columns["s"].reasons)  # float32 stays


# ---- dask: told once, when the graph is built ---------------------------------------------

def test_dask_collections_warn_once_when_the_graph_is_built():
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    import dask

    import interop.dask as idask

    x = da.from_array(np.arange(8.0), chunks=2)  # four blocks
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        blocks = idask.to_framework(x, "jax")
        built = len(got)
        results = dask.compute(*blocks.ravel())
    narrowing = [w for w in got if issubclass(w.category, NarrowingWarning)]
    assert built == 1 and len(narrowing) == 1, [str(w.message) for w in got]
    assert all(r.dtype == np.float32 for r in results)
    np.testing.assert_array_equal(np.concatenate([np.asarray(r) for r in results]),
                                  np.arange(8.0, dtype=np.float32))
    ddf = dd.from_pandas(pd.DataFrame({"a": np.arange(8.0)}), npartitions=2)
    out, warned = None, None
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = dask.compute(*idask.to_delayed(ddf, "jax"))
        warned = [w for w in got if issubclass(w.category, NarrowingWarning)]
    assert len(warned) == 1 and all(p["a"].dtype == np.float32 for p in out)


def test_dask_copy_false_refuses_on_the_client():
    da = pytest.importorskip("dask.array")
    import interop.dask as idask

    with pytest.raises(ZeroCopyError, match="jax_enable_x64"):
        idask.to_framework(da.from_array(np.arange(8.0), chunks=4), "jax", copy=False)


# ---- the GPU edges into JAX: the same rule, from the consumer's side ------------------------

def test_a_dlpack_edge_from_a_source_without_its_own_check_narrows_for_jax():
    """CuPy's DLPack edge into JAX (on the GPU) has no source-side check: the registry gives it
    JAX's dtype rules, so a float64 CuPy array takes the copy route, which casts. Shown here
    with a host stand-in for the source adapter (no GPU on this machine)."""
    from interop.adapters import jax_, numpy_
    from interop.adapters.base import NEEDS_COPY, Adapter
    from interop.api import REGISTRY
    from interop.routing import dlpack_edge

    stand_in = Adapter(name="cupy-like", view=numpy_.view, export_dlpack=lambda x: x)
    edge = dlpack_edge(stand_in, REGISTRY.adapters["jax"], 2.0, device="cuda")
    assert edge.check is not None
    verdict = edge.check(np.arange(3.0))
    assert verdict[0] == NEEDS_COPY and "jax_enable_x64" in verdict[1]
    assert edge.check(np.arange(3, dtype=np.float32)) is None
    assert jax_.RULES.narrows("<f8")[0] == "<f4"


def test_cupy_float64_into_jax_on_the_gpu_path_is_planned_with_jax_rules():
    from interop.api import REGISTRY

    route = REGISTRY.routes.route("cupy", "jax", "cuda")
    assert route and all(e.check is not None for e in route if e.target == "jax")


@pytest.mark.gpu
def test_gpu_float64_into_jax_narrows_on_the_device():
    cupy = pytest.importorskip("cupy")
    c = cupy.arange(6, dtype=cupy.float64)
    out, warned = _convert(c)
    assert out.dtype == np.float32 and len(warned) == 1
    assert next(iter(out.devices())).platform == "gpu"
    np.testing.assert_array_equal(np.asarray(out), np.arange(6, dtype=np.float32))
    with pytest.raises(ZeroCopyError, match="jax_enable_x64"):
        interop.to_framework(c, "jax", copy=False)


# ---- 64-bit types on: zero-copy, no warning ----------------------------------------------

def test_with_x64_on_every_path_stays_zero_copy_without_a_warning():
    code = textwrap.dedent("""
        import warnings
        import jax
        jax.config.update("jax_enable_x64", True)
        import numpy as np, torch, pyarrow as pa, pandas as pd, interop
        from interop.host import fresh_copy
        warnings.simplefilter("error", interop.NarrowingWarning)
        a = fresh_copy(np.arange(4.0))
        for v in (a, torch.from_numpy(a), pa.array(a), pd.Series(a, copy=False)):
            x = interop.to_framework(v, "jax", copy=False)
            assert x.dtype == np.float64 and x.unsafe_buffer_pointer() == a.ctypes.data
        assert interop.explain(a, "jax").zero_copy
        a[0] = 42.0  # written through NumPy, seen by JAX
        assert float(x[0]) == 42.0
        t = interop.to_framework(pa.table({"i": fresh_copy(np.arange(3))}), "jax")
        assert t["i"].dtype == np.int64
        print("OK")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-2000:]
