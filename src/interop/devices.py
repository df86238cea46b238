"""Devices: parsing ``device=`` (strings, and the frameworks' own device objects) and asking
the CUDA runtime what it has.

Every part of interop that counts CUDA devices, reads the current one or asks which device
owns a pointer does it here. CuPy's runtime answers first; torch answers when CuPy is not
installed. Nothing here imports a framework that is not installed, and only
:func:`count_cuda_devices` lets the runtime's own error through.
"""

from __future__ import annotations

import sys
from typing import Any

from .errors import DeviceError

NO_CUDA = "this machine has no CUDA device (none visible to CuPy or torch)"
DATALESS = "meta"
"""The device of values without data (torch's ``meta`` tensors: a shape and a dtype)."""


def no_data(src: str) -> str:
    """Why a ``src`` value on the :data:`DATALESS` device cannot be handed over or copied."""
    return (f"the {src} value is on the meta device: it has a shape and a dtype but no data "
            "to hand over or copy; materialize it first (torch.empty_like(t, device='cpu'), "
            "or load its values, e.g. model.to_empty(device='cpu') then load_state_dict)")


DEVICE_FORMS = ("'cpu', 'cuda', 'cuda:N' (N the device index), 'cpu:N' (the CPU device N of a "
                "framework with several: JAX), a framework's device object: torch.device, a "
                "JAX Device (jax.devices()[i]), cupy.cuda.Device, a Numba CUDA device, or a "
                "DLPack (device_type, device_id) pair as __dlpack_device__() returns it")


def _dlpack_pair(device: Any) -> bool:
    """Whether ``device`` is a DLPack ``(device_type, device_id)`` pair of ints."""
    return (isinstance(device, tuple) and len(device) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in device))


def device_name(device: Any) -> str:
    """``device=`` as a string: a string as given; a framework's own device object as the
    string of the same meaning, ``"cpu"``, ``"cpu:N"`` (a JAX CPU device: JAX can run several)
    or ``"cuda:N"`` (``"cuda"`` for torch's index-less CUDA device: the current one). Objects
    are recognised by their type's module and their attributes, importing nothing:
    ``torch.device`` (``.type``, ``.index``), a JAX ``Device`` (``.platform``,
    ``.local_hardware_id`` or ``.id``), ``cupy.cuda.Device`` and a Numba CUDA device (``.id``);
    a DLPack ``(device_type, device_id)`` pair (``x.__dlpack_device__()``) by its type code.
    A :class:`DeviceError` naming the accepted forms otherwise."""
    if isinstance(device, str):
        return device
    cls = type(device)
    package = cls.__module__.partition(".")[0]
    if package == "torch" and isinstance(getattr(device, "type", None), str):
        kind, index = device.type, device.index
    elif package == "jaxlib" and isinstance(getattr(device, "platform", None), str):
        local = getattr(device, "local_hardware_id", None)
        kind = "cuda" if device.platform in ("gpu", "cuda") else device.platform
        index = device.id if local is None else local
    elif (package == "cupy" or cls.__module__.startswith("numba.cuda")) and \
            isinstance(getattr(device, "id", None), int):
        kind, index = "cuda", device.id
    elif _dlpack_pair(device):
        from .protocols.dlpack import Device

        code, index = device
        known = {int(d): d.name for d in Device}
        kind = {Device.CPU: "cpu", Device.CUDA: "cuda"}.get(code, known.get(code, f"type {code}"))
        if kind == "cpu":  # DLPack has one CPU device (JAX says (1, 0) for any of its CPUs)
            index = None
    else:
        raise DeviceError(f"device={device!r} (a {cls.__module__}.{cls.__qualname__}) is not a "
                          f"device interop knows; pass {DEVICE_FORMS}")
    if kind == "cpu":
        return "cpu" if index is None else f"cpu:{int(index)}"
    if kind == "cuda":
        return "cuda" if index is None else f"cuda:{int(index)}"
    raise DeviceError(f"device={device!r} is a {kind!r} device; interop moves data between "
                      f"the host and CUDA devices only: pass {DEVICE_FORMS}")


def parse_device(device: Any) -> tuple[str, int | None]:
    """``("cpu" | "cuda", index or None)`` for a string such as ``"cpu"``, ``"cuda"`` or
    ``"cuda:1"`` (any case) or a framework's device object (:func:`device_name`); a
    :class:`DeviceError` naming the known spellings otherwise."""
    name = device_name(device)
    kind, _, index = name.lower().partition(":")
    if kind not in ("cpu", "cuda") or (index and not index.isdigit()):
        from .names import DEVICE_SYNONYMS, did_you_mean

        hint = did_you_mean(kind, ("cpu", "cuda"), DEVICE_SYNONYMS)
        raise DeviceError(f"unknown device {device!r}{hint}; known: {DEVICE_FORMS}")
    return kind, int(index) if index else None


