"""NVIDIA DALI outputs as sources: dense and ragged batches, samples, buffer reuse, bad input.

Runs in its own pytest process (``pytest -m dali``; scripts/test.sh does it), on CPU pipelines
(``device_id=None``, no GPU needed); the core run collects this file but never imports DALI
(every import is inside a fixture or a test). Without DALI every test skips, saying so.

A zero-copy claim is proved by data pointers from the frameworks' own accessors (DALI's
``__array_interface__``, ``data_ptr()``, ``ctypes.data``, ``unsafe_buffer_pointer()``,
``buffers()[1].address``, a ctypes read of the capsule) and by a write through one side read
back on the other.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import interop
from helpers import data_pointer
from interop.errors import InteropError, UnsupportedConversionError, ZeroCopyError

pytestmark = pytest.mark.dali

DENSE = [(2, 3)] * 4
RAGGED = [(16,), (48,), (32,), (64,)]
"""Sample shapes of a ragged batch; float32 lengths in multiples of 16 keep every sample
64-byte aligned when DALI packs them, so JAX on the CPU can alias each one."""


@pytest.fixture(scope="module")
def dali():
    return pytest.importorskip("nvidia.dali", reason="DALI is not installed: "
                               "pip install 'interop-mempool[dali]' (CUDA 12 build)")


def make_pipe(dali, shapes, dtype=np.float32, **kw):
    """A CPU pipeline whose n-th run gives samples of ``shapes`` filled with n (0, 1, ...)."""
    from nvidia.dali import fn

    def batches():
        n = 0
        while True:
            yield [np.full(s, n, dtype=dtype) for s in shapes]
            n += 1

    @dali.pipeline_def(batch_size=len(shapes), num_threads=1, device_id=None, **kw)
    def pipe():
        return fn.external_source(source=batches, batch=True)

    p = pipe()
    p.build()
    return p


def dali_ptr(t) -> int:
    """The address of a DALI tensor's first element, by DALI's own array interface."""
    return t.__array_interface__["data"][0]


def dali_read(t) -> np.ndarray:
    """A NumPy view of a DALI tensor's memory through its own buffer protocol."""
    view = np.asarray(t)
    assert view.ctypes.data == dali_ptr(t)
    return view


@pytest.fixture
def dense(dali):
    (tl,) = make_pipe(dali, DENSE).run()
    assert tl.is_dense_tensor()
    return tl


@pytest.fixture
def ragged(dali):
    (tl,) = make_pipe(dali, RAGGED).run()
    assert not tl.is_dense_tensor()
    return tl


# ---- dense batches: one tensor of the target, zero-copy --------------------------------------

@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_dense_batch_is_one_writable_batch(dense, target):
    out = interop.to_framework(dense, target, copy=False)
    assert tuple(out.shape) == (4, 2, 3)
    assert data_pointer(out) == dali_ptr(dense.as_tensor()) == dense.data_ptr()
    out[1, 0, 0] = 7.0  # a write through the result, read back through DALI
    assert dali_read(dense[1])[0, 0] == 7.0


def test_dense_batch_into_jax(dense, jax_cpu):
    out = interop.to_framework(dense, "jax", copy=False)
    assert next(iter(out.devices())).platform == "cpu"
    assert out.shape == (4, 2, 3) and data_pointer(out) == dense.data_ptr()
    dali_read(dense.as_tensor())[2, 1, 2] = 5.0  # JAX arrays are immutable: write DALI's side
    assert float(out[2, 1, 2]) == 5.0


def test_dense_batch_into_pyarrow(dali):
    (tl,) = make_pipe(dali, [()] * 6, dtype=np.int32).run()  # six scalars: a 1-D batch
    arr = interop.to_framework(tl, "pyarrow", copy=False)
    assert len(arr) == 6 and arr.buffers()[1].address == dali_ptr(tl.as_tensor())
    dali_read(tl.as_tensor())[3] = 9
    assert arr[3].as_py() == 9


