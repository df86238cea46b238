"""GPU plan selection and device requests, checked on the CPU without a live GPU value."""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import pytest
import torch

import interop
from interop.api import REGISTRY
from interop.errors import DeviceError, InteropError, ZeroCopyError
from machine import absent_cuda_device, machine

GPU = ["cupy", "numba", "cudf", "torch", "jax"]
# The targets that hold device memory only; cuDF where it is installed (without it the target
# is a FrameworkMissingError first: tests/adapters/test_missing_frameworks.py)
DEVICE_ONLY = ["cupy", "numba", pytest.param("cudf", marks=pytest.mark.skipif(
    importlib.util.find_spec("cudf") is None, reason="cuDF is not installed"))]


def path(src, tgt):
    return [(e.source, e.target, e.via.split(":")[0])
            for e in REGISTRY.routes.route(src, tgt, "cuda")]


@pytest.mark.parametrize("src", GPU)
@pytest.mark.parametrize("tgt", GPU)
def test_every_gpu_pair_has_a_device_path(src, tgt):
    route = REGISTRY.routes.route(src, tgt, "cuda")
    assert route is not None
    assert all(e.device == "cuda" for e in route)
    assert len(route) <= 2


def test_cai_only_to_dlpack_only_goes_through_the_cupy_hub():
    assert path("numba", "jax") == [("numba", "cupy", "CUDA Array Interface"),
                                    ("cupy", "jax", "DLPack")]
    assert path("jax", "numba") == [("jax", "cupy", "DLPack"),
                                    ("cupy", "numba", "CUDA Array Interface")]


def test_direct_protocols_win_over_the_hub():
    assert path("torch", "jax") == [("torch", "jax", "DLPack")]
    assert path("cudf", "torch") == [("cudf", "torch", "CUDA Array Interface")]
    assert path("numba", "cudf") == [("numba", "cudf", "CUDA Array Interface")]


@pytest.mark.parametrize("tgt", ["numpy", "pyarrow", "pandas", "polars"])
def test_host_only_frameworks_have_no_device_path(tgt):
    assert REGISTRY.routes.route("cupy", tgt, "cuda") is None


def test_cpu_routes_do_not_use_gpu_frameworks():
    for src in ("numpy", "torch", "jax", "pyarrow"):
        for tgt in ("numpy", "torch", "jax", "pyarrow"):
            for e in REGISTRY.routes.route(src, tgt, "cpu"):
                assert e.source not in ("cupy", "numba", "cudf")


@pytest.mark.cpu_only
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3"])
def test_host_to_device_without_gpu_is_a_clear_device_error(device):
    with pytest.raises(DeviceError, match="no CUDA device"):
        interop.to_framework(np.arange(4.0), "torch", device=device)


def test_host_to_an_absent_device_is_a_clear_device_error():
    """True on both machines: ``cuda:N`` with N = the device count names no device."""
    device = absent_cuda_device()
    have = "no CUDA device" if machine().count == 0 else rf"{machine().count} CUDA device\(s\)"
    with pytest.raises(DeviceError, match=rf"'{device}' was asked for, but this machine has "
                                          rf"{have}"):
        interop.to_framework(np.arange(4.0), "torch", device=device)


def test_device_request_names_bad_strings():
    with pytest.raises(DeviceError, match="unknown device 'gpu'"):
        interop.to_framework(np.arange(4.0), "torch", device="gpu")
    with pytest.raises(DeviceError, match="device=0 .* is not a device interop knows"):
        interop.to_framework(np.arange(4.0), "torch", device=0)


def test_host_only_target_refuses_cuda():
    with pytest.raises(DeviceError, match="numpy cannot hold data on 'cuda'"):
        interop.to_framework(torch.arange(3.0), "numpy", device="cuda")


def test_same_device_request_is_zero_copy():
    a = np.arange(8.0)
    t = interop.to_framework(a, "torch", device="cpu", copy=False)
    assert t.data_ptr() == a.ctypes.data
    t[0] = 42.0
    assert a[0] == 42.0


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cross_device_with_copy_false_is_refused(device):
    """Moving host data to a device always copies: ``copy=False`` is refused by the plan and
    by the call (with or without a CUDA device), and the same-device request is free."""
    plan = interop.explain(np.arange(4.0), "torch", device=device, copy=False)
    assert not plan.supported and plan.error == "zero-copy", plan  # what the call raises
    with pytest.raises(ZeroCopyError, match="copies it"):
        interop.to_framework(np.arange(4.0), "torch", device=device, copy=False)
    assert interop.explain(np.arange(4.0), "torch", device="cpu", copy=False).zero_copy


