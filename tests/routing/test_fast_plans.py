"""The fast form of ``copy=None`` plans (made from each edge's ``Accepts``) against the
checked plan alone.

``to_framework(x, target)`` with ``device=None, copy=None`` runs a plan whose steps convert a
value their edge accepts without asking its check, and hand any other value (or one whose
conversion raises ``NeedsCopy``) to the checked plan from that step on. So every test here
first plans the pair on a plain value of the same type (its checked steps spied on), checks
that the plan has a fast form, then converts the value that matters and compares it with the
checked plan alone on the same value: the same result or the same error, never a
``NeedsCopy``, and ``explain(...).zero_copy`` true exactly when the result shares the
source's memory (pointers, and a write one side the other sees).
"""

from __future__ import annotations

import datetime
import gc
import tempfile
import weakref

import numpy as np
import pytest

import interop
import interop.api as api
from helpers import aligned, data_pointer
from interop.adapters.base import NeedsCopy
from interop.errors import InteropError, NullsError, UnsupportedConversionError, ZeroCopyError
from machine import jax_on_cpu
from oracles import shares

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
ml_dtypes = pytest.importorskip("ml_dtypes")

REG = api.REGISTRY
TARGETS = ("torch", "jax", "pyarrow", "polars", "pandas")
F32 = np.float32


@pytest.fixture(autouse=True)
def _jax_on_the_cpu():
    """The CPU plans under test: JAX values are made on JAX's CPU device, on a GPU host too
    (where its default device is the GPU)."""
    with jax_on_cpu():
        yield


@pytest.fixture(autouse=True)
def _forget_plans():
    """Leave no spied-on plan behind for the other test files (the registry is global)."""
    yield
    REG.clear_plans()


# ---- building values ------------------------------------------------------------------------

def _misaligned(n: int, offset: int, dtype=F32) -> np.ndarray:
    """``n`` values at byte ``offset`` past a 64-byte boundary (1: not even itemsize-aligned)."""
    dt = np.dtype(dtype)
    buf = aligned(np.zeros(n * dt.itemsize + 64, np.uint8))
    a = buf[offset:offset + n * dt.itemsize].view(dt)
    a[...] = np.arange(n)
    return a


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _f32(n: int = 8) -> np.ndarray:
    return aligned(np.arange(n, dtype=F32))


class _Sub(np.ndarray):
    """A subclass of ndarray (the fast steps take plain ndarrays only)."""


NUMPY = {
    "plain": lambda: _f32(),
    "misaligned-64": lambda: _misaligned(8, 16),      # itemsize-aligned, not 64-byte aligned
    "misaligned-4": lambda: _misaligned(8, 4),
    "misaligned-item": lambda: _misaligned(8, 1),     # float32 at byte offset 1 of a uint8 buffer
    "readonly": lambda: _readonly(_f32()),
    "readonly-misaligned-64": lambda: _readonly(_misaligned(8, 16)),
    "readonly-misaligned-item": lambda: _readonly(_misaligned(8, 1)),
    "strided": lambda: _f32(16)[::2],
    "negative": lambda: _f32()[::-1],
    "negative-one": lambda: _f32(1)[::-1],  # NumPy calls it contiguous; torch.from_numpy refuses
    "2-d": lambda: _f32(12).reshape(3, 4),
    "2-d-transposed": lambda: _f32(12).reshape(3, 4).T,
    "readonly-2-d": lambda: _readonly(_f32(12).reshape(3, 4)),
    "misaligned-strided": lambda: _misaligned(16, 1)[::2],
    "2-d-empty": lambda: _f32(0).reshape(0, 3),
    "unit-dim-odd-stride": lambda: np.lib.stride_tricks.as_strided(_f32(6), (1, 6), (1000, 4)),
    "broadcast": lambda: np.broadcast_to(_f32(4), (3, 4)),
    "0-d": lambda: aligned(np.array(3.0, F32)),
    "empty": lambda: _f32(0),
    "one": lambda: _f32(1),
    "one-strided": lambda: _f32(16)[0:10:10],         # C-contiguous flag, stride 40 != itemsize
    "big-endian": lambda: aligned(np.arange(8), ">f4"),
    "bool": lambda: aligned(np.arange(8) % 3 == 0),
    "readonly-bool": lambda: _readonly(aligned(np.arange(8) % 3 == 0)),
    "int8": lambda: aligned(np.arange(8), np.int8),
    "uint16": lambda: aligned(np.arange(8), np.uint16),
    "float16": lambda: aligned(np.arange(8), np.float16),
    "complex64": lambda: aligned(np.arange(8), np.complex64),
    "float64": lambda: aligned(np.arange(8), np.float64),
    "int64": lambda: aligned(np.arange(8), np.int64),
    "datetime64": lambda: aligned(np.arange(8).astype("datetime64[ns]")),
    "bfloat16": lambda: aligned(np.arange(8), ml_dtypes.bfloat16),
    "readonly-bfloat16": lambda: _readonly(aligned(np.arange(8), ml_dtypes.bfloat16)),
    "bfloat16-misaligned-64": lambda: _misaligned(8, 16, ml_dtypes.bfloat16),
    "bfloat16-transposed": lambda: aligned(np.arange(12), ml_dtypes.bfloat16).reshape(3, 4).T,
    "float8": lambda: aligned(np.arange(8), ml_dtypes.float8_e4m3fn),
    "subclass": lambda: _f32().view(_Sub),  # not NumPy's own: read as a DLPack producer
    "memmap": lambda: _memmap(),
}


