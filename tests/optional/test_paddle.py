"""PaddlePaddle in the conversion matrix: every pair with the other CPU frameworks (TensorFlow
included), the guards.

Runs in its own pytest process (``pytest -m paddle``; scripts/test.sh does it). The core run
collects this file but never imports paddle: every import of it is inside a fixture or a
test. paddle is imported before tensorflow here (the other order segfaults).

A zero-copy claim is proved by data pointers and by a write through one side seen on the
other (paddle tensors are writable, so the write goes through paddle where it can).
"""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

import interop
import oracles
from helpers import (
    assert_same_array,
    assert_zero_copy_with_every_cpu_framework,
    check_narrowed,
    report_upstream,
    run_child,
    run_cli_json,
)
from interop.errors import UnsupportedConversionError, ZeroCopyError
from machine import jax_on_cpu
from matrix_samples import (
    DTYPES,
    NARROWED,
    SOURCE_DTYPES,
    TARGET_DTYPES,
    as_numpy,
    build,
    marker,
    np_layout,
    poke,
    raw_pointer,
    values,
)

pytestmark = [pytest.mark.paddle]

ROOT = Path(__file__).resolve().parents[2]
OTHERS = ["numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack"]
PADDLE_DTYPES = [d for d in DTYPES if d != "uint16"]  # paddle reads uint16 as bfloat16
BIT_PACKED = {"pyarrow", "polars"}
IMMUTABLE_SOURCES = {"jax", "pyarrow", "pandas", "polars"}  # reach paddle as read-only memory


@pytest.fixture(scope="module")
def paddle():
    import paddle

    return paddle


@pytest.fixture(scope="module")
def tf(paddle):
    import tensorflow as tf  # after paddle: the other order segfaults

    return tf


def pd_values(t) -> np.ndarray:
    """A tensor's values with paddle's own API (``numpy()`` copies; bfloat16/float8 come back
    as raw bits, viewed here as ml_dtypes)."""
    name = str(t.dtype).rpartition(".")[2]
    a = t.numpy()
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes

        a = a.view(getattr(ml_dtypes, name))
    return a


def pd_tensor(dt: str, shape=(8,)):
    """A paddle-allocated tensor of ``dt`` (uint32/uint64: imported, paddle cannot create them)."""
    import paddle

    want = values(DTYPES[dt], shape)
    if dt in ("bfloat16",):
        t = paddle.to_tensor(want.astype(np.float32)).astype(dt)
    elif dt in ("uint32", "uint64"):
        t = paddle.utils.dlpack.from_dlpack(values(DTYPES[dt], shape))
    else:
        t = paddle.to_tensor(want)
    assert str(t.dtype) == f"paddle.{dt}", t.dtype
    return t, want


def pd_write(t, m) -> None:
    """Write ``m`` at index 0 through paddle (its setitem), or raw for dtypes without a kernel."""
    try:
        t[0] = m.item() if hasattr(m, "item") else m
    except (RuntimeError, TypeError, ValueError):  # uint32/uint64: paddle has no set_value
        name = str(t.dtype).rpartition(".")[2]
        poke(t.data_ptr(), DTYPES[name], m)


def peek(ptr: int, dtype: np.dtype, n: int) -> np.ndarray:
    """A copy of ``n`` elements of ``dtype`` at address ``ptr`` (raw memory, no framework)."""
    import ctypes

    return np.frombuffer(bytes((ctypes.c_char * (n * dtype.itemsize)).from_address(ptr)),
                         dtype).copy()


# ---- every other CPU framework -> paddle ----------------------------------------------------

INTO = [pytest.param(src, dt, id=f"{src}-{dt}") for src in OTHERS for dt in SOURCE_DTYPES[src]]


