"""Where a value's bytes are, read with each framework's own accessor, never with interop.

The tests prove zero-copy with these oracles, so none of them may come from the code under
test: NumPy's ``__array_interface__``, ``Tensor.data_ptr()``/``stride()``, JAX's
``Array.unsafe_buffer_pointer()``, pyarrow's ``Array.buffers()`` and ``offset``, pandas' and
polars' own ``to_numpy()`` (checked to be a view), and for DLPack capsules (TensorFlow's and
PaddlePaddle's exports, raw capsules) a small ctypes reader of the ``DLTensor`` written here:
the tests' one DLPack reader (``read_capsule``; ``facts``, ``array`` and ``Hand`` over it).

``layout(x)`` is ``(device, address of the first element, shape, byte strides, itemsize)``;
``extent(x)`` the bytes ``[lo, hi)`` its elements cover; ``shares(a, b)`` whether two
values' bytes overlap on the same device (chunk by chunk for several chunks); ``raw(x)``
a writable NumPy array over a host value's own bytes (to write into memory its framework
keeps immutable, or read it back).
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# ---- a DLPack capsule, read with ctypes (the DLPack v1 header, not interop.protocols) ------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]

_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
_CPU_DEVICES = {1, 3}  # kDLCPU, kDLCUDAHost


@dataclass(frozen=True)
class Capsule:
    """What a capsule's ``DLTensor`` says, read without consuming it."""

    name: str
    ptr: int
    """``data + byte_offset``: the first element."""
    device_type: int
    device_id: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    """In elements, as DLPack counts them (C-contiguous when the producer left them NULL)."""
    code: int
    bits: int
    lanes: int
    read_only: bool


def read_capsule(cap: Any) -> Capsule:
    """The ``DLTensor`` of an unconsumed ``dltensor`` / ``dltensor_versioned`` capsule."""
    name = _get_name(cap)
    if name == b"dltensor":
        managed = _DLManagedTensor.from_address(_get_pointer(cap, name))
        t, flags = managed.dl_tensor, 0
    elif name == b"dltensor_versioned":
        managed = _DLManagedTensorVersioned.from_address(_get_pointer(cap, name))
        t, flags = managed.dl_tensor, managed.flags
    else:
        raise TypeError(f"not an unconsumed DLPack capsule: {name!r}")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(t.ndim))
    else:
        strides = tuple(math.prod(shape[i + 1:]) for i in range(t.ndim))
    return Capsule(name.decode(), (t.data or 0) + t.byte_offset, t.device.device_type,
                   t.device.device_id, shape, strides, t.dtype.code, t.dtype.bits,
                   t.dtype.lanes, bool(flags & _READ_ONLY))


# DLDataType code (0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool) and bits -> NumPy
_DTYPES = {(0, 8): "i1", (0, 16): "i2", (0, 32): "i4", (0, 64): "i8",
           (1, 8): "u1", (1, 16): "u2", (1, 32): "u4", (1, 64): "u8",
           (2, 16): "f2", (2, 32): "f4", (2, 64): "f8", (5, 64): "c8", (5, 128): "c16",
           (6, 8): "?", (4, 16): "bfloat16"}


@dataclass(frozen=True)
class Facts:
    """What a capsule says about its tensor, in NumPy's terms."""

    name: bytes
    read_only: bool
    data: int                      # data + byte_offset
    device: tuple[int, int]
    shape: tuple[int, ...]
    strides: tuple[int, ...]       # in bytes
    dtype: np.dtype


def _dtype(code: int, bits: int) -> np.dtype:
    name = _DTYPES[(code, bits)]
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def facts(cap: Any) -> Facts:
    """A live (unconsumed) capsule's tensor (:func:`read_capsule`) with a NumPy dtype and
    byte strides."""
    info = read_capsule(cap)
    dtype = _dtype(info.code, info.bits)
    return Facts(info.name.encode(), info.read_only, info.ptr,
                 (info.device_type, info.device_id), info.shape,
                 tuple(s * dtype.itemsize for s in info.strides), dtype)


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