def _memmap() -> np.memmap:
    m = np.memmap(tempfile.TemporaryFile(), F32, mode="w+", shape=(8,))  # page-aligned
    m[:] = np.arange(8)
    return m


def _plain_numpy(x: np.ndarray) -> np.ndarray:
    """A plain value of ``type(x)``: the warm call's argument."""
    return _f32().view(type(x))


def _backed(make_source, n: int = 8, dtype=F32):
    """``(make() -> (value, numpy buffer it views))`` for a source made from an aligned buffer."""
    def make():
        a = aligned(np.arange(n), dtype)
        return make_source(a), a

    return make


def _alone(make_value):
    return lambda: (make_value(), None)


def _pa_chunks(*parts):
    return pa.chunked_array([pa.array(np.asarray(p, F32)) for p in parts])


def _pl_two_chunks(dtype):
    s = pl.concat([pl.Series("x", [1.0, 2.0], dtype), pl.Series("x", [3.0, 4.0], dtype)],
                  rechunk=False)
    assert s.n_chunks() == 2
    return s


def _pd_masked(cls, a):
    return pd.Series(cls(a, np.zeros(len(a), bool)), copy=False)


def _pd_plain():
    return pd.Series(_f32(), copy=False)


def _pl_plain():
    return pl.Series("x", _f32())


def _pa_plain():
    return pa.array(_f32())


