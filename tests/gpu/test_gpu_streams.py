"""Streams on the GPU paths (issue 35, items 4 and 5, and the smaller stream items), judged on
the CPU with named stand-ins: a device value that speaks DLPack (``GpuBox``), JAX's
``from_dlpack`` as its source does it (``jax_from_dlpack_stand_in``), and torch's CUDA streams
with torch's rules (``TorchCudaStandIn``). What only a device shows is gpu-marked at the end.
"""

from __future__ import annotations

import types
from dataclasses import replace

import numpy as np
import pytest
import torch
from test_gpu_rules import DeviceStandIn

import interop
from interop import devices
from interop.adapters import torch_
from interop.adapters.base import ArrayAdapter
from interop.default import build
from interop.view import BufferView

JAX_STREAM = 0x3330  # the stream JAX's from_dlpack orders its use after
USER_STREAM = 0x7770


class Export:
    """What a CUDA array's framework hands out to DLPack consumers: ``__dlpack__`` records the
    keywords it is called with and hands out a capsule (of host memory: nothing here reads
    it), versioned when ``max_version`` asks for one."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.host = np.arange(4, dtype=np.float32)

    def __dlpack__(self, **kw):
        self.calls.append(kw)
        keep = {k: v for k, v in kw.items() if k == "max_version"}
        return self.host.__dlpack__(**keep)

    def __dlpack_device__(self):
        return 2, 0


class GpuBox:
    """Named stand-in for a CUDA array of a framework that speaks DLPack (``export``)."""

    def __init__(self) -> None:
        self.export = Export()
        self.calls = self.export.calls


def jax_from_dlpack_stand_in(producer):
    """``jax.dlpack.from_dlpack`` (jax 0.10/0.11 ``_src/dlpack.py``) for a CUDA producer: it
    calls ``__dlpack__(stream=<its own ready-events stream>)``, without ``max_version``."""
    return ("jax array", producer.__dlpack__(stream=JAX_STREAM))


def _registry(export_stream=None):
    reg = build()
    kw = {} if export_stream is None else {"export_stream": export_stream}
    reg.add(ArrayAdapter(
        name="gpubox", package="numpy", devices=("cuda",), target=False,
        is_value=lambda x: isinstance(x, GpuBox), device=lambda b: ("cuda", 0),
        export_dlpack=lambda b: b.export,
        view=lambda b: BufferView(0x7F0000000000, (4,), (4,), 4, "<f4", ("cuda", 0), False, b),
        **kw))
    reg.add(replace(reg.adapters["jax"], from_dlpack=jax_from_dlpack_stand_in))
    return reg


# ---- item 4: stream= with a JAX target ---------------------------------------------------

def test_stream_into_jax_takes_jaxs_own_stream_and_explain_says_so():
    """JAX cannot import on a user's stream: the source is exported once, on the stream JAX
    passes (the no-stream path, which orders the source before JAX's use), and ``explain``
    says why the user's stream is not the one used. Before: a versioned capsule was exported
    for the user's stream and JAX's call without ``max_version`` got a raw ``BufferError``."""
    reg = _registry()
    box = GpuBox()
    out = reg.convert(box, "jax", stream=USER_STREAM)
    assert out[0] == "jax array"
    assert box.calls == [{"stream": JAX_STREAM}]
    plan = reg.explain(GpuBox(), "jax", stream=USER_STREAM)
    assert plan.supported and plan.zero_copy
    assert any(r.startswith(f"stream={USER_STREAM}: JAX cannot import on a user's stream")
               for r in plan.reasons), plan.reasons
    assert not any("stream" in r for r in reg.explain(GpuBox(), "jax").reasons)


def test_explain_and_can_convert_refuse_a_stream_for_cpu_data_as_the_conversion_does():
    x = np.arange(3.0)
    with pytest.raises(interop.errors.InteropError, match="streams order GPU work only") as a:
        interop.to_framework(x, "torch", stream=USER_STREAM)
    with pytest.raises(interop.errors.InteropError) as b:
        interop.explain(x, "torch", stream=USER_STREAM)
    assert str(a.value) == str(b.value)
    assert interop.can_convert(x, "torch", stream=USER_STREAM) is False
    assert interop.can_convert(x, "torch") is True


# ---- the source orders an export its __dlpack__ cannot (stream=2, another device) -------

def test_a_sources_export_stream_orders_the_export_and_its_answer_is_passed():
    """The runner asks the source's ``export_stream`` which stream to pass: torch answers
    ``-1`` once it ordered the export itself (below)."""
    seen = []
    reg = _registry(export_stream=lambda b, s: seen.append(s) or -1)
    reg.add(replace(reg.adapters["torch"], from_dlpack=lambda p: ("tensor", p.__dlpack__(
        stream=None, max_version=(1, 1)))))
    box = GpuBox()
    reg.convert(box, "torch", stream=2)
    assert seen == [2] and box.calls[0]["stream"] == -1


class TorchCudaStandIn:
    """torch's CUDA streams as ``Tensor.__dlpack__`` and ``_from_cai`` use them, on two devices:
    ``current_stream``/``default_stream``/``ExternalStream`` record the device they are asked
    for; ``wait_stream`` records (waiter, waited). torch's ``ExternalStream`` takes a stream's
    device from its ``device=`` (else the current device), as ``c10/cuda/CUDAStream.cpp``."""

    def __init__(self, current_device=0):
        self.current_device = current_device
        self.waits: list[tuple[str, str]] = []

    def stream(self, name, device):
        index = self.current_device if device is None else torch.device(device).index
        s = types.SimpleNamespace(name=f"{name}@{index}")
        s.wait_stream = lambda other: self.waits.append((s.name, other.name))
        return s

    def install(self, monkeypatch):
        cuda = torch.cuda
        monkeypatch.setattr(cuda, "current_device", lambda: self.current_device)
        monkeypatch.setattr(cuda, "current_stream",
                            lambda device=None: self.stream("current", device))
        monkeypatch.setattr(cuda, "default_stream",
                            lambda device=None: self.stream("default", device))

        def external(ptr, device=None):
            if ptr % 2:  # c10 streamIdType: an odd id is torch's own; -1 is no stream at all
                raise RuntimeError(f"Unrecognized stream {ptr}")
            return self.stream(f"external {ptr:#x}", device)

        monkeypatch.setattr(cuda, "ExternalStream", external)
        return self


class CudaTensor:
    """Named stand-in for a CUDA tensor: its device, and ``__dlpack__`` as torch 2.13's
    ``Tensor.__dlpack__`` (``torch/_tensor.py``) checks it: a tensor off the current device is
    refused with ``BufferError`` before ``stream`` is read; it records the streams passed."""

    requires_grad = False
    is_cuda = True

    def __init__(self, index):
        self.device = torch.device("cuda", index)
        self.exported: list[tuple[int, object]] = []

    def __dlpack_device__(self):
        return (2, self.device.index)

    def __dlpack__(self, stream=-1, **kw):
        if self.device.index != torch.cuda.current_device():
            raise BufferError("Can't export tensors on a different CUDA device index. "
                              f"Expected: {self.device.index}. "
                              f"Current device: {torch.cuda.current_device()}.")
        self.exported.append((torch.cuda.current_device(), stream))
        return "capsule"


@pytest.mark.parametrize(("stream", "index", "passed", "waits"), [
    (2, 0, -1, [("external 0x2@0", "current@0")]),  # torch refuses 2: ordered here
    (2, 1, -1, [("external 0x2@1", "current@1")]),  # ... on the tensor's device
    (USER_STREAM, 1, USER_STREAM, []),  # exported under its device: torch orders it there
    (USER_STREAM, 0, USER_STREAM, []),  # torch orders it itself
    (-1, 1, -1, []),  # no synchronisation asked
])
def test_torch_export_stream(monkeypatch, stream, index, passed, waits):
    """torch 2.13's ``Tensor.__dlpack__`` raises ``BufferError("per-thread default stream is
    not supported.")`` for 2: that export is ordered here, on the tensor's device, and
    exported with -1; any other stream torch orders itself (the export runs under the
    tensor's device, below)."""
    streams = TorchCudaStandIn(current_device=0).install(monkeypatch)
    assert torch_.ADAPTER.export_stream(CudaTensor(index), stream) == passed
    assert streams.waits == waits


class DeviceGuardStandIn:
    """``torch.cuda.device(d)``: the current device is ``d`` inside, the previous one after."""

    def __init__(self, streams, device):
        self.streams, self.index = streams, torch.device(device).index

    def __enter__(self):
        self.before, self.streams.current_device = self.streams.current_device, self.index

    def __exit__(self, *exc):
        self.streams.current_device = self.before


@pytest.mark.parametrize("stream", [USER_STREAM, None, 1])
def test_torch_tensor_off_the_current_device_exports_under_its_own(monkeypatch, stream):
    """Before, the export of a tensor on device 1 with device 0 current raised torch's
    ``BufferError`` whatever the stream (the ``-1`` workaround came too late): now it runs
    under ``torch.cuda.device(1)``, with the consumer's stream, and device 0 is current after."""
    streams = TorchCudaStandIn(current_device=0).install(monkeypatch)
    monkeypatch.setattr(torch.cuda, "device", lambda d: DeviceGuardStandIn(streams, d))
    t = CudaTensor(1)
    exported = torch_.ADAPTER.export_dlpack(t)
    assert exported.__dlpack_device__() == (2, 1)
    assert exported.__dlpack__(stream=stream) == "capsule"
    assert t.exported == [(1, stream)]
    assert streams.current_device == 0
    same = CudaTensor(0)
    assert torch_.ADAPTER.export_dlpack(same) is same  # on the current device: as it is


# ---- item 5: a CUDA Array Interface producer into torch -----------------------------------

class TensorOn:
    """What ``torch.as_tensor`` makes of a CAI producer: a tensor on the producer's device."""

    def __init__(self, index):
        self.device = torch.device("cuda", index)


@pytest.mark.parametrize(("user", "index", "waits"), [
    (-1, 0, []),  # no synchronisation: before, ExternalStream(-1) raised "Unrecognized stream"
    (None, 1, [("current@1", "external 0x1230@1")]),  # the producer's device, not the current
    (USER_STREAM, 1, [(f"external {USER_STREAM:#x}@1", "external 0x1230@1")]),
])
def test_cai_into_torch_honours_minus_one_and_the_producers_device(monkeypatch, user, index,
                                                                     waits):
    streams = TorchCudaStandIn(current_device=0).install(monkeypatch)
    monkeypatch.setattr(torch, "as_tensor", lambda obj, **kw: TensorOn(index))
    monkeypatch.setattr(devices, "pointer_device", lambda ptr: index)  # the runtime's answer
    out = torch_._from_cai(DeviceStandIn(shape=(4,), stream=0x1230), user)
    assert out.device.index == index and streams.waits == waits


# ---- on a device ---------------------------------------------------------------------------

@pytest.mark.gpu
def test_on_a_device_stream_into_jax_and_per_thread_stream_out_of_torch():
    """torch -> JAX with ``stream=`` gives JAX's array of the same memory; torch -> CuPy with
    the per-thread default stream (2) converts instead of a ``BufferError``; a Numba array
    into torch with ``stream=-1`` converts without waiting."""
    cupy = pytest.importorskip("cupy")
    pytest.importorskip("jax")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    t = torch.arange(8, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    j = interop.to_framework(t, "jax", stream=s)
    assert j.unsafe_buffer_pointer() == t.data_ptr()
    c = interop.to_framework(t, "cupy", stream=2)
    c[0] = 42.0
    cupy.cuda.Device().synchronize()
    assert t[0].item() == 42.0 and c.data.ptr == t.data_ptr()
    numba_cuda = pytest.importorskip("numba.cuda")
    n = numba_cuda.to_device(np.arange(4, dtype=np.float32))
    back = interop.to_framework(n, "torch", stream=-1)
    assert back.data_ptr() == n.__cuda_array_interface__["data"][0]
