"""CuPy: the GPU hub. It consumes and produces both DLPack and the CUDA Array Interface."""

from __future__ import annotations

import sys
from typing import Any

from ..protocols import cai
from ..view import BufferView
from .base import ArrayAdapter, ConsumerRules


def _is_value(x: Any) -> bool:
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(x, cupy.ndarray)


def _device(x: Any) -> tuple[str, int]:
    return "cuda", x.device.id


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of a CuPy array, from its CUDA Array Interface."""
    return cai.validate(x.__cuda_array_interface__, who="cupy.ndarray", device=x.device.id)


def _from_dlpack(producer: Any) -> Any:
    import cupy

    return cupy.from_dlpack(producer)


def from_cai(obj: Any) -> Any:
    """Wrap any CAI producer as a CuPy array (CuPy waits on the producer's stream)."""
    import cupy

    cai.validate(cai.interface_of(obj), who=type(obj).__name__)
    return cupy.asarray(obj)


def to_device(arr: Any, index: int) -> Any:
    """A host NumPy array copied to CUDA device ``index``."""
    import cupy

    with cupy.cuda.Device(index):
        return cupy.asarray(arr)


ADAPTER = ArrayAdapter(
    name="cupy",
    aliases=("cp",),
    modules=("cupy",),
    package="cupy",
    install='pip install "interop-mempool[gpu-cu12]" or "interop-mempool[gpu-cu13]"',
    devices=("cuda",),
    hub=True,
    rules=ConsumerRules(name="CuPy"),
    is_value=_is_value,
    view=view,
    device=_device,
    to_numpy=lambda x: x.get(),
    export_dlpack=lambda x: x,
    from_dlpack=_from_dlpack,
    dlpack_call="cupy.from_dlpack",
    export_cai=lambda x: x,
    from_cai=from_cai,
    to_device=to_device,
)
