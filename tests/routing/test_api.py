"""The public calls: explain, can_convert, shares_memory, frameworks, register_converter,
target names, errors, and the plan cache."""

from __future__ import annotations

import numpy as np
import pytest

import interop
import interop.api as api
import interop.registry as registry
import oracles
from helpers import aligned, data_pointer, run_child
from interop.adapters.base import NEEDS_COPY
from interop.errors import (
    DeviceError,
    InteropError,
    UnknownFrameworkError,
    UnsupportedConversionError,
    ZeroCopyError,
)
from interop.plan import Plan, Step
from machine import absent_cuda_device, jax_on_cpu

torch = pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("polars")

KNOWN = ["numpy", "torch", "jax", "pyarrow", "pandas", "polars"]


@pytest.fixture
def restore_registry():
    """Undo any edge a test registers (the registry is process-wide)."""
    reg = api.REGISTRY
    saved = list(reg.routes.direct)
    yield reg
    reg.routes.direct[:] = saved
    reg._changed()


# ---- explain ---------------------------------------------------------------------------

def test_explain_fast_path_plan():
    a = aligned(np.arange(6.0))
    plan = interop.explain(a, "torch")
    assert isinstance(plan, Plan)
    assert (plan.source, plan.target) == ("numpy", "torch")
    assert plan.supported and plan.zero_copy and plan.error is None
    assert plan.steps == (Step("numpy", "torch", "torch.from_numpy"),)
    assert plan.protocols == ("torch.from_numpy",)
    assert "zero-copy" in str(plan) and "torch.from_numpy" in str(plan)


def test_explain_fast_path_back():
    plan = interop.explain(torch.arange(3), "numpy")
    assert plan.zero_copy and plan.protocols == ("Tensor.numpy()",)


def test_explain_copy_plan_says_why():
    plan = interop.explain(aligned(np.arange(8.0))[::-1], "torch")
    assert plan.supported and not plan.zero_copy
    assert any("negative strides" in r for r in plan.reasons), plan
    assert any(s.copies for s in plan.steps)
    assert "copy" in str(plan) and "why: negative strides" in str(plan)


def test_explain_copy_true_plan():
    plan = interop.explain(aligned(np.arange(3.0)), "torch", copy=True)
    assert not plan.zero_copy and plan.supported
    assert any("copy=True" in r for r in plan.reasons)


def test_explain_copy_false_plan_fails_with_zero_copy_error():
    plan = interop.explain(aligned(np.arange(8.0))[::-1], "torch", copy=False)
    assert not plan.supported and plan.error == "zero-copy"
    assert "fails (zero-copy)" in str(plan)


def test_explain_unsupported_plan():
    plan = interop.explain(aligned(np.ones(3, np.complex64)), "pyarrow")
    assert not plan.supported and plan.error == "unsupported"
    assert "complex64" in plan.reasons[0]


def test_explain_converts_nothing():
    a = aligned(np.arange(4.0))
    capsule = a.__dlpack__(max_version=(1, 0))
    interop.explain(capsule, "torch")
    interop.explain(capsule, "numpy")
    out = interop.to_framework(capsule, "numpy")  # the capsule is still unconsumed
    assert data_pointer(out) == data_pointer(a)
    a[1] = -1.0  # one buffer: a write through the source is read in the result
    assert out[1] == -1.0


# ---- can_convert -----------------------------------------------------------------------

@pytest.mark.parametrize(("make", "target", "kw", "expected"), [
    (lambda: aligned(np.arange(3.0)), "torch", {}, True),
    (lambda: aligned(np.arange(8.0))[::-1], "torch", {}, True),
    (lambda: aligned(np.arange(8.0))[::-1], "torch", {"copy": False}, False),
    (lambda: aligned(np.ones(3, np.complex64)), "pyarrow", {}, False),
    (lambda: aligned(np.ones((2, 2))), "polars", {}, False),
    (lambda: aligned(np.arange(3.0)), "no-such-framework", {}, False),
    (lambda: object(), "numpy", {}, False),
    pytest.param(lambda: aligned(np.arange(3.0)), "torch", {"device": "cuda:0"}, False,
                 marks=pytest.mark.cpu_only),
    (lambda: aligned(np.arange(3.0)), "torch", {"device": absent_cuda_device()}, False),
])
def test_can_convert(make, target, kw, expected):
    assert interop.can_convert(make(), target, **kw) is expected


def test_can_convert_agrees_with_to_framework():
    a = aligned(np.ones(3, np.complex64))
    assert not interop.can_convert(a, "polars")
    with pytest.raises(UnsupportedConversionError):
        interop.to_framework(a, "polars")


# ---- shares_memory ---------------------------------------------------------------------

