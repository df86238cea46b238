"""``device=`` takes the frameworks' own device objects (``torch.device``, a JAX ``Device``,
``cupy.cuda.Device``, a Numba CUDA device) with the meaning of the string that names the same
device, recognised without importing any framework; anything else is a clear DeviceError."""

from __future__ import annotations

import json

import numpy as np
import pytest

import interop
from helpers import run_child
from interop.devices import device_name
from interop.errors import DeviceError

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")


def stand_in(module: str, name: str, **attrs):
    """An instance of a class named ``module.name`` with ``attrs``: a framework's device type
    where the real one cannot be made without a GPU."""
    cls = type(name, (), {"__module__": module, "__repr__": lambda self: f"<{name} {attrs}>"})
    obj = cls()
    obj.__dict__.update(attrs)
    return obj


def outcome(call, *args, **kwargs):
    """What a call gives, comparable across spellings: the error's type and text, a plan's
    text, or the result's type and the device its framework reports."""
    try:
        r = call(*args, **kwargs)
    except Exception as e:
        return type(e).__name__, str(e)
    if isinstance(r, interop.Plan):
        return "Plan", str(r)
    device = getattr(r, "device", None)
    return type(r).__name__, str(device() if callable(device) else device)


def test_real_cpu_device_objects_convert_zero_copy(jax_cpu) -> None:
    cpu = jax.devices("cpu")[0]
    for device in (torch.device("cpu"), torch.device("cpu", 0), cpu):
        x = np.arange(8.0)
        t = interop.to_framework(x, "torch", device=device, copy=False)
        assert t.data_ptr() == x.ctypes.data, device
        t[3] = -1.0
        assert x[3] == -1.0, device  # a write through the tensor is read in the array
        back = interop.to_framework(t, "numpy", device=device, copy=False)
        assert back.__array_interface__["data"][0] == t.data_ptr(), device
        j = interop.to_framework(np.arange(4, dtype=np.float32), "jax", device=device)
        assert j.devices() == {cpu}, device


@pytest.mark.parametrize("make, name", [
    (lambda: torch.device("cpu"), "cpu"),
    (lambda: torch.device("cpu", 0), "cpu:0"),  # CPU device 0: the host, for one CPU
    (lambda: torch.device("cuda"), "cuda"),
    (lambda: torch.device("cuda", 1), "cuda:1"),
    (lambda: jax.devices("cpu")[0], "cpu:0"),
    (lambda: stand_in("jaxlib._jax", "Device", platform="gpu", id=5, local_hardware_id=1),
     "cuda:1"),  # this process's CUDA ordinal, not the id across processes
    (lambda: stand_in("numba.cuda.cudadrv.driver", "Device", id=2), "cuda:2"),
    (lambda: stand_in("numba.cuda.cudadrv.devices", "_DeviceContextManager", id=0), "cuda:0"),
])
def test_a_device_object_means_its_string(make, name) -> None:
    device = make()
    assert device_name(device) == name
    x = np.arange(6, dtype=np.float32)
    for target in ("torch", "jax", "numpy", "cupy"):
        assert outcome(interop.explain, x, target, device=device) == \
            outcome(interop.explain, x, target, device=name)
        assert interop.can_convert(x, target, device=device) == \
            interop.can_convert(x, target, device=name)
        for _ in range(2):  # the first call plans, the second finds the plan kept
            assert outcome(interop.to_framework, x, target, device=device) == \
                outcome(interop.to_framework, x, target, device=name), (device, target)


def test_cupy_devices_are_read_without_a_gpu() -> None:
    """``cupy.cuda.Device(n)`` is made without touching the driver; it is unhashable, so it
    must not key a plan."""
    cupy = pytest.importorskip("cupy")
    for n in (0, 1):
        device = cupy.cuda.Device(n)
        assert device_name(device) == f"cuda:{n}"
        x = np.arange(3.0)
        for target in ("torch", "cupy", "numpy"):
            assert outcome(interop.explain, x, target, device=device) == \
                outcome(interop.explain, x, target, device=f"cuda:{n}")
            for _ in range(2):
                assert outcome(interop.to_framework, x, target, device=device) == \
                    outcome(interop.to_framework, x, target, device=f"cuda:{n}")