class _Producer:
    """Hands a raw capsule to ``from_dlpack`` (which wants an object with ``__dlpack__``)."""

    def __init__(self, cap: Any, device: tuple[int, int]) -> None:
        self._cap, self._device = cap, device

    def __dlpack__(self, **_: Any) -> Any:
        return self._cap

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def consume_capsule(cap: Any) -> Any:
    """The capsule consumed by ``numpy.from_dlpack``; bfloat16 (DLPack code 4), which NumPy
    cannot import (and torch aborts on when strides are negative), is read by this module's
    reader as an ``ml_dtypes.bfloat16`` array over the capsule's memory (read-only when the
    capsule says so), the capsule kept alive (unconsumed: its deleter runs when the array
    goes)."""
    info = read_capsule(cap)
    if info.code != 4:
        return np.from_dlpack(_Producer(cap, (info.device_type, 0)))
    import ml_dtypes

    lay = _capsule(cap)
    lo, hi = _extent(lay)
    if hi == lo:
        return np.empty(lay.shape, ml_dtypes.bfloat16)
    buf = (ctypes.c_char * (hi - lo)).from_address(lo)
    buf.capsule = cap  # the array's buffer holds the capsule, and so the producer's memory
    out = np.ndarray(lay.shape, ml_dtypes.bfloat16, buffer=buf, offset=lay.ptr - lo,
                     strides=lay.strides)
    out.flags.writeable = not info.read_only  # as numpy.from_dlpack honours the flag
    return out


# ---- per framework ------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    device: str
    """"cpu" or "cuda" (pointers of different devices never overlap)."""
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    """In bytes."""
    itemsize: int
    bits: tuple[int, int] | None = None
    """For bit-packed Arrow booleans: ``(bit offset, length)`` in the buffer at ``ptr``."""


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    return tuple(itemsize * math.prod(shape[i + 1:]) for i in range(len(shape)))


def _numpy(a: np.ndarray) -> Layout:
    ai = a.__array_interface__
    shape = tuple(ai["shape"])
    strides = ai["strides"] or _c_strides(shape, a.itemsize)
    return Layout("cpu", ai["data"][0], shape, tuple(strides), a.itemsize)


def _torch(t: Any) -> Layout:
    size = t.element_size()
    return Layout("cpu" if t.device.type == "cpu" else "cuda", t.data_ptr(), tuple(t.shape),
                  tuple(s * size for s in t.stride()), size)


def _jax(x: Any) -> Layout:
    (dev,) = x.devices()
    shape = tuple(x.shape)
    size = x.dtype.itemsize
    return Layout("cpu" if dev.platform == "cpu" else "cuda", x.unsafe_buffer_pointer(), shape,
                  _c_strides(shape, size), size)


def _arrow(arr: Any) -> Layout:
    if hasattr(arr, "num_chunks"):  # a ChunkedArray: the oracle speaks for one chunk
        if arr.num_chunks != 1:
            raise TypeError(f"no single buffer: {arr.num_chunks} chunks")
        arr = arr.chunk(0)
    if getattr(arr.type, "extension_name", "") == "arrow.fixed_shape_tensor":
        # its rows, one after another in the storage's values (by Arrow's own accessors)
        storage, values = arr.storage, arr.storage.values
        size = values.type.bit_width // 8
        shape = (len(arr), *arr.type.shape)
        return Layout("cpu", values.buffers()[1].address + (values.offset + storage.offset
                      * storage.type.list_size) * size, shape, _c_strides(shape, size), size)
    width = arr.type.bit_width
    buf = arr.buffers()[1]
    if width == 1:
        return Layout("cpu", buf.address, (len(arr),), (0,), 0, (arr.offset, len(arr)))
    size = width // 8
    return Layout("cpu", buf.address + arr.offset * size, (len(arr),), (size,), size)


def _twice_the_same(view: Any) -> Layout:
    """A framework's own ``to_numpy``-like view, taken twice: a copy would move it."""
    first, second = view(), view()
    lay = _layout(first)
    if lay.ptr != _layout(second).ptr and math.prod(lay.shape):
        raise TypeError("the framework's own view of this value is a copy: no oracle")
    return lay


def _pandas(s: Any) -> Layout:
    arr = s.array
    if hasattr(arr, "__arrow_array__") and type(arr).__name__ == "ArrowExtensionArray":
        return _arrow(arr.__arrow_array__())
    return _twice_the_same(lambda: s.to_numpy(copy=False))


