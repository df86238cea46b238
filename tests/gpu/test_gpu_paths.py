"""The GPU paths as the frameworks' sources say (issue 28), judged on the CPU with named
stand-ins for device values and streams; what only a device shows is gpu-marked in
``test_gpu_device_findings.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from dataclasses import replace

import numpy as np
import pytest
import torch
from test_gpu_rules import CupyStandIn, DeviceStandIn

import interop
from interop.adapters import cudf_, cupy_, numba_, torch_
from interop.adapters.base import ArrayAdapter, Edge, fixed
from interop.adapters.verdicts import NEEDS_COPY, UNSUPPORTED
from interop.api import REGISTRY
from interop.copyroute import copy_hub
from interop.default import build
from interop.protocols import cai


@pytest.fixture
def on_device_zero(monkeypatch):
    """The CUDA runtime's answer for a stand-in's pointer (no runtime here)."""
    from interop import devices

    monkeypatch.setattr(devices, "pointer_device", lambda ptr: 0)


def _edge(src, tgt):
    (edge,) = [e for e in REGISTRY.routes.route(src, tgt, "cuda") if e.source == src]
    return edge


# ---- streams (items 1, 8 and 12) ---------------------------------------------------------

class TorchStreams:
    """Named stand-in for ``torch.cuda``'s streams, with torch's C++ rule on stream ids
    (c10 ``streamIdType``): an odd id is one of torch's own streams, and 1 is none of them
    (``invalid StreamId1``); an even one is a raw ``cudaStream_t``. Records every wait."""

    def __init__(self):
        self.waits = []
        self.current = self.Stream("current")
        self.default = self.Stream("default")

    class Stream:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return self.name

    def external(self, ptr, device=None):
        if ptr % 2:
            raise RuntimeError(f"invalid StreamId{ptr}")
        return self.Stream(f"external {ptr:#x}")

    def install(self, monkeypatch):
        streams = self

        def wait_stream(self, other):
            streams.waits.append((self.name, other.name))

        monkeypatch.setattr(self.Stream, "wait_stream", wait_stream, raising=False)
        monkeypatch.setattr(torch.cuda, "ExternalStream", self.external)
        monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: self.current)
        monkeypatch.setattr(torch.cuda, "default_stream", lambda device=None: self.default)
        monkeypatch.setattr(torch, "as_tensor",  # a tensor on the current device
                            lambda obj, **kw: types.SimpleNamespace(device=None, obj=obj))
        from interop import devices  # the CUDA runtime's answer for the stand-in's pointer

        monkeypatch.setattr(devices, "pointer_device", lambda ptr: 0)
        return self


@pytest.mark.parametrize(("cai_stream", "waited"), [
    (1, "default"),  # CuPy's default-stream arrays, and Numba arrays made from them
    (2, "external 0x2"),  # the per-thread default stream: its handle
    (0, "default"),  # Numba's cuda.default_stream(): the legacy default (stream_of)
    (0x5550, "external 0x5550")])
def test_cai_stream_into_torch_maps_the_default_streams(monkeypatch, cai_stream, waited):
    streams = TorchStreams().install(monkeypatch)
    torch_._from_cai(DeviceStandIn(shape=(4,), stream=cai_stream))
    assert streams.waits == [("current", waited)]


def test_cai_stream_zero_is_taken_as_the_legacy_default():
    good = DeviceStandIn(shape=(4,), stream=0).__cuda_array_interface__
    cai.validate(good)  # Numba exports it; CuPy and Numba take it
    assert cai.stream_of(good) == 1
    with pytest.raises(interop.errors.ProtocolError, match="stream"):
        cai.validate(dict(good, stream=-3))


def test_stream_on_a_cai_step_is_the_consumer_stream(monkeypatch, on_device_zero):
    """``stream=`` reaches the CAI import: the user's stream waits for the producer's."""
    streams = TorchStreams().install(monkeypatch)

    class UserStream:
        cuda_stream = 0x7770

    x = DeviceStandIn(shape=(4,), stream=0x1230)
    interop.to_framework(x, "torch", stream=UserStream())
    assert streams.waits == [("external 0x7770", "external 0x1230")]


class CudaTensorStandIn:
    """What torch's CAI export reads of a CUDA tensor: its version-2 interface (no stream)."""

    requires_grad = False
    device = "cuda:0"
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "strides": None,
                                "data": (0x7F0000000000, False), "version": 2}


