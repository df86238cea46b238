"""What the first H100 run found (``gpu-findings.md``), each on the device it needs.

Every test here needs a CUDA device and CuPy; they skip with the reason without one. The
same decisions are judged on the CPU with stand-ins in ``test_gpu_rules.py``.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import interop
import oracles
from helpers import run_child
from interop.errors import ZeroCopyError

pytestmark = pytest.mark.gpu



def test_negative_stride_cupy_into_torch_copies_on_the_device_instead_of_aborting():
    done = run_child("""
        import cupy, numpy as np, interop
        from interop.errors import ZeroCopyError
        x = cupy.arange(100, dtype=cupy.float32)[::-1]
        t = interop.to_framework(x, "torch")
        assert t.is_cuda, t.device
        np.testing.assert_array_equal(t.cpu().numpy(), np.arange(100, dtype=np.float32)[::-1])
        assert t.data_ptr() != x.data.ptr + x.strides[0] * 99
        try:
            interop.to_framework(x, "torch", copy=False)
        except ZeroCopyError as e:
            assert "negative strides" in str(e), e
        else:
            raise AssertionError("copy=False handed negative strides over")
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@pytest.mark.parametrize("view", ["[::-1, ::2]", "[:, 1:]", ".T", "[1:].view(cupy.uint8)[1:-3]"])
def test_non_compact_or_misaligned_cupy_into_jax_copies(view):
    import cupy

    base = cupy.arange(48, dtype=cupy.float32).reshape(6, 8)
    x = eval(f"base{view}", {"base": base, "cupy": cupy})  # noqa: S307 - fixed test views
    plan = interop.explain(x, "jax")
    assert not plan.zero_copy and plan.reasons, plan
    j = interop.to_framework(x, "jax")
    np.testing.assert_array_equal(np.asarray(j), cupy.asnumpy(x))
    with pytest.raises(ZeroCopyError):
        interop.to_framework(x, "jax", copy=False)


class _Producer:
    """A bare CUDA Array Interface v3 producer, as PyCUDA or a user's class would be."""

    def __init__(self, a, readonly=False, stream=None):
        self.a = a
        cai = dict(a.__cuda_array_interface__)
        cai["data"] = (cai["data"][0], readonly)
        cai["stream"] = stream
        cai["version"] = 3
        self.__cuda_array_interface__ = cai


def _host(y):
    """The values of device array ``y`` now, read with its own framework's API."""
    mod = type(y).__module__.partition(".")[0]
    if mod == "torch":
        return y.cpu().numpy()
    if mod == "numba":
        return y.copy_to_host()
    if mod in ("jax", "jaxlib"):
        return np.array(y)
    import cupy

    return cupy.asnumpy(y)


@pytest.mark.parametrize("tgt", ["cupy", "torch", "jax", "numba"])
def test_bare_cai_producer_is_a_source(tgt):
    import cupy

    a = cupy.arange(12, dtype=cupy.float32)
    assert interop.explain(_Producer(a), tgt).zero_copy
    y = interop.to_framework(_Producer(a), tgt)
    assert oracles.pointer(y) == int(a.data.ptr)  # the result's own accessor
    a[3] = 99.0  # a write through the source, read through the result's own API
    cupy.cuda.runtime.deviceSynchronize()
    expected = np.arange(12, dtype=np.float32)
    expected[3] = 99.0
    np.testing.assert_array_equal(_host(y), expected)


def test_read_only_cai_producer_into_torch_is_zero_copy_with_the_hazard():
    import cupy

    a = cupy.arange(4, dtype=cupy.float32)
    t = interop.to_framework(_Producer(a, readonly=True), "torch")
    assert t.data_ptr() == int(a.data.ptr)
    t[1] = 42.0  # what the hazard warns of: a write through torch changes the source
    assert float(a[1]) == 42.0
    assert any("read-only" in h for h in interop.explain(_Producer(a, readonly=True),
                                                         "torch").hazards)


def test_cai_stream_is_waited_for_by_torch():
    import cupy
    import torch

    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        a = cupy.zeros(1 << 22, dtype=cupy.float32)
        cupy.cuda.runtime.streamSynchronize(side.ptr)
        for _ in range(20):
            a += 1.0  # queued on the side stream
    t = interop.to_framework(_Producer(a, stream=side.ptr), "torch")
    total = float(t.sum())  # on torch's current stream, which must wait for the side stream
    torch.cuda.synchronize()
    assert total == 20.0 * (1 << 22)


def test_cai_data_stays_on_its_device():
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two CUDA devices to show data staying on cuda:1")
    with cupy.cuda.Device(1):
        a = cupy.arange(8, dtype=cupy.float32)
    t = interop.to_framework(_Producer(a), "torch")
    assert t.device.index == 1 and t.data_ptr() == int(a.data.ptr)
    t[2] = -1.0
    with cupy.cuda.Device(1):
        assert float(a[2]) == -1.0


