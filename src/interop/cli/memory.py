"""Where a probe's values live, read with each framework's own accessor (not interop's view).

The conversion table proves a zero-copy cell with this module, never with
:func:`interop.shares_memory`: the code under test must not be its own oracle. Each value's
bytes are found by its framework (``__array_interface__``, ``Tensor.data_ptr()``, JAX's
``unsafe_buffer_pointer()``, pyarrow's ``buffers()``, pandas'/polars' ``to_numpy()``,
TensorFlow's own DLPack export read here with ctypes, paddle's ``data_ptr()``, CUDA Array
Interface), and a write through one side is read back through the other's own API.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

Layout = tuple[str, int, Any, Any, int]
"""``(device, address of the first element, shape, byte strides, itemsize)``."""


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_VERSIONED_HEADER = 8 + 8 + 8 + 8  # DLPackVersion, manager_ctx, deleter, flags


def _capsule(cap: Any) -> list[Layout]:
    """A ``dltensor`` / ``dltensor_versioned`` capsule's extent (the capsule stays unread)."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    name = get_name(cap)
    base = get(cap, name)
    t = _DLTensor.from_address(base + (_VERSIONED_HEADER if name == b"dltensor_versioned"
                                       else 0))
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = ([t.strides[i] for i in range(t.ndim)] if t.strides
               else [math.prod(shape[i + 1:]) for i in range(t.ndim)])
    size = t.bits * t.lanes // 8
    device = "cpu" if t.device_type in (1, 3) else "cuda"
    return [(device, (t.data or 0) + t.byte_offset, shape, [s * size for s in strides], size)]


def _span(layout: Layout) -> tuple[str, int, int]:
    device, ptr, shape, strides, itemsize = layout
    if not math.prod(shape):
        return device, ptr, ptr
    lo = ptr + sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0)
    hi = ptr + sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0)
    return device, lo, hi + itemsize


def _numpy(a: Any) -> list[Layout]:
    ai = a.__array_interface__
    shape = ai["shape"]
    strides = ai["strides"] or [a.itemsize * math.prod(shape[i + 1:]) for i in range(len(shape))]
    return [("cpu", ai["data"][0], shape, strides, a.itemsize)]


def _leaves(arr: Any) -> list[Any]:
    """The arrays of numbers under an Arrow list or tensor array, read by Arrow's own
    accessors: the flattened values and, for a list, its offsets (``[arr]`` for numbers)."""
    import pyarrow as pa

    if isinstance(arr, pa.ExtensionArray):
        return _leaves(arr.storage)
    if pa.types.is_fixed_size_list(arr.type):
        return _leaves(arr.flatten())
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        return [*_leaves(arr.flatten()), arr.offsets]
    return [arr]


def _arrow(x: Any) -> list[Layout]:
    out = []
    for arr in (leaf for c in (x.chunks if hasattr(x, "chunks") else [x]) for leaf in _leaves(c)):
        if arr.type.bit_width == 1:  # bit-packed booleans: the bytes holding their bits
            bits = arr.offset % 8 + len(arr)
            out.append(("cpu", arr.buffers()[1].address + arr.offset // 8, [(bits + 7) // 8],
                        [1], 1))
            continue
        size = arr.type.bit_width // 8
        out.append(("cpu", arr.buffers()[1].address + arr.offset * size, [len(arr)], [size],
                    size))
    return out


def layouts(x: Any) -> list[Layout]:
    """Where ``x``'s elements are (one layout per chunk), by its framework's own accessor."""
    import numpy as np

    mod = type(x).__module__.partition(".")[0]
    if isinstance(x, np.ndarray):
        return _numpy(x)
    if type(x).__name__ == "PyCapsule":
        return _capsule(x)
    if type(x).__name__ == "Jagged":  # interop's values and offsets
        return layouts(x.values) + layouts(x.offsets)
    if mod == "torch" and x.is_nested:  # a jagged tensor: its values and offsets
        return layouts(x.values()) + layouts(x.offsets())
    if mod == "torch":
        n = x.element_size()
        return [(x.device.type, x.data_ptr(), x.shape, [s * n for s in x.stride()], n)]
    if mod in ("jax", "jaxlib"):
        (dev,) = x.devices()
        return [("cpu" if dev.platform == "cpu" else "cuda", x.unsafe_buffer_pointer(),
                 x.shape, [x.dtype.itemsize * math.prod(x.shape[i + 1:]) for i in range(x.ndim)],
                 x.dtype.itemsize)]
    if mod == "pyarrow":
        return _arrow(x)
    if mod == "pandas":
        return _numpy(x.to_numpy(copy=False))
    if mod == "polars":  # numbers: its NumPy view (it refuses to copy); else its Arrow array
        return [e for c in x.get_chunks()
                for e in (_numpy(c.to_numpy(allow_copy=False)) if c.dtype.is_numeric()
                          else _arrow(c.to_arrow()))]
    if mod == "tensorflow":
        import tensorflow as tf

        return _capsule(tf.experimental.dlpack.to_dlpack(x))
    if mod == "paddle":
        n = x.element_size()
        return [("cpu" if x.place.is_cpu_place() else "cuda", x.data_ptr(), x.shape,
                 [s * n for s in x.strides], n)]
    cai = x.__cuda_array_interface__  # CuPy, Numba, cuDF: their own export
    n = np.dtype(cai["typestr"]).itemsize
    shape = cai["shape"]
    strides = cai.get("strides") or [n * math.prod(shape[i + 1:]) for i in range(len(shape))]
    return [("cuda", cai["data"][0], shape, strides, n)]


