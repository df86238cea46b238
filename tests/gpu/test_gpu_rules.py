"""The layout rules on device hand-overs, judged on the CPU with stand-ins for device values.

A stand-in is a plain object exposing only ``__cuda_array_interface__`` (as PyCUDA, cuda.core
buffers or a user's class do): its pointer is never dereferenced, so the plans, the checks
and the refusals run here exactly as on a GPU host. The device half (the copy itself, values
read back) is in ``test_gpu_conversions.py``.
"""

from __future__ import annotations

import pytest

import interop
from interop import devices
from interop.adapters.verdicts import NEEDS_COPY
from interop.api import REGISTRY
from interop.errors import DeviceError, ProtocolError, ZeroCopyError
from interop.protocols import dlpack

BASE = 0x7F00_0000_0000  # 256-byte aligned, like every CUDA allocation


class DeviceStandIn:
    """Named stand-in for a device buffer: only the CUDA Array Interface, never read."""

    def __init__(self, shape, strides=None, typestr="<f4", offset=0, readonly=False, stream=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "strides": strides, "version": 3,
            "data": (BASE + offset, readonly), "stream": stream}


class CupyStandIn(DeviceStandIn):
    """What the CuPy adapter reads of a ``cupy.ndarray``: its interface, ``dtype`` and
    ``device.id``."""

    class device:  # noqa: N801 - the attribute CuPy has
        id = 0

    def __init__(self, shape, strides=None, typestr="<f4", dtype=None, **kw):
        import numpy as np

        super().__init__(shape, strides, typestr, **kw)
        self.dtype = np.dtype(typestr) if dtype is None else dtype


@pytest.fixture
def on_device_zero(monkeypatch):
    """The CUDA runtime's answer for the stand-in's pointer (no runtime here)."""
    monkeypatch.setattr(devices, "pointer_device", lambda ptr: 0)


def _check(src, tgt, x):
    (edge,) = [e for e in REGISTRY.routes.route(src, tgt, "cuda") if e.source == src]
    assert edge.target == tgt, REGISTRY.routes.route(src, tgt, "cuda")
    return edge.check(x) if edge.check is not None else None


# What each consumer on a GPU cannot take, and the H100 evidence for it (gpu-findings.md):
# torch.from_dlpack aborts on negative strides; JAX refuses non-compact strides and XLA's GPU
# entry parameters must be 16-byte aligned; cuDF columns are dense.
LAYOUTS = {
    "negative": dict(shape=(100,), strides=(-4,), offset=396),
    "broadcast": dict(shape=(4, 3), strides=(0, 4)),
    "non-compact": dict(shape=(10,), strides=(8,)),
    "fortran": dict(shape=(3, 4), strides=(4, 12)),
    "misaligned": dict(shape=(8,), strides=None, offset=4),
    "compact": dict(shape=(4, 3), strides=None),
}
EXPECTED = {  # (target, layout) -> the words the reason must carry; None: zero-copy
    ("torch", "negative"): "negative strides",
    ("torch", "broadcast"): None,
    ("torch", "non-compact"): None,
    ("torch", "fortran"): None,
    ("torch", "misaligned"): None,
    ("torch", "compact"): None,
    ("jax", "negative"): "negative strides",
    ("jax", "broadcast"): "broadcast",
    ("jax", "non-compact"): "non-contiguous",
    ("jax", "fortran"): "Fortran-order",
    ("jax", "misaligned"): "16-byte aligned",
    ("jax", "compact"): None,
    ("cupy", "negative"): None,
    ("cupy", "broadcast"): None,
    ("cupy", "misaligned"): None,
}


@pytest.mark.parametrize(("tgt", "layout"), sorted(EXPECTED))
def test_cupy_source_layout_rules(tgt, layout, on_device_zero):
    x = CupyStandIn(**LAYOUTS[layout])
    src = "cupy" if tgt != "cupy" else "cai-producer"  # (into CuPy: any producer's edge)
    verdict = _check(src, tgt, x)
    words = EXPECTED[(tgt, layout)]
    if words is None:
        assert verdict is None
    else:
        assert verdict is not None and verdict[0] == NEEDS_COPY, verdict
        assert words in verdict[1]


@pytest.mark.parametrize(("src", "tgt"), [
    (s, t) for s in ("cupy", "numba", "cudf", "cai-producer", "torch", "jax")
    for t in ("torch", "jax", "cudf") if s != t])
def test_every_device_edge_into_a_picky_consumer_is_checked(src, tgt):
    """No GPU edge into torch, JAX or cuDF exists without a check (the H100 abort)."""
    into = [e for e in REGISTRY.routes.route(src, tgt, "cuda") if e.target == tgt]
    assert into, REGISTRY.routes.route(src, tgt, "cuda")
    for e in into:
        assert e.check is not None, (e.source, e.target, e.via)