# Each case: (make() -> (value, numpy buffer its data lives in, or None), warm() -> a plain
# value of the same type). A source's pyarrow class depends on its Arrow type, so each
# pyarrow case warms with a value of its own type.
OTHERS = {
    "torch": {
        "plain": (_backed(torch.from_numpy), lambda: torch.zeros(4)),
        "strided": (_backed(lambda a: torch.from_numpy(a)[::2], 16), lambda: torch.zeros(4)),
        "2-d": (_backed(lambda a: torch.from_numpy(a).reshape(3, 4), 12), lambda: torch.zeros(4)),
        "transposed": (_backed(lambda a: torch.from_numpy(a).reshape(3, 4).T, 12),
                       lambda: torch.zeros(4)),
        "empty": (_backed(torch.from_numpy, 0), lambda: torch.zeros(4)),
        "bool": (_backed(torch.from_numpy, dtype=np.bool_), lambda: torch.zeros(4)),
        "int64": (_backed(torch.from_numpy, dtype=np.int64), lambda: torch.zeros(4)),
        "bfloat16": (_backed(lambda a: torch.from_numpy(a.view(np.int16)).view(torch.bfloat16),
                             dtype=ml_dtypes.bfloat16), lambda: torch.zeros(4)),
        "bfloat16-transposed": (_backed(lambda a: torch.from_numpy(a.view(np.int16)).view(
            torch.bfloat16).reshape(3, 4).T, 12, dtype=ml_dtypes.bfloat16),
            lambda: torch.zeros(4)),
        "requires-grad": (_alone(lambda: torch.arange(8.0, requires_grad=True)),
                          lambda: torch.zeros(4)),
        "conj": (_alone(lambda: torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64).conj()),
                 lambda: torch.zeros(4)),
    },
    "pyarrow": {
        "plain": (_backed(pa.array), _pa_plain),
        "sliced-aligned": (_backed(lambda a: pa.array(a)[16:], 32), _pa_plain),
        "sliced-misaligned": (_backed(lambda a: pa.array(a)[1:], 9), _pa_plain),
        "empty": (_backed(pa.array, 0), _pa_plain),
        "float64": (_backed(pa.array, dtype=np.float64), lambda: pa.array([1.0])),
        "int64": (_backed(pa.array, dtype=np.int64), lambda: pa.array([1])),
        "nulls": (_alone(lambda: pa.array([1.0, None, 3.0], pa.float32())), _pa_plain),
        "int-nulls": (_alone(lambda: pa.array([1, None, 3], pa.int32())),
                      lambda: pa.array([1], pa.int32())),
        "bool": (_alone(lambda: pa.array([True, False, True])), lambda: pa.array([False])),
        "string": (_alone(lambda: pa.array(["a", "b"])), lambda: pa.array(["c"])),
        "date32": (_alone(lambda: pa.array([datetime.date(2024, 1, 1)] * 2)),
                   lambda: pa.array([datetime.date(2000, 1, 1)])),
        "timestamp": (_backed(lambda a: pa.array(a.view("datetime64[ns]")), dtype=np.int64),
                      lambda: pa.array(np.zeros(1, "datetime64[ns]"))),
        "chunked-1": (_backed(lambda a: pa.chunked_array([pa.array(a)])),
                      lambda: _pa_chunks([0.0, 1.0])),
        "chunked-2": (_alone(lambda: _pa_chunks([1.0, 2.0], [3.0])),
                      lambda: _pa_chunks([0.0, 1.0])),
        "chunked-2-int64": (_alone(lambda: pa.chunked_array([[1, 2], [3]])),
                            lambda: _pa_chunks([0.0, 1.0])),
        "chunked-nulls": (_alone(lambda: pa.chunked_array([pa.array([1.0, None], pa.float32())])),
                          lambda: _pa_chunks([0.0, 1.0])),
        "chunked-bool-nulls": (_alone(lambda: pa.chunked_array([pa.array([True, None])])),
                               lambda: _pa_chunks([0.0, 1.0])),
        "chunked-date-nulls": (_alone(lambda: pa.chunked_array([pa.array([1, None],
                                                                         pa.date32())])),
                               lambda: _pa_chunks([0.0, 1.0])),
    },
    "pandas": {
        "plain": (_backed(lambda a: pd.Series(a, copy=False)), _pd_plain),
        "sliced": (_backed(lambda a: pd.Series(a, copy=False).iloc[1:], 9), _pd_plain),
        "strided": (_backed(lambda a: pd.Series(a[::2], copy=False), 16), _pd_plain),
        "empty": (_backed(lambda a: pd.Series(a, copy=False), 0), _pd_plain),
        "bool": (_backed(lambda a: pd.Series(a, copy=False), dtype=np.bool_), _pd_plain),
        "int64": (_backed(lambda a: pd.Series(a, copy=False), dtype=np.int64), _pd_plain),
        "datetime64": (_alone(lambda: pd.Series(np.arange(4).astype("datetime64[ns]"))),
                       _pd_plain),
        # extension arrays over an aligned NumPy buffer (pandas copies nothing to make them)
        "Int32": (_backed(lambda a: _pd_masked(pd.arrays.IntegerArray, a), dtype=np.int32),
                  _pd_plain),
        "Float32": (_backed(lambda a: _pd_masked(pd.arrays.FloatingArray, a)), _pd_plain),
        "boolean": (_backed(lambda a: _pd_masked(pd.arrays.BooleanArray, a), dtype=np.bool_),
                    _pd_plain),
        "float32[pyarrow]": (_backed(lambda a: pd.Series(
            pd.arrays.ArrowExtensionArray(pa.array(a)), copy=False)), _pd_plain),
        "Int32-NA": (_alone(lambda: pd.Series([1, None, 3], dtype="Int32")), _pd_plain),
        "Float32-NA": (_alone(lambda: pd.Series([1.0, None], dtype="Float32")), _pd_plain),
        "float32[pyarrow]-NA": (_alone(lambda: pd.Series([1.5, None], dtype="float32[pyarrow]")),
                                _pd_plain),
        "bool[pyarrow]": (_alone(lambda: pd.Series([True, False], dtype="bool[pyarrow]")),
                          _pd_plain),
        "readonly": (_alone(lambda: pd.Series(_readonly(_f32()), copy=False)), _pd_plain),
        "int64[pyarrow]-NA": (_alone(lambda: pd.Series([1, None], dtype="int64[pyarrow]")),
                              _pd_plain),
        "datetime-tz": (_alone(lambda: pd.Series(pd.date_range("2024", periods=2, tz="UTC"))),
                        _pd_plain),
        "sparse": (_alone(lambda: pd.Series([0.0, 1.0], dtype="Sparse[float32]")), _pd_plain),
        "object": (_alone(lambda: pd.Series(["a", "b"])), _pd_plain),
        "category": (_alone(lambda: pd.Series([1, 2, 1], dtype="category")), _pd_plain),
    },
    "polars": {
        "plain": (_backed(lambda a: pl.Series("x", a)), _pl_plain),
        "sliced": (_backed(lambda a: pl.Series("x", a)[1:], 9), _pl_plain),
        "empty": (_alone(lambda: pl.Series("x", [], dtype=pl.Float32)), _pl_plain),
        "int64": (_backed(lambda a: pl.Series("x", a), dtype=np.int64), _pl_plain),
        "nulls": (_alone(lambda: pl.Series("x", [1.0, None, 3.0], dtype=pl.Float32)),
                  _pl_plain),
        "int-nulls": (_alone(lambda: pl.Series("x", [1, None, 3])), _pl_plain),
        "two-chunks": (_alone(lambda: _pl_two_chunks(pl.Float32)), _pl_plain),
        "two-chunks-float64": (_alone(lambda: _pl_two_chunks(pl.Float64)), _pl_plain),
        "bool": (_alone(lambda: pl.Series("x", [True, False, True])), _pl_plain),
        "string": (_alone(lambda: pl.Series("x", ["a", "b"])), _pl_plain),
        "date": (_alone(lambda: pl.Series("x", [datetime.date(2024, 1, 1)] * 2)), _pl_plain),
        "bool-nulls": (_alone(lambda: pl.Series("x", [True, None, False])), _pl_plain),
        "date-nulls": (_alone(lambda: pl.Series("x", [datetime.date(2024, 1, 1), None])),
                       _pl_plain),
        "empty-string": (_alone(lambda: pl.Series("x", [], dtype=pl.String)), _pl_plain),
        "array-string": (_alone(lambda: pl.Series("x", [["a"]], dtype=pl.Array(pl.String, 1))),
                         _pl_plain),
    },
    "jax": {
        "plain": (_alone(lambda: jnp.arange(8, dtype=jnp.float32)), lambda: jnp.zeros(4)),
        "2-d": (_alone(lambda: jnp.arange(12, dtype=jnp.float32).reshape(3, 4)),
                lambda: jnp.zeros(4)),
        "empty": (_alone(lambda: jnp.zeros(0, jnp.float32)), lambda: jnp.zeros(4)),
        "bool": (_alone(lambda: jnp.arange(8) % 3 == 0), lambda: jnp.zeros(4)),
        "int32": (_alone(lambda: jnp.arange(8, dtype=jnp.int32)), lambda: jnp.zeros(4)),
        "bfloat16": (_alone(lambda: jnp.arange(8, dtype=jnp.bfloat16)), lambda: jnp.zeros(4)),
    },
}


