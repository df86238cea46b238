"""Devices: parsing ``device=`` strings and asking the CUDA runtime what it has.

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


def parse_device(device: Any) -> tuple[str, int | None]:
    """``("cpu" | "cuda", index or None)`` for a string such as ``"cpu"``, ``"cuda"`` or
    ``"cuda:1"`` (any case); a :class:`DeviceError` naming the known spellings otherwise."""
    if not isinstance(device, str):
        raise DeviceError(f"device must be a string such as 'cpu' or 'cuda:0', got {device!r}")
    kind, _, index = device.lower().partition(":")
    if kind not in ("cpu", "cuda") or (index and not index.isdigit()):
        from .names import DEVICE_SYNONYMS, did_you_mean

        hint = did_you_mean(kind, ("cpu", "cuda"), DEVICE_SYNONYMS)
        raise DeviceError(f"unknown device {device!r}{hint}; known: 'cpu', 'cuda', 'cuda:N' "
                          "(N the device index)")
    return kind, int(index) if index else None


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
    of the CUDA runtime through CuPy; a :class:`DeviceError` when it cannot say."""
    try:
        import cupy
    except ImportError:
        raise DeviceError(f"cannot tell which CUDA device holds pointer {ptr:#x}: reading a "
                          "bare CUDA Array Interface producer needs CuPy") from None
    try:
        if not ptr:
            return int(cupy.cuda.runtime.getDevice())
        return int(cupy.cuda.runtime.pointerGetAttributes(ptr).device)
    except Exception as e:
        raise DeviceError(f"the CUDA runtime cannot tell which device holds pointer {ptr:#x}: "
                          f"{type(e).__name__}: {e}") from e
