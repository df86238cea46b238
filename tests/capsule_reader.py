"""A DLPack capsule reader for the tests, independent of interop: ctypes over the DLPack
1.x header (``DLManagedTensorVersioned`` / legacy ``DLManagedTensor``), nothing else."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                ctypes.c_char_p]

# DLDataType code (0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool) and bits -> NumPy
_DTYPES = {(0, 8): "i1", (0, 16): "i2", (0, 32): "i4", (0, 64): "i8",
           (1, 8): "u1", (1, 16): "u2", (1, 32): "u4", (1, 64): "u8",
           (2, 16): "f2", (2, 32): "f4", (2, 64): "f8", (5, 64): "c8", (5, 128): "c16",
           (6, 8): "?", (4, 16): ml_dtypes.bfloat16}


@dataclass
class Facts:
    """What a capsule says about its tensor."""

    name: bytes
    read_only: bool
    data: int                      # data + byte_offset
    device: tuple[int, int]
    shape: tuple[int, ...]
    strides: tuple[int, ...]       # in bytes
    dtype: np.dtype


def facts(cap: Any) -> Facts:
    """Read a live (unconsumed) capsule's struct."""
    name = _get_name(cap)
    ptr = _get_pointer(cap, name)
    if name == b"dltensor_versioned":
        # version (2 x u32), manager_ctx, deleter, flags (u64), then the DLTensor
        flags, t = ctypes.c_uint64.from_address(ptr + 24).value, ptr + 32
    else:
        flags, t = 0, ptr
    data = ctypes.c_void_p.from_address(t).value or 0
    device = (ctypes.c_int32.from_address(t + 8).value, ctypes.c_int32.from_address(t + 12).value)
    ndim = ctypes.c_int32.from_address(t + 16).value
    code = ctypes.c_uint8.from_address(t + 20).value
    bits = ctypes.c_uint8.from_address(t + 21).value
    dtype = np.dtype(_DTYPES[(code, bits)])
    shape_p = ctypes.c_void_p.from_address(t + 24).value
    strides_p = ctypes.c_void_p.from_address(t + 32).value
    offset = ctypes.c_uint64.from_address(t + 40).value
    shape = tuple((ctypes.c_int64 * ndim).from_address(shape_p)) if ndim else ()
    if strides_p and ndim:
        strides = tuple(s * dtype.itemsize for s in (ctypes.c_int64 * ndim).from_address(strides_p))
    else:
        strides = tuple(int(s) for s in np.empty(shape, dtype).strides) if ndim else ()
    return Facts(name, bool(flags & 1), data + offset, device, shape, strides, dtype)


class _Over:
    def __init__(self, cap: Any, interface: dict) -> None:
        self.cap, self.__array_interface__ = cap, interface


def array(cap: Any) -> np.ndarray:
    """A NumPy view of a CPU capsule's memory, keeping the (unconsumed) capsule alive; read-only
    when the capsule says so."""
    f = facts(cap)
    if not int(np.prod(f.shape)):
        return np.empty(f.shape, f.dtype)
    carrier = f.dtype if f.dtype.kind != "V" else np.dtype("<u2")
    out = np.asarray(_Over(cap, {"version": 3, "shape": f.shape, "typestr": carrier.str,
                                 "strides": f.strides, "data": (f.data, f.read_only)}))
    return out.view(f.dtype) if carrier != f.dtype else out


class Hand:
    """Hands a raw capsule to a consumer's ``from_dlpack`` (CPU, once)."""

    def __init__(self, cap: Any) -> None:
        self.cap = cap

    def __dlpack__(self, **kw: Any) -> Any:
        cap, self.cap = self.cap, None
        return cap

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)