def test_dense_batch_as_a_dlpack_capsule(dense):
    cap = interop.to_framework(dense, "dlpack", copy=False)
    back = np.from_dlpack(type("P", (), {"__dlpack__": lambda s, **k: cap,
                                         "__dlpack_device__": lambda s: (1, 0)})())
    assert back.ctypes.data == dense.data_ptr() and back.shape == (4, 2, 3)
    back[0, 1, 1] = 3.0
    assert dali_read(dense[0])[1, 1] == 3.0


def test_a_sample_and_the_dense_view_are_sources_too(dense, jax_cpu):
    import torch

    sample = dense[2]
    t = interop.to_framework(sample, "torch", copy=False)
    assert isinstance(t, torch.Tensor) and t.data_ptr() == dali_ptr(sample)
    j = interop.to_framework(dense.as_tensor(), "jax", copy=False)
    assert j.unsafe_buffer_pointer() == dali_ptr(dense.as_tensor())


def test_shares_memory_reads_a_batch_by_its_samples(dense, ragged):
    out = interop.to_framework(dense, "torch")
    samples = interop.to_framework(ragged, "numpy")
    assert interop.shares_memory(dense, out) and interop.shares_memory(out, dense[3])
    assert interop.shares_memory(ragged, samples[2]) and not interop.shares_memory(ragged, out)
    assert not interop.shares_memory(dense, interop.to_framework(dense, "torch", copy=True))


def test_copy_true_gives_a_fresh_buffer(dense):
    out = interop.to_framework(dense, "numpy", copy=True)
    assert out.ctypes.data != dense.data_ptr()
    out[0, 0, 0] = 99.0
    assert dali_read(dense[0])[0, 0] == 0.0


def test_explain_says_dense_and_names_the_reuse_hazard(dense):
    from interop.adapters.dali_ import REUSE

    plan = interop.explain(dense, "torch")
    assert plan.zero_copy and plan.supported
    assert any("dense: 4 samples of shape (2, 3)" in r for r in plan.reasons)
    assert REUSE in plan.hazards
    assert "as_tensor" in str(plan)


def test_the_device_type_enum_is_read(dense):
    from interop.protocols import dlpack

    dev = dense.as_tensor().__dlpack_device__()
    assert not isinstance(dev[0], int)  # DALI's DLDeviceType: the case this reading is for
    assert dlpack.device_of(dense.as_tensor()) == (1, 0)


# ---- ragged batches: a list of per-sample results, or one padded batch on request -----------

@pytest.mark.parametrize("target", ["numpy", "torch", "pyarrow"])
def test_ragged_batch_is_a_list_of_zero_copy_samples(ragged, target):
    out = interop.to_framework(ragged, target, copy=False)
    assert isinstance(out, list) and [len(o) for o in out] == [16, 48, 32, 64]
    for i, o in enumerate(out):
        assert data_pointer(o) == dali_ptr(ragged[i]), i
    dali_read(ragged[3])[5] = 4.0
    assert float(np.asarray(out[3])[5]) == 4.0


def test_ragged_batch_into_jax_and_capsules(ragged, jax_cpu):
    js = interop.to_framework(ragged, "jax", copy=False)
    caps = interop.to_framework(ragged, "dlpack", copy=False)
    for i in range(len(ragged)):
        assert js[i].unsafe_buffer_pointer() == dali_ptr(ragged[i])
        assert data_pointer(caps[i]) == dali_ptr(ragged[i])


def test_explain_says_ragged_and_how_to_pad(ragged):
    plan = interop.explain(ragged, "torch")
    assert plan.zero_copy and plan.supported
    assert "different shapes" in plan.reasons[0] and "ragged='pad'" in plan.reasons[0]