NOT_DEVICES = [0, 1, True, 1.5, b"cpu", ["cpu"], ("cpu",), (1, 0.0), {"type": "cpu"}, object(),
               np.arange(2), np.float64(0.0)]


@pytest.mark.parametrize("device", NOT_DEVICES + ["torch-tensor", "meta", "mps",
                                                  "tpu-jax", "cupy-no-id", "foreign"],
                         ids=repr)
def test_anything_else_is_a_device_error_naming_it_and_the_forms(device) -> None:
    device = {"torch-tensor": torch.zeros(1), "meta": torch.device("meta"),
              "mps": torch.device("mps"),
              "tpu-jax": stand_in("jaxlib._jax", "Device", platform="tpu", id=0),
              "cupy-no-id": stand_in("cupy.cuda.device", "Device"),
              "foreign": stand_in("mylib.devices", "Device", id=0, platform="cpu", type="cpu"),
              }.get(device, device) if isinstance(device, str) else device
    x = np.arange(3.0)
    for target in ("torch", "pt", "numpy", "jax"):  # "pt": an alias looks its plan up first
        for call, copy in ((interop.to_framework, None), (interop.explain, None),
                           (interop.to_framework, True)):
            with pytest.raises(DeviceError) as e:
                call(x, target, device=device, copy=copy)
            msg = str(e.value)
            assert repr(device) in msg and "'cpu', 'cuda', 'cuda:N'" in msg, msg
            assert "torch.device" in msg and "cupy.cuda.Device" in msg, msg
        assert interop.can_convert(x, target, device=device) is False


def test_recognising_a_device_object_imports_no_framework() -> None:
    r = run_child("""
        import json, sys
        import numpy as np
        import interop
        Device = type("device", (), {"__module__": "torch", "type": "cpu", "index": None})
        Jax = type("Device", (), {"__module__": "jaxlib._jax", "platform": "cpu", "id": 0,
                                  "local_hardware_id": 0})
        Cupy = type("Device", (), {"__module__": "cupy.cuda.device", "id": 0})
        x = np.arange(3.0)
        out = [interop.to_framework(x, "numpy", device=Device()) is x,
               interop.to_framework(x, "numpy", device=Jax()) is x]
        try:
            interop.explain(x, "numpy", device=Cupy())
        except interop.errors.DeviceError as e:
            out.append(str(e))
        print(json.dumps({"out": out, "imported": sorted(
            m for m in ("torch", "jax", "jaxlib", "cupy", "numba") if m in sys.modules)}))
    """)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got == {"out": [True, True, "numpy cannot hold data on 'cuda:0' (it supports "
                                       "['cpu'])"], "imported": []}, got


@pytest.mark.parametrize(("pair", "name"),
                         [((1, 0), "cpu"), ((2, 0), "cuda:0"), ((2, 1), "cuda:1")])
def test_a_dlpack_device_pair_means_the_string_of_its_device(pair, name):
    """``device=x.__dlpack_device__()`` (a DLPack ``(device_type, device_id)`` pair; torch's
    comes as its own ``IntEnum``) means what the string of that device means, in
    ``to_framework``, ``explain`` and ``can_convert`` alike, on any machine."""
    x = np.arange(4, dtype=np.float32)
    assert device_name(pair) == name
    for target in ("numpy", "torch"):
        for call in (interop.to_framework, interop.explain, interop.can_convert):
            assert outcome(call, x, target, device=pair) == outcome(call, x, target, device=name)
    assert device_name(torch.ones(2).__dlpack_device__()) == "cpu"
    assert device_name(x.__dlpack_device__()) == "cpu"


@pytest.mark.parametrize(("pair", "says"), [((10, 0), "ROCM"), ((3, 0), "CUDA_HOST"),
                                            ((99, 0), "type 99"), ((True, 0), "not a device"),
                                            ((1,), "not a device"), ((1, 0, 0), "not a device")])
def test_a_dlpack_pair_of_another_device_is_refused_clearly(pair, says):
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(DeviceError, match=says):
        interop.to_framework(x, "torch", device=pair)
    assert not interop.can_convert(x, "torch", device=pair)
