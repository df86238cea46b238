"""The per-call fast paths (native call first, checks only on refusal) decide as the checks do.

Also the temporal types whose NumPy form is a converted copy (Arrow/polars dates) or that NumPy
cannot hold (times, decimals, 128-bit integers): found while making those paths fast, they
used to claim zero-copy and then fail inside the framework call.
"""

from __future__ import annotations

import datetime

import ml_dtypes
import numpy as np
import pyarrow as pa
import pytest
import torch

import interop
import oracles
from interop.errors import UnsupportedConversionError, ZeroCopyError

try:
    import polars as pl
except ImportError:  # not on every machine (the first GPU host had none)
    pl = None
needs_polars = pytest.mark.skipif(pl is None, reason="polars is not installed")


def test_numpy_to_torch_fast_path_refusals_follow_the_check():
    a = np.arange(8, dtype=np.float32)
    t = interop.to_framework(a, "torch")
    assert t.data_ptr() == a.ctypes.data
    t[0] = 42.0  # and a write through the tensor is seen by the array
    assert a[0] == 42.0
    rev = a[::-1]  # torch.from_numpy refuses: the copy route, values kept
    out = interop.to_framework(rev, "torch")
    assert out.data_ptr() != a.ctypes.data and out.tolist() == rev.tolist()
    with pytest.raises(ZeroCopyError, match="negative strides"):
        interop.to_framework(rev, "torch", copy=False)
    raw = np.zeros(81, np.uint8)[1:].view(np.float32)  # misaligned: contiguous is taken as is
    assert not raw.flags.aligned
    tr = interop.to_framework(raw, "torch")
    assert tr.data_ptr() == raw.ctypes.data
    raw[1] = 7.0
    assert tr[1].item() == 7.0
    out = interop.to_framework(raw[::2], "torch")  # misaligned and strided: the copy route
    assert out.data_ptr() % 4 == 0 and out.tolist() == raw[::2].tolist()
    with pytest.raises(UnsupportedConversionError, match="byte order"):
        interop.to_framework(np.zeros(3, ">f4"), "torch")
    bf = np.arange(4).astype(ml_dtypes.bfloat16)  # refused by from_numpy, zero-copy by a view
    tb = interop.to_framework(bf, "torch")
    assert tb.dtype == torch.bfloat16 and tb.data_ptr() == bf.ctypes.data
    tb[2] = 9.0
    assert float(bf[2]) == 9.0


@pytest.mark.parametrize("first", ["<f4", ">f4"])
@pytest.mark.parametrize("target", ["torch", "jax", "pyarrow", "pandas", "polars", "dlpack"])
def test_byte_orders_stay_apart_whichever_is_converted_first(target, first):
    """The dtype caches (keyed without byte order) never let one order stand for the other: a
    big-endian array is refused naming its dtype, before or after a little-endian one
    converted (with its own values), and never read as native."""
    interop.api.REGISTRY.clear_plans()
    little, big = np.arange(4, dtype="<f4"), np.arange(4, dtype=">f4")
    for dt in (first, ">f4" if first == "<f4" else "<f4"):
        if dt == "<f4":
            out = interop.to_framework(little, target)
            got = oracles.consume_capsule(out) if target == "dlpack" else out
            np.testing.assert_array_equal(np.asarray(
                got.to_numpy() if hasattr(got, "to_numpy") else got), little)
            continue
        assert not interop.explain(big, target).supported
        with pytest.raises(UnsupportedConversionError, match=">f4|byte order"):
            interop.to_framework(big, target)