def test_dlpack_exports_pass_no_stream_zero():
    import cupy
    import torch

    x = cupy.arange(8, dtype=cupy.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        interop.to_framework(x, "torch")
        interop.to_framework(x, "torch", stream=torch.cuda.current_stream())
        interop.to_framework(x, "jax")


def test_empty_arrays_into_and_out_of_jax_stay_on_their_device():
    import cupy
    import jax
    import pyarrow as pa

    gpu = jax.devices()[0]
    if gpu.platform == "cpu":
        pytest.skip("JAX sees no GPU here")
    host = interop.to_framework(pa.array(np.zeros(0, np.float32)), "jax")
    assert next(iter(host.devices())).platform == "cpu"
    dev = interop.to_framework(cupy.zeros(0, cupy.float32), "jax")
    assert next(iter(dev.devices())).platform == "gpu"
    empty = jax.device_put(np.zeros((0, 3), np.float32), gpu)
    t = interop.to_framework(empty, "torch")
    assert t.is_cuda and tuple(t.shape) == (0, 3)
    assert interop.to_framework(empty, "jax", copy=True).shape == (0, 3)


def test_demo_runs_on_the_gpu_end_to_end_with_zero_copy_device_handovers():
    import json

    r = subprocess.run([sys.executable, "-m", "interop", "demo", "--device", "cuda",
                        "--rows", "20000", "--json"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    d = json.loads(r.stdout)
    hand = {h["column"]: h for s in d["steps"] for h in s.get("handover", {}).values()}
    assert hand["prediction (torch)"]["zero_copy"] and hand["y (torch)"]["zero_copy"]
    assert hand["prediction (torch)"]["plan_zero_copy"]
    assert not hand["x1"]["zero_copy"]  # host Arrow -> a CUDA tensor is a copy, and says so
    assert all(h["ms"] >= 0 for h in hand.values())


# ---- issue 28: what only a device shows (the logic is judged on the CPU in test_gpu_paths) --

@pytest.mark.parametrize("tgt", ["cupy", "numba", "jax"])
def test_negated_cuda_tensor_keeps_its_sign_on_every_device_target(tgt):
    import torch

    t = torch.tensor([2.0, 4.0], device="cuda")._neg_view()
    y = interop.to_framework(t, tgt)
    assert not interop.explain(t, tgt).zero_copy
    np.testing.assert_array_equal(_host(y), [-2.0, -4.0])
    c = torch.tensor([1 + 2j], device="cuda").conj()
    np.testing.assert_array_equal(_host(interop.to_framework(c, tgt)), [1 - 2j])


def test_numba_array_on_the_default_stream_and_from_cupy_into_torch():
    import cupy
    from numba import cuda

    a = cupy.arange(8, dtype=cupy.float32)
    from_cupy = cuda.as_cuda_array(a)  # re-exports CuPy's "stream": 1
    on_default = cuda.to_device(np.arange(8, dtype=np.float32), stream=cuda.default_stream())
    assert on_default.__cuda_array_interface__["stream"] == 0  # what numba-cuda 0.30 exports
    for d in (from_cupy, on_default):
        t = interop.to_framework(d, "torch")
        assert t.data_ptr() == d.device_ctypes_pointer.value
        np.testing.assert_array_equal(t.cpu().numpy(), np.arange(8, dtype=np.float32))


def test_device_copy_without_cupy_is_made_by_torch():
    done = run_child("""
        import sys
        sys.modules["cupy"] = None  # a torch + JAX host without CuPy
        import numpy as np, torch, jax, interop
        t = torch.arange(12.0, device="cuda").reshape(3, 4).T  # not compact: JAX needs a copy
        j = interop.to_framework(t, "jax")
        np.testing.assert_array_equal(np.asarray(j), t.cpu().numpy())
        assert interop.explain(t, "jax").steps[-2].via.startswith("fresh")
        c = interop.to_framework(t, "torch", copy=True)
        assert c.data_ptr() != t.data_ptr() and c.is_contiguous()
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_cupy_bfloat16_into_torch_and_jax_zero_copy():
    import cupy
    import ml_dtypes

    x = cupy.asarray(np.arange(6).astype(ml_dtypes.bfloat16))
    for tgt in ("torch", "jax"):
        y = interop.to_framework(x, tgt, copy=False)
        assert oracles.pointer(y) == int(x.data.ptr)
        values = y.float().cpu().numpy() if tgt == "torch" else np.asarray(y, np.float32)
        np.testing.assert_array_equal(values, np.arange(6.0))


@pytest.mark.parametrize("tgt", ["torch", "cupy", "jax"])
def test_cuda_capsules_and_plain_producers_convert(tgt):
    import cupy

    a = cupy.arange(5, dtype=cupy.float32)

    class Producer:  # only the DLPack methods
        def __dlpack__(self, **kw):
            return a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    for x in (a.__dlpack__(), Producer()):
        y = interop.to_framework(x, tgt)
        assert oracles.pointer(y) == int(a.data.ptr)
    cap = interop.to_framework(a, "dlpack")
    t = interop.to_framework(cap, "torch")
    assert t.data_ptr() == int(a.data.ptr)


def test_torch_into_numba_waits_for_torch_stream():
    """torch's CAI names no stream: interop names torch's current stream, on which Numba
    synchronises. Slow work on a torch side stream, then the conversion under it."""
    import torch

    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.zeros(1 << 22, device="cuda")
        for _ in range(50):
            t += 1.0
        d = interop.to_framework(t, "numba")
        assert d.__cuda_array_interface__["stream"] == side.cuda_stream
    assert float(d.copy_to_host().sum()) == 50.0 * (1 << 22)


@pytest.mark.parametrize("tgt", ["cupy", "numba"])
def test_empty_jax_gpu_array_into_cupy_and_numba(tgt):
    import jax

    if jax.devices()[0].platform == "cpu":
        pytest.skip("JAX sees no GPU here")
    empty = jax.device_put(np.zeros((0, 3), np.float32), jax.devices()[0])
    y = interop.to_framework(empty, tgt)
    assert tuple(y.shape) == (0, 3)
    with pytest.raises(ZeroCopyError, match="empty JAX array"):
        interop.to_framework(empty, tgt, copy=False)
