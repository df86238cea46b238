"""Framework misbehaviours (issue 2) never reach the user: each is probed, then guarded.

A probe (``test_probe_*``) runs the upstream call raw and *reports* whether the misbehaviour is
still there (``helpers.report_upstream``: a warning when it is gone), never failing on an
upstream fix; the same test, or the one after it, asserts what interop does with that input,
which holds either way."""

from __future__ import annotations

import numpy as np
import pytest

import interop
import oracles
from helpers import aligned, data_pointer, report_upstream, run_child
from interop.errors import (
    InteropError,
    NullsError,
    UnsupportedConversionError,
    ZeroCopyError,
)
from machine import jax_on_cpu
from matrix_samples import as_numpy

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")



# ---- negative strides into torch ----------------------------------------------------------

def test_probe_raw_torch_from_dlpack_on_negative_strides():
    """The misbehaviour itself, only ever run in a child process: torch aborts the process,
    or (once fixed upstream) must give the right values; interop is guarded either way (the
    next test)."""
    out = run_child("""
        import numpy as np, torch
        t = torch.from_dlpack(np.arange(5.)[::-1])
        print("survived", t.tolist() == [4., 3., 2., 1., 0.])
    """)
    aborted = out.returncode != 0
    if aborted:
        assert out.returncode < 0 or "Aborted" in out.stderr or "c10::Error" in out.stderr, out
    else:
        assert "survived True" in out.stdout, out  # a fix must not give wrong values
    report_upstream("torch.from_dlpack of negative strides aborts", aborted)


