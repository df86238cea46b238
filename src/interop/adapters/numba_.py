"""Numba CUDA device arrays: CUDA Array Interface only (the registry hubs through CuPy)."""

from __future__ import annotations

import sys
from typing import Any

from ..protocols import cai
from ..view import BufferView
from .base import ArrayAdapter


def _is_value(x: Any) -> bool:
    mod = sys.modules.get("numba.cuda.cudadrv.devicearray")
    return mod is not None and isinstance(x, mod.DeviceNDArray)


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of a device array, from its CUDA Array Interface."""
    return cai.validate(x.__cuda_array_interface__, who="DeviceNDArray")


def _device(x: Any) -> tuple[str, int]:
    return "cuda", _context_device(x)


def _context_device(x: Any) -> int:
    try:
        return int(x.gpu_data.context.device.id)
    except AttributeError:
        return 0


def from_cai(obj: Any) -> Any:
    """Wrap any CAI producer as a Numba device array (Numba waits on its stream)."""
    from numba import cuda

    cai.validate(cai.interface_of(obj), who=type(obj).__name__)
    return cuda.as_cuda_array(obj)


def to_device(arr: Any, index: int) -> Any:
    """A host NumPy array copied to CUDA device ``index``."""
    from numba import cuda

    with cuda.gpus[index]:
        return cuda.to_device(arr)


ADAPTER = ArrayAdapter(
    name="numba",
    aliases=("numba.cuda", "devicendarray"),
    modules=("numba",),
    package="numba",
    install='pip install "interop-mempool[gpu-cu12]" or "interop-mempool[gpu-cu13]"',
    devices=("cuda",),
    is_value=_is_value,
    view=view,
    device=_device,
    to_numpy=lambda x: x.copy_to_host(),
    export_cai=lambda x: x,
    from_cai=from_cai,
    to_device=to_device,
)