@pytest.mark.parametrize(("src", "dt"), INTO)
def test_into_paddle(paddle, src, dt):
    s = build(src, dt, "C", one_d=True)
    plan = interop.explain(s.value, "paddle")
    if dt == "uint16":
        assert not plan.supported and "reads uint16 buffers as bfloat16" in plan.reasons[0]
        with pytest.raises(UnsupportedConversionError, match="no uint16 dtype"):
            interop.to_framework(build(src, dt, "C", one_d=True).value, "paddle")
        return
    copies = dt == "bool" and src in BIT_PACKED
    assert plan.supported and plan.zero_copy == (not copies), plan
    s = build(src, dt, "C", one_d=True)
    t = interop.to_framework(s.value, "paddle")
    assert isinstance(t, paddle.Tensor)
    assert_same_array(pd_values(t), s.expected)
    if copies:
        return
    assert t.data_ptr() == s.ptr  # the pointer proof
    if src in IMMUTABLE_SOURCES:  # paddle cannot be read-only: the plan says so
        assert any("cannot be read-only" in h for h in plan.hazards), plan
    # the write proof: through paddle, seen by the source with its own API
    m = marker(s.expected.dtype, s.expected[0])
    pd_write(t, m)
    want = s.expected.copy()
    want[0] = m
    # a capsule source is consumed: its memory is read raw
    seen = np.asarray(as_numpy(s.value)) if src != "dlpack" else peek(s.ptr, want.dtype, 8)
    assert_same_array(seen, want)
    # copy=False works, copy=True never shares
    s = build(src, dt, "C", one_d=True)
    assert interop.to_framework(s.value, "paddle", copy=False).data_ptr() == s.ptr
    s = build(src, dt, "C", one_d=True)
    fresh = interop.to_framework(s.value, "paddle", copy=True)
    assert fresh.data_ptr() != s.ptr
    assert_same_array(pd_values(fresh), s.expected)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "broadcast", "0-d", "empty", "read-only"])
def test_numpy_layouts_into_paddle_are_zero_copy(paddle, layout):
    """paddle imports strided, Fortran-order and broadcast buffers in place (and computes
    on them correctly)."""
    a = np_layout(DTYPES["float32"], layout, one_d=False)
    want = np.array(a)
    plan = interop.explain(a, "paddle")
    assert plan.zero_copy, plan
    assert bool(plan.hazards) == (not a.flags.writeable), plan  # read-only and broadcast
    t = interop.to_framework(a, "paddle", copy=False)
    assert_same_array(pd_values(t), want)
    if not a.size:
        return
    assert t.data_ptr() == a.__array_interface__["data"][0]
    assert_same_array((t + 1).numpy(), want + 1)  # paddle computes on the strides as they are
    if a.ndim == 2 and layout != "broadcast":  # the write proof: through paddle, seen by
        # NumPy at the same element (a broadcast element stands for a whole column)
        t[1, 2] = 42.0
        assert a[1, 2] == 42.0


def test_misaligned_numpy_into_paddle_is_zero_copy_and_computes(paddle):
    raw = values(DTYPES["uint8"], (4096 + 128,))
    a = raw[4:4 + 4096].view(np.float32).reshape(32, 32)
    a[:] = np.arange(1024, dtype=np.float32).reshape(32, 32)
    t = interop.to_framework(a, "paddle", copy=False)
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_allclose((t @ t).numpy(), a @ a)
    assert float(t.sum()) == float(a.sum())


# ---- paddle -> every other CPU framework ----------------------------------------------------

OUT = [pytest.param(tgt, dt, id=f"{tgt}-{dt}") for tgt in OTHERS for dt in PADDLE_DTYPES]