def test_jax_alignment_read_from_the_buffer():
    buf = np.zeros(4 * 33, np.uint8)
    start = (-buf.ctypes.data) % 64
    good = buf[start:start + 128].view(np.float32)
    bad = buf[start + 4:start + 4 + 64].view(np.float32)
    assert interop.explain(good, "jax").zero_copy
    j = interop.to_framework(good, "jax")
    assert j.unsafe_buffer_pointer() == good.ctypes.data
    good[3] = 5.0  # JAX reads the same memory (the hazard the plan reports)
    assert float(j[3]) == 5.0
    plan = interop.explain(bad, "jax")
    assert not plan.zero_copy and "64-byte aligned" in " ".join(plan.reasons)
    with pytest.raises(ZeroCopyError, match="64-byte aligned"):
        interop.to_framework(bad, "jax", copy=False)


@pytest.mark.parametrize("source", ["pyarrow", pytest.param("polars", marks=needs_polars)])
def test_booleans_copy_and_copy_false_refuses(source):
    x = pa.array([True, False, True]) if source == "pyarrow" else pl.Series([True, False, True])
    assert interop.to_framework(x, "numpy").tolist() == [True, False, True]
    with pytest.raises(ZeroCopyError, match="bits"):
        interop.to_framework(x, "numpy", copy=False)


@needs_polars
def test_dates_are_a_recorded_copy():
    days = [datetime.date(2024, 1, 1), datetime.date(2024, 3, 1)]
    for x in (pa.array(days, pa.date32()), pa.array(days, pa.date64()), pl.Series(days)):
        plan = interop.explain(x, "numpy")
        assert not plan.zero_copy and any(s.copies for s in plan.steps), plan
        out = interop.to_framework(x, "numpy")
        assert out.astype("datetime64[D]").tolist() == days
        with pytest.raises(ZeroCopyError, match="datetime64"):
            interop.to_framework(x, "numpy", copy=False)


@pytest.mark.parametrize("make", [
    lambda: pa.array([1], pa.time32("s")),
    lambda: pa.array([1], pa.decimal128(5, 2)),
    pytest.param(lambda: pl.Series([datetime.time(1)]), marks=needs_polars),
    pytest.param(lambda: pl.Series([1.5]).cast(pl.Decimal(10, 2)), marks=needs_polars),
    pytest.param(lambda: pl.Series([1], dtype=pl.Int128), marks=needs_polars),
], ids=["arrow-time32", "arrow-decimal", "polars-time", "polars-decimal", "polars-int128"])
def test_types_numpy_cannot_hold_are_refused_by_name(make):
    x = make()
    assert not interop.can_convert(x, "numpy")
    with pytest.raises(UnsupportedConversionError, match="numeric"):
        interop.to_framework(x, "numpy")
    with pytest.raises(UnsupportedConversionError):
        interop.to_framework(x, "torch")


@needs_polars
def test_two_step_plans_run_each_step_check():
    chunked = pa.chunked_array([[1.0], [2.0]])
    t = interop.to_framework(chunked, "torch")  # step 1 needs the copy route
    assert t.tolist() == [1.0, 2.0]
    with pytest.raises(ZeroCopyError, match="chunks"):
        interop.to_framework(chunked, "torch", copy=False)
    s = pl.Series("x", np.arange(4, dtype=np.float64))
    t = interop.to_framework(s, "torch")
    assert t.data_ptr() == s.to_numpy(allow_copy=False).ctypes.data
    plan = interop.explain(s, "torch")  # torch has no read-only tensors: said, not hidden
    assert plan.zero_copy and any("read-only" in h for h in plan.hazards), plan
    t[1] = 42.0  # the hazard is real: the write lands in the Series' own buffer
    assert s[1] == 42.0


