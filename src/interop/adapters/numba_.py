"""Numba CUDA device arrays: CUDA Array Interface only (the registry hubs through CuPy)."""

from __future__ import annotations

from typing import Any

from .. import devices
from ..errors import DeviceError
from ..protocols import cai, dlpack
from ..view import BufferView
from .base import ArrayAdapter, ConsumerRules, instance_test

_DTYPES = frozenset(dlpack.NAMED.values())


def _accepts(ts: str) -> str | None:
    return None if ts in _DTYPES else (f"Numba device arrays have no dtype {ts} (they hold "
                                       "NumPy's own dtypes)")


_is_value = instance_test("numba.cuda.cudadrv.devicearray", "DeviceNDArray")


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of a device array, from its CUDA Array Interface."""
    return cai.validate(x.__cuda_array_interface__, who="DeviceNDArray")


def _device(x: Any) -> tuple[str, int]:
    """The device holding the array's memory: the CUDA runtime's answer for its pointer (an
    array made from another device's pointer is in the current context, not on its
    device); the context's device when the runtime cannot be asked (no CuPy)."""
    ptr = x.device_ctypes_pointer.value
    if ptr:
        try:
            return "cuda", devices.pointer_device(ptr)
        except DeviceError:
            pass
    return "cuda", int(x.gpu_data.context.device.id)


def from_cai(obj: Any, stream: int | None = None) -> Any:
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
    gpu_rules=ConsumerRules(name="Numba", accepts=_accepts),
    is_value=_is_value,
    view=view,
    device=_device,
    to_numpy=lambda x: x.copy_to_host(),
    export_cai=lambda x: x,
    from_cai=from_cai,
    to_device=to_device,
)