# ---- reading results ------------------------------------------------------------------------

def _values(v) -> np.ndarray:
    """A NumPy array of the values of ``v`` (any framework), read from its memory now."""
    if isinstance(v, np.ndarray):
        return np.asarray(v)
    if isinstance(v, torch.Tensor):
        t = v.detach().resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        if t.dtype == torch.float8_e4m3fn:
            return t.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn)
        return t.numpy()
    if isinstance(v, pa.FixedShapeTensorArray):
        return v.to_numpy_ndarray()  # an N-D array's rows, as Arrow reads them
    if isinstance(v, pa.Array | pa.ChunkedArray):
        return v.to_numpy(zero_copy_only=False)
    if isinstance(v, pl.Series | pd.Series):
        return v.to_numpy()
    return np.asarray(v)  # a JAX array


def _dtype(v):
    return v.type if isinstance(v, pa.Array | pa.ChunkedArray) else v.dtype


def _bump(v) -> None:
    """Change every value of ``v`` (a writable NumPy array or a torch tensor) in place."""
    if isinstance(v, torch.Tensor):
        with torch.no_grad():
            if v.dtype == torch.bool:
                v.logical_not_()
            else:
                v.fill_(100)  # add_ has no kernel for some dtypes (uint16); values are < 100
        return
    v = np.asarray(v)  # a masked array's data, a subclass as plain ndarray
    if v.dtype == np.bool_:
        np.logical_not(v, out=v)
    elif v.dtype.kind in "mM":
        w = v.view(np.int64)
        w += 1
    else:
        v += 1


def _write_seen(source, result) -> bool:
    """Whether a write through ``source`` (a writable NumPy array or tensor) shows in
    ``result``: the second proof of shared memory, beside equal data pointers."""
    before = _values(result).copy()
    _bump(source)
    return not np.array_equal(_values(result), before)


def _outcome(call):
    """``(result, None)`` or ``(None, error)`` for an ``InteropError``; anything else reaching
    the caller (a ``NeedsCopy``, a framework's own error) fails the test: both the fast and
    the checked plan must turn every refusal into interop's own error."""
    try:
        return call(), None
    except NeedsCopy as nc:  # pragma: no cover - the bug this file guards against
        pytest.fail(f"NeedsCopy escaped to the user: {nc.verdict}: {nc.reason}")
    except InteropError as e:
        return None, e
    except Exception as e:  # pragma: no cover - a raw framework error is a bug
        pytest.fail(f"a non-interop error reached the user: {type(e).__name__}: {e}")


class _Spy:
    """Counts the values a plan's fast form hands to its checked steps."""

    def __init__(self):
        self.calls = 0
        self.checked = None  # the checked plan alone (no fast form), for comparisons

    def wrap(self, step):
        def counted(x):
            self.calls += 1
            return step(x)

        return counted


def _warm(warm, target: str, tp: type, monkeypatch=None):
    """Forget every plan, plan ``(tp, target)`` with one call on ``warm`` (a plain value of
    type ``tp``) with its checked steps spied on, and return the spy (its count reset)."""
    import interop.fastplan as fastplan

    REG.clear_plans()
    spy = _Spy()
    real = fastplan.fast_plan

    def spying(steps, source_type, *split):
        return real([(a, u, c, spy.wrap(k)) for a, u, c, k in steps], source_type, *split)

    fastplan.fast_plan = spying
    try:
        for _ in range(2):  # the first call plans (checked), the second makes the fast form
            try:
                interop.to_framework(warm, target)
            except InteropError:  # a type with no plain conversion (strings): planned too
                pass
    finally:
        fastplan.fast_plan = real
    plan = REG.cache.get(tp, REG.target(target), None, None)
    assert plan.__code__.co_filename.startswith("<interop fast plan"), (
        f"no fast form for {tp.__name__} -> {target}")
    src = REG.owner(warm)
    spy.checked = REG.runner.compile(src, REG.target(target), None).run
    spy.calls = 0
    return spy


def _compare(x, target: str, warm):
    """Warm, then the planned call and the checked plan alone on ``x``: both outcomes and
    the spy."""
    spy = _warm(warm, target, type(x))
    got, got_err = _outcome(lambda: interop.to_framework(x, target))
    want, want_err = _outcome(lambda: spy.checked(x))
    return (got, got_err), (want, want_err), spy


def _assert_same(got, got_err, want, want_err):
    if want_err is not None or got_err is not None:
        assert got_err is not None and want_err is not None, (got_err, want_err)
        assert type(got_err) is type(want_err)
        assert str(got_err) == str(want_err)
        return
    assert type(got) is type(want)
    assert _dtype(got) == _dtype(want)
    assert getattr(got, "name", None) == getattr(want, "name", None)
    np.testing.assert_array_equal(_values(got), _values(want), strict=True)


def _assert_plan_refuses(plan, err):
    """``explain`` said the conversion is unsupported, with the error the call raised."""
    assert not plan.supported, (plan, err)
    assert isinstance(err, {"unsupported": UnsupportedConversionError,
                            "nulls": NullsError}[plan.error]), (plan, err)