def test_pad_is_one_batch_and_a_copy(ragged):
    out = interop.to_framework(ragged, "numpy", ragged="pad", fill_value=-1)
    assert out.shape == (4, 64)
    assert (out[0, :16] == 0).all() and (out[0, 16:] == -1).all() and (out[3] == 0).all()
    assert not any(out.ctypes.data <= dali_ptr(ragged[i]) < out.ctypes.data + out.nbytes
                   for i in range(4))
    plan = interop.explain(ragged, "torch", ragged="pad")
    assert not plan.zero_copy and plan.steps[0].copies


def test_pad_with_copy_false_is_refused_saying_what_to_do(ragged):
    with pytest.raises(ZeroCopyError, match="drop ragged='pad'"):
        interop.to_framework(ragged, "torch", ragged="pad", copy=False)
    plan = interop.explain(ragged, "torch", ragged="pad", copy=False)
    assert not plan.supported and plan.error == "zero-copy"


def test_a_dense_batch_ignores_pad(dense):
    out = interop.to_framework(dense, "numpy", ragged="pad", copy=False)
    assert out.ctypes.data == dense.data_ptr()


# ---- the whole output tuple in one call (the structures of issue 30) -------------------------

def _two_outputs(dali):
    from nvidia.dali import fn

    def dense():
        while True:
            yield [np.full((2, 3), i, np.float32) for i in range(4)]

    def ragged():
        while True:
            yield [np.full(s, 5, np.float32) for s in RAGGED]

    @dali.pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def pipe():
        return (fn.external_source(source=dense, batch=True),
                fn.external_source(source=ragged, batch=True))

    p = pipe()
    p.build()
    return p


def test_the_output_tuple_converts_in_one_call(dali):
    import torch

    pipe = _two_outputs(dali)
    outs = pipe.run()
    got = interop.to_framework(outs, "torch", copy=False)
    assert isinstance(got, tuple) and len(got) == 2
    batch, samples = got
    assert isinstance(batch, torch.Tensor) and batch.data_ptr() == outs[0].data_ptr()
    assert [t.data_ptr() for t in samples] == [dali_ptr(outs[1][i]) for i in range(4)]
    batch[3, 1, 2] = -1.0
    samples[2][0] = -2.0
    assert dali_read(outs[0][3])[1, 2] == -1.0 and dali_read(outs[1][2])[0] == -2.0
    again = interop.to_framework(pipe.run(), "numpy")  # the structure's plan, kept
    assert again[0].shape == (4, 2, 3) and [len(a) for a in again[1]] == [16, 48, 32, 64]
    plan = interop.explain(outs, "torch")
    from interop.adapters.dali_ import REUSE

    assert plan.zero_copy and REUSE in plan.hazards


def test_leaf_options_reach_each_batch_of_the_output_tuple(dali):
    """``ragged=``/``fill_value=`` on the tuple of ``pipe.run()`` reach each TensorList: the
    ragged one is padded (a copy), the dense one stays a zero-copy view; ``fill_value=`` alone
    keeps a dict of batches a structure (a batch takes it), and an option no batch takes, or a
    bad value, is named."""
    pipe = _two_outputs(dali)
    outs = pipe.run()
    dense, padded = interop.to_framework(outs, "numpy", ragged="pad", fill_value=-1)
    assert dense.ctypes.data == outs[0].data_ptr()
    dense[0, 0, 0] = 4.0
    assert dali_read(outs[0][0])[0, 0] == 4.0
    assert padded.shape == (4, 64) and not any(
        padded.ctypes.data <= dali_ptr(outs[1][i]) < padded.ctypes.data + padded.nbytes
        for i in range(4))
    for i, (n,) in enumerate(RAGGED):
        assert (padded[i, :n] == dali_read(outs[1][i])).all() and (padded[i, n:] == -1).all()
    plan = interop.explain(outs, "torch", ragged="pad")
    assert not plan.zero_copy and plan.leaves["[1]"].steps[0].copies
    assert plan.leaves["[0]"].zero_copy
    both = interop.to_framework({"a": outs[0], "b": outs[1]}, "numpy", ragged="pad",
                                fill_value=-2)
    assert type(both) is dict and both["b"].shape == (4, 64) and both["b"][0, -1] == -2
    with pytest.raises(InteropError, match=r"\['nulls'\] apply to .*none of its leaves"):
        interop.to_framework(outs, "numpy", nulls="mask")
    with pytest.raises(InteropError, match=r"leaf \[0\]: ragged='stack'"):
        interop.to_framework(outs, "numpy", ragged="stack")
    with pytest.raises(InteropError, match=r"unknown option 'raged' \(did you mean 'ragged'"):
        interop.to_framework(outs, "numpy", raged="pad")


