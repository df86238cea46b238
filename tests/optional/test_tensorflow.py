"""TensorFlow in the conversion matrix: every pair with the other CPU frameworks, the guards.

Runs in its own pytest process (``pytest -m tensorflow``; scripts/test.sh does it). The core
run collects this file but never imports tensorflow: every import of it is inside a fixture
or a test. Pairs with PaddlePaddle live in tests/optional/test_paddle.py (paddle must be imported
before tensorflow in one process).

A zero-copy claim is proved by data pointers (TensorFlow's own DLPack export gives the
tensor's address) and by a write through one side seen on the other.
"""

from __future__ import annotations

import gc
import sys
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
from matrix_samples import (
    DTYPES,
    NARROWED,
    SOURCE_DTYPES,
    TARGET_DTYPES,
    as_numpy,
    build,
    marker,
    poke,
    raw_pointer,
    values,
)

pytestmark = [pytest.mark.tensorflow]

ROOT = Path(__file__).resolve().parents[2]
OTHERS = ["numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack"]
TF_DTYPES = [d for d in DTYPES]  # every dtype of the matrix: TF holds all of them
BIT_PACKED = {"pyarrow", "polars"}


@pytest.fixture(scope="module")
def tf():
    import tensorflow as tf

    return tf


def tf_ptr(t) -> int:
    """The tensor's address, from TensorFlow's own DLPack export."""

    return oracles.pointer(t)  # TensorFlow's own DLPack export, read by the tests' reader


def tf_values(t) -> np.ndarray:
    """The tensor's values through TensorFlow's own zero-copy view (numpy.asarray)."""
    return np.asarray(t)


def tf_tensor(dt: str, shape=(8,)):
    """A TensorFlow-allocated tensor of ``dt`` (values from matrix_samples.values)."""
    import tensorflow as tf

    v = values(DTYPES[dt], shape)
    return tf.constant(v), v


# ---- every other CPU framework -> tensorflow ------------------------------------------------

INTO = [pytest.param(src, dt, id=f"{src}-{dt}") for src in OTHERS for dt in SOURCE_DTYPES[src]]


@pytest.mark.parametrize(("src", "dt"), INTO)
def test_into_tensorflow(tf, src, dt):
    s = build(src, dt, "C", one_d=True)
    plan = interop.explain(s.value, "tensorflow")
    copies = dt == "bool" and src in BIT_PACKED  # Arrow/polars booleans are bit-packed
    assert plan.supported and plan.zero_copy == (not copies), plan
    s = build(src, dt, "C", one_d=True)
    t = interop.to_framework(s.value, "tensorflow")
    assert isinstance(t, tf.Tensor)
    assert_same_array(tf_values(t), s.expected)
    if copies:
        with pytest.raises(ZeroCopyError, match="bits"):
            interop.to_framework(build(src, dt, "C", one_d=True).value, "tensorflow", copy=False)
        return
    assert tf_ptr(t) == s.ptr  # the pointer proof
    # the write proof: through the mutable side, or under both when neither is mutable
    m = marker(s.expected.dtype, s.expected[0])
    if isinstance(s.value, np.ndarray):
        s.value[0] = m
    else:
        poke(s.ptr, s.expected.dtype, m)
    assert tf_values(t)[0] == m
    if src not in ("dlpack", "numpy", "torch"):  # the source reads the same memory
        assert as_numpy(s.value)[0] == m
    # copy=False works, copy=True never shares
    s = build(src, dt, "C", one_d=True)
    assert tf_ptr(interop.to_framework(s.value, "tensorflow", copy=False)) == s.ptr
    s = build(src, dt, "C", one_d=True)
    fresh = interop.to_framework(s.value, "tensorflow", copy=True)
    assert tf_ptr(fresh) != s.ptr
    assert_same_array(tf_values(fresh), s.expected)


