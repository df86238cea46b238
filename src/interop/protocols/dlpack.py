"""DLPack 1.x: device and dtype codes, export with version negotiation, capsule inspection.

A capsule is read with ctypes without being consumed; :func:`to_numpy` consumes one
itself (renaming it ``used_dltensor[_versioned]`` as the spec requires) so that dtypes
NumPy's own ``from_dlpack`` refuses (bfloat16, float8) still arrive without a copy.
"""

from __future__ import annotations

import ctypes
import enum
import operator
import sys
from typing import Any

from ..errors import (
    CapsuleConsumedError,
    InteropError,
    ProtocolError,
    UnsupportedConversionError,
)
from ..record import record
from ..view import BufferView, c_strides

MAX_VERSION = (1, 1)
"""The newest DLPack version interop asks producers for."""


class Device(enum.IntEnum):
    """``DLDeviceType`` codes (dlpack.h 1.1)."""

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    OPENCL = 4
    VULKAN = 7
    METAL = 8
    VPI = 9
    ROCM = 10
    ROCM_HOST = 11
    EXT_DEV = 12
    CUDA_MANAGED = 13
    ONE_API = 14
    WEBGPU = 15
    HEXAGON = 16
    MAIA = 17
    TRN = 18


class Code(enum.IntEnum):
    """``DLDataTypeCode`` codes (dlpack.h 1.1)."""

    INT = 0
    UINT = 1
    FLOAT = 2
    OPAQUE_HANDLE = 3
    BFLOAT = 4
    COMPLEX = 5
    BOOL = 6
    FLOAT8_E3M4 = 7
    FLOAT8_E4M3 = 8
    FLOAT8_E4M3B11FNUZ = 9
    FLOAT8_E4M3FN = 10
    FLOAT8_E4M3FNUZ = 11
    FLOAT8_E5M2 = 12
    FLOAT8_E5M2FNUZ = 13
    FLOAT8_E8M0FNU = 14
    FLOAT6_E2M3FN = 15
    FLOAT6_E3M2FN = 16
    FLOAT4_E2M1FN = 17


FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
FLAG_IS_SUBBYTE_TYPE_PADDED = 1 << 2

STREAM_LEGACY = 1
"""CUDA legacy default stream, as ``__dlpack__(stream=1)`` names it."""
STREAM_PER_THREAD = 2
"""CUDA per-thread default stream."""
STREAM_NO_SYNC = -1
"""Ask the producer not to synchronise."""



def stream_argument(stream: Any, device_type: int = 2) -> int | None:
    """What to pass as ``__dlpack__(stream=...)`` for a consumer ordering its work on
    ``stream`` on a device of type ``device_type`` (:class:`Device`), as the DLPack spec maps it.

    ``stream`` is ``None`` (no order asked), an int as the spec defines it (CUDA: ``-1`` no
    synchronisation, ``1`` legacy default, ``2`` per-thread default, a larger value a
    ``cudaStream_t``; ``0`` is ambiguous and refused; ROCm: ``0`` default, ``1``/``2``
    refused), or a stream object of any framework (``__cuda_stream__``, torch's
    ``cuda_stream``, CuPy's ``ptr``, Numba's ``handle``), whose default stream (handle 0)
    maps to the default stream its framework means by it (:func:`default_stream`).
    """
    if stream is None:
        return None
    rocm = device_type == Device.ROCM
    if not (isinstance(stream, int) and not isinstance(stream, bool)):
        handle = _stream_handle(stream)
        return (0 if rocm else default_stream(stream)) if handle == 0 else handle
    if device_type not in CUDA_LIKE:
        raise ProtocolError(f"stream={stream!r} was given for a device of DLPack type "
                            f"{device_type}: streams exist on CUDA and ROCm only; pass None")
    if stream < -1:
        raise ProtocolError(f"stream={stream} is not a stream: use -1 (no synchronisation), "
                            "a stream object, or a stream pointer")
    if not rocm and stream == 0:
        raise ProtocolError(
            "stream=0 is ambiguous on CUDA and the DLPack spec forbids it: pass 1 for the "
            "legacy default stream, 2 for the per-thread default stream, or the stream object "
            "itself (e.g. torch.cuda.current_stream())")
    if rocm and stream in (STREAM_LEGACY, STREAM_PER_THREAD):
        raise ProtocolError(f"stream={stream} names a CUDA default stream, which ROCm does "
                            "not have: pass 0 for the default stream, or the stream object")
    return stream