@pytest.mark.parametrize(("tgt", "dt"), OUT)
def test_out_of_paddle(paddle, tgt, dt):
    t, want = pd_tensor(dt)
    plan = interop.explain(t, tgt)
    if (tgt, dt) in NARROWED:  # JAX with 64-bit types off narrows: one copy, one warning
        check_narrowed(lambda: pd_tensor(dt)[0], want, NARROWED[tgt, dt], tgt)
        return
    if dt not in TARGET_DTYPES[tgt]:
        assert not plan.supported and plan.error == "unsupported", plan
        with pytest.raises(UnsupportedConversionError, match=dt):
            interop.to_framework(t, tgt)
        return
    copies = dt == "bool" and tgt in BIT_PACKED
    assert plan.supported and plan.zero_copy == (not copies), plan
    r = interop.to_framework(t, tgt)
    if copies:
        assert_same_array(np.asarray(as_numpy(r)), want)
        return
    assert raw_pointer(r) == t.data_ptr()  # the pointer proof
    # the write proof: through paddle, seen in the result with its own API
    m = marker(want.dtype, want[0])
    pd_write(t, m)
    expected = want.copy()
    expected[0] = m
    assert_same_array(np.asarray(as_numpy(r)), expected)
    assert_same_array(pd_values(t), expected)


def test_two_dimensional_and_strided_paddle_out(paddle):
    base = paddle.arange(24, dtype="float32").reshape([4, 6])
    for name, t in (("C", base), ("T", base.T), ("cols", base[:, ::2]), ("rows", base[1:])):
        for tgt in ("numpy", "torch"):
            r = interop.to_framework(t, tgt, copy=False)
            assert raw_pointer(r) == t.data_ptr(), (name, tgt)
            assert_same_array(np.asarray(as_numpy(r)), t.numpy())
        plan = interop.explain(t, "jax")  # JAX needs compact, 64-byte aligned buffers
        assert plan.zero_copy == (name == "C"), (name, plan)
        if name == "rows":
            assert "64-byte aligned" in plan.reasons[0], plan
        assert_same_array(np.asarray(interop.to_framework(t, "jax")), t.numpy())


def test_paddle_negative_strides_are_guarded(paddle):
    """paddle's own slices have negative strides; torch would abort on them, JAX and
    TensorFlow refuse them: interop copies, and says why."""
    t = paddle.arange(8, dtype="float32")[::-1]
    assert t.strides == [-1]
    want = np.arange(8, dtype=np.float32)[::-1]
    n = interop.to_framework(t, "numpy", copy=False)  # NumPy takes negative strides
    assert n.ctypes.data == t.data_ptr() and n.strides == (-4,)
    assert_same_array(n, want)
    for tgt, words in (("torch", "negative strides"), ("jax", "negative strides")):
        plan = interop.explain(t, tgt)
        assert not plan.zero_copy and words in plan.reasons[0], plan
        with pytest.raises(ZeroCopyError, match="negative strides"):
            interop.to_framework(t, tgt, copy=False)
        assert_same_array(np.asarray(as_numpy(interop.to_framework(t, tgt))), want)


def test_negative_strides_into_paddle_are_copied_with_the_reason(paddle):
    for src in ("numpy", "dlpack"):
        s = build(src, "float32", "negative", one_d=True)
        plan = interop.explain(s.value, "paddle")
        assert not plan.zero_copy and "PaddlePaddle cannot import them" in plan.reasons[0], plan
        s = build(src, "float32", "negative", one_d=True)
        with pytest.raises(ZeroCopyError, match="MemoryError"):
            interop.to_framework(s.value, "paddle", copy=False)
        s = build(src, "float32", "negative", one_d=True)
        t = interop.to_framework(s.value, "paddle")
        assert_same_array(pd_values(t), s.expected)
    for n in (2, 3, 8):  # 2 elements: where paddle itself returned wrong values
        a = values(DTYPES["float64"], (n,))[::-1]
        assert_same_array(pd_values(interop.to_framework(a, "paddle")), np.array(a))