def test_two_dimensional_arrays_into_tensorflow(tf):
    for src in ("numpy", "torch", "jax"):
        s = build(src, "float32", "C", one_d=False)
        t = interop.to_framework(s.value, "tensorflow", copy=False)
        assert tuple(t.shape) == s.expected.shape == (3, 4)
        assert tf_ptr(t) == s.ptr
        assert_same_array(tf_values(t), s.expected)


# ---- tensorflow -> every other CPU framework ------------------------------------------------

OUT = [pytest.param(tgt, dt, id=f"{tgt}-{dt}") for tgt in OTHERS for dt in TF_DTYPES]


@pytest.mark.parametrize(("tgt", "dt"), OUT)
def test_out_of_tensorflow(tf, tgt, dt):
    t, want = tf_tensor(dt)
    ptr = tf_ptr(t)
    plan = interop.explain(t, tgt)
    if (tgt, dt) in NARROWED:  # JAX with 64-bit types off narrows: one copy, one warning
        check_narrowed(lambda: tf_tensor(dt)[0], want, NARROWED[tgt, dt], tgt)
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
    assert raw_pointer(r) == ptr  # the pointer proof
    if tgt == "dlpack":  # a capsule: read-only flag set, then read (consumed) once
        assert oracles.read_capsule(r).read_only
    # the write proof: TensorFlow is immutable; write through a writable result (torch),
    # else under both sides, and read each with its own API
    m = marker(want.dtype, want[0])
    if tgt == "torch":
        import torch

        r[0] = torch.from_numpy(np.array([m]).astype(want.dtype)) if dt != "bfloat16" else \
            torch.tensor(float(m), dtype=torch.bfloat16)
    else:
        poke(ptr, want.dtype, m)
    assert tf_values(t)[0] == m
    seen = np.asarray(as_numpy(r))
    expected = want.copy()
    expected[0] = m
    assert_same_array(seen, expected)


def test_tensorflow_to_numpy_is_a_read_only_view(tf):
    for dt in TF_DTYPES:
        t, want = tf_tensor(dt, (3, 4))
        a = interop.to_framework(t, "numpy", copy=False)
        assert a.ctypes.data == tf_ptr(t), dt
        assert not a.flags.writeable, dt  # TF tensors are immutable (bfloat16 included)
        with pytest.raises(ValueError, match="read-only"):
            a[0, 0] = want[0, 0]
        assert_same_array(a, want)


def test_tensorflow_two_dimensional_to_torch_and_jax(tf):
    t, want = tf_tensor("float32", (3, 4))
    r = interop.to_framework(t, "torch", copy=False)  # the writable side
    others = {tgt: interop.to_framework(t, tgt, copy=False) for tgt in ("jax", "numpy")}
    for out in (r, *others.values()):
        assert raw_pointer(out) == tf_ptr(t)
        assert_same_array(np.asarray(as_numpy(out)), want)
    r[1, 2] = -1.0  # a write through torch, read through TF and each other result's own API
    assert tf_values(t)[1, 2] == -1.0
    for tgt, out in others.items():
        assert np.asarray(as_numpy(out))[1, 2] == -1.0, tgt


def test_tensorflow_to_torch_records_the_immutability_hazard(tf):
    t, _ = tf_tensor("float32")
    plan = interop.explain(t, "torch")
    assert plan.zero_copy and any("cannot be read-only" in h for h in plan.hazards), plan
    r = interop.to_framework(t, "torch")
    r[0] = 42.0  # what the hazard warns about: TF's "immutable" tensor changed
    assert tf_values(t)[0] == 42.0


def test_read_only_numpy_to_tensorflow_is_zero_copy_and_stays_unwritten(tf):
    a = values(DTYPES["float32"], (8,))
    a.flags.writeable = False
    plan = interop.explain(a, "tensorflow")
    assert plan.zero_copy and not plan.hazards, plan
    t = interop.to_framework(a, "tensorflow", copy=False)
    assert tf_ptr(t) == a.ctypes.data
    # TensorFlow never writes to its inputs: ops leave the read-only array as it was
    before = a.copy()
    for op in (lambda x: x + 1, tf.nn.relu, lambda x: tf.cast(x, tf.float64), tf.negative,
               tf.function(lambda x: x * 2.0)):
        op(t)
    assert_same_array(a, before)
    assert not a.flags.writeable