def _params(cases, targets):
    return [pytest.param(name, t, id=f"{name}->{t}") for name in cases for t in targets]


def _other_params():
    return [pytest.param(src, name, t, id=f"{src}:{name}->{t}")
            for src, cases in OTHERS.items() for name in cases for t in (*TARGETS, "numpy")
            if t != src]


# ---- NumPy sources --------------------------------------------------------------------------

def test_a_fast_plan_serves_plain_values_without_the_checked_plan():
    for target in TARGETS:
        spy = _warm(_f32(), target, np.ndarray)
        a = _f32()
        out = interop.to_framework(a, target)
        assert spy.calls == 0, target  # the fast plan converted it
        assert shares(out, a) and data_pointer(out) == data_pointer(a), target
        assert _write_seen(a, out), target


def test_the_first_call_runs_the_checked_plan():
    REG.clear_plans()
    a = _misaligned(8, 16)
    j = interop.to_framework(a, "jax")  # plans, and runs the checked plan
    kept = REG.cache.get(np.ndarray, "jax", None, None)
    assert not kept.__code__.co_filename.startswith("<interop fast")
    interop.to_framework(a, "jax")  # the second call makes the fast form
    kept = REG.cache.get(np.ndarray, "jax", None, None)
    assert kept.__code__.co_filename.startswith("<interop fast plan")
    assert not shares(j, a) and j.unsafe_buffer_pointer() % 64 == 0
    np.testing.assert_array_equal(np.asarray(j), a)


@pytest.mark.parametrize(("case", "target"), _params(NUMPY, TARGETS))
def test_numpy_fast_plan_equals_checked_plan(case, target):
    x = NUMPY[case]()
    (got, got_err), (want, want_err), _ = _compare(x, target, _plain_numpy(x))
    _assert_same(got, got_err, want, want_err)
    if got_err is None:
        assert shares(got, x) == shares(want, x)


@pytest.mark.parametrize(("case", "target"), _params(NUMPY, TARGETS))
def test_numpy_fast_plan_tells_the_truth_about_copies(case, target):
    x = NUMPY[case]()
    spy = _warm(_plain_numpy(x), target, type(x))
    plan = interop.explain(x, target)
    got, err = _outcome(lambda: interop.to_framework(x, target))
    if err is not None:
        _assert_plan_refuses(plan, err)
        _, err_false = _outcome(lambda: interop.to_framework(x, target, copy=False))
        assert type(err_false) is type(err) and str(err_false) == str(err)
        return
    assert plan.supported, plan
    np.testing.assert_array_equal(_values(got), np.asarray(x))
    if not x.size:
        return  # an empty buffer shares nothing, whatever the plan says
    shared = shares(got, x)
    assert plan.zero_copy == shared, (plan, spy.calls)
    if shared:
        assert data_pointer(got) == data_pointer(x)
        assert shares(interop.to_framework(x, target, copy=False), x)
    else:
        with pytest.raises(ZeroCopyError):
            interop.to_framework(x, target, copy=False)
    if x.flags.writeable:  # a write through the source: seen in the result iff shared
        assert _write_seen(x, got) == shared
        if target == "torch" and shared:  # and a write through the result, seen in the source
            seen = np.asarray(x).copy()
            _bump(got)
            assert not np.array_equal(np.asarray(x), seen)


# ---- values the fast steps leave to the checked plan, and what XLA does itself -----------------

@pytest.mark.parametrize("offset", [1, 4, 8, 16, 32, 48])
@pytest.mark.parametrize("readonly", [False, True], ids=["writable", "readonly"])
def test_jax_copies_every_buffer_below_64_bytes_alignment(offset, readonly):
    """Warm NumPy -> JAX: XLA's own check (``from_dlpack(copy=False)``, ``device_put``) and
    the plan's 64-byte rule agree at every offset; a copy never shares, and is aligned."""
    a = _misaligned(8, offset)
    if readonly:
        _readonly(a)
    _warm(_f32(), "jax", np.ndarray)
    j = interop.to_framework(a, "jax")
    plan = interop.explain(a, "jax")
    why = "64-byte aligned" if offset % 4 == 0 else "not aligned to its itemsize"
    assert not plan.zero_copy and why in " ".join(plan.reasons), plan
    assert not shares(j, a) and j.unsafe_buffer_pointer() % 64 == 0
    np.testing.assert_array_equal(np.asarray(j), a)
    if not readonly:
        a += 1
        np.testing.assert_array_equal(np.asarray(j), a - 1)  # a copy: the write is not seen