def test_probe_raw_paddle_on_negative_strides():
    """The misbehaviour itself, in a child process: a MemoryError or wrong values (reported;
    interop copies negative strides into paddle either way, the test above)."""
    out = run_child("""
        import numpy as np, paddle
        from interop.host import fresh_copy
        for n in (2, 4, 8):
            a = fresh_copy(np.arange(float(n)))[::-1]
            try:
                got = paddle.utils.dlpack.from_dlpack(a).numpy()
                print(n, "ok" if np.array_equal(got, a) else "wrong")
            except MemoryError:
                print(n, "MemoryError")
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    results = dict(line.split() for line in out.stdout.strip().splitlines())
    assert set(results) == {"2", "4", "8"}, results
    report_upstream("paddle misreads negative strides", "ok" not in results.values())


def test_uint16_is_refused_because_paddle_reads_it_as_bfloat16(paddle):
    a = values(DTYPES["uint16"], (4,))
    raw = paddle.utils.dlpack.from_dlpack(a)  # the misbehaviour (a probe: reported)
    report_upstream("paddle reads uint16 as bfloat16", str(raw.dtype) == "paddle.bfloat16")
    plan = interop.explain(a, "paddle")
    assert not plan.supported and "cast to int32 first" in plan.reasons[0], plan
    for src in (a, __import__("torch").from_numpy(a)):
        with pytest.raises(UnsupportedConversionError, match="uint16"):
            interop.to_framework(src, "paddle")
    widened = a.astype(np.int32)
    assert_same_array(pd_values(interop.to_framework(widened, "paddle")), widened)


def test_read_only_numpy_into_paddle_records_the_hazard(paddle):
    a = values(DTYPES["float32"], (4,))
    a.flags.writeable = False
    raw = paddle.utils.dlpack.from_dlpack(a)  # the misbehaviour: a writable alias (a probe)
    raw[0] = 7.0
    report_upstream("paddle writes through read-only NumPy", a[0] == 7.0)
    plan = interop.explain(a, "paddle")
    assert plan.zero_copy and any("ignores the" in h for h in plan.hazards), plan
    cap = values(DTYPES["float32"], (4,))
    cap.flags.writeable = False
    plan = interop.explain(cap.__dlpack__(max_version=(1, 1)), "paddle")
    assert any("cannot be read-only" in h for h in plan.hazards), plan


def test_jax_into_paddle_records_the_hazard(paddle):
    import jax.numpy as jnp

    with jax_on_cpu():  # the CPU tensor pair, on a GPU host too
        x = jnp.arange(8, dtype=jnp.float32)
    plan = interop.explain(x, "paddle")
    assert plan.zero_copy and any("cannot be read-only" in h for h in plan.hazards), plan
    t = interop.to_framework(x, "paddle", copy=False)
    assert t.data_ptr() == x.unsafe_buffer_pointer()


def test_paddle_tensor_that_requires_grad_is_exported_detached(paddle):
    t = paddle.arange(4, dtype="float32")
    t.stop_gradient = False
    try:  # what paddle itself does (a probe: reported)
        t.__dlpack__()
        refused = False
    except BufferError as e:
        assert "requires gradients" in str(e), e
        refused = True
    report_upstream("paddle refuses to export a tensor that requires grad", refused)
    for tgt in ("torch", "numpy", "jax"):
        r = interop.to_framework(t, tgt, copy=False)
        assert raw_pointer(r) == t.data_ptr()
    pd_write(t, 7.0)  # a write through paddle, read through the last result's own API
    assert np.asarray(r)[0] == 7.0


def test_paddle_device_id_none_is_fixed_for_jax(paddle):
    import jax

    t = paddle.arange(4, dtype="float32")
    try:  # what paddle itself says, and what JAX does with it (a probe: reported)
        jax.dlpack.from_dlpack(t)
        refused = False
    except TypeError:
        refused = True
    report_upstream("paddle's __dlpack_device__ id None breaks jax.dlpack.from_dlpack",
                    t.__dlpack_device__()[1] is None and refused)
    r = interop.to_framework(t, "jax", copy=False)
    assert r.unsafe_buffer_pointer() == t.data_ptr()
    pd_write(t, 5.0)  # a write through paddle, read through JAX
    assert float(np.asarray(r)[0]) == 5.0


def test_paddle_capsule_round_trip(paddle):
    t, want = pd_tensor("bfloat16")
    cap = interop.to_framework(t, "dlpack")
    info = oracles.read_capsule(cap)
    assert info.name == "dltensor_versioned" and info.ptr == t.data_ptr()
    back = interop.to_framework(cap, "paddle")
    assert back.data_ptr() == t.data_ptr()
    assert_same_array(pd_values(back), want)
    m = marker(want.dtype, want[0])
    pd_write(t, m)  # a write through the source tensor, read through the result
    assert pd_values(back)[0] == m


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_ml_dtypes_both_ways_zero_copy(paddle, name):
    import ml_dtypes

    a = values(np.dtype(getattr(ml_dtypes, name)), (8,))
    t = interop.to_framework(a, "paddle", copy=False)
    assert str(t.dtype) == f"paddle.{name}" and t.data_ptr() == a.ctypes.data
    back = interop.to_framework(t, "numpy", copy=False)
    assert back.dtype == a.dtype and back.ctypes.data == a.ctypes.data
    r = interop.to_framework(t, "torch", copy=False)
    assert r.data_ptr() == a.ctypes.data and str(r.dtype) == f"torch.{name}"


def test_lifetimes(paddle):
    a = values(DTYPES["float64"], (1024,))
    want = a.copy()
    t = interop.to_framework(a, "paddle", copy=False)
    del a
    gc.collect()
    _junk = [np.full(1024, 7.0) for _ in range(64)]
    assert_same_array(t.numpy(), want)
    for tgt in ("numpy", "torch", "jax"):
        t, want = pd_tensor("float32", (1024,))
        r = interop.to_framework(t, tgt, copy=False)
        del t
        gc.collect()
        _junk = [paddle.full([1024], 7.0) for _ in range(64)]
        assert_same_array(np.asarray(as_numpy(r)), want)


# ---- tensorflow <-> paddle ------------------------------------------------------------------

@pytest.mark.parametrize("dt", [d for d in PADDLE_DTYPES
                                if not d.startswith("float8")])
def test_tensorflow_to_paddle(tf, dt):
    t = tf.constant(values(DTYPES[dt], (8,)))
    want = np.asarray(t).copy()
    ptr = oracles.pointer(t)  # TF's own DLPack export, read by the tests' reader
    plan = interop.explain(t, "paddle")
    assert plan.zero_copy and any("cannot be read-only" in h for h in plan.hazards), plan
    p = interop.to_framework(t, "paddle", copy=False)
    assert p.data_ptr() == ptr
    assert_same_array(pd_values(p), want)
    m = marker(want.dtype, want[0])
    pd_write(p, m)  # what the hazard warns about: TF's "immutable" tensor changes
    assert np.asarray(t)[0] == m


@pytest.mark.parametrize("dt", [d for d in PADDLE_DTYPES if not d.startswith("float8")])
def test_paddle_to_tensorflow(tf, dt):
    p, want = pd_tensor(dt)
    plan = interop.explain(p, "tensorflow")
    assert plan.zero_copy and any("immutable" in h for h in plan.hazards), plan
    t = interop.to_framework(p, "tensorflow", copy=False)
    assert oracles.pointer(t) == p.data_ptr()
    assert_same_array(np.asarray(t), want)
    m = marker(want.dtype, want[0])
    pd_write(p, m)
    assert np.asarray(t)[0] == m


def test_paddle_views_into_tensorflow_are_guarded(tf, paddle):
    base = paddle.arange(24, dtype="float32").reshape([4, 6])
    for t, words in ((base.T, "compact row-major"), (base[:, ::2], "compact row-major"),
                     (paddle.arange(8, dtype="float32")[::-1], "compact row-major")):
        plan = interop.explain(t, "tensorflow")
        assert not plan.zero_copy and words in plan.reasons[0], plan
        assert_same_array(np.asarray(interop.to_framework(t, "tensorflow")), t.numpy())


def test_misaligned_paddle_into_tensorflow_is_copied():
    """A paddle tensor over a misaligned buffer would make TensorFlow abort: a child process,
    so a broken guard fails this test instead of killing the run."""
    out = run_child("""
        import numpy as np, paddle
        import tensorflow as tf, interop
        raw = np.zeros(4096 + 128, np.uint8)
        off = (-raw.ctypes.data) % 64 + 4
        a = raw[off:off + 4096].view(np.float32)
        a[:] = np.arange(1024)
        p = paddle.utils.dlpack.from_dlpack(a)
        plan = interop.explain(p, "tensorflow")
        assert not plan.zero_copy and "abort" in plan.reasons[0], plan
        t = interop.to_framework(p, "tensorflow")
        print(float(tf.reduce_sum(t)))
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "523776.0" in out.stdout


def test_raw_import_order_segfaults_but_interop_refuses():
    """The segfault is probed in a child (reported); interop refuses either way."""
    raw = run_child("import tensorflow; import paddle; print('survived')")
    report_upstream("importing paddle after tensorflow segfaults",
                    raw.returncode != 0 and "survived" not in raw.stdout)
    guarded = run_child("""
        import sys, numpy as np
        import tensorflow, interop
        from interop.errors import UnsupportedConversionError
        plan = interop.explain(np.zeros(4, np.float32), "paddle")
        assert not plan.supported, plan
        try:
            interop.to_framework(np.zeros(4, np.float32), "paddle")
        except UnsupportedConversionError as e:
            print("refused:", e)
        assert "paddle" not in sys.modules
    """)
    assert guarded.returncode == 0, guarded.stderr[-2000:]
    assert "refused:" in guarded.stdout and "import paddle before tensorflow" in guarded.stdout


# ---- detection, routes, table, doctor, docs -------------------------------------------------

def test_detection_aliases_and_routes(paddle):
    from interop.api import REGISTRY

    t = paddle.to_tensor([1.0])
    assert interop.explain(t, "PaddlePaddle").target == "paddle"
    param = paddle.create_parameter([2], "float32")
    assert interop.explain(param, "numpy").source == "paddle"
    rows = {r["name"]: r for r in interop.frameworks()}
    assert rows["paddle"]["imported"] and {"DLPack export", "DLPack import"} <= set(
        rows["paddle"]["protocols"])
    # one DLPack call between paddle and the DLPack frameworks (no detour through NumPy)
    for other in ("torch", "jax", "tensorflow"):
        for a, b in ((other, "paddle"), ("paddle", other)):
            route = REGISTRY.routes.route(a, b)
            assert len(route) == 1 and route[0].via.startswith("DLPack"), (a, b, route)
    assert [e.via for e in REGISTRY.routes.route("tensorflow", "torch")] == [
        "DLPack: torch.from_dlpack"]


@pytest.fixture(scope="module")
def live_table() -> dict:
    return run_cli_json("table")


def test_table_paddle_cells(live_table):
    from interop.cli import table

    assert_zero_copy_with_every_cpu_framework("paddle", live_table)
    lay = {(c["label"], c["target"]): c for c in live_table["layouts"]}
    assert lay[("numpy uint16", "paddle")]["status"] == table.UNSUPPORTED
    assert "bfloat16" in lay[("numpy uint16", "paddle")]["reason"]
    assert lay[("numpy negative strides [::-1]", "paddle")]["status"] == table.COPY
    assert lay[("paddle negative strides [::-1]", "torch")]["status"] == table.COPY
    assert lay[("paddle negative strides [::-1]", "numpy")]["status"] == table.ZERO_COPY
    assert lay[("numpy Fortran-order 32x32", "paddle")]["status"] == table.ZERO_COPY
    assert all(c["plan_agrees"] for c in live_table["layouts"])


# The docs examples, the committed table's freshness, the doctor's pitfalls and the GPU round
# trips are tests/optional/test_optional_suite.py's, parametrized over the optional frameworks.