def test_writable_numpy_to_tensorflow_records_the_hazard(tf):
    a = values(DTYPES["float32"], (8,))
    plan = interop.explain(a, "tensorflow")
    assert any("TensorFlow treats its arrays as immutable" in h for h in plan.hazards), plan


# ---- layouts and guards -----------------------------------------------------------------------

def _misaligned(offset: int = 4) -> np.ndarray:
    raw = values(DTYPES["uint8"], (4096 + 128,))
    a = raw[offset:offset + 4096].view(np.float32)
    a[:] = np.arange(1024, dtype=np.float32)
    return a


@pytest.mark.parametrize(("layout", "reason"), [
    ("F", "Fortran-order strides"),
    ("strided", "non-contiguous strides"),
    ("negative", "negative strides"),
    ("broadcast", "broadcast (zero) strides"),
])
def test_non_compact_numpy_is_copied_with_the_reason(tf, layout, reason):
    from matrix_samples import np_layout

    a = np_layout(DTYPES["float32"], layout, one_d=False)
    plan = interop.explain(a, "tensorflow")
    assert plan.supported and not plan.zero_copy, plan
    assert reason in plan.reasons[0] and "TensorFlow needs compact row-major" in plan.reasons[0]
    with pytest.raises(ZeroCopyError, match="TensorFlow needs compact row-major"):
        interop.to_framework(a, "tensorflow", copy=False)
    t = interop.to_framework(a, "tensorflow")
    assert_same_array(tf_values(t), np.array(a))
    assert not oracles.shares(t, a)


def test_probe_raw_tensorflow_on_non_compact_strides(tf):
    """The misbehaviour interop works around: TF raises (it does not crash) on strides;
    reported, never failing on an upstream fix (which must then give the right values).
    interop copies such layouts either way (test_non_compact_*_is_copied)."""
    a = values(DTYPES["float32"], (16,))[::2]
    try:
        t = tf.experimental.dlpack.from_dlpack(a.__dlpack__())
    except tf.errors.InvalidArgumentError as e:
        assert "strides" in str(e), e
        refused = True
    else:
        assert_same_array(np.asarray(t), a)
        refused = False
    report_upstream("tf.experimental.dlpack.from_dlpack refuses strides", refused)


@pytest.mark.parametrize("layout", ["0-d", "empty", "C"])
def test_compact_numpy_layouts_are_zero_copy(tf, layout):
    from matrix_samples import np_layout

    a = np_layout(DTYPES["float64"], layout, one_d=False)
    t = interop.to_framework(a, "tensorflow", copy=False)
    assert_same_array(tf_values(t), a)
    if a.size:
        assert tf_ptr(t) == a.ctypes.data
        a.flat[0] = -1.0  # a write through NumPy, read through TensorFlow
        assert tf_values(t).flat[0] == -1.0


@pytest.mark.parametrize("offset", [4, 16, 32])
def test_misaligned_numpy_is_copied_because_tensorflow_would_abort(tf, offset):
    a = _misaligned(offset)
    plan = interop.explain(a, "tensorflow")
    assert not plan.zero_copy and "not 64-byte aligned" in plan.reasons[0], plan
    assert "abort the interpreter" in plan.reasons[0]
    with pytest.raises(ZeroCopyError, match="64-byte aligned"):
        interop.to_framework(a, "tensorflow", copy=False)
    t = interop.to_framework(a, "tensorflow")
    assert tf_ptr(t) % 64 == 0 and not oracles.shares(t, a)
    assert float(tf.reduce_sum(t)) == float(a.sum())  # would abort on the misaligned buffer