def test_shares_memory_numpy_views():
    a = aligned(np.arange(10.0))
    assert interop.shares_memory(a, a[3:5])
    assert interop.shares_memory(a, a[::-1])
    assert not interop.shares_memory(a[:5], a[5:])
    assert not interop.shares_memory(a, a.copy())
    assert not interop.shares_memory(a[:0], a)  # an empty view occupies no bytes


def test_shares_memory_across_frameworks():
    import jax.numpy as jnp
    import pyarrow as pa

    a = aligned(np.arange(16, dtype=np.float32))
    t = torch.from_numpy(a)
    assert interop.shares_memory(a, t) and interop.shares_memory(t[8:], a[10:])
    assert not interop.shares_memory(t[:8], a[8:])
    assert not interop.shares_memory(t.clone(), a)
    j = interop.to_framework(a, "jax")
    assert interop.shares_memory(j, t)
    with jax_on_cpu():
        assert not interop.shares_memory(jnp.arange(3.0), a)
    arr = pa.array(a)
    assert interop.shares_memory(arr, a)


def test_shares_memory_agrees_with_the_frameworks_own_accessors():
    """``interop.shares_memory`` against ``oracles.shares`` (each framework's own pointers and
    extents) on views, slices and copies of one buffer in every CPU framework."""
    import jax.numpy as jnp
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    a = aligned(np.arange(16, dtype=np.float32))
    t = torch.from_numpy(a)
    values = [a, a[3:7], a[::-1], a[8:], a[:0], a.copy(), t, t[10:], t.reshape(4, 4).T, t.clone(),
              pa.array(a), pa.array(a)[12:], pa.chunked_array([pa.array(a[4:])]),
              pd.Series(a, copy=False), pd.Series(a[:4], copy=False), pl.Series("x", a),
              pl.Series("x", a)[9:], interop.to_framework(a, "jax")]
    with jax_on_cpu():  # a host value, on a GPU host too
        values.append(jnp.arange(3.0))
    for i, x in enumerate(values):
        for y in values[i:]:
            assert interop.shares_memory(x, y) == oracles.shares(x, y), (x, y)


def test_shares_memory_sees_a_chunk_of_several():
    import polars as pl
    import pyarrow as pa

    a = aligned(np.arange(16, dtype=np.float32))
    chunked = pa.chunked_array([pa.array(a[:4]), pa.array(a[8:])])
    two = pl.concat([pl.Series("x", a[:4]), pl.Series("x", a[8:])], rechunk=False)
    assert oracles.shares(chunked, a) and oracles.shares(two, a)  # the chunks are views of a
    assert interop.shares_memory(chunked, a) and interop.shares_memory(two, a)
    assert interop.shares_memory(a, chunked) and interop.shares_memory(two, chunked)
    apart = aligned(np.arange(16, dtype=np.float32))
    assert not oracles.shares(chunked, apart) and not interop.shares_memory(chunked, apart)
    assert not interop.shares_memory(two, apart)


def test_shares_memory_of_non_arrays_is_false():
    a = aligned(np.arange(3.0))
    assert not interop.shares_memory([1, 2], a)
    assert not interop.shares_memory(a, object())
    for x in (1.5, [1, 2], {"a": "b"}, object()):  # no memory: not even with themselves
        assert not interop.shares_memory(x, x)


def test_a_value_whose_buffers_are_unreadable_shares_memory_with_itself():
    """A polars ``Object`` Series (and a ``Decimal`` one, where polars' Arrow export copies
    its buffers) has no buffer interop reads: it still shares its memory with itself, and
    with nothing else known."""
    from decimal import Decimal

    pl = pytest.importorskip("polars")
    for s in (pl.Series([object(), object()], dtype=pl.Object),
              pl.Series([Decimal("1.5"), Decimal("2.25")])):
        assert interop.shares_memory(s, s), s.dtype
        other = pl.Series([object()], dtype=pl.Object)
        assert not interop.shares_memory(s, other) and not interop.shares_memory(other, s)
    empty = pl.Series([], dtype=pl.Object)
    assert not interop.shares_memory(empty, empty)  # as an empty array: no memory to share


# ---- frameworks ------------------------------------------------------------------------

def test_frameworks_lists_the_cpu_frameworks():
    import importlib.metadata

    rows = {r["name"]: r for r in interop.frameworks()}
    for name in KNOWN:
        assert name in rows, rows.keys()
        r = rows[name]
        assert r["importable"] is True and "cpu" in r["devices"]
        assert r["version"] == importlib.metadata.version(name)
        assert set(r) >= {"name", "aliases", "importable", "imported", "version", "devices",
                          "protocols"}
    assert "pytorch" in rows["torch"]["aliases"] and "np" in rows["numpy"]["aliases"]
    assert rows["numpy"]["imported"] is True
    assert "DLPack import" in rows["torch"]["protocols"]


