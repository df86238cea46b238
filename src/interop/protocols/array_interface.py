"""The NumPy array interface (``__array_interface__``) and the buffer protocol, validated."""

from __future__ import annotations

from typing import Any

from ..errors import ProtocolError
from ..view import BufferView, c_strides


def _typestr_obstacle(ts: Any, descr: Any) -> str | None:
    """Why NumPy, which reads the interface, cannot take ``ts`` (and ``descr``, where given)
    as a dtype of raw memory, or ``None``: whatever NumPy reads (``'<f4'``, ``'=f'``,
    ``'|S5'``) is taken, except Python object references, which raw memory cannot hold."""
    import numpy as np

    if not isinstance(ts, str):
        return "is not a type string such as '<f4' or '|b1'"
    for spec in (ts,) if descr is None else (ts, descr):
        try:
            dtype = np.dtype(spec)
        except (TypeError, ValueError):
            return ("is not a type string NumPy reads, such as '<f4' or '|b1'" if spec is ts
                    else f"comes with a 'descr' NumPy does not read: {descr!r}")
        if dtype.hasobject:
            return ("describes Python object references, which raw memory cannot hold: "
                    "interop reads buffers of values")
    return None


def view_of_numpy(x: Any) -> BufferView:
    """The :class:`BufferView` of a NumPy array (dtype as the DLPack table names it)."""
    from .dlpack import typestr_of

    ai = x.__array_interface__
    strides = ai["strides"] or c_strides(x.shape, x.itemsize)
    return BufferView(ai["data"][0], tuple(x.shape), tuple(strides), x.itemsize,
                      typestr_of(x.dtype), ("cpu", 0), not x.flags.writeable, x)


def validate(obj: Any) -> dict:
    """``obj.__array_interface__``, checked key by key (version 3); raises ProtocolError."""
    name = type(obj).__name__
    try:
        ai = obj.__array_interface__
    except Exception as e:  # a property that raises is a broken producer
        raise ProtocolError(f"{name}.__array_interface__ raised {type(e).__name__}: {e}") from e
    if not isinstance(ai, dict):
        raise ProtocolError(f"{name}.__array_interface__ must be a dict, got {type(ai).__name__}")
    for key in ("shape", "typestr"):
        if key not in ai:
            raise ProtocolError(f"{name}.__array_interface__ lacks the required key {key!r}")
    shape = ai["shape"]
    if not isinstance(shape, tuple) or not all(isinstance(n, int) for n in shape):
        raise ProtocolError(f"{name}.__array_interface__['shape'] must be a tuple of ints, "
                            f"got {shape!r}")
    if any(n < 0 for n in shape):
        raise ProtocolError(f"{name}.__array_interface__['shape'] is negative: {shape!r}")
    why = _typestr_obstacle(ai["typestr"], ai.get("descr"))
    if why:
        raise ProtocolError(f"{name}.__array_interface__['typestr'] {ai['typestr']!r} {why}")
    version = ai.get("version", 3)
    if version != 3:
        raise ProtocolError(f"{name}.__array_interface__ has version {version!r}; "
                            "interop reads version 3")
    strides = ai.get("strides")
    if strides is not None and (not isinstance(strides, tuple) or len(strides) != len(shape)
                                or not all(isinstance(s, int) for s in strides)):
        raise ProtocolError(f"{name}.__array_interface__['strides'] must be None or a tuple of "
                            f"{len(shape)} ints, got {strides!r}")
    data = ai.get("data")
    size = 1
    for n in shape:
        size *= n
    if isinstance(data, tuple):
        if (len(data) != 2 or not isinstance(data[0], int) or not isinstance(data[1], bool)):
            raise ProtocolError(f"{name}.__array_interface__['data'] must be (pointer: int, "
                                f"readonly: bool), got {data!r}")
        if data[0] == 0 and size:
            raise ProtocolError(f"{name}.__array_interface__ has a NULL data pointer for "
                                f"{size} elements")
    if data is None:
        try:
            memoryview(obj)
        except Exception:  # no buffer slot (TypeError), or one that fails (BufferError)
            raise ProtocolError(f"{name}.__array_interface__ has no 'data' and {name} exposes no "
                                "buffer protocol to take it from") from None
    if ai.get("mask") is not None:
        raise ProtocolError(f"{name}.__array_interface__ has a mask, which would be dropped; "
                            "fill the masked values first")
    return ai