def test_misaligned_torch_tensor_is_copied(tf):
    import torch

    base = torch.from_numpy(values(DTYPES["float32"], (17,)))
    t = base[1:]  # 4 bytes past a 64-byte boundary
    plan = interop.explain(t, "tensorflow")
    assert not plan.zero_copy and "abort the interpreter" in plan.reasons[0], plan
    r = interop.to_framework(t, "tensorflow")
    assert tf_ptr(r) % 64 == 0  # before any kernel touches it
    assert float(tf.reduce_sum(r)) == float(t.sum())
    with pytest.raises(ZeroCopyError, match="64-byte aligned"):
        interop.to_framework(t, "tensorflow", copy=False)


@pytest.mark.parametrize(("layout", "reason"), [
    ("F", "non-compact"), ("strided", "non-compact"), ("broadcast", "non-compact")])
def test_non_compact_torch_is_copied(tf, layout, reason):
    s = build("torch", "float32", layout, one_d=False)
    plan = interop.explain(s.value, "tensorflow")
    assert not plan.zero_copy and "TensorFlow needs compact row-major" in plan.reasons[0]
    assert_same_array(tf_values(interop.to_framework(s.value, "tensorflow")), s.expected)


def test_raw_tensorflow_aborts_on_misaligned_buffers_but_interop_does_not():
    """The misbehaviour, only ever run in a child process (a probe: reported, never failing
    on an upstream fix); then interop in another child, which must hold either way."""
    raw = run_child("""
        import numpy as np, tensorflow as tf
        raw = np.zeros(4096 + 128, np.uint8)
        off = (-raw.ctypes.data) % 64 + 4
        t = tf.experimental.dlpack.from_dlpack(raw[off:off + 4096].view(np.float32).__dlpack__())
        tf.reduce_sum(t).numpy()
        print("survived")
    """)
    aborted = raw.returncode != 0
    if aborted:
        assert "IsAligned" in raw.stderr, raw.stderr[-2000:]
    report_upstream("TensorFlow kernels abort on buffers not 64-byte aligned", aborted)
    guarded = run_child("""
        import numpy as np, tensorflow as tf, interop
        raw = np.zeros(4096 + 128, np.uint8)
        off = (-raw.ctypes.data) % 64 + 4
        a = raw[off:off + 4096].view(np.float32)
        a[:] = np.arange(1024)
        t = interop.to_framework(a, "tensorflow")
        print(float(tf.reduce_sum(t)), float(tf.reduce_sum(t * 2)), tf.concat([t, t], 0).shape)
    """)
    assert guarded.returncode == 0, guarded.stderr[-2000:]
    assert "523776.0 1047552.0" in guarded.stdout


def test_raw_tensorflow_string_dlpack_aborts_but_interop_refuses(tf):
    """The abort is probed in a child (reported); interop refuses strings either way."""
    raw = run_child("import tensorflow as tf; tf.constant(['a']).__dlpack__(); print('survived')")
    report_upstream("TensorFlow aborts exporting a string tensor by DLPack",
                    raw.returncode != 0 and "survived" not in raw.stdout)
    s = tf.constant(["a", "b"])
    for tgt in ("torch", "numpy", "jax", "dlpack", "pyarrow"):
        plan = interop.explain(s, tgt)
        assert not plan.supported and plan.error == "unsupported", (tgt, plan)
        with pytest.raises(UnsupportedConversionError, match="string"):
            interop.to_framework(s, tgt)
    # its memory is its own although interop reads none of it (no view: __dlpack__, which
    # aborts, is never called); it shares none with another tensor of the same strings
    assert interop.shares_memory(s, s) and not interop.shares_memory(s, tf.constant(["a", "b"]))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_tensors_copy_through_numpy(tf, name):
    import ml_dtypes

    want = values(np.dtype(getattr(ml_dtypes, name)), (8,))
    t = tf.constant(want)
    plan = interop.explain(t, "numpy")
    assert plan.supported and not plan.zero_copy and "copies" in plan.reasons[0], plan
    with pytest.raises(ZeroCopyError, match="no zero-copy protocol"):
        interop.to_framework(t, "numpy", copy=False)
    assert_same_array(interop.to_framework(t, "numpy"), want)
    plan = interop.explain(t, "torch")
    assert not plan.zero_copy and "DLPack refuses it" in plan.reasons[0], plan
    r = interop.to_framework(t, "torch")
    assert str(r.dtype) == f"torch.{name}"
    assert_same_array(as_numpy(r.view(__import__("torch").uint8)).view(want.dtype), want)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                  "float8_e5m2fnuz", "float8_e4m3b11fnuz"])