@pytest.mark.parametrize("readonly", [False, True], ids=["writable", "readonly"])
def test_jax_aligned_buffer_is_served_zero_copy_by_the_fast_plan(readonly):
    a = _f32(16)
    if readonly:
        _readonly(a)
    spy = _warm(_f32(), "jax", np.ndarray)
    j = interop.to_framework(a, "jax")
    assert spy.calls == 0  # from_dlpack(copy=False) or device_put(may_alias=True) took it
    assert j.unsafe_buffer_pointer() == data_pointer(a)
    assert interop.explain(a, "jax").zero_copy
    a.flags.writeable = True
    a[3] = 42.0
    assert np.asarray(j)[3] == 42.0


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint64, np.complex128])
def test_jax_64_bit_types_narrow_as_the_checked_plan_does(dtype):
    assert not jax.config.jax_enable_x64
    a = aligned(np.arange(4), dtype)
    REG.clear_plans()
    with pytest.warns(interop.NarrowingWarning) as w_cold:
        cold = interop.to_framework(a, "jax")  # the first call: checked plan
    spy = _warm(_f32(), "jax", np.ndarray)
    with pytest.warns(interop.NarrowingWarning) as w_warm:
        warm = interop.to_framework(a, "jax")
    _, no_copy = _outcome(lambda: interop.to_framework(a, "jax", copy=False))
    assert cold.dtype == warm.dtype and cold.dtype.itemsize == a.dtype.itemsize // 2
    assert len(w_cold) == len(w_warm) == 1 and str(w_cold[0].message) == str(w_warm[0].message)
    assert isinstance(no_copy, ZeroCopyError) and "64-bit" in str(no_copy)
    assert spy.calls == 1  # the fast plan left it to the checked plan


@pytest.mark.parametrize("target", [*TARGETS, "dlpack"])
def test_a_masked_array_is_refused_before_any_route(target):
    """Every target would drop or reinterpret the mask (DLPack export included): the registry
    refuses the source type itself, on every call, and only NumPy takes it as it is."""
    m = np.ma.masked_array(_f32(), mask=[0, 1, 0, 0, 0, 0, 0, 0])
    for _ in range(2):  # no plan is cached that would let the second call through
        with pytest.raises(UnsupportedConversionError, match="lose its mask"):
            interop.to_framework(m, target)
    plan = interop.explain(m, target)
    assert not plan.supported and "mask" in " ".join(plan.reasons), plan
    assert not interop.can_convert(m, target)
    assert interop.to_framework(m, "numpy") is m


def test_aligned_memmap_to_jax_is_zero_copy():
    m = _memmap()
    assert data_pointer(m) % 64 == 0
    _warm(_plain_numpy(m), "jax", np.memmap)
    j = interop.to_framework(m, "jax")
    assert interop.explain(m, "jax").zero_copy
    assert j.unsafe_buffer_pointer() == data_pointer(m)
    assert _write_seen(m, j)


def test_a_value_outside_the_fast_form_goes_to_the_checked_step():
    """A value the first edge does not accept (a layout, a dtype, a byte order) is handed to
    the checked step once, with the checked plan's outcome; one it accepts (a strided array
    pyarrow.array copies itself) never is."""
    for target, x, handed in (("jax", np.arange(4.0), 1), ("jax", _f32()[::-1], 1),
                              ("pyarrow", _f32(16)[::2], 0), ("polars", _misaligned(8, 1), 0),
                              ("torch", _f32()[::-1], 1), ("pandas", _f32(12).reshape(3, 4), 1),
                              ("torch", aligned(np.arange(3), ">f4"), 1)):
        spy = _warm(_f32(), target, np.ndarray)
        got, got_err = _outcome(lambda x=x, target=target: interop.to_framework(x, target))
        assert spy.calls == handed, (target, x)
        assert got_err is None or isinstance(got_err, InteropError), (target, got_err)
        want, want_err = _outcome(lambda x=x, fn=spy.checked: fn(x))
        _assert_same(got, got_err, want, want_err)


# ---- other sources, and the plans of two steps -----------------------------------------------

@pytest.mark.parametrize(("source", "case", "target"), _other_params())
def test_other_sources_fast_plan_equals_checked_plan(source, case, target):
    make, warm = OTHERS[source][case]
    x, backing = make()
    (got, got_err), (want, want_err), _ = _compare(x, target, warm())
    _assert_same(got, got_err, want, want_err)
    if got_err is None and _values(x).size:
        origin = x if backing is None else backing
        assert shares(got, origin) == shares(want, origin)


@pytest.mark.parametrize(("source", "case", "target"), _other_params())
def test_other_sources_fast_plan_tells_the_truth_about_copies(source, case, target):
    make, warm = OTHERS[source][case]
    x, backing = make()
    spy = _warm(warm(), target, type(x))
    plan = interop.explain(x, target)
    got, err = _outcome(lambda: interop.to_framework(x, target))
    if err is not None:
        _assert_plan_refuses(plan, err)
        return
    assert plan.supported, plan
    np.testing.assert_array_equal(_values(got), _values(x))
    if not _values(x).size:
        return
    shared = shares(got, x if backing is None else backing)
    assert plan.zero_copy == shared, (plan, spy.calls)
    if shared:
        assert data_pointer(got) == data_pointer(x)
    else:
        with pytest.raises(ZeroCopyError):
            interop.to_framework(x, target, copy=False)
    writable = backing if backing is not None else x if isinstance(x, torch.Tensor) else None
    if writable is not None:  # a write through the source: seen in the result iff shared
        before = _values(got).copy()
        _bump(writable)
        assert not np.array_equal(_values(x), before)  # the source saw it
        assert (not np.array_equal(_values(got), before)) == shared


TWO_STEP = {
    "torch->pyarrow": (lambda a: torch.from_numpy(a), "pyarrow"),
    "jax->polars": (lambda a: jax.dlpack.from_dlpack(a), "polars"),
    "pyarrow->jax": (lambda a: pa.array(a), "jax"),
    "pandas->jax": (lambda a: pd.Series(a, copy=False), "jax"),
    "polars->jax": (lambda a: pl.Series("x", a), "jax"),
    "torch->jax": (lambda a: torch.from_numpy(a), "jax"),
    "jax->torch": (lambda a: jax.dlpack.from_dlpack(a), "torch"),
    "pandas->polars": (lambda a: pd.Series(a, copy=False), "polars"),
}