# ---- buffer reuse across run()s ----------------------------------------------------------

def test_default_executor_keeps_the_first_batch_after_the_second_run(dali):
    import torch

    pipe = make_pipe(dali, DENSE)
    (first,) = pipe.run()
    t = interop.to_framework(first, "torch", copy=False)
    a = interop.to_framework(first, "numpy", copy=False)
    ptr = first.data_ptr()
    del first
    gc.collect()
    (second,) = pipe.run()
    (third,) = pipe.run()
    assert float(dali_read(second.as_tensor())[0, 0, 0]) == 1.0  # the pipeline did move on
    assert t.data_ptr() == ptr and a.ctypes.data == ptr
    assert torch.equal(t, torch.zeros(4, 2, 3)) and (a == 0).all()  # still the first batch
    assert second.data_ptr() != ptr and third.data_ptr() != ptr


def test_legacy_executor_reuses_the_buffer_as_the_plan_says(dali):
    from interop.adapters.dali_ import REUSE

    pipe = make_pipe(dali, DENSE, exec_dynamic=False)
    (first,) = pipe.run()
    assert REUSE in interop.explain(first, "torch").hazards
    t = interop.to_framework(first, "torch", copy=False)
    kept = interop.to_framework(first, "torch", copy=True)
    pipe.run()
    pipe.run()
    assert float(t[0, 0, 0]) != 0.0  # DALI wrote a later batch under the zero-copy result
    assert float(kept.abs().sum()) == 0.0  # the copy keeps the first batch


# ---- bad input -----------------------------------------------------------------------------

def test_a_pipeline_is_refused_naming_pipe_run(dali):
    pipe = make_pipe(dali, DENSE)
    with pytest.raises(UnsupportedConversionError, match=r"pipe\.run\(\)"):
        interop.to_framework(pipe, "torch")
    assert not interop.can_convert(pipe, "numpy")


def test_a_data_node_is_refused_naming_pipe_run(dali):
    from nvidia.dali.data_node import DataNode

    with pytest.raises(UnsupportedConversionError, match="DataNode.*pipe.run"):
        interop.to_framework(DataNode("x"), "numpy")


@pytest.mark.parametrize("options, words", [
    ({"ragged": "stack"}, "ragged='stack'"),
    ({"fill_value": "zero"}, "fill_value='zero'"),
    ({"nulls": "mask"}, "do not apply to a DALI TensorList"),
])
def test_bad_options_are_named(ragged, options, words):
    with pytest.raises(InteropError, match=words):
        interop.to_framework(ragged, "numpy", **options)


def test_a_failing_buffer_slot_is_an_interop_error(dense):
    """The generic buffer reader, given a TensorList (whose buffer slot raises a raw
    ``BufferError``), raises an interop error."""
    from interop.adapters import producer

    assert producer.BUFFER.is_value(dense)
    with pytest.raises(InteropError, match="BufferError"):
        producer.BUFFER.to_numpy(dense)


# ---- the docs example ------------------------------------------------------------------------


# ---- GPU: TensorListGPU / TensorGPU (a device run only) --------------------------------------

def _gpu_pipe(dali, **kw):
    from nvidia.dali import fn, types

    @dali.pipeline_def(batch_size=4, num_threads=1, device_id=0, **kw)
    def pipe():
        return fn.random.uniform(range=[0, 1], shape=[3, 64], dtype=types.FLOAT).gpu()

    p = pipe()
    p.build()
    return p