@pytest.mark.parametrize(("current", "named"), [(0, 1), (0x4440, 0x4440)])
def test_torch_cai_export_names_its_current_stream(monkeypatch, current, named):
    """torch's CAI is version 2, without a stream: a CAI consumer would order nothing."""
    monkeypatch.setattr(torch.cuda, "current_stream",
                        lambda device=None: types.SimpleNamespace(cuda_stream=current))
    interface = torch_.ADAPTER.export_cai(CudaTensorStandIn()).__cuda_array_interface__
    assert interface["version"] == 3 and interface["stream"] == named
    assert cai.stream_of(interface) == named


def run_child(code, env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


def test_cupy_null_stream_maps_to_per_thread_default_when_cupy_uses_it():
    pytest.importorskip("cupy")
    done = run_child("""
        import cupy
        from interop.protocols import dlpack
        print(dlpack.stream_argument(cupy.cuda.Stream.null), dlpack.stream_argument(
            cupy.cuda.Stream.ptds))
    """, env={"CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "2"]
    legacy = run_child("""
        import cupy
        from interop.protocols import dlpack
        print(dlpack.stream_argument(cupy.cuda.Stream.null))
    """, env={"CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": "0"})
    assert legacy.stdout.split() == ["1"], legacy.stderr[-2000:]


# ---- checks on every device edge (items 4 and 5) ------------------------------------------

@pytest.mark.parametrize("lazy", ["neg", "conj"])
@pytest.mark.parametrize("tgt", ["cupy", "numba", "jax", "torch", "cudf"])
def test_lazy_bits_are_checked_on_every_device_edge_out_of_torch(lazy, tgt):
    t = torch.tensor([2.0 + 0j, 4.0]) if lazy == "conj" else torch.tensor([2.0, 4.0])
    t = t.conj() if lazy == "conj" else t._neg_view()
    for e in REGISTRY.routes.route("torch", tgt, "cuda") if tgt != "torch" else []:
        if e.source == "torch":
            verdict = e.check(t)
            assert verdict is not None and verdict[0] == NEEDS_COPY, (e, verdict)
            assert "lazy" in verdict[1]


GPU_SOURCES = ["cupy", "numba", "cudf", "cai-producer", "torch", "jax", "tensorflow", "paddle",
               "dlpack", "dlpack-producer"]


@pytest.mark.parametrize("src", GPU_SOURCES)
def test_every_device_edge_has_a_check(src):
    edges = REGISTRY.routes.edges_from(src, "cuda")
    for e in edges:
        assert e.check is not None, (e.source, e.target, e.via)


@pytest.mark.parametrize(("tgt", "layout", "verdict"), [
    ("tensorflow", dict(shape=(10,), strides=(8,)), NEEDS_COPY),
    ("tensorflow", dict(shape=(8,), offset=16), NEEDS_COPY),  # TF's 64-byte rule
    ("paddle", dict(shape=(100,), strides=(-4,), offset=396), NEEDS_COPY),
    ("cudf", dict(shape=(4, 3)), UNSUPPORTED),
    ("cudf", dict(shape=(4,), typestr="<f2"), UNSUPPORTED),
    ("cudf", dict(shape=(4,), typestr="<c8"), UNSUPPORTED),
    ("numba", dict(shape=(4,), typestr="<V2", dtype="bfloat16"), UNSUPPORTED),
])
def test_device_consumers_have_their_own_rules(tgt, layout, verdict):
    if layout.get("dtype") == "bfloat16":
        import ml_dtypes

        layout = dict(layout, dtype=np.dtype(ml_dtypes.bfloat16))
    got = _edge("cupy", tgt).check(CupyStandIn(**layout))
    assert got is not None and got[0] == verdict, got


class _CudfRecorder:
    """Named stand-in for ``cudf``: records what ``Series(...)`` was handed."""

    def __init__(self):
        self.seen = []
        recorder = self

        class Series:
            def __init__(self, data, **kw):
                recorder.seen.append(data)

        self.module = types.ModuleType("cudf")
        self.module.Series = Series


def test_cudf_is_handed_strides_the_producer_left_out(monkeypatch):
    rec = _CudfRecorder()
    monkeypatch.setitem(sys.modules, "cudf", rec.module)
    x = DeviceStandIn(shape=(3,))
    cudf_.from_cai(x)
    handed = rec.seen[0].__cuda_array_interface__
    assert handed["strides"] == (4,) and handed["data"] == x.__cuda_array_interface__["data"]
    assert rec.seen[0].owner is x


# ---- dtypes (item 6) --------------------------------------------------------------------

def test_cupy_bfloat16_is_read_as_dlpack_names_it():
    import ml_dtypes

    x = CupyStandIn(shape=(4,), typestr="<V2", dtype=np.dtype(ml_dtypes.bfloat16))
    assert cupy_.view(x).dtype == "bfloat16"
    assert _edge("cupy", "torch").check(x) is None
    assert _edge("cupy", "jax").check(x) is None


# ---- JAX sources (item 12) --------------------------------------------------------------

@pytest.mark.parametrize("tgt", ["cupy", "numba"])
def test_jax_into_cupy_and_numba_names_the_immutability_hazard(tgt, jax_cpu):
    import jax.numpy as jnp

    first = REGISTRY.routes.route("jax", tgt, "cuda")[0]
    h = first.hazard(jnp.arange(3.0))
    assert h and "read-only/immutable" in h


class EmptyGpuJaxStandIn:
    """What JAX's export check reads of an empty array on a GPU: its size and device."""

    size = 0

    def devices(self):
        return (types.SimpleNamespace(platform="gpu", id=0),)


@pytest.mark.parametrize("tgt", ["cupy", "numba"])
def test_empty_jax_gpu_array_into_cupy_and_numba_takes_the_copy(tgt):
    verdict = REGISTRY.routes.route("jax", tgt, "cuda")[0].check(EmptyGpuJaxStandIn())
    assert verdict is not None and verdict[0] == NEEDS_COPY and "empty" in verdict[1]


# ---- plans on a GPU host, and per device (items 10 and 11) ------------------------------

def test_host_conversions_keep_the_fast_plan_on_a_gpu_host(monkeypatch):
    calls = []
    check = torch_.tensor_check
    monkeypatch.setattr(torch_, "tensor_check", lambda t: calls.append(1) or check(t))
    reg = build()
    reg.add(replace(reg.adapters["torch"], gpu_present=lambda: True))  # the GPU check, true
    t = torch.arange(4.0)
    for _ in range(5):
        a = reg.convert(t, "numpy")
        assert a.ctypes.data == t.data_ptr()
    assert len(calls) == 1  # the first call's checked plan; then the fast form


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_a_host_value_on_a_gpu_host_never_reads_its_device_after_the_first(name, jax_cpu):
    """Issue 35, item 7: on a GPU host (``gpu_present`` true) a host value's plan asks the
    adapter's cheap ``on_host`` and runs the host plan; the device (``device``: a torch
    device object, JAX's device set) is read by the first call only, not per call.
    Before: read on every call (+0.9 us over the CPU host's plan, benchmarks/dispatch.py)."""
    import jax.numpy as jnp

    reads = []
    reg = build()
    adapter = reg.adapters[name]
    reg.add(replace(adapter, gpu_present=lambda: True,
                    device=lambda x: reads.append(1) or adapter.device(x)))
    x = torch.arange(4.0) if name == "torch" else jnp.arange(4.0)
    pointer = x.data_ptr() if name == "torch" else x.unsafe_buffer_pointer()
    first = 0
    for _ in range(5):
        a = reg.convert(x, "numpy")
        assert a.ctypes.data == pointer
        first = first or len(reads)  # the first call plans: it reads the device
    assert first and len(reads) == first


class Box:
    """Named stand-in for a device value: lives on CUDA device ``index``."""

    def __init__(self, index):
        self.index = index


def test_device_index_is_honoured_on_every_call(monkeypatch):
    from interop import devices

    monkeypatch.setattr(devices, "cuda_device_count", lambda: 2)
    moved = []
    reg = build()
    reg.add(ArrayAdapter(name="box", package="numpy", devices=("cuda",),
                         is_value=lambda x: isinstance(x, Box),
                         device=lambda b: ("cuda", b.index), to_numpy=lambda b: np.zeros(1)))
    reg.add(ArrayAdapter(name="sink", package="numpy", devices=("cuda",),
                         is_value=lambda x: False,
                         to_device=lambda a, i: moved.append(i) or ("moved", i)))
    reg.add_edge(Edge("box", "sink", "toy", fixed(lambda b: ("kept", b.index)),
                      check=lambda b: None, device="cuda"))
    assert reg.convert(Box(1), "sink", device="cuda:1") == ("kept", 1)
    assert reg.convert(Box(0), "sink", device="cuda:1") == ("moved", 1)
    assert reg.convert(Box(1), "sink", device="cuda:1") == ("kept", 1)
    assert reg.convert(Box(0), "sink", device="cuda:0") == ("kept", 0)
    assert moved == [1]


def test_numba_and_cudf_report_the_device_holding_their_memory(monkeypatch):
    from interop import devices

    monkeypatch.setattr(devices, "pointer_device", lambda ptr: 1)
    numba_array = types.SimpleNamespace(
        device_ctypes_pointer=types.SimpleNamespace(value=0x7F0000000000),
        gpu_data=types.SimpleNamespace(context=types.SimpleNamespace(
            device=types.SimpleNamespace(id=0))))
    assert numba_.ADAPTER.device(numba_array) == ("cuda", 1)
    series = types.SimpleNamespace(null_count=0, name="a",
                                   __cuda_array_interface__=DeviceStandIn(
                                       shape=(3,)).__cuda_array_interface__)
    assert cudf_.ADAPTER.device(series) == ("cuda", 1)


# ---- device copies without CuPy (items 3 and 4) -------------------------------------------

def test_device_copy_is_made_by_the_framework_at_hand_without_cupy(monkeypatch):
    """On a torch + JAX host without CuPy the GPU copy route copies with torch. The copy
    route's steps run here on CPU tensors (torch's device copy and the DLPack hand-over are
    the same calls on the host); a negated tensor keeps its sign (torch resolves the bit)."""
    monkeypatch.setitem(sys.modules, "cupy", None)  # CuPy is not installed
    runner = REGISTRY.runner
    assert copy_hub(runner.adapters, "torch") == "torch"
    assert copy_hub(runner.adapters, "jax") == "torch"
    t = torch.tensor([2.0, 4.0])._neg_view()
    j = runner.copy_route("torch", t, "jax", "cuda")
    np.testing.assert_array_equal(np.asarray(j), [-2.0, -4.0])
    assert j.unsafe_buffer_pointer() != t.data_ptr()  # a fresh buffer
    c = runner.copy_route("torch", torch.tensor([1 + 2j]).conj(), "torch", "cuda")
    assert not c.is_conj() and c.item() == 1 - 2j


def test_device_copy_without_any_maker_is_a_clear_missing_framework(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(interop.errors.FrameworkMissingError, match="cupy or torch"):
        copy_hub(REGISTRY.adapters, "jax")


# ---- CUDA DLPack capsules and producers (item 7) ------------------------------------------

def cuda_capsule(a):
    """Named stand-in for a CUDA DLPack capsule: ``a``'s legacy capsule relabelled as
    ``kDLCUDA`` device 0 (with oracles' ctypes header, not interop's). Never dereferenced."""
    import oracles

    capsule = a.__dlpack__()
    mt = oracles._DLManagedTensor.from_address(oracles._get_pointer(capsule, b"dltensor"))
    mt.dl_tensor.device.device_type = 2
    return capsule


class CudaProducerStandIn:
    """Named stand-in for a plain CUDA DLPack producer: ``__dlpack__``/``__dlpack_device__``
    only, on ``(kDLCUDA, 0)``."""

    def __init__(self, a):
        self.a = a

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return cuda_capsule(self.a)


@pytest.mark.parametrize("make", [cuda_capsule, CudaProducerStandIn])
@pytest.mark.parametrize("tgt", ["torch", "cupy", "jax"])
def test_cuda_capsules_and_producers_go_to_the_gpu_consumers(make, tgt):
    a = np.arange(4.0, dtype=np.float32)
    x = make(a)
    src = REGISTRY.owner(x)
    assert REGISTRY.adapters[src].device(x) == ("cuda", 0)
    plan = interop.explain(x, tgt)
    assert plan.supported and plan.zero_copy, plan
    assert [s.via for s in plan.steps][-1].startswith("DLPack")


def test_device_arrays_convert_to_a_capsule(on_device_zero):
    (edge,) = REGISTRY.routes.route("cupy", "dlpack", "cuda")
    assert edge.via.startswith("DLPack") and edge.check(CupyStandIn(shape=(4,))) is None
    assert REGISTRY.routes.route("torch", "dlpack", "cuda")


def test_a_source_that_cannot_reach_the_copy_hub_goes_through_the_host(monkeypatch):
    """A device value whose hand-over to the copy hub itself needs a copy (its export check
    refuses it as it is, as TensorFlow's does for float8) is copied through the host, never
    sent round the copy route again. Stand-ins: JAX's export check refuses every array, and
    torch's host-to-device copy is ``torch.tensor`` (a copy on the host: no device here)."""
    import jax.numpy as jnp

    monkeypatch.setitem(sys.modules, "cupy", None)
    reg = build()
    reg.add(replace(reg.adapters["jax"], export_check=lambda x: (NEEDS_COPY, "stand-in")))
    reg.add(replace(reg.adapters["torch"], to_device=lambda a, i: torch.tensor(a)))
    t = reg.runner.copy_route("jax", jnp.arange(3.0), "torch", "cuda")
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0])