def default_stream(stream: Any) -> int:
    """The spec's number for the default stream a framework's stream object of handle 0
    stands for: CuPy's and Numba's per-thread default stream when they are set to use it
    (``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM``, CuPy's own ``get_default_stream_ptr``; Numba's
    ``CUDA_PER_THREAD_DEFAULT_STREAM``), else, as torch's ``from_dlpack`` says of its own,
    the legacy default stream."""
    top = type(stream).__module__.partition(".")[0]
    if top == "cupy":
        backend = sys.modules.get("cupy_backends.cuda.stream")
        if backend is not None:
            return int(backend.get_default_stream_ptr())
    elif top == "numba":
        config = sys.modules.get("numba.cuda.core.config")
        if config is not None and getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", 0):
            return STREAM_PER_THREAD
    return STREAM_LEGACY


def _stream_handle(stream: Any) -> int:
    """The raw handle of a stream object (of CUDA Python, torch, CuPy or Numba)."""
    if hasattr(stream, "__cuda_stream__"):
        value = stream.__cuda_stream__()  # (version, handle), the CUDA stream protocol
        handle = value[1] if isinstance(value, tuple) else value
    elif hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        handle = stream.cuda_stream
    elif hasattr(stream, "ptr"):  # cupy.cuda.Stream
        handle = stream.ptr
    elif hasattr(stream, "handle"):  # numba.cuda Stream: a ctypes pointer or a binding
        handle = getattr(stream.handle, "value", stream.handle)
    else:
        raise ProtocolError(
            f"stream={stream!r}: a {type(stream).__name__} is not a stream interop can read; "
            "pass an int (1: legacy default, 2: per-thread default, or a cudaStream_t) or a "
            "stream object of torch, CuPy, Numba or CUDA Python")
    try:
        return int(handle or 0)
    except (TypeError, ValueError):
        raise ProtocolError(f"stream={stream!r} gave a handle {handle!r} that is not an "
                            "integer") from None


CUDA_LIKE = frozenset({Device.CUDA, Device.CUDA_MANAGED, Device.ROCM})

# NumPy-style type string <-> (code, bits). Names without a byte order are ml_dtypes types.
_TO_DL: dict[str, tuple[int, int]] = {
    "|b1": (Code.BOOL, 8),
    "|i1": (Code.INT, 8), "<i2": (Code.INT, 16), "<i4": (Code.INT, 32), "<i8": (Code.INT, 64),
    "|u1": (Code.UINT, 8), "<u2": (Code.UINT, 16), "<u4": (Code.UINT, 32), "<u8": (Code.UINT, 64),
    "<f2": (Code.FLOAT, 16), "<f4": (Code.FLOAT, 32), "<f8": (Code.FLOAT, 64),
    "<c8": (Code.COMPLEX, 64), "<c16": (Code.COMPLEX, 128),
    "bfloat16": (Code.BFLOAT, 16),
    "float8_e3m4": (Code.FLOAT8_E3M4, 8),
    "float8_e4m3": (Code.FLOAT8_E4M3, 8),
    "float8_e4m3b11fnuz": (Code.FLOAT8_E4M3B11FNUZ, 8),
    "float8_e4m3fn": (Code.FLOAT8_E4M3FN, 8),
    "float8_e4m3fnuz": (Code.FLOAT8_E4M3FNUZ, 8),
    "float8_e5m2": (Code.FLOAT8_E5M2, 8),
    "float8_e5m2fnuz": (Code.FLOAT8_E5M2FNUZ, 8),
    "float8_e8m0fnu": (Code.FLOAT8_E8M0FNU, 8),
}
_FROM_DL: dict[tuple[int, int], str] = {v: k for k, v in _TO_DL.items()}
DL_TYPESTRS = frozenset(_TO_DL)
"""The dtype strings DLPack has a type code for."""
NAMED = {
    "bool": "|b1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
    "float16": "<f2", "float32": "<f4", "float64": "<f8", "complex64": "<c8", "complex128": "<c16",
}
"""The type string of each dtype name NumPy, torch, TensorFlow and paddle share."""


def typestrs(names: Any) -> dict[str, str]:
    """``{dtype name: type string}`` for ``names``: those of :data:`NAMED`, and bfloat16 and
    float8 names, which are their own type strings."""
    return {n: NAMED.get(n, n) for n in names}
_SUBBYTE = {Code.FLOAT6_E2M3FN, Code.FLOAT6_E3M2FN, Code.FLOAT4_E2M1FN}