def test_float8_numpy_into_tensorflow_is_one_recorded_copy(tf, name):
    import ml_dtypes

    a = values(np.dtype(getattr(ml_dtypes, name)), (8,))
    plan = interop.explain(a, "tensorflow")
    assert plan.supported and not plan.zero_copy and "tf.convert_to_tensor" in plan.reasons[0]
    with pytest.raises(ZeroCopyError, match="no " + name):
        interop.to_framework(a, "tensorflow", copy=False)
    t = interop.to_framework(a, "tensorflow")
    assert t.dtype.name == name
    assert_same_array(tf_values(t), a)


def test_float8_torch_into_tensorflow_says_how(tf):
    import torch

    t = torch.zeros(4, dtype=torch.float8_e4m3fn)
    plan = interop.explain(t, "tensorflow")
    assert not plan.supported and "convert to NumPy first" in plan.reasons[0], plan
    with pytest.raises(UnsupportedConversionError, match="float8_e4m3fn"):
        interop.to_framework(t, "tensorflow")


def test_symbolic_tensors_are_refused_with_the_reason(tf):
    seen = []

    @tf.function
    def f(x):
        seen.append(interop.explain(x, "numpy"))
        try:
            interop.to_framework(x, "torch")
        except UnsupportedConversionError as e:
            seen.append(str(e))
        return x

    f(tf.constant([1.0, 2.0]))
    assert not seen[0].supported and "symbolic" in seen[0].reasons[0]
    assert "symbolic" in seen[1]


def test_non_native_byte_order_is_refused(tf):
    a = values(DTYPES["float32"], (4,)).astype(">f4")
    with pytest.raises(UnsupportedConversionError, match="byte order"):
        interop.to_framework(a, "tensorflow")


# ---- lifetimes ----------------------------------------------------------------------------

def test_tensorflow_result_keeps_the_numpy_source_alive(tf):
    a = values(DTYPES["float64"], (1024,))
    want = a.copy()
    t = interop.to_framework(a, "tensorflow", copy=False)
    del a
    gc.collect()
    _junk = [np.full(1024, 7.0) for _ in range(64)]
    assert_same_array(tf_values(t), want)
    assert float(tf.reduce_sum(t)) == float(want.sum())


def test_results_keep_the_tensorflow_source_alive(tf):
    for tgt in ("numpy", "torch", "jax"):
        t, want = tf_tensor("float32", (1024,))
        r = interop.to_framework(t, tgt, copy=False)
        del t
        gc.collect()
        _junk = [tf.fill([1024], 7.0) for _ in range(64)]
        assert_same_array(np.asarray(as_numpy(r)), want)


def test_capsule_from_tensorflow_round_trips(tf):
    t, want = tf_tensor("int32")
    cap = interop.to_framework(t, "dlpack")
    back = interop.to_framework(cap, "tensorflow")
    assert tf_ptr(back) == tf_ptr(t)
    assert_same_array(tf_values(back), want)


# ---- detection, registry, table, doctor, docs -------------------------------------------------

def test_detection_and_aliases(tf):
    t = tf.constant([1.0])
    assert interop.explain(t, "tf").target == "tensorflow"
    assert interop.explain(np.zeros(2, np.float32), "TensorFlow").target == "tensorflow"
    rows = {r["name"]: r for r in interop.frameworks()}
    r = rows["tensorflow"]
    assert r["importable"] and r["imported"] and "cpu" in r["devices"] and "cuda" in r["devices"]
    assert {"DLPack export", "DLPack import"} <= set(r["protocols"])