def test_import_interop_imports_no_framework():
    code = ("import sys, interop; interop.frameworks(); "
            "bad = [m for m in ('numpy', 'torch', 'jax', 'pyarrow', 'pandas', 'polars') "
            "if m in sys.modules]; print(bad); assert not bad, bad; "
            "rows = {r['name']: r for r in interop.frameworks()}; "
            "assert rows['torch']['imported'] is False and rows['torch']['importable']")
    out = run_child(code, timeout=60)
    assert out.returncode == 0, out.stderr


def test_first_call_loads_only_what_an_array_conversion_needs():
    """The first conversion of an array loads neither the table machinery (columns, build,
    aos), the Plan (explain's), nor the name-suggestion, narrowing and copy helpers; the
    tables still work, loading them on first use."""
    lazy = ("interop.tables.columns", "interop.tables.build", "interop.transpose.records",
            "interop.plan", "interop.names", "interop.narrowing", "interop.host")
    code = ("import sys, numpy as np, interop; interop.to_framework(np.arange(3.0), 'numpy'); "
            f"print([m for m in {lazy!r} if m in sys.modules]); "
            "import pyarrow as pa; from interop.tables import Columns; "
            "c = interop.to_framework(pa.table({'a': [1.0]}), 'numpy'); "
            "assert isinstance(c, Columns) and interop.explain(c['a'], 'numpy').zero_copy; "
            "print('OK')")
    out = run_child(code, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded, ok = out.stdout.split()
    assert loaded == "[]" and ok == "OK", out.stdout


# ---- target names ----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "canonical"), [
    ("torch", "torch"), ("pytorch", "torch"), ("PyTorch", "torch"), ("TORCH", "torch"),
    ("numpy", "numpy"), ("np", "numpy"), ("NumPy", "numpy"), ("NP", "numpy"),
    ("jax", "jax"), ("JAX", "jax"), ("jnp", "jax"),
    ("pyarrow", "pyarrow"), ("arrow", "pyarrow"), ("Arrow", "pyarrow"), ("pa", "pyarrow"),
    ("pandas", "pandas"), ("pd", "pandas"), ("Pandas", "pandas"),
    ("polars", "polars"), ("pl", "polars"), ("POLARS", "polars"),
    ("dlpack", "dlpack"), ("DLPack", "dlpack"), ("capsule", "dlpack"),
])
def test_target_aliases(name, canonical):
    a = aligned(np.arange(4, dtype=np.float32))
    assert interop.explain(a, name).target == canonical
    out = interop.to_framework(a, name)
    ref = interop.to_framework(aligned(np.arange(4, dtype=np.float32)), canonical)
    assert type(out) is type(ref)


@pytest.mark.parametrize("name", ["tensorflowz", "", "numpyy", "source"])
def test_unknown_target_lists_known_names(name):
    a = aligned(np.arange(3.0))
    with pytest.raises(UnknownFrameworkError) as ei:
        interop.to_framework(a, name)
    assert isinstance(ei.value, InteropError) and isinstance(ei.value, ValueError)
    msg = str(ei.value)
    assert repr(name) in msg
    for known in KNOWN:
        assert known in msg, msg
    with pytest.raises(UnknownFrameworkError):
        interop.explain(a, name)


def test_non_string_target():
    with pytest.raises(UnknownFrameworkError, match="str"):
        interop.to_framework(aligned(np.arange(3.0)), None)


def test_unknown_source_names_its_type():
    class Thing:
        pass

    with pytest.raises(UnsupportedConversionError, match="Thing"):
        interop.to_framework(Thing(), "numpy")


def test_bad_copy_argument():
    with pytest.raises(InteropError, match="copy"):
        interop.to_framework(aligned(np.arange(3.0)), "torch", copy="yes")


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=pytest.mark.cpu_only),
                                    absent_cuda_device(), "tpu", "cpu:x", 3])
def test_bad_or_absent_devices(device):
    with pytest.raises(DeviceError):
        interop.to_framework(aligned(np.arange(3.0)), "torch", device=device)


def test_device_cpu_keeps_data_in_place():
    a = aligned(np.arange(3.0))
    t = interop.to_framework(a, "torch", device="cpu")
    assert data_pointer(t) == data_pointer(a)
    t[0] = 7.0  # a write through torch, read in NumPy
    assert a[0] == 7.0


def test_stream_on_cpu_data_is_an_error():
    with pytest.raises(InteropError, match="stream"):
        interop.to_framework(aligned(np.arange(3.0)), "torch", stream=1)