def test_interop_negative_strides_into_torch_is_guarded():
    out = run_child("""
        import numpy as np, torch, interop
        from interop.errors import ZeroCopyError
        from interop.protocols.dlpack import MAX_VERSION

        neg = np.arange(5.)[::-1]
        plan = interop.explain(neg, "torch")
        assert not plan.zero_copy and "negative strides" in plan.reasons[0], plan
        t = interop.to_framework(neg, "torch")
        assert t.tolist() == [4., 3., 2., 1., 0.], t
        assert not np.shares_memory(t.numpy(), neg)  # NumPy's own overlap test
        try:
            interop.to_framework(neg, "torch", copy=False)
        except ZeroCopyError as e:
            assert "negative strides" in str(e), e
        else:
            raise AssertionError("copy=False did not raise")

        # the same buffer as a raw capsule, and 2-D
        cap = np.arange(6.).reshape(2, 3)[::-1, ::-1].__dlpack__(max_version=MAX_VERSION)
        assert interop.to_framework(cap, "torch").tolist() == [[5., 4., 3.], [2., 1., 0.]]
        print("CLEAN")
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "CLEAN" in out.stdout


# ---- JAX: non-compact strides and misalignment --------------------------------------------

NON_COMPACT = {
    "steps": lambda: aligned(np.arange(20, dtype=np.float32))[::2],
    "2-d steps": lambda: aligned(np.arange(24, dtype=np.float32).reshape(4, 6))[:, ::3],
    "broadcast": lambda: np.broadcast_to(aligned(np.arange(4, dtype=np.float32)), (3, 4)),
    "fortran": lambda: np.asfortranarray(aligned(np.arange(12, dtype=np.float32)
                                                 .reshape(3, 4))),
    "negative": lambda: aligned(np.arange(8, dtype=np.float32))[::-1],
}


@pytest.mark.parametrize("kind", NON_COMPACT)
def test_jax_non_compact_strides(kind):
    a = NON_COMPACT[kind]()
    plan = interop.explain(a, "jax")
    assert plan.supported and not plan.zero_copy
    assert any(w in plan.reasons[0] for w in ("strides", "Fortran", "non-contiguous")), plan
    with pytest.raises(ZeroCopyError, match="strides"):
        interop.to_framework(a, "jax", copy=False)
    x = interop.to_framework(a, "jax")
    np.testing.assert_array_equal(np.asarray(x), a)
    assert not oracles.shares(x, a)
    assert x.unsafe_buffer_pointer() % 64 == 0


def test_probe_raw_jax_on_non_compact_strides():
    """Raw ``jax.dlpack.from_dlpack`` refuses strides (reported); interop copies them into a
    compact, aligned JAX buffer either way (the test above)."""
    a = aligned(np.arange(10, dtype=np.float32))[::2]
    try:
        x = jax.dlpack.from_dlpack(a)
    except Exception as e:
        assert "strid" in str(e).lower(), e
        refused = True
    else:  # a fix must give the right values
        np.testing.assert_array_equal(np.asarray(x), a)
        refused = False
    report_upstream("jax.dlpack.from_dlpack refuses non-compact strides", refused)


def _misaligned():
    a = aligned(np.arange(17, dtype=np.float32))[1:]
    assert data_pointer(a) % 64
    return a


def test_probe_raw_jax_copies_misaligned_buffers_silently():
    """Raw JAX copies a buffer below 64-byte alignment without a word (reported); interop's
    plan names the copy either way (the test below)."""
    a = _misaligned()
    x = jax.dlpack.from_dlpack(a)
    np.testing.assert_array_equal(np.asarray(x), a)
    report_upstream("jax.dlpack.from_dlpack silently copies a misaligned buffer",
                    x.unsafe_buffer_pointer() != data_pointer(a))


@pytest.mark.parametrize("src", ["numpy", "torch", "capsule"])
def test_jax_misalignment_is_in_the_plan(src):
    a = _misaligned()
    value = {"numpy": lambda: a, "torch": lambda: torch.from_numpy(a),
             "capsule": lambda: a.__dlpack__()}[src]
    plan = interop.explain(value(), "jax")
    assert not plan.zero_copy and any("64-byte aligned" in r for r in plan.reasons), plan
    with pytest.raises(ZeroCopyError, match="64-byte aligned"):
        interop.to_framework(value(), "jax", copy=False)
    x = interop.to_framework(value(), "jax")
    np.testing.assert_array_equal(np.asarray(x), a)
    assert x.unsafe_buffer_pointer() % 64 == 0


def test_jax_aligned_buffer_is_zero_copy():
    a = aligned(np.arange(16, dtype=np.float32))
    x = interop.to_framework(a, "jax", copy=False)
    assert x.unsafe_buffer_pointer() == data_pointer(a)
    a[0] = 7.0  # written through NumPy, seen by JAX
    assert float(x[0]) == 7.0


# ---- JAX with 64-bit types disabled ------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint64, np.complex128])
@pytest.mark.parametrize("src", ["numpy", "torch"])
def test_jax_64_bit_without_x64_narrows_as_jax_would_and_says_so(dtype, src):
    """JAX narrows silently; interop narrows the same way but warns (NarrowingWarning), and
    refuses with copy=False (the full contract: tests/adapters/test_jax_narrowing.py)."""
    assert not jax.config.jax_enable_x64
    a = aligned(np.arange(4).astype(dtype))
    value = a if src == "numpy" else torch.from_numpy(a)
    plan = interop.explain(value, "jax")
    assert plan.supported and not plan.zero_copy
    assert interop.can_convert(value, "jax") and not interop.can_convert(value, "jax", copy=False)
    narrow = np.asarray(jax.numpy.asarray(a)).dtype  # what JAX itself makes of it
    for copy in (None, True):
        with pytest.warns(interop.NarrowingWarning, match="jax_enable_x64") as got:
            out = interop.to_framework(value, "jax", copy=copy)
        assert out.dtype == narrow and len(got) == 1
        assert np.dtype(dtype).name in str(got[0].message)
    with pytest.raises(ZeroCopyError) as ei:
        interop.to_framework(value, "jax", copy=False)
    msg = str(ei.value)
    assert "jax_enable_x64" in msg and np.dtype(dtype).name in msg, msg


def test_jax_64_bit_with_x64_enabled_is_zero_copy():
    out = run_child("""
        import jax
        jax.config.update("jax_enable_x64", True)
        import numpy as np, interop
        from interop.host import fresh_copy
        a = fresh_copy(np.arange(4.0))
        x = interop.to_framework(a, "jax", copy=False)
        assert x.dtype == np.float64 and x.unsafe_buffer_pointer() == a.ctypes.data
        print("OK")
    """)
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-2000:]


# ---- read-only sources ------------------------------------------------------------------

def _read_only(shape=(6,)):
    a = aligned(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))
    a.flags.writeable = False
    return a


def test_probe_raw_torch_from_dlpack_writes_through_read_only_numpy():
    """Raw torch hands out a writable tensor over a read-only array (reported); interop's plan
    records the hazard either way (the test below)."""
    a = _read_only()
    try:
        t = torch.from_dlpack(a)
    except (BufferError, RuntimeError, TypeError):  # a fix may refuse it
        report_upstream("torch.from_dlpack writes through read-only NumPy", False)
        return
    t[0] = 5.0
    report_upstream("torch.from_dlpack writes through read-only NumPy", a[0] == 5.0)


@pytest.mark.parametrize("shape", [(6,), (2, 3), ()])
def test_read_only_numpy_to_torch_records_the_hazard(shape):
    a = _read_only(shape)
    plan = interop.explain(a, "torch")
    assert any("read-only" in h for h in plan.hazards), plan
    assert plan.zero_copy, plan  # shared, with the hazard named: never a silent copy
    t = interop.to_framework(a, "torch")
    np.testing.assert_array_equal(t.numpy(), a)
    assert data_pointer(t) == data_pointer(a)
    idx = (0,) * a.ndim
    t[idx] = 100.0  # a write through torch, seen in the read-only array
    assert a[idx] == 100.0


@pytest.mark.parametrize("target", ["numpy", "dlpack"])
def test_numpy_results_of_read_only_numpy_are_read_only(target):
    a = _read_only()
    out = interop.to_framework(a, target)
    if target == "dlpack":  # the capsule's own flag, and NumPy's import of it
        assert oracles.read_capsule(out).read_only
        out = oracles.consume_capsule(out)
    assert not out.flags.writeable and data_pointer(out) == data_pointer(a)


def _on_jax_cpu(make):
    with jax_on_cpu():
        return make()


@pytest.mark.parametrize("make", [
    lambda: pa.array(np.arange(6, dtype=np.float32)),
    lambda: pa.chunked_array([pa.array(np.arange(6, dtype=np.int64))]),
    lambda: _on_jax_cpu(lambda: jax.numpy.arange(6, dtype=jax.numpy.float32)),
    lambda: pl.Series("s", np.arange(6, dtype=np.float32)),
], ids=["arrow-array", "arrow-chunked", "jax", "polars"])
def test_numpy_results_of_immutable_sources_are_read_only(make):
    x = make()
    plan = interop.explain(x, "numpy")
    out = interop.to_framework(x, "numpy")
    assert plan.zero_copy and data_pointer(out) == data_pointer(x)
    assert not out.flags.writeable
    with pytest.raises(ValueError):
        out[0] = 1
    oracles.raw(x, out.dtype)[0] = 42  # neither side may be written: a raw write at the
    assert out[0] == 42                 # source's own address, read through the result


def test_read_only_numpy_to_arrow_and_back_stays_read_only():
    a = _read_only()
    arr = interop.to_framework(a, "pyarrow")
    assert isinstance(arr, pa.Array) and arr.to_pylist() == a.tolist()
    back = interop.to_framework(arr, "numpy")
    assert not back.flags.writeable


def test_torch_from_jax_records_the_immutability_hazard():
    x = _on_jax_cpu(lambda: jax.numpy.arange(4, dtype=jax.numpy.float32))
    plan = interop.explain(x, "torch")
    assert plan.zero_copy and any("immutable" in h for h in plan.hazards), plan
    t = interop.to_framework(x, "torch")
    assert t.data_ptr() == x.unsafe_buffer_pointer()  # the hazard is real: one buffer


# ---- pyarrow: nulls and chunks -----------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: pa.array([1, None, 3], type=pa.int64()),
    lambda: pa.array([1.0, None, 3.0], type=pa.float32()),
    lambda: pa.chunked_array([pa.array([1, None], type=pa.int32())]),
], ids=["int", "float", "chunked"])
@pytest.mark.parametrize("target", ["numpy", "torch", "jax", "pandas", "polars", "dlpack"])
def test_arrow_nulls_raise_naming_the_way_out(make, target):
    x = make()
    plan = interop.explain(x, target)
    assert not plan.supported and plan.error == "nulls", plan
    assert not interop.can_convert(x, target)
    with pytest.raises(NullsError) as ei:
        interop.to_framework(x, target)
    msg = str(ei.value)
    assert isinstance(ei.value, InteropError)
    assert "fill_null" in msg and "copy=True" in msg and "pyarrow" in msg, msg
    assert str(x.type) in msg and "nulls" in msg


def test_arrow_float_nulls_with_copy_true_become_nan():
    x = pa.array([1.0, None, 3.0], type=pa.float64())
    out = interop.to_framework(x, "numpy", copy=True)
    np.testing.assert_array_equal(out, [1.0, np.nan, 3.0])
    t = interop.to_framework(x, "torch", copy=True)
    assert torch.isnan(t[1]) and t[2] == 3.0


def test_arrow_int_nulls_with_copy_true_still_refuse():
    with pytest.raises(NullsError, match="fill_null"):
        interop.to_framework(pa.array([1, None], type=pa.int64()), "numpy", copy=True)


def test_arrow_nulls_filled_convert_zero_copy():
    x = pa.array([1, None, 3], type=pa.int64()).fill_null(0)
    out = interop.to_framework(x, "numpy", copy=False)
    assert out.tolist() == [1, 0, 3] and data_pointer(out) == data_pointer(x)
    oracles.raw(x, out.dtype)[2] = 7  # a raw write at the Arrow buffer, read through NumPy
    assert out[2] == 7


@pytest.mark.parametrize("target", ["numpy", "torch", "jax", "pandas", "polars", "dlpack"])
def test_arrow_several_chunks_copy(target):
    def make():
        return pa.chunked_array([pa.array(np.arange(4, dtype=np.int32)),
                                 pa.array(np.arange(4, 8, dtype=np.int32))])

    plan = interop.explain(make(), target)
    assert plan.supported and not plan.zero_copy
    assert "2 chunks" in plan.reasons[0], plan
    with pytest.raises(ZeroCopyError, match="chunks"):
        interop.to_framework(make(), target, copy=False)
    out = interop.to_framework(make(), target)
    np.testing.assert_array_equal(np.asarray(as_numpy(out)), np.arange(8))  # its own API


def test_polars_nulls_and_chunks():
    s = pl.Series("col", [1, None, 3])
    with pytest.raises(NullsError, match="fill_null") as ei:
        interop.to_framework(s, "torch")
    assert "'col'" in str(ei.value)
    two = pl.concat([pl.Series("c", [1, 2]), pl.Series("c", [3, 4])], rechunk=False)
    assert two.n_chunks() == 2
    with pytest.raises(ZeroCopyError, match="chunks"):
        interop.to_framework(two, "numpy", copy=False)
    assert interop.to_framework(two, "numpy").tolist() == [1, 2, 3, 4]


def test_pandas_nullable_with_na():
    s = pd.Series([1, None, 3], dtype="Int64", name="n")
    with pytest.raises(NullsError, match="fillna"):
        interop.to_framework(s, "torch")
    out = interop.to_framework(pd.Series([1, 2], dtype="Int64"), "numpy")
    assert out.tolist() == [1, 2]


# ---- awkward shapes and dtypes convert with the right values ------------------------------

AWKWARD = {
    "0-d": lambda: aligned(np.float32(3.5)),
    "empty": lambda: aligned(np.zeros((0, 4), np.float32)),
    "fortran": lambda: np.asfortranarray(aligned(np.arange(12, dtype=np.int32)
                                                 .reshape(3, 4))),
    "non-contiguous": lambda: aligned(np.arange(30, dtype=np.int16).reshape(5, 6))[1::2, ::2],
    "complex": lambda: aligned(np.arange(6).astype(np.complex64) * (1 + 2j)),
    "bool": lambda: aligned(np.arange(7) % 3 == 0),
}


@pytest.mark.parametrize("kind", AWKWARD)
@pytest.mark.parametrize("target", ["torch", "jax", "dlpack", "numpy"])
def test_awkward_values_round_trip(kind, target):
    a = AWKWARD[kind]()
    out = interop.to_framework(AWKWARD[kind](), target)
    got = np.asarray(as_numpy(out))  # read with the target's own API (a capsule: NumPy's)
    assert got.shape == a.shape and got.dtype == a.dtype
    np.testing.assert_array_equal(got, a)
    out = interop.to_framework(AWKWARD[kind](), target)
    back = interop.to_framework(out, "numpy")  # and back through interop
    assert back.shape == a.shape and back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
    again = interop.to_framework(interop.to_framework(back, "torch"), target, copy=True)
    np.testing.assert_array_equal(np.asarray(as_numpy(again)), a)


@pytest.mark.parametrize("target", ["numpy", "jax", "pyarrow", "torch"])
@pytest.mark.parametrize("kw", [{}, {"copy": True}, {"device": "cpu"}])
def test_a_meta_tensor_gets_one_answer_fresh_or_after_a_kept_plan(target, kw):
    """A meta tensor (a shape and a dtype, no data) is refused with an error naming the meta
    device and the way to materialize it, by a fresh registry and by the plan a plain tensor
    left; explain and can_convert say the same. To torch without device= or copy=True it is
    itself: a meta tensor stays a torch value (a copy or a move has no data to take)."""
    import torch

    from interop.default import build

    meta = torch.empty(3, device="meta")
    fresh, kept = build(), build()
    kept.convert(torch.arange(3.0), target, **kw)
    answers = []
    for reg in (fresh, kept, kept):
        try:
            out = reg.convert(meta, target, **kw)
            answers.append(("ok", out.device.type, tuple(out.shape)))
        except InteropError as e:
            assert isinstance(e, UnsupportedConversionError) and "meta device" in str(e), e
            assert "materialize" in str(e)
            answers.append(("refused",))
        assert reg.explain(meta, target, kw.get("device"), kw.get("copy")).supported == (
            answers[-1][0] == "ok")
    assert answers[0] == answers[1] == answers[2], answers
    assert interop.can_convert(meta, target, **kw) == (answers[0][0] == "ok")
    own = target == "torch" and not kw
    assert answers[0] == (("ok", "meta", (3,)) if own else ("refused",))