def _polars(s: Any) -> Layout:
    if s.dtype.is_numeric():
        return _twice_the_same(lambda: s.to_numpy(allow_copy=False))
    return _twice_the_same(lambda: s.to_arrow())


def _capsule(cap: Any) -> Layout:
    c = read_capsule(cap)
    size = c.bits * c.lanes // 8
    return Layout("cpu" if c.device_type in _CPU_DEVICES else "cuda", c.ptr, c.shape,
                  tuple(s * size for s in c.strides), size)


def _via_dlpack(x: Any, export: Any) -> Layout:
    return _capsule(export(x))


def _layout(x: Any) -> Layout:
    mod = type(x).__module__.partition(".")[0]
    if isinstance(x, np.ndarray):
        return _numpy(x)
    if mod == "torch":
        return _torch(x)
    if mod in ("jax", "jaxlib"):
        return _jax(x)
    if mod == "pyarrow":
        return _arrow(x)
    if mod == "pandas":
        return _pandas(x)
    if mod == "polars":
        return _polars(x)
    if type(x).__name__ == "PyCapsule":
        return _capsule(x)
    if mod == "tensorflow":
        import tensorflow as tf

        return _via_dlpack(x, tf.experimental.dlpack.to_dlpack)
    if mod == "paddle":
        import paddle

        return _via_dlpack(x, paddle.utils.dlpack.to_dlpack)
    if hasattr(x, "__cuda_array_interface__"):  # CuPy, Numba, cuDF columns: their own export
        cai = x.__cuda_array_interface__
        shape, size = tuple(cai["shape"]), np.dtype(cai["typestr"]).itemsize
        return Layout("cuda", cai["data"][0], shape,
                      tuple(cai.get("strides") or _c_strides(shape, size)), size)
    raise TypeError(f"no pointer oracle for {type(x).__module__}.{type(x).__name__}")


def layout(x: Any) -> Layout:
    """Where ``x``'s elements are, by its framework's own accessor."""
    return _layout(x)


