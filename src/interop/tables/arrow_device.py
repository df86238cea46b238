"""An Arrow C Device Data Interface array on a CUDA device, read from its C structs.

pyarrow imports ``__arrow_c_device_array__`` only through the memory mapper of the device
type, and it registers CUDA's only when ``pyarrow.cuda`` is imported, which pyarrow's wheels
do not have (``arrow/c/bridge.cc`` ``ImportDeviceArray`` -> ``arrow/device.cc``
``GetDeviceMapper``: ``ArrowKeyError: Device type 2 is not registered``). So a CUDA array is
read here from the structs the spec defines (``arrow/c/abi.h``: ``ArrowDeviceArray``, its
``ArrowArray``), and only its schema goes through pyarrow (no data):

* ``device_id``: the CUDA device the buffers live on (named to CuPy when the columns are
  made);
* ``sync_event``: for CUDA a ``cudaEvent_t*``, which the spec says a consumer MUST wait on
  before reading the data: CuPy's current stream on that device waits on it
  (``cudaStreamWaitEvent``, no host wait), and every column's CUDA Array Interface names that
  stream, so whoever reads the column orders its reads after it (CAI v3);
* ``null_count`` and the validity bitmap are read from the struct, never by pyarrow (pyarrow
  counts the bits of a bitmap whose count is unknown, ``-1``, on the host: at a device
  address, a segfault): a column or level with a bitmap and a count other than 0 is refused.

Fixed-width columns become 1-D interfaces, ``fixed_size_list`` levels and
``arrow.fixed_shape_tensor`` columns N-D ones over their leaf buffer; anything else is refused,
naming its type. The capsules stay alive as long as any column does (the array capsule's
destructor calls the producer's ``release``).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from ..errors import ProtocolError, UnsupportedConversionError

CUDA = 2


class ArrowArray(ctypes.Structure):
    pass


ArrowArray._fields_ = [
    ("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))),
    ("dictionary", ctypes.POINTER(ArrowArray)), ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p)]


class ArrowDeviceArray(ctypes.Structure):
    _fields_ = [("array", ArrowArray), ("device_id", ctypes.c_int64),
                ("device_type", ctypes.c_int32), ("sync_event", ctypes.c_void_p),
                ("reserved", ctypes.c_int64 * 3)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def device_struct(capsule: Any) -> ArrowDeviceArray:
    """The ``ArrowDeviceArray`` an ``"arrow_device_array"`` capsule holds (not moved: the
    capsule still owns it)."""
    try:
        address = _get_pointer(capsule, b"arrow_device_array")
    except ValueError as e:
        raise ProtocolError(f"__arrow_c_device_array__ returned {capsule!r}, not an "
                            f"'arrow_device_array' capsule: {e}") from e
    return ArrowDeviceArray.from_address(address)


@dataclass
class DeviceBatch:
    """The columns of a CUDA device array, not read yet: ``columns()`` makes them."""

    field: Any  # the pyarrow Field of the schema: a struct (a record batch) or one array
    struct: ArrowDeviceArray
    keep: tuple[Any, ...]  # the capsules

    @property
    def device_id(self) -> int:
        return int(self.struct.device_id)

    def named_arrays(self) -> list[tuple[str, ArrowArray, Any]]:
        import pyarrow as pa

        top, t = self.struct.array, self.field.type
        if not pa.types.is_struct(t):
            return [(self.field.name, top, t)]
        if top.null_count != 0 and _buffer(top, 0):
            raise UnsupportedConversionError(
                "a device Arrow record batch with null rows: fill them on the device first")
        return [(t.field(i).name, _child(top, i, len(t)), t.field(i).type)
                for i in range(t.num_fields)]

    def columns(self, stream: int | None) -> list[tuple[str, DeviceColumn]]:
        """``[(name, DeviceColumn)]``, each naming ``stream`` (``None``: no event to wait on)."""
        return [(name, DeviceColumn(arr, t, name, stream, self))
                for name, arr, t in self.named_arrays()]


def read(schema_capsule: Any, array_capsule: Any, struct: ArrowDeviceArray) -> DeviceBatch:
    """A :class:`DeviceBatch` over the capsules of ``__arrow_c_device_array__``."""
    import pyarrow as pa

    field = pa.Field._import_from_c_capsule(schema_capsule)
    return DeviceBatch(field, struct, (schema_capsule, array_capsule))


def wait_event(batch: DeviceBatch) -> int | None:
    """Make CuPy's current stream on the batch's device wait on the producer's
    ``sync_event`` (a ``cudaEvent_t*``); that stream's CAI number, or ``None`` without an
    event."""
    event = batch.struct.sync_event
    if not event:
        return None
    import cupy

    from ..protocols import dlpack

    handle = ctypes.c_void_p.from_address(event).value or 0
    with cupy.cuda.Device(batch.device_id):
        stream = cupy.cuda.get_current_stream()
        cupy.cuda.runtime.streamWaitEvent(stream.ptr, handle)
    return dlpack.stream_argument(stream)


def _buffer(arr: ArrowArray, i: int) -> int:
    return int(arr.buffers[i] or 0) if arr.n_buffers > i else 0


def _child(arr: ArrowArray, i: int, expected: int) -> ArrowArray:
    if arr.n_children != expected:
        raise ProtocolError(f"a device Arrow array declares {arr.n_children} children, its "
                            f"schema {expected}")
    return arr.children[i].contents


class DeviceColumn:
    """One column of a CUDA device array as a ``__cuda_array_interface__`` (v3) over its
    (leaf) data buffer, naming the stream that waited on the producer's event; it keeps the
    capsules alive."""

    def __init__(self, arr: ArrowArray, t: Any, name: str, stream: int | None,
                 owner: DeviceBatch) -> None:
        import numpy as np
        import pyarrow as pa

        self._owner = owner
        count = int(arr.length)
        dims, perm = [], None
        if isinstance(t, pa.FixedShapeTensorType):
            perm = list(t.permutation or range(len(t.shape)))
            dims, t = list(t.shape), t.storage_type
        start, level = 0, arr
        while pa.types.is_fixed_size_list(t):
            _no_nulls(level, name, t)
            start = (int(level.offset) + start) * t.list_size
            if perm is None:
                dims.append(t.list_size)
            level, t = _child(level, 0, 1), t.value_type
        _no_nulls(level, name, t)
        dtype = np.dtype(device_typestr(t))
        shape = (count, *dims)
        strides = [dtype.itemsize * int(np.prod(shape[i + 1:], dtype=np.int64))
                   for i in range(len(shape))]
        if perm is not None and perm != sorted(perm):
            axes = (0, *(p + 1 for p in perm))
            shape, strides = tuple(shape[a] for a in axes), [strides[a] for a in axes]
            explicit = tuple(strides)
        else:
            explicit = None
        data = _buffer(level, 1)
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": dtype.str, "version": 3, "strides": explicit,
            "data": (data + (int(level.offset) + start) * dtype.itemsize if data else 0, True),
            "stream": stream}


def _no_nulls(arr: ArrowArray, name: str, t: Any) -> None:
    """Refuse a level whose validity bitmap may mark nulls (a count other than 0, ``-1``
    included: unknown), read from the struct: the bitmap lives on the device."""
    if _buffer(arr, 0) and arr.null_count != 0:
        count = "an unknown number of" if arr.null_count < 0 else str(arr.null_count)
        raise UnsupportedConversionError(
            f"device Arrow column {name!r} ({t}) holds {count} nulls in a validity bitmap on "
            "the device, which cannot be read on the host: fill them on the device first")


def device_typestr(t: Any) -> str:
    """The NumPy type string of an Arrow type whose values buffer is laid out as that NumPy
    dtype (integers and floats); any other type is refused, naming it: a device buffer cannot
    be reinterpreted on the host (booleans are bit-packed, dates and times are counts in a
    unit, strings are offsets plus bytes)."""
    import pyarrow as pa

    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return _numeric_typestr(t)
    if pa.types.is_boolean(t):
        fix = "bit-packed: cast it to uint8 or int8 on the device first"
    elif pa.types.is_temporal(t):
        fix = ("a count of time units, not a NumPy datetime buffer: cast it to its integer "
               "storage type (e.g. int32 for date32) on the device first")
    else:
        fix = "not one fixed-width values buffer: cast or encode it on the device first"
    raise UnsupportedConversionError(f"a device Arrow column of type {t} is {fix}")


def _numeric_typestr(t: Any) -> str:
    import pyarrow as pa

    n = t.bit_width // 8
    kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
    return f"{'|' if n == 1 else '<'}{kind}{n}"