def test_cudf_takes_dense_columns_only():
    assert _check("cupy", "cudf", CupyStandIn(shape=(12,))) is None
    verdict = _check("cupy", "cudf", CupyStandIn(**LAYOUTS["non-compact"]))
    assert verdict[0] == NEEDS_COPY and "cuDF" in verdict[1]


def test_negative_strides_into_torch_plan_copies_on_the_device(on_device_zero):
    x = DeviceStandIn(**LAYOUTS["negative"])
    plan = interop.explain(x, "torch")
    assert plan.supported and not plan.zero_copy
    assert "negative strides" in plan.reasons[0] and "torch on CUDA" in plan.reasons[0]
    assert [s.via for s in plan.steps][-2:] == ["fresh aligned copy",
                                                "DLPack: torch.from_dlpack"]
    refused = interop.explain(x, "torch", copy=False)
    assert not refused.supported and refused.error == "zero-copy"


def test_negative_strides_never_reach_torch_with_copy_false(on_device_zero, monkeypatch):
    import torch

    def must_not_run(*a, **k):
        raise AssertionError("torch was handed a negative-stride device buffer")

    monkeypatch.setattr(torch, "as_tensor", must_not_run)
    monkeypatch.setattr(torch, "from_dlpack", must_not_run)
    with pytest.raises(ZeroCopyError, match="negative strides"):
        interop.to_framework(DeviceStandIn(**LAYOUTS["negative"]), "torch", copy=False)


def test_compact_cai_producer_plan_is_zero_copy(on_device_zero):
    plan = interop.explain(DeviceStandIn(shape=(4, 3)), "torch")
    assert plan.supported and plan.zero_copy
    assert plan.source == "cai-producer"


def test_read_only_cai_producer_names_the_hazard(on_device_zero):
    plan = interop.explain(DeviceStandIn(shape=(4,), readonly=True), "cupy")
    assert plan.zero_copy
    assert any("read-only" in h for h in plan.hazards)
    assert not interop.explain(DeviceStandIn(shape=(4,)), "cupy").hazards


def test_cai_producer_without_a_runtime_is_a_clear_device_error():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount():
            pytest.skip("a CUDA device is present: the runtime answers")
    except Exception:
        pass
    with pytest.raises(DeviceError, match="which device holds pointer"):
        interop.to_framework(DeviceStandIn(shape=(4,)), "torch")


def test_cai_producer_is_recognised_not_refused():
    assert REGISTRY.owner(DeviceStandIn(shape=(2,))) == "cai-producer"


class _TorchStream:
    def __init__(self, handle):
        self.cuda_stream = handle


class _CupyStream:
    def __init__(self, ptr):
        self.ptr = ptr


class _CudaCoreStream:
    def __cuda_stream__(self):
        return (0, 0xABC0)


@pytest.mark.parametrize(("given", "passed"), [
    (None, None), (1, 1), (2, 2), (-1, -1), (0x5555_0000, 0x5555_0000),
    (_TorchStream(0), 1), (_TorchStream(0x1234), 0x1234), (_CupyStream(0), 1),
    (_CupyStream(0x99), 0x99), (_CudaCoreStream(), 0xABC0)])
def test_stream_argument_maps_as_the_spec_says(given, passed):
    assert dlpack.stream_argument(given, dlpack.Device.CUDA) == passed


def test_stream_zero_is_refused_with_the_fix():
    with pytest.raises(ProtocolError, match="pass 1 for the legacy default stream"):
        dlpack.stream_argument(0, dlpack.Device.CUDA)


@pytest.mark.parametrize("bad", [-2, "s", 1.5, True])
def test_bad_streams_are_named(bad):
    with pytest.raises(ProtocolError, match="stream"):
        dlpack.stream_argument(bad, dlpack.Device.CUDA)


def test_rocm_stream_rules():
    assert dlpack.stream_argument(0, dlpack.Device.ROCM) == 0
    assert dlpack.stream_argument(_TorchStream(0), dlpack.Device.ROCM) == 0
    with pytest.raises(ProtocolError, match="ROCm"):
        dlpack.stream_argument(1, dlpack.Device.ROCM)


def test_stream_for_a_cpu_device_is_refused():
    with pytest.raises(ProtocolError, match="CUDA and ROCm only"):
        dlpack.stream_argument(5, dlpack.Device.CPU)


def test_stream_zero_refused_before_any_conversion(on_device_zero):
    with pytest.raises(ProtocolError, match="stream=0 is ambiguous"):
        interop.to_framework(DeviceStandIn(shape=(4,)), "torch", stream=0)