def test_gpu_tensors_go_over_dlpack_with_the_stream(dali, monkeypatch):
    """A stand-in ``TensorGPU`` (DALI's module name, its CUDA Array Interface v2 with a '=f'
    type string, its enum device type): the plan is DALI's DLPack export with the reuse hazard
    (its CAI has no stream, so it is not a route), ``stream=`` reaches ``__dlpack__``, and what
    the producer raises comes back as an interop error."""
    import nvidia.dali.backend_impl as backend
    from nvidia.dali.backend_impl import DLDeviceType

    from interop.adapters.dali_ import REUSE, view
    from interop.errors import DeviceError, ProtocolError

    class TensorGPU:
        __module__ = "nvidia.dali.tensors"
        __cuda_array_interface__ = {"shape": (4, 16), "typestr": "=f", "version": 2,
                                    "data": (0x7F0000000000, False), "strides": None}

        def __init__(self):
            self.streams = []

        def device_id(self):
            return 0

        def __dlpack_device__(self):
            return (DLDeviceType.kDLCUDA, 0)

        def __dlpack__(self, stream=None, **kw):
            self.streams.append(stream)
            raise BufferError("stand-in: no device here")

    monkeypatch.setattr(backend, "TensorGPU", TensorGPU)
    x = TensorGPU()
    v = view(x)
    assert (v.dtype, v.shape, v.strides, v.device) == ("<f4", (4, 16), (64, 4), ("cuda", 0))
    for target, call in (("torch", "torch.from_dlpack"), ("cupy", "cupy.from_dlpack")):
        plan = interop.explain(x, target)
        assert [s.via for s in plan.steps] == [f"DLPack: {call}"] and REUSE in plan.hazards
    with pytest.raises(ProtocolError, match="BufferError: stand-in"):
        interop.to_framework(x, "torch", stream=5)
    assert x.streams == [5]
    with pytest.raises(DeviceError, match="device='cpu'"):
        interop.to_framework(x, "numpy")


def test_stream_reaches_a_gpu_batchs_samples(dali, monkeypatch):
    """A stand-in ``TensorListGPU`` (dense: one ``as_tensor()``; ragged: its samples) whose
    tensors record the stream their ``__dlpack__`` is given: ``stream=`` on the batch, and on
    the output tuple, reaches DALI's DLPack export (the stand-in then raises, as no device is
    here). The real GPU path is checked only by the gpu-marked tests."""
    import nvidia.dali.backend_impl as backend
    from nvidia.dali.backend_impl import DLDeviceType

    from interop.errors import ProtocolError

    streams = []

    class TensorGPU:
        __module__ = "nvidia.dali.tensors"
        __cuda_array_interface__ = {"shape": (4, 16), "typestr": "=f", "version": 2,
                                    "data": (0x7F0000000000, False), "strides": None}

        def device_id(self):
            return 0

        def __dlpack_device__(self):
            return (DLDeviceType.kDLCUDA, 0)

        def __dlpack__(self, stream=None, **kw):
            streams.append(stream)
            raise BufferError("stand-in: no device here")

    class TensorListGPU:
        __module__ = "nvidia.dali.tensors"

        def __init__(self, dense):
            self.dense = dense

        def is_dense_tensor(self):
            return self.dense

        def as_tensor(self):
            return TensorGPU()

        def __len__(self):
            return 2

        def __getitem__(self, i):
            return TensorGPU()

        def device_id(self):
            return 0

    monkeypatch.setattr(backend, "TensorGPU", TensorGPU)
    monkeypatch.setattr(backend, "TensorListGPU", TensorListGPU)
    for value, want in ((TensorListGPU(True), [5]), (TensorListGPU(False), [5]),
                        ((TensorListGPU(True),), [5])):
        streams.clear()
        with pytest.raises(ProtocolError, match="BufferError: stand-in"):
            interop.to_framework(value, "torch", stream=5)
        assert streams == want, value