def pointer(x: Any) -> int:
    """The address of ``x``'s first element (of the byte holding it, for packed booleans)."""
    lay = _layout(x)
    return lay.ptr + (lay.bits[0] // 8 if lay.bits else 0)


def _extent(lay: Layout) -> tuple[int, int]:
    if lay.bits:
        off, n = lay.bits
        return lay.ptr + off // 8, lay.ptr + ((off + n + 7) // 8 if n else off // 8)
    if not math.prod(lay.shape):
        return lay.ptr, lay.ptr
    lo = lay.ptr + sum(s * (n - 1) for s, n in zip(lay.strides, lay.shape) if s < 0)
    hi = lay.ptr + sum(s * (n - 1) for s, n in zip(lay.strides, lay.shape) if s > 0)
    return lo, hi + lay.itemsize


def extent(x: Any) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` the elements of ``x`` occupy; ``(ptr, ptr)`` when empty."""
    return _extent(_layout(x))


def _pieces(x: Any) -> list[Any]:
    """The single-buffer pieces of ``x``: the chunks of a pyarrow ChunkedArray or a polars
    Series of several chunks, else ``x`` itself."""
    mod = type(x).__module__.partition(".")[0]
    if mod == "pyarrow" and hasattr(x, "num_chunks") and x.num_chunks != 1:
        return list(x.chunks)
    if mod == "polars" and x.n_chunks() > 1:
        return list(x.get_chunks())
    return [x]


def shares(a: Any, b: Any) -> bool:
    """Whether any bytes of ``a`` and ``b`` overlap (same device, non-empty pieces)."""
    if _layout(_pieces(a)[0]).device != _layout(_pieces(b)[0]).device:
        return False
    for pa_ in _pieces(a):
        alo, ahi = extent(pa_)
        for pb in _pieces(b):
            blo, bhi = extent(pb)
            if alo < ahi and blo < bhi and alo < bhi and blo < ahi:
                return True
    return False


def within(inner: Any, outer: Any) -> bool:
    """Whether every byte of ``inner`` lies in ``outer``'s extent (a view of it)."""
    (ilo, ihi), (olo, ohi) = extent(inner), extent(outer)
    return olo <= ilo and ihi <= ohi


def raw(x: Any, dtype: Any = None) -> np.ndarray:
    """A writable NumPy array over the host bytes of ``x`` (same shape and strides), built
    from the oracle's address with ctypes: it reads what is in memory now, and writes where
    ``x``'s framework would not let us."""
    lay = _layout(x)
    if lay.device != "cpu" or lay.bits:
        raise TypeError("raw views are for host values of whole bytes")
    lo, hi = extent(x)
    dt = np.dtype(dtype) if dtype is not None else None
    if dt is None or dt.itemsize != lay.itemsize:
        raise TypeError(f"pass the dtype of {lay.itemsize}-byte elements")
    if hi == lo:
        return np.empty(lay.shape, dt)
    buf = (ctypes.c_char * (hi - lo)).from_address(lo)
    return np.ndarray(lay.shape, dt, buffer=buf, offset=lay.ptr - lo, strides=lay.strides)


# ---- every buffer of a value: the truth for interop.shares_memory ----------------------------

def _arrow_regions(arr: Any) -> list[tuple[int, int]]:
    """The bytes each buffer of one Arrow array holds for its elements, from Arrow's own
    ``buffers()``, ``offset`` and the offsets NumPy reads out of Arrow's buffer: the validity
    bits, the values (bit-packed or fixed width), a string's offsets and the data they span;
    the buffers of other nested types whole (none for an empty one)."""
    import pyarrow as pa

    t, n, o = arr.type, len(arr), arr.offset
    if pa.types.is_dictionary(t):
        return _arrow_regions(arr.indices) + _arrow_regions(arr.dictionary)
    bufs = arr.buffers()

    def bits(b: Any) -> tuple[int, int]:
        return (b.address + o // 8, b.address + (o + n + 7) // 8) if n else (0, 0)

    out = [bits(bufs[0])] if bufs[0] is not None else []
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or \
            pa.types.is_large_binary(t):
        offsets = np.frombuffer(bufs[1], np.int64 if pa.types.is_large_string(t)
                                or pa.types.is_large_binary(t) else np.int32)
        w = offsets.itemsize
        out.append((bufs[1].address + o * w, bufs[1].address + (o + n + 1) * w))
        if bufs[2] is not None:
            out.append((bufs[2].address + int(offsets[o]), bufs[2].address + int(offsets[o + n])))
    elif (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
          or pa.types.is_temporal(t) or pa.types.is_decimal(t)
          or pa.types.is_fixed_size_binary(t)):
        if t.bit_width == 1:
            out.append(bits(bufs[1]))
        else:
            w = t.bit_width // 8
            out.append((bufs[1].address + o * w, bufs[1].address + (o + n) * w))
    elif not pa.types.is_null(t) and n:  # an empty nested array holds none of their bytes
        out += [(b.address, b.address + b.size) for b in bufs[1:] if b is not None]
    return [r for r in out if r[1] > r[0]]


def _arrow_any(x: Any) -> list[tuple[int, int]]:
    chunks = x.chunks if hasattr(x, "num_chunks") else [x]
    return [r for c in chunks for r in _arrow_regions(c)]


def _numpy_region(a: np.ndarray) -> list[tuple[int, int]]:
    if not a.size:
        return []
    lo, hi = np.lib.array_utils.byte_bounds(a)
    return [(lo, hi)]


def _pandas_regions(s: Any) -> list[tuple[int, int]]:
    arr = s.array
    if type(arr).__name__ in ("ArrowExtensionArray", "ArrowStringArray"):
        return _arrow_any(arr.__arrow_array__())  # pandas' own Arrow export: no copy
    if hasattr(arr, "_mask") and hasattr(arr, "_data"):  # a masked array's two NumPy arrays
        return _numpy_region(arr._data) + _numpy_region(arr._mask)
    if hasattr(arr, "codes"):  # a Categorical: its codes, a view
        return _numpy_region(arr.codes)
    if hasattr(arr, "sp_values"):  # a SparseArray: the values it stores
        return _numpy_region(arr.sp_values)
    if hasattr(arr, "asi8"):  # datetimes (with a time zone too): its int64 view
        return _numpy_region(arr.asi8)
    first, second = np.asarray(arr), np.asarray(arr)
    if first.size and first.ctypes.data != second.ctypes.data:
        raise TypeError("pandas' own NumPy view of this Series is a copy: no oracle")
    return _numpy_region(first)


def _buffer_region(x: Any) -> list[tuple[int, int]]:
    """A buffer-protocol object's bytes: ``array.array.buffer_info()``, ctypes over a
    writable buffer, NumPy's ``frombuffer`` over a read-only one."""
    import array

    if isinstance(x, array.array):
        addr, n = x.buffer_info()
        return [(addr, addr + n * x.itemsize)] if n else []
    mv = memoryview(x)
    if not mv.nbytes:
        return []
    if not mv.readonly and mv.contiguous:
        c = (ctypes.c_char * mv.nbytes).from_buffer(mv.cast("B"))
        return [(ctypes.addressof(c), ctypes.addressof(c) + mv.nbytes)]
    a = np.frombuffer(mv.cast("B") if mv.contiguous else mv.tobytes(), np.uint8)
    return _numpy_region(a)


def _interface_region(x: Any) -> list[tuple[int, int]]:
    ai = x.__array_interface__
    shape, size = tuple(ai["shape"]), np.dtype(ai["typestr"]).itemsize
    lay = Layout("cpu", ai["data"][0], shape, tuple(ai.get("strides") or _c_strides(shape, size)),
                 size)
    lo, hi = _extent(lay)
    return [(lo, hi)] if hi > lo else []


def regions(x: Any) -> list[tuple[str, int, int]]:
    """Every non-empty byte range ``(device, lo, hi)`` that ``x``'s elements occupy, by its
    framework's own accessors (every buffer of a value of several: Arrow's validity bitmap,
    values and offsets; a pandas masked array's mask; polars read through its Arrow C
    stream by pyarrow). A NumPy scalar of a number occupies its own memory (what its buffer
    protocol exposes, read-only); any other scalar has none (each read of it is a new array)."""
    mod = type(x).__module__.partition(".")[0]
    if isinstance(x, np.generic):
        if x.dtype.kind not in "biufc":
            return []
        return [("cpu", *r) for r in _numpy_region(np.asarray(memoryview(x)))]
    if isinstance(x, np.ndarray):
        return [("cpu", *r) for r in _numpy_region(x)]
    if mod == "pyarrow":
        return [("cpu", *r) for r in _arrow_any(x)]
    if mod == "pandas":
        return [("cpu", *r) for r in _pandas_regions(x)]
    if mod == "polars":  # its physical data (codes, not a dictionary), by its C stream;
        import pyarrow as pa  # a buffer at another address in a second export is a copy

        codes = type(x.dtype).__name__ in ("Categorical", "Enum")
        try:
            first, again = (_arrow_any(pa.chunked_array(x.to_physical() if codes else x))
                            for _ in range(2))
        except pa.ArrowException as e:
            raise TypeError(f"polars' Arrow stream of {x.dtype} is unreadable: {e}") from e
        return [("cpu", *r) for r in first if r in again]
    if mod == "torch" and x.is_nested:  # a jagged tensor: its values and offsets, by torch
        return regions(x.values()) + regions(x.offsets())
    if type(x).__name__ == "Jagged":  # interop's values and offsets pair: each by its own
        return regions(x.values) + regions(x.offsets)
    if mod in ("torch", "jax", "jaxlib", "tensorflow", "paddle") or type(x).__name__ == \
            "PyCapsule":
        lay = _layout(x)
        lo, hi = _extent(lay)
        return [(lay.device, lo, hi)] if hi > lo else []
    if hasattr(x, "__array_interface__"):
        return [("cpu", *r) for r in _interface_region(x)]
    if hasattr(type(x), "__dlpack__"):  # a DLPack producer: its capsule, read here
        lay = _capsule(x.__dlpack__())
        lo, hi = _extent(lay)
        return [(lay.device, lo, hi)] if hi > lo else []
    return [("cpu", *r) for r in _buffer_region(x)]


def shares_any(a: Any, b: Any) -> bool:
    """Whether any byte of any buffer of ``a`` is a byte of a buffer of ``b`` (same device)."""
    return any(da == db and alo < bhi and blo < ahi
               for da, alo, ahi in regions(a) for db, blo, bhi in regions(b))