def test_error_hierarchy():
    from interop import errors

    assert issubclass(errors.ZeroCopyError, BufferError)
    assert issubclass(errors.UnsupportedConversionError, TypeError)
    assert issubclass(errors.UnknownFrameworkError, ValueError)
    assert issubclass(errors.NullsError, ValueError)
    assert issubclass(errors.CapsuleConsumedError, errors.ProtocolError)
    for name in ("ZeroCopyError", "UnsupportedConversionError", "UnknownFrameworkError",
                 "NullsError", "DeviceError", "ProtocolError", "CapsuleConsumedError"):
        assert issubclass(getattr(errors, name), InteropError)
    assert interop.ZeroCopyError is errors.ZeroCopyError


# ---- plan cache ------------------------------------------------------------------------

def test_second_call_hits_the_plan_cache(monkeypatch):
    reg = api.REGISTRY
    reg.clear_plans()
    a = aligned(np.arange(5.0))
    t = interop.to_framework(a, "torch")

    def no_planning(*args, **kwargs):
        raise AssertionError("the registry planned again instead of using the cache")

    monkeypatch.setattr(registry, "decide", no_planning)  # the one place a route is decided
    b = aligned(np.arange(5.0) + 1)
    t2 = interop.to_framework(b, "torch")
    assert data_pointer(t2) == data_pointer(b) and data_pointer(t) == data_pointer(a)
    assert t2.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_cached_plan_still_checks_each_value():
    """The cache is per type: a negative-stride array after a plain one must still copy."""
    interop.to_framework(aligned(np.arange(5.0)), "torch")
    neg = aligned(np.arange(5.0))[::-1]
    t = interop.to_framework(neg, "torch")
    assert t.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]
    assert not oracles.shares(t, neg)
    with pytest.raises(ZeroCopyError):
        interop.to_framework(neg, "torch", copy=False)


def test_cache_keys_separate_copy_modes(monkeypatch):
    reg = api.REGISTRY
    reg.clear_plans()
    a = aligned(np.arange(3.0))
    interop.to_framework(a, "torch", copy=True)
    interop.to_framework(a, "torch")

    def no_planning(*args, **kwargs):
        raise AssertionError("the registry planned again instead of using the cache")

    monkeypatch.setattr(registry, "decide", no_planning)  # both plans are kept, each its own
    assert not oracles.shares(interop.to_framework(a, "torch", copy=True), a)
    assert oracles.shares(interop.to_framework(a, "torch"), a)


def test_capsules_are_not_cached_per_type(monkeypatch):
    reg = api.REGISTRY
    reg.clear_plans()
    planned = []
    real = registry.decide

    def spy(reg, x, *args, **kwargs):
        planned.append(type(x).__name__)
        return real(reg, x, *args, **kwargs)

    monkeypatch.setattr(registry, "decide", spy)
    for _ in range(2):  # each capsule is planned: its owner is decided per value
        interop.to_framework(aligned(np.arange(3.0)).__dlpack__(), "numpy")
    assert planned == ["PyCapsule", "PyCapsule"]


# ---- register_converter ----------------------------------------------------------------

def test_register_converter_wins_and_invalidates(restore_registry):
    a = aligned(np.arange(4.0))
    interop.to_framework(a, "torch")  # planned and kept through NumPy's own edge
    calls = []

    def convert(x):
        calls.append(x)
        return torch.from_numpy(x)

    interop.register_converter("numpy", "torch", convert, via="my fast path", cost=0.1)
    # adding an edge drops every kept plan: the next call takes the new edge
    assert interop.explain(a, "torch").protocols == ("my fast path",)
    t = interop.to_framework(a, "torch")
    assert calls and calls[-1] is a and data_pointer(t) == data_pointer(a)


def test_register_converter_check_drives_copy_semantics(restore_registry):
    a = aligned(np.arange(4.0))

    def check(x):
        return None if x.flags.c_contiguous else (NEEDS_COPY, "my converter wants compact rows")

    interop.register_converter("numpy", "torch", torch.from_numpy, via="checked", check=check,
                               cost=0.1)
    assert interop.explain(a, "torch").zero_copy
    odd = aligned(np.arange(10.0))[::2]
    plan = interop.explain(odd, "torch")
    assert not plan.zero_copy and "compact rows" in plan.reasons[0]
    with pytest.raises(ZeroCopyError, match="compact rows"):
        interop.to_framework(odd, "torch", copy=False)
    t = interop.to_framework(odd, "torch")
    assert t.tolist() == odd.tolist() and not oracles.shares(t, odd)


def test_register_converter_costlier_than_builtin_loses(restore_registry):
    interop.register_converter("numpy", "torch", lambda x: None, via="slow", cost=50)
    assert interop.explain(aligned(np.arange(3.0)), "torch").protocols == ("torch.from_numpy",)


def test_register_converter_unknown_framework(restore_registry):
    with pytest.raises(UnknownFrameworkError, match="nosuch"):
        interop.register_converter("numpy", "nosuch", lambda x: x)