@pytest.mark.parametrize("pair", TWO_STEP)
def test_plans_through_numpy_stay_zero_copy_on_the_fast_plan(pair):
    wrap, target = TWO_STEP[pair]
    warm_src = wrap(_f32(64))
    a = _f32(64)
    x = wrap(a)
    assert data_pointer(x) == data_pointer(a)
    spy = _warm(warm_src, target, type(x))
    out = interop.to_framework(x, target)
    assert spy.calls == 0  # every step's fast form took it
    plan = interop.explain(x, target)
    assert plan.zero_copy, plan
    assert data_pointer(out) == data_pointer(x) == data_pointer(a)
    np.testing.assert_array_equal(_values(out), np.arange(64, dtype=F32), strict=True)
    a[5] = -1.0  # the one buffer: a write through it is seen in the source and the result
    assert _values(x)[5] == -1.0 and _values(out)[5] == -1.0


@pytest.mark.parametrize("pair", ["pyarrow->jax", "pandas->jax", "polars->jax", "torch->jax"])
def test_plans_to_jax_copy_a_misaligned_source(pair):
    wrap, target = TWO_STEP[pair]
    a = _misaligned(64, 16)
    x = wrap(a)
    spy = _warm(wrap(_f32(64)), target, type(x))
    out = interop.to_framework(x, target)
    plan = interop.explain(x, target)
    assert not plan.zero_copy and "64-byte aligned" in " ".join(plan.reasons), plan
    assert not shares(out, x) and out.unsafe_buffer_pointer() % 64 == 0
    np.testing.assert_array_equal(_values(out), np.arange(64, dtype=F32), strict=True)
    a[5] = -1.0
    assert _values(out)[5] == 5.0
    assert spy.calls <= 1


# ---- lifetimes, and many shapes through one fast plan -----------------------------------------