def test_stream_with_cpu_data_is_refused():
    with pytest.raises(InteropError, match="streams order GPU work only"):
        interop.to_framework(np.arange(4.0), "torch", stream=1)


def test_gpu_framework_types_are_detected_without_a_device(monkeypatch):
    """CuPy arrays are recognised by the type of the imported module's ``ndarray`` (no device
    call): shown with a stand-in module, since no CuPy array can be made without a GPU."""
    pytest.importorskip("cupy")
    adapter = REGISTRY.adapters["cupy"]
    assert adapter.is_value(np.arange(3)) is False
    assert {f["name"]: f for f in interop.frameworks()}["cupy"]["importable"]

    class ndarray:  # noqa: N801 - the name CuPy's class has
        pass

    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(ndarray=ndarray))
    assert adapter.is_value(ndarray()) and not adapter.is_value(np.arange(3))


def test_zero_copy_error_is_buffer_error():
    assert issubclass(ZeroCopyError, BufferError)


# ---- a target that holds device memory only: host data goes to the current device ----------

@pytest.mark.parametrize("target", DEVICE_ONLY)
def test_host_data_for_a_device_only_target_is_planned_as_a_copy_to_the_device(target):
    plan = interop.explain(np.arange(5.0), target)
    assert [(s.via, s.copies) for s in plan.steps] == [("copy to the current CUDA device", True)]
    assert not plan.zero_copy and "holds CUDA device memory only" in plan.reasons[0]
    if machine().count:
        assert plan.supported
    else:
        assert not plan.supported and plan.error == "device"
        assert "no CUDA device" in plan.reasons[1]
    refused = interop.explain(np.arange(5.0), target, copy=False)
    assert not refused.supported


@pytest.mark.parametrize("target", DEVICE_ONLY)
def test_host_data_for_a_device_only_target_with_copy_false_is_refused(target):
    with pytest.raises(ZeroCopyError, match=r"to the current CUDA device \(.* device memory only"):
        interop.to_framework(np.arange(5.0), target, copy=False)


@pytest.mark.cpu_only
@pytest.mark.parametrize("target", DEVICE_ONLY)
@pytest.mark.parametrize("copy", [None, True])
def test_host_data_for_a_device_only_target_without_a_device_is_a_device_error(target, copy):
    """CuPy and numba import here but every device call fails: the error is interop's,
    naming the problem, never a raw CUDA one."""
    for value in (np.arange(5.0), torch.arange(5.0)):
        with pytest.raises(DeviceError, match=rf"{target} holds CUDA device memory only.*"
                                              r"no CUDA device"):
            interop.to_framework(value, target, copy=copy)


def test_device_to_host_stays_explicit_for_host_targets():
    """The other direction is unchanged: a host-only target refuses device data unless
    device='cpu' is given (checked on the plan, with no GPU needed)."""
    from interop.api import REGISTRY
    from interop.route import device_move as _device_move

    cupy, numpy = REGISTRY.adapters["cupy"], REGISTRY.adapters["numpy"]
    with pytest.raises(DeviceError, match="pass device='cpu'"):
        _device_move(cupy, ("cuda", 0), numpy, None)
    assert _device_move(cupy, ("cuda", 0), numpy, "cpu") == ("cpu", 0)
    assert _device_move(numpy, ("cpu", 0), cupy, None) == ("cuda", None)
    assert _device_move(numpy, ("cpu", 0), cupy, "cuda:1") == ("cuda", 1)


@pytest.mark.gpu
def test_host_data_reaches_cupy_on_the_current_device():
    cupy = pytest.importorskip("cupy")
    a = np.arange(5.0)
    c = interop.to_framework(a, "cupy")
    assert isinstance(c, cupy.ndarray) and c.device.id == cupy.cuda.runtime.getDevice()
    np.testing.assert_array_equal(c.get(), a)


@pytest.mark.parametrize("target", DEVICE_ONLY)
def test_device_cpu_for_a_device_only_target_is_refused_not_moved(target):
    with pytest.raises(DeviceError, match=rf"{target} holds CUDA device memory only, but "
                                          r"device='cpu' asks to keep the numpy value"):
        interop.to_framework(np.arange(5.0), target, device="cpu")