def same_memory(a: tuple[str, int], b: tuple[str, int]) -> bool:
    """Whether two devices (``(kind, index)``) address one memory: the same CUDA device, or
    any two CPU devices (a framework's several CPU devices, JAX's, all hold host memory)."""
    return a == b or (a[0] == "cpu" and b[0] == "cpu")


def cpu_index(index: int | None, count: int, target: str, device: Any) -> int | None:
    """What ``device="cpu:N"`` names on ``target``, a framework of ``count`` CPU devices: the
    index of one of them, or ``None`` (the host) where it has one (``cpu:0`` is then
    ``cpu``). A :class:`DeviceError` where it has no CPU device ``N``."""
    if index is None or (count == 1 and index == 0):
        return None
    if index >= count:
        have = "one CPU device (cpu:0, the host)" if count == 1 else f"{count} CPU devices"
        raise DeviceError(f"device={device!r} names CPU device {index}, but {target} has "
                          f"{have}; pass device='cpu'" + (
                              " (a CPU index names a device of a framework with several, "
                              "such as JAX with XLA_FLAGS=--xla_force_host_platform_device_"
                              "count=N)" if count == 1 else f" or 'cpu:0' to 'cpu:{count - 1}'"))
    return index


def count_cuda_devices() -> int:
    """The CUDA devices CuPy's runtime sees (torch's count when CuPy is not installed, 0
    when neither is). The runtime's own error (no driver, a broken one) is raised."""
    try:
        import cupy
    except ImportError:
        try:
            import torch
        except ImportError:
            return 0
        return int(torch.cuda.device_count())
    return int(cupy.cuda.runtime.getDeviceCount())


def cuda_devices() -> tuple[int, str]:
    """How many CUDA devices there are, and a sentence saying so (why, when there are none).
    Never raises: no CuPy, no driver or no device all give ``(0, reason)``."""
    try:
        n = count_cuda_devices()
    except Exception as e:  # no driver, a broken driver, a CuPy that cannot load
        return 0, f"the CUDA runtime reports {type(e).__name__}: {e}"
    return n, f"{n} CUDA device(s)" if n else "no CUDA device"


def cuda_device_count() -> int:
    """The number of CUDA devices, 0 when none can be reached (never raises)."""
    return cuda_devices()[0]


def require_cuda(index: int) -> None:
    """Raise a :class:`DeviceError` unless CUDA device ``index`` exists here."""
    n = cuda_device_count()
    if index >= n:
        have = f"{n} CUDA device(s)" if n else "no CUDA device"
        raise DeviceError(f"device 'cuda:{index}' was asked for, but this machine has {have}; "
                          "keep device=None or use 'cpu'")


def current_cuda_device(target: str) -> int:
    """The current CUDA device's index (CuPy's, else torch's), or a :class:`DeviceError`
    naming why ``target`` (a device-only framework) cannot take host data here."""
    if not cuda_device_count():
        raise DeviceError(f"{target} holds CUDA device memory only, so host data would be "
                          f"copied to the current CUDA device, but {NO_CUDA}; convert to a "
                          "host framework instead (numpy, torch, jax ...)")
    for name, current in (("cupy", lambda m: m.cuda.runtime.getDevice()),
                          ("torch", lambda m: m.cuda.current_device())):
        try:
            return int(current(sys.modules[name]))
        except Exception:  # not imported, or it cannot say: the next one, else device 0
            continue
    return 0


def pointer_device(ptr: int) -> int:
    """The CUDA device that owns device pointer ``ptr`` (the current device for NULL), asked
    of the CUDA runtime through CuPy, else through ``cuda.bindings`` (which numba-cuda
    needs); a :class:`DeviceError` when neither is installed or the runtime cannot say."""
    try:
        import cupy
    except ImportError:
        return _pointer_device_bindings(ptr)
    try:
        if not ptr:
            return int(cupy.cuda.runtime.getDevice())
        return int(cupy.cuda.runtime.pointerGetAttributes(ptr).device)
    except Exception as e:
        raise DeviceError(f"the CUDA runtime cannot tell which device holds pointer {ptr:#x}: "
                          f"{type(e).__name__}: {e}") from e


def _pointer_device_bindings(ptr: int) -> int:
    try:
        from cuda.bindings import runtime
    except ImportError:
        raise DeviceError(f"cannot tell which CUDA device holds pointer {ptr:#x}: reading a "
                          "bare CUDA Array Interface producer needs CuPy or cuda-bindings "
                          "(pip install cupy-cuda12x, or cuda-bindings)") from None
    err, value = runtime.cudaGetDevice() if not ptr else runtime.cudaPointerGetAttributes(ptr)
    if err != runtime.cudaError_t.cudaSuccess:
        raise DeviceError(f"the CUDA runtime cannot tell which device holds pointer {ptr:#x}: "
                          f"{err!r}")
    return int(value if not ptr else value.device)