def _owner(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@pytest.mark.parametrize("readonly", [False, True], ids=["writable", "readonly"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_fast_zero_copy_result_keeps_the_source_memory_alive(target, readonly):
    a = _f32(1024)
    if readonly:
        _readonly(a)
    ref = weakref.ref(_owner(a))
    spy = _warm(_f32(), target, np.ndarray)
    out = interop.to_framework(a, target)
    assert spy.calls == 0 and data_pointer(out) == data_pointer(a)
    a.flags.writeable = True
    assert _write_seen(a, out)
    a[:] = np.arange(1024)
    del a
    gc.collect(0)
    assert ref() is not None  # the result holds the NumPy memory it reads
    np.testing.assert_array_equal(_values(out), np.arange(1024, dtype=F32))
    del out
    if ref() is not None:  # a full collection only if a cycle holds it (it is slow here)
        gc.collect()
    assert ref() is None  # and lets it go with itself


def test_a_fast_arrow_to_jax_result_keeps_the_arrow_buffer_alive():
    n = 1 << 18
    spy = _warm(pa.array([0.0], pa.float32()), "jax", pa.FloatArray)
    base = pa.total_allocated_bytes()
    x = pa.array(range(n), pa.float32())  # pyarrow's own (64-byte aligned) memory
    ptr = x.buffers()[1].address
    j = interop.to_framework(x, "jax")
    assert spy.calls == 0 and j.unsafe_buffer_pointer() == ptr
    del x
    gc.collect(0)
    assert pa.total_allocated_bytes() >= base + 4 * n
    np.testing.assert_array_equal(np.asarray(j), np.arange(n, dtype=F32))
    del j
    if pa.total_allocated_bytes() >= base + 4 * n:
        gc.collect()
    assert pa.total_allocated_bytes() < base + 4 * n


def test_one_fast_plan_serves_many_lengths_and_dtypes():
    """The fast steps cache per dtype and per byte length: 300 lengths, four dtypes (some of
    one byte length), each zero-copy with its own values, wherever it is served."""
    for target, wrap in (("jax", pa.array), ("jax", lambda a: a), ("torch", pa.array),
                         ("polars", lambda a: a)):
        dtypes = (F32, np.int32, np.uint8, np.float16)
        x0 = wrap(aligned(np.arange(4), F32))
        _warm(x0, target, type(x0))
        for n in range(1, 301):
            dt = dtypes[n % 4]
            a = aligned(np.arange(n) % 100, dt)
            x = wrap(a)
            if type(x) is not type(x0):
                _warm(x, target, type(x))  # a pyarrow class per Arrow type
            out = interop.to_framework(x, target)
            assert data_pointer(out) == data_pointer(a), (target, n, dt)
            np.testing.assert_array_equal(_values(out), a, strict=True)
            assert _write_seen(a, out), (target, n, dt)


def test_a_framework_refusal_in_a_fast_step_goes_to_the_checked_plan():
    """``Array.to_numpy(zero_copy_only=True)`` refuses bit-packed booleans (ArrowInvalid);
    the checked plan unpacks them (a recorded copy)."""
    import pyarrow as pa

    spy = _warm(pa.array([True]), "torch", pa.BooleanArray)
    t = interop.to_framework(pa.array([True, False, True]), "torch")
    assert spy.calls == 1
    assert t.tolist() == [True, False, True]


def test_a_table_column_takes_the_fast_plan():
    """A one-chunk ChunkedArray (what a Table holds) is viewed through its chunk, fast."""
    import pyarrow as pa

    spy = _warm(pa.chunked_array([_f32(4)]), "torch", pa.ChunkedArray)
    x = aligned(np.arange(8, dtype=F32))
    t = interop.to_framework(pa.chunked_array([pa.array(x)]), "torch")
    assert spy.calls == 0
    assert t.tolist() == list(range(8))
    assert t.data_ptr() == data_pointer(x)
    assert _write_seen(x, t)


@pytest.mark.parametrize("target", ["jax", "pyarrow", "polars", "torch"])
def test_a_dlpack_capsule_is_read_once_even_when_the_checked_plan_decides(target):
    """A capsule is consumed by reading it: the checked plan must be the only one to read it
    (capsule plans are per value, so no fast plan is cached for them)."""
    REG.clear_plans()
    interop.to_framework(aligned(np.arange(8, dtype=F32)).__dlpack__(), target)  # plans built
    for x in (_misaligned(8, 4), _f32(16)[::2], _f32(16)[::-1]):  # copied on some routes
        y = interop.to_framework(x.__dlpack__(), target)
        np.testing.assert_array_equal(_values(y), x)


def test_a_dense_arrow_table_converts_column_by_column_without_preparation(monkeypatch):
    """Numeric Arrow columns without nulls go straight to the registry, zero-copy; a table
    with any other column takes the full path (which names the column with nulls)."""
    import pyarrow as pa

    from interop.tables import columns

    xs = {f"c{i}": aligned(np.arange(8, dtype=F32) + i) for i in range(3)}
    table = pa.table({n: pa.array(x) for n, x in xs.items()})
    monkeypatch.setattr(columns, "prepare", None)  # the dense path must not call it
    out = interop.to_framework(table, "torch")
    assert [t.data_ptr() for t in out.values()] == [data_pointer(x) for x in xs.values()]
    assert out["c2"].tolist() == (np.arange(8) + 2).tolist()
    assert all(_write_seen(x, t) for x, t in zip(xs.values(), out.values()))
    monkeypatch.undo()
    holes = table.append_column("h", pa.array([1.0, None] * 4, pa.float32()))
    with pytest.raises(NullsError, match="'h'"):
        interop.to_framework(holes, "torch")


@pytest.mark.parametrize("target", ["numpy", "jax"])
@pytest.mark.parametrize(("kind", "copy"), [("requires-grad", None), ("requires-grad", False),
                                            ("bfloat16", None), ("bfloat16", False)])
def test_torch_is_not_asked_for_a_numpy_view_it_would_refuse(monkeypatch, kind, copy, target):
    """torch's refusal (``Tensor.numpy()`` on a tensor that requires grad, or of a dtype NumPy
    lacks) costs about 10 us: neither the checked plan nor the fast plan (which calls
    ``Tensor.numpy`` itself, after its guard's dtype and ``requires_grad`` tests) asks."""
    refused = []
    numpy = torch.Tensor.numpy

    def spy(t, *args, **kwargs):
        if t.requires_grad or t.dtype == torch.bfloat16:
            refused.append(t.dtype)
        return numpy(t, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "numpy", spy)
    REG.clear_plans()  # the fast step takes Tensor.numpy when its plan is made
    x = (torch.arange(8.0, requires_grad=True) if kind == "requires-grad"
         else torch.arange(8.0).to(torch.bfloat16))
    for _ in range(2):  # the first call plans, the second takes the fast plan
        got, err = _outcome(lambda: interop.to_framework(x, target, copy=copy))
    assert refused == []
    assert err is None, err  # every case is zero-copy: pointers, and a write seen
    assert shares(got, x) and data_pointer(got) == data_pointer(x)
    assert _write_seen(x, got)


@pytest.mark.parametrize("flags", ["C_CONTIGUOUS", "ALIGNED", "WRITEABLE",
                                   "C_CONTIGUOUS|ALIGNED", "C_CONTIGUOUS|ALIGNED|WRITEABLE"])
def test_a_fast_form_takes_only_arrays_with_every_flag_its_accepts_names(flags):
    """One flag is read as its ``ndarray.flags`` attribute, several as bits of ``flags.num``:
    either way an array lacking any of them goes to the checked step, whose truth here is
    NumPy's own flags object."""
    from interop import fastplan
    from interop.adapters import edge

    names = flags.split("|")
    bits = sum(getattr(edge, n) for n in names)
    converted, checked = [], []
    plan = fastplan.fast_plan(
        [(edge.Accepts(lambda: (np.ndarray,), flags=bits), False,
          lambda a: converted.append(a) or a, lambda a: checked.append(a) or a)], np.ndarray)
    arrays = [_f32(), _misaligned(8, 1), _f32(16)[::2], _readonly(_f32()),
              _f32(12).reshape(3, 4).T, _readonly(_misaligned(8, 2))]
    for a in arrays:
        plan(a)
    want = [a for a in arrays if all(a.flags[n] for n in names)]
    assert [id(a) for a in converted] == [id(a) for a in want]
    assert len(converted) + len(checked) == len(arrays) and 0 < len(want) < len(arrays)
