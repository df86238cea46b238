"""CUDA Array Interface v3: validation of ``__cuda_array_interface__`` dicts, as pure Python.

Every malformed dict raises :class:`~interop.errors.ProtocolError` naming the key; a
``mask`` is refused (the masked values would be lost); ``stream`` must be ``None`` or a
non-negative int (:func:`stream_of` says what 0 is taken for).
"""

from __future__ import annotations

from typing import Any

from ..errors import ProtocolError
from ..view import BufferView, c_strides

_KINDS = set("biufcV")
_SIZES = {"b": {1}, "i": {1, 2, 4, 8}, "u": {1, 2, 4, 8}, "f": {2, 4, 8, 16},
          "c": {8, 16, 32}}


def sync_disabled(env: dict[str, str] | None = None) -> bool:
    """Whether the user opted out of CAI stream synchronisation (Numba's or CuPy's variable)."""
    import os

    env = os.environ if env is None else env
    return any(env.get(k, "1").strip() == "0" for k in (
        "NUMBA_CUDA_ARRAY_INTERFACE_SYNC", "CUPY_CUDA_ARRAY_INTERFACE_SYNC"))


def interface_of(obj: Any) -> dict[str, Any]:
    """``obj.__cuda_array_interface__``, failing with a ProtocolError if it raises."""
    name = type(obj).__name__
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        raise ProtocolError(f"{name} has no __cuda_array_interface__") from None
    except Exception as e:
        raise ProtocolError(f"{name}.__cuda_array_interface__ raised {type(e).__name__}: {e}"
                            ) from e
    return cai


def validate(cai: Any, *, who: str = "producer", device: int = 0) -> BufferView:
    """Check a CAI v3 dict key by key and return the buffer it describes."""
    where = f"{who}.__cuda_array_interface__"
    if not isinstance(cai, dict):
        raise ProtocolError(f"{where} must be a dict, got {type(cai).__name__}")
    for key in ("shape", "typestr", "data", "version"):
        if key not in cai:
            raise ProtocolError(f"{where} lacks the required key {key!r}")
    version = cai["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version not in (0, 1, 2, 3):
        raise ProtocolError(f"{where}['version'] is {version!r}; versions 0..3 exist, "
                            "interop reads up to 3")
    shape = cai["shape"]
    if not isinstance(shape, tuple) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in shape):
        raise ProtocolError(f"{where}['shape'] must be a tuple of ints, got {shape!r}")
    if any(n < 0 for n in shape):
        raise ProtocolError(f"{where}['shape'] has a negative extent: {shape!r}")
    itemsize, typestr = _typestr(cai["typestr"], where)
    descr = cai.get("descr")
    if descr is not None and (not isinstance(descr, list) or not all(
            isinstance(d, tuple) and len(d) >= 2 for d in descr)):
        raise ProtocolError(f"{where}['descr'] must be a list of (name, typestr) tuples, "
                            f"got {descr!r}")
    data = cai["data"]
    if (not isinstance(data, tuple) or len(data) != 2 or not isinstance(data[0], int)
            or isinstance(data[0], bool) or not isinstance(data[1], bool)):
        raise ProtocolError(f"{where}['data'] must be (pointer: int, readonly: bool), "
                            f"got {data!r}")
    size = 1
    for n in shape:
        size *= n
    ptr, readonly = data
    if ptr < 0:
        raise ProtocolError(f"{where}['data'] pointer is negative: {ptr}")
    if size and ptr == 0:
        raise ProtocolError(f"{where}['data'] is a NULL pointer for {size} elements; "
                            "only an empty array may have pointer 0")
    strides = cai.get("strides")
    if strides is None:
        strides = c_strides(shape, itemsize)
    elif (not isinstance(strides, tuple) or len(strides) != len(shape) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in strides)):
        raise ProtocolError(f"{where}['strides'] must be None or a tuple of {len(shape)} "
                            f"ints (bytes), got {strides!r}")
    if cai.get("mask") is not None:
        raise ProtocolError(f"{where} has a mask; masked values would be lost: fill them "
                            "first (interop refuses masked CUDA arrays)")
    stream = cai.get("stream")
    if version >= 3 and stream is not None:
        if not isinstance(stream, int) or isinstance(stream, bool):
            raise ProtocolError(f"{where}['stream'] must be None or an int, got {stream!r}")
        if stream < 0:
            raise ProtocolError(f"{where}['stream'] is {stream}; a stream is None, 1 (legacy "
                                "default), 2 (per-thread default) or a cudaStream_t")
    return BufferView(ptr, shape, tuple(strides), itemsize, typestr, ("cuda", device),
                      readonly, None)


def stream_of(cai: dict[str, Any]) -> int | None:
    """The producer's stream to wait on (``None``: no synchronisation needed), as the spec
    numbers them: 1 the legacy default stream, 2 the per-thread default, else a
    ``cudaStream_t``.

    The spec disallows 0 (ambiguous between the two default streams), yet Numba exports it
    for an array on ``cuda.default_stream()``, and CuPy and Numba, as consumers, take it and
    synchronise the stream handle 0. interop takes it as the legacy default stream (1): work
    on the per-thread default stream is ordered before the legacy stream's too, so waiting
    on it is safe under either reading.
    """
    if cai.get("version", 0) < 3:
        return None
    stream = cai.get("stream")
    return STREAM_LEGACY if stream == 0 else stream


STREAM_LEGACY = 1
"""The CUDA legacy default stream, as the CAI (and DLPack) number it."""


def _typestr(ts: Any, where: str) -> tuple[int, str]:
    if (not isinstance(ts, str) or len(ts) < 3 or ts[0] not in "<>|="
            or ts[1] not in _KINDS or not ts[2:].isdigit()):
        raise ProtocolError(f"{where}['typestr'] {ts!r} is not a type string such as '<f4'")
    kind, size = ts[1], int(ts[2:])
    if kind in _SIZES and size not in _SIZES[kind]:
        raise ProtocolError(f"{where}['typestr'] {ts!r}: no {kind!r} type of {size} bytes")
    if ts[0] == ">" and size > 1:
        raise ProtocolError(f"{where}['typestr'] {ts!r} is big-endian; CUDA devices are "
                            "little-endian")
    if kind == "V":
        return size, ts
    norm = ("|" if size == 1 else "<") + kind + str(size)
    return size, norm