def dtype_to_dl(typestr: str) -> tuple[int, int, int]:
    """``(code, bits, lanes)`` for a NumPy type string or ml_dtypes name."""
    try:
        code, bits = _TO_DL[typestr]
    except KeyError:
        raise UnsupportedConversionError(
            f"dtype {typestr!r} has no DLPack code; supported: {sorted(_TO_DL)}"
        ) from None
    return int(code), bits, 1


def dtype_from_dl(code: int, bits: int, lanes: int) -> str:
    """The NumPy type string (or ml_dtypes name) of a ``DLDataType``."""
    if lanes != 1:
        raise UnsupportedConversionError(
            f"DLPack vector dtype (code={code}, bits={bits}, lanes={lanes}) is not supported"
        )
    if code in _SUBBYTE:
        raise UnsupportedConversionError(
            f"DLPack sub-byte dtype {Code(code).name} (bits={bits}) has no NumPy equivalent"
        )
    try:
        return _FROM_DL[(code, bits)]
    except KeyError:
        name = Code(code).name if code in Code._value2member_map_ else str(code)
        raise UnsupportedConversionError(
            f"DLPack dtype code={name} bits={bits} is not supported"
        ) from None


def numpy_dtype(typestr: str) -> Any:
    """The ``numpy.dtype`` for a type string, taking bfloat16/float8 from ml_dtypes."""
    import numpy as np

    if typestr[0] in "<>|=":
        return np.dtype(typestr)
    try:
        import ml_dtypes
    except ImportError:
        raise UnsupportedConversionError(
            f"dtype {typestr} needs the ml_dtypes package in NumPy: pip install ml_dtypes"
        ) from None
    return np.dtype(getattr(ml_dtypes, typestr))


_TYPESTRS: dict[Any, str] = {}


def typestr_of(dtype: Any) -> str:
    """The key of ``dtype`` in the DLPack table: ``"<f4"`` or an ml_dtypes name."""
    try:
        return _TYPESTRS[dtype]
    except KeyError:
        pass
    # ml_dtypes types by name (most have kind "V", but float8_e5m2 has kind "f")
    if dtype.names is None and dtype.type.__module__ == "ml_dtypes":
        ts = dtype.name
    else:
        ts = dtype.newbyteorder("<").str if dtype.byteorder != "|" else dtype.str
    if dtype.names is None and len(_TYPESTRS) < 256:  # scalar dtypes: a small, fixed set
        _TYPESTRS[dtype] = ts
    return ts


def byte_order_obstacle(dtype: Any) -> str | None:
    """Why a NumPy ``dtype`` cannot travel over DLPack because of its byte order (or None)."""
    if dtype.isnative:
        return None
    return (f"dtype {dtype} has non-native byte order, which DLPack cannot describe: convert "
            "with x.astype(x.dtype.newbyteorder('='))")


def device_of(x: Any) -> tuple[int, int]:
    """``__dlpack_device__()`` of ``x``, validated."""
    try:
        dev = x.__dlpack_device__()
    except AttributeError:
        raise ProtocolError(f"{type(x).__name__} has no __dlpack_device__") from None
    except Exception as e:  # a producer that raises is a broken producer
        raise ProtocolError(
            f"{type(x).__name__}.__dlpack_device__() raised {type(e).__name__}: {e}") from e
    pair = _int_pair(dev)
    if pair is None:
        raise ProtocolError(
            f"{type(x).__name__}.__dlpack_device__() returned {dev!r}; "
            "the spec requires a tuple (device_type, device_id) of two ints"
        )
    code, index = pair
    if code not in Device._value2member_map_:
        raise ProtocolError(f"{type(x).__name__}.__dlpack_device__() names unknown device {code}")
    return code, index


def _int_pair(dev: Any) -> tuple[int, int] | None:
    """``(device_type, device_id)`` read as the frameworks read it, or ``None``: each an int,
    or an enum that is not an ``int`` subclass (DALI's ``DLDeviceType``, a pybind11 enum)
    taken through ``__index__`` or its ``.value``, as ``int(v)`` and ``v.value`` read it."""
    if not isinstance(dev, tuple) or len(dev) != 2:
        return None
    out = []
    for v in dev:
        if not isinstance(v, int):
            try:  # an Enum member has .value; a pybind11 enum has both
                v = operator.index(getattr(v, "value", v))
            except Exception:  # not an integer of any kind: the caller says what is wrong
                return None
        out.append(int(v))
    return out[0], out[1]