def test_arrow_to_jax_emits_no_deprecation_warning():
    """pyarrow's own legacy DLPack export (the one JAX asks for) warns on every call; the
    route through NumPy does not."""
    import warnings

    buf = np.zeros(4 * 16 + 64, np.uint8)
    start = (-buf.ctypes.data) % 64
    a = buf[start:start + 64].view(np.float32)
    x = pa.array(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        j = interop.to_framework(x, "jax")
    assert j.unsafe_buffer_pointer() == x.buffers()[1].address
    a[4] = 3.0  # the Arrow array and the JAX array read the one buffer
    assert float(j[4]) == 3.0 and x[4].as_py() == 3.0


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_ml_dtypes_reach_jax_in_place(name):
    """NumPy cannot export bfloat16/float8 over DLPack, but ``jax.device_put`` aliases a
    compact, 64-byte aligned buffer of them: zero-copy, from NumPy and from torch (whose
    bfloat16 users meet this most), read-only too; any other layout is a recorded copy."""
    from helpers import aligned

    dt = np.dtype(getattr(ml_dtypes, name))
    a = aligned(np.arange(64).astype(dt))
    ro = aligned(np.arange(64).astype(dt))
    ro.flags.writeable = False
    t = torch.from_numpy(aligned(np.arange(64).astype(dt)).view(np.uint8)).view(
        getattr(torch, name))
    got = {}
    for x, ptr in ((a, a.ctypes.data), (ro, ro.ctypes.data), (t, t.data_ptr())):
        assert interop.explain(x, "jax").zero_copy, x
        for copy in (None, None, False):  # the first call plans, the second is the fast plan
            got[id(x)] = j = interop.to_framework(x, "jax", copy=copy)
            assert j.dtype == dt and j.unsafe_buffer_pointer() == ptr
        assert not oracles.shares(interop.to_framework(x, "jax", copy=True), x)
    a[5] = 3.0  # the same memory: a write through the source is seen by the JAX result
    t[6] = 2.0
    ro.flags.writeable = True
    ro[7] = 4.0
    assert float(got[id(a)][5]) == 3.0 and float(got[id(t)][6]) == 2.0
    assert float(got[id(ro)][7]) == 4.0
    misaligned = aligned(np.zeros(65 * dt.itemsize, np.uint8))[dt.itemsize:].view(dt)
    assert not interop.explain(misaligned, "jax").zero_copy
    with pytest.raises(ZeroCopyError, match="64-byte aligned"):
        interop.to_framework(misaligned, "jax", copy=False)
    got = interop.to_framework(misaligned, "jax")
    assert not oracles.shares(got, misaligned) and got.dtype == dt


@pytest.mark.parametrize("copy", [None, False])
def test_a_bfloat16_tensor_goes_to_jax_zero_copy(copy):
    """A bfloat16 tensor reaches JAX through NumPy's ml_dtypes view of its bits (torch has no
    bfloat16 NumPy dtype), which jax.device_put aliases: zero-copy, the grad hazard said."""
    import jax

    from helpers import aligned

    a = aligned(np.arange(64).astype(ml_dtypes.bfloat16))
    t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).requires_grad_()
    plan = interop.explain(t, "jax", copy=copy)
    assert plan.zero_copy and any("grad" in h for h in plan.hazards), plan
    for _ in range(2):  # the first call plans, the second takes the kept plan
        j = interop.to_framework(t, "jax", copy=copy)
        assert j.dtype == jax.numpy.bfloat16 and j.unsafe_buffer_pointer() == t.data_ptr()
    with torch.no_grad():  # the same memory: a write through the tensor is seen by JAX
        t[3] = 7.0
    assert float(j[3]) == 7.0


@needs_polars
def test_a_misaligned_array_to_arrow_is_copied_for_the_reason_given():
    """pyarrow.array wraps a misaligned buffer as it is (Arrow buffers are aligned), so
    interop copies it first and says why; polars.Series copies it itself."""
    a = np.zeros(4 * 16 + 8, np.uint8)[1:1 + 4 * 16].view(np.float32)
    assert not a.flags.aligned
    assert pa.array(a).buffers()[1].address == a.ctypes.data  # what the reason says
    plan = interop.explain(a, "pyarrow")
    assert not plan.zero_copy and "wrap it as it is" in plan.reasons[0]
    got = interop.to_framework(a, "pyarrow")
    assert got.buffers()[1].address % 4 == 0 and got.to_numpy().tolist() == a.tolist()
    assert "polars.Series copies it" in interop.explain(a, "polars").reasons[0]