def on_host(x: Any) -> bool:
    """Whether all of ``x``'s bytes are host memory."""
    return all(lay[0] == "cpu" for lay in layouts(x))


def overlap(a: Any, b: Any) -> bool:
    """Whether any bytes of ``a`` and ``b`` are the same (same device, both non-empty)."""
    spans_b = [_span(lay) for lay in layouts(b)]
    return any(da == db and alo < ahi and blo < bhi and alo < bhi and blo < ahi
               for da, alo, ahi in map(_span, layouts(a)) for db, blo, bhi in spans_b)


def first(x: Any) -> Any:
    """The first element of a host value, read through its own framework's API."""
    mod = type(x).__module__.partition(".")[0]
    if type(x).__name__ == "Jagged" or mod == "torch" and x.is_nested:
        return first(x.values if type(x).__name__ == "Jagged" else x.values())
    if mod == "pyarrow":
        v = _leaves(x)[0][0].as_py() if hasattr(x, "type") else x[0].as_py()
    elif mod == "pandas":
        v = x.iloc[0]
    elif mod == "polars":
        v = x[0]
    else:
        v = x[(0,) * len(x.shape)]
        v = v.numpy() if mod == "tensorflow" else v
    return v.item() if hasattr(v, "item") else v  # a Python scalar


def write_first(x: Any, value: Any) -> bool:
    """Write ``value`` to the first element through ``x``'s own API, where its framework lets
    us (a writable NumPy array, a torch tensor); False for an immutable value."""
    import numpy as np

    if type(x).__name__ == "Jagged" or type(x).__module__.startswith("torch") and x.is_nested:
        return write_first(x.values if type(x).__name__ == "Jagged" else x.values(), value)
    writable = (isinstance(x, np.ndarray) and x.flags.writeable
                or type(x).__module__.partition(".")[0] == "torch")
    if writable:
        x[(0,) * x.ndim] = value
    return writable


def flip_first(x: Any) -> None:
    """Flip the lowest bit of the first byte of ``x``'s first element, at the host address
    its framework gives (it would not let us write: JAX, pyarrow, a read-only array...)."""
    (device, ptr, *_), *_ = layouts(x)
    if device != "cpu":
        raise ValueError("a raw write is for host memory")
    byte = ctypes.c_uint8.from_address(ptr)
    byte.value ^= 1


class _Producer:
    def __init__(self, cap: Any) -> None:
        self.cap = cap

    def __dlpack__(self, **_: Any) -> Any:
        return self.cap

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def host_result(x: Any) -> Any:
    """A host DLPack capsule consumed by ``numpy.from_dlpack`` (in an ``interop.Jagged``,
    each); any other value as it is."""
    if type(x).__name__ == "Jagged":
        return type(x)(host_result(x.values), host_result(x.offsets))
    if type(x).__name__ != "PyCapsule":
        return x
    import numpy as np

    return np.from_dlpack(_Producer(x))


def write_proof(origin: Any, result: Any) -> str | None:
    """Write through one side, read the first element back through the other's own API:
    the side written (``"result"``, ``"source"``, or ``"raw"`` at the source's address when
    neither may be written), or None when the write was not seen. Host values only."""
    before = first(origin)
    mark = (not before) if isinstance(before, bool) else before + 7
    if write_first(result, mark):
        return "result" if first(origin) == mark else None
    if write_first(origin, mark):
        return "source" if first(result) == mark else None
    flip_first(origin)
    return "raw" if first(result) != before else None