def export(x: Any, *, stream: int | None = None, versioned: bool = True,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """Call ``x.__dlpack__``, asking for DLPack ``MAX_VERSION`` and falling back to legacy.

    Legacy (unversioned) capsules are asked for when ``versioned`` is false, or when the
    producer does not accept ``max_version`` (it raises ``TypeError``).
    """
    kw: dict[str, Any] = {}
    if stream is not None:
        kw["stream"] = stream
    if versioned:
        extra = dict(kw, max_version=MAX_VERSION)
        if dl_device is not None:
            extra["dl_device"] = dl_device
        if copy is not None:
            extra["copy"] = copy
        try:
            capsule = x.__dlpack__(**extra)
        except TypeError:
            capsule = _call_dlpack(x, kw)
        except InteropError:
            raise
        except Exception as e:  # a producer that raises is a broken (or refusing) producer
            raise _refused(x, e) from e
    else:
        capsule = _call_dlpack(x, kw)
    name = _capsule_name(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise ProtocolError(
            f"{type(x).__name__}.__dlpack__() returned {_describe(capsule, name)}; "
            "expected a capsule named 'dltensor' or 'dltensor_versioned'"
        )
    return capsule


def _call_dlpack(x: Any, kw: dict[str, Any]) -> Any:
    try:
        return x.__dlpack__(**kw)
    except InteropError:
        raise
    except Exception as e:
        raise _refused(x, e) from e


def _refused(x: Any, e: Exception) -> ProtocolError:
    return ProtocolError(f"{type(x).__name__}.__dlpack__() raised {type(e).__name__}: {e}")


# ---- capsules, read with ctypes -------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", _DLTensor)]


_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]

# PyCapsule_SetName keeps the pointer: these bytes live as long as the module.
_USED = {b"dltensor": ctypes.c_char_p(b"used_dltensor"),
         b"dltensor_versioned": ctypes.c_char_p(b"used_dltensor_versioned")}


def is_capsule(x: Any) -> bool:
    """True for any PyCapsule object."""
    return type(x).__name__ == "PyCapsule" and type(x).__module__ == "builtins"


def _capsule_name(capsule: Any) -> bytes | None:
    if not is_capsule(capsule):
        return None
    return _api.PyCapsule_GetName(capsule)


def _describe(obj: Any, name: bytes | None) -> str:
    if name is None:
        return f"a {type(obj).__name__}, not a capsule"
    return f"a capsule named {name.decode(errors='replace')!r}"


@record(frozen=True)
class CapsuleInfo:
    """What a DLPack capsule holds, read without consuming it."""

    view: BufferView
    versioned: bool
    version: tuple[int, int] | None
    flags: int

    @property
    def device_type(self) -> int:
        return _DEVICE_CODE[self.view.device[0]] if self.view.device[0] != "other" else 0


_DEVICE_NAMES = {Device.CPU: "cpu", Device.CUDA_HOST: "cpu", Device.ROCM_HOST: "cpu",
                 Device.CUDA: "cuda", Device.CUDA_MANAGED: "cuda", Device.ROCM: "rocm"}
_DEVICE_CODE = {"cpu": Device.CPU, "cuda": Device.CUDA, "rocm": Device.ROCM}


def device_name(code: int) -> str:
    """``"cpu"``, ``"cuda"`` or ``"rocm"`` for a device code (``"other"`` otherwise)."""
    return _DEVICE_NAMES.get(code, "other")


def _managed(capsule: Any) -> tuple[bool, Any, int]:
    name = _capsule_name(capsule)
    if name in (b"used_dltensor", b"used_dltensor_versioned"):
        raise CapsuleConsumedError(
            "this DLPack capsule was already consumed; a capsule can be imported once only. "
            "Call __dlpack__() on the producer again (or pass the producer itself)"
        )
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise ProtocolError(f"expected a DLPack capsule, got {_describe(capsule, name)}")
    ptr = _api.PyCapsule_GetPointer(capsule, name)
    if not ptr:
        raise ProtocolError("DLPack capsule holds a NULL pointer")
    versioned = name == b"dltensor_versioned"
    struct = _DLManagedTensorVersioned if versioned else _DLManagedTensor
    return versioned, struct.from_address(ptr), ptr


def inspect_capsule(capsule: Any) -> CapsuleInfo:
    """Shape, strides, dtype, device and flags of a capsule, leaving it unconsumed."""
    versioned, mt, _ = _managed(capsule)
    version = None
    flags = 0
    if versioned:
        version = (mt.version.major, mt.version.minor)
        if version[0] != 1:
            raise ProtocolError(
                f"DLPack capsule has version {version[0]}.{version[1]}; interop reads 1.x"
            )
        flags = int(mt.flags)
    return CapsuleInfo(_tensor_view(mt.dl_tensor, flags), versioned, version, flags)


def _tensor_view(t: _DLTensor, flags: int) -> BufferView:
    ndim = t.ndim
    if ndim < 0 or ndim > 64:
        raise ProtocolError(f"DLPack tensor has ndim={ndim}")
    typestr = dtype_from_dl(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    itemsize = t.dtype.bits // 8
    shape = tuple(t.shape[i] for i in range(ndim)) if ndim else ()
    if any(n < 0 for n in shape):
        raise ProtocolError(f"DLPack tensor has a negative shape {shape}")
    if ndim and t.strides:
        strides = tuple(t.strides[i] * itemsize for i in range(ndim))
    else:
        strides = c_strides(shape, itemsize)
    size = 1
    for n in shape:
        size *= n
    ptr = (t.data or 0) + t.byte_offset
    if size and not t.data:
        raise ProtocolError(f"DLPack tensor of shape {shape} has a NULL data pointer")
    dev = device_name(t.device.device_type)
    return BufferView(ptr, shape, strides, itemsize, typestr, (dev, t.device.device_id),
                      bool(flags & FLAG_READ_ONLY))


class CapsuleProducer:
    """Gives a raw capsule the ``__dlpack__``/``__dlpack_device__`` methods consumers call.

    It hands its capsule out once; ``__dlpack__`` refuses a versioned capsule to a consumer
    that did not pass ``max_version`` (the spec's rule), which raises ``BufferError``.
    """

    __slots__ = ("_capsule", "_device", "_versioned")

    def __init__(self, capsule: Any) -> None:
        info = inspect_capsule(capsule)
        self._capsule = capsule
        self._versioned = info.versioned
        self._device = (int(_DEVICE_CODE.get(info.view.device[0], Device.CPU)),
                        info.view.device[1])

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: Any = None) -> Any:
        if copy:
            raise BufferError("a raw DLPack capsule cannot be copied by its holder")
        if self._versioned and max_version is None:
            raise BufferError("this consumer takes legacy DLPack capsules only; "
                              "the capsule is versioned (DLPack 1.x)")
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise BufferError("the DLPack capsule was already handed out")
        return capsule


def carrier_dtype(itemsize: int) -> Any:
    """A plain NumPy dtype of ``itemsize`` bytes to view raw memory with (``|V16``: no u16)."""
    import numpy as np

    return np.dtype(f"<u{itemsize}") if itemsize in (2, 4, 8) else np.dtype(
        "u1" if itemsize == 1 else f"|V{itemsize}")


class _Owner:
    """Calls the DLPack deleter when the last array over the memory is gone."""

    __slots__ = ("__array_interface__", "_deleter", "_ptr")

    def __init__(self, interface: dict, deleter: int, ptr: int) -> None:
        self.__array_interface__ = interface
        self._deleter = deleter
        self._ptr = ptr

    def __del__(self, _function: Any = _Deleter) -> None:
        # the ctypes function type is bound here, not read from the module: at interpreter
        # exit the module's globals may already be None when the last array goes
        if self._deleter:
            _function(self._deleter)(self._ptr)


def to_numpy(capsule: Any) -> Any:
    """Consume a CPU DLPack capsule into a NumPy array over the same memory, any dtype.

    The array keeps the producer's memory alive and calls the deleter when freed; a
    read-only capsule (DLPack 1.x flag) gives a read-only array.
    """
    import numpy as np

    info = inspect_capsule(capsule)
    view = info.view
    if view.device[0] != "cpu":
        raise ProtocolError(f"capsule lives on {view.device}; NumPy reads CPU memory only")
    dtype = numpy_dtype(view.dtype)
    name = _capsule_name(capsule)
    _, mt, ptr = _managed(capsule)
    if _api.PyCapsule_SetName(capsule, _USED[name]) != 0:  # pragma: no cover
        raise ProtocolError("could not mark the DLPack capsule consumed")
    base_type = carrier_dtype(view.itemsize)
    if dtype.kind == "b":
        base_type = np.dtype("?")
    interface = {
        "version": 3,
        "shape": view.shape,
        "typestr": base_type.str,
        "strides": view.strides,
        "data": (view.ptr, view.readonly),
    }
    owner = _Owner(interface, mt.deleter or 0, ptr)
    if view.size:
        arr = np.asarray(owner)
    else:
        arr = np.empty(view.shape, base_type)
        del owner  # nothing to view: release the producer's memory now
    if dtype != base_type:
        arr = arr.view(dtype)
    if view.readonly:
        arr.flags.writeable = False
    return arr