def test_paddle_is_never_imported_after_tensorflow(tf):
    if "paddle" in sys.modules:
        pytest.skip("paddle was imported before tensorflow in this process (a combined run)")
    a = values(DTYPES["float32"], (4,))
    plan = interop.explain(a, "paddle")
    assert not plan.supported and "import paddle before tensorflow" in plan.reasons[0], plan
    with pytest.raises(UnsupportedConversionError, match="segfaults"):
        interop.to_framework(tf.constant([1.0]), "paddle")
    assert "paddle" not in sys.modules


@pytest.fixture(scope="module")
def live_table() -> dict:
    return run_cli_json("table")


def test_table_tensorflow_cells(live_table):
    from interop.cli import table

    assert_zero_copy_with_every_cpu_framework("tensorflow", live_table)
    pairs = {(c["source"], c["target"]): c for c in live_table["pairs"]}
    assert pairs[("tensorflow", "tensorflow-gpu")]["status"] == table.NOT_PROBED
    lay = {(c["label"], c["target"]): c for c in live_table["layouts"]}
    for label, words in (("numpy negative strides [::-1]", "negative strides"),
                         ("numpy misaligned (+4 bytes)", "abort the interpreter"),
                         ("numpy strided [::2]", "compact row-major")):
        c = lay[(label, "tensorflow")]
        assert c["status"] == table.COPY and words in c["reason"], c
    assert all(c["plan_agrees"] for c in live_table["layouts"])


# The docs examples, the committed table's freshness, the doctor's pitfalls and the GPU round
# trips are tests/optional/test_optional_suite.py's, parametrized over the optional frameworks.


class _Buffer:
    """A value of a framework TensorFlow's adapter has never heard of, over NumPy array ``a``."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


@pytest.mark.parametrize("writable", [True, False])
def test_a_new_writable_source_into_tensorflow_records_the_hazard(tf, writable):
    """The "source stays writable" hazard of a DLPack step into TensorFlow comes from the
    source's own view (its read-only flag), not from a list of framework names: a framework
    registered at run time gets it when its memory is writable, and not when it is not."""
    from interop.adapters.base import ArrayAdapter
    from interop.default import build as new_registry
    from interop.protocols.array_interface import view_of_numpy

    reg = new_registry()
    reg.add(ArrayAdapter(name="buffer-framework", is_value=lambda x: isinstance(x, _Buffer),
                         view=lambda b: view_of_numpy(b.a), device=lambda b: ("cpu", 0),
                         to_numpy=lambda b: b.a, export_dlpack=lambda b: b.a))
    a = values(DTYPES["float32"], (16,))
    a.flags.writeable = writable
    plan = reg.explain(_Buffer(a), "tensorflow")
    said = any("stays writable" in h for h in plan.hazards)
    assert said == writable, plan
    t = reg.convert(_Buffer(a), "tensorflow")
    if writable:  # over DLPack, zero-copy; a read-only buffer is copied (legacy capsules only)
        assert plan.zero_copy and any("DLPack" in s.via for s in plan.steps), plan
        assert oracles.pointer(t) == a.ctypes.data


def test_a_dali_tensor_into_tensorflow_records_the_hazard(tf):
    """DALI (a source TensorFlow's adapter never named) -> TensorFlow says the source stays
    writable; DALI and TensorFlow meet in a child process (each has its own test run)."""
    pytest.importorskip("nvidia.dali")
    r = run_child("""
        import numpy as np, tensorflow as tf, interop
        from nvidia.dali import fn, pipeline_def, types

        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def pipe():
            return fn.constant(fdata=[1.0, 2.0, 3.0, 4.0], shape=[4], dtype=types.FLOAT)

        p = pipe()
        p.build()
        (tl,) = p.run()
        for x in (tl.as_tensor(), tl):
            plan = interop.explain(x, "tensorflow")
            assert plan.zero_copy, plan
            assert any("stays writable" in h for h in plan.hazards), plan
        print("ok")
    """)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