@pytest.mark.gpu
def test_gpu_dense_batch_into_torch_and_cupy(dali):
    import cupy
    import torch

    (tl,) = _gpu_pipe(dali).run()
    ptr = tl.as_tensor().__cuda_array_interface__["data"][0]
    t = interop.to_framework(tl, "torch", copy=False)
    c = interop.to_framework(tl, "cupy", copy=False)
    assert t.is_cuda and t.data_ptr() == ptr and c.data.ptr == ptr
    t[0, 0, 0] = 42.0
    torch.cuda.synchronize()
    assert float(c[0, 0, 0]) == 42.0 and isinstance(c, cupy.ndarray)


@pytest.mark.gpu
def test_gpu_outputs_on_a_stream_are_waited_for(dali):
    import torch

    s = torch.cuda.Stream()
    pipe = _gpu_pipe(dali)
    (tl,) = pipe.run(s)  # outputs bound to the user's stream, not host-synchronous
    sample = tl[1]
    t = interop.to_framework(sample, "torch", stream=s, copy=False)
    assert t.data_ptr() == sample.__cuda_array_interface__["data"][0]
    with torch.cuda.stream(s):
        expected = t.clone()
    s.synchronize()
    assert torch.equal(t.cpu(), expected.cpu())


@pytest.mark.gpu
def test_gpu_ragged_batch_into_cupy(dali):
    from nvidia.dali import fn, types

    @dali.pipeline_def(batch_size=4, num_threads=1, device_id=0)
    def pipe():
        n = fn.random.uniform(range=[1, 9], shape=[1], dtype=types.INT32)
        return fn.random.uniform(range=[0, 1], shape=n * 16, dtype=types.FLOAT).gpu()

    p = pipe()
    p.build()
    (tl,) = p.run()
    if tl.is_dense_tensor():
        pytest.skip("the random shapes came out equal")
    out = interop.to_framework(tl, "cupy", copy=False)
    assert [c.data.ptr for c in out] == [tl[i].__cuda_array_interface__["data"][0]
                                         for i in range(len(tl))]
    padded = interop.to_framework(tl, "torch", ragged="pad")
    assert padded.is_cuda and padded.shape[0] == 4


# ---- the conversion table's DALI rows (live probes) -----------------------------------------

def test_conversion_table_dali_rows_match_a_live_probe(dali):
    """The committed conversion_table.md's DALI rows agree with a fresh probe of them (every
    CPU target but TensorFlow and paddle, whose own suites import them)."""
    from pathlib import Path

    from interop.cli import table

    md = (Path(__file__).resolve().parents[2] / "conversion_table.md").read_text()
    committed = table.parse_markdown(md)
    rows = [(label, make) for label, source, make in table.LAYOUTS if source == "dali"]
    assert rows
    for label, make in rows:
        for target in table.CPU:
            if target in ("tensorflow", "paddle"):
                continue
            c = table.probe("dali", target, make)
            assert c["status"] == table.ZERO_COPY and c["plan_agrees"], (label, target, c)
            expected = c["status"] + "".join(f" hazard ({h})" for h in c["hazards"])
            assert committed[("Layouts and dtypes", label, target)] == expected, (
                f"conversion_table.md is stale: regenerate it with `{table.REGENERATE}`")


# ---- the benchmark's harness (timings are never asserted) -----------------------------------

def test_benchmark_pairs_interop_with_dalis_own_ways(dali):
    from benchmarks import dali as bench

    out = bench.run(quick=True)
    assert [b["batch"] for b in out["batches"]] == ["small", "large"]
    for b in out["batches"]:
        assert set(b["targets"]) == {"torch", "numpy", "jax"}
        for target, r in b["targets"].items():
            # interop and DALI's view hand DALI's buffer over; DALI's copy copies it all
            assert r["bytes_copied"] == {"interop": 0, "dali_copy": b["bytes"],
                                         "dali_view": 0}, target
            assert r["plan"].endswith("zero-copy")
    text = "\n".join(bench.markdown(out))
    assert "## 8. DALI" in text and "feed_ndarray" in text
