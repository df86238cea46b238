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
