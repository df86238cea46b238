"""Host-memory helpers shared by the copy route: fresh aligned buffers and pointers."""

from __future__ import annotations

from typing import Any

ALIGNMENT = 64
"""Byte alignment of every buffer interop allocates (what XLA on the CPU needs)."""


def fresh_buffer(shape: tuple[int, ...], dtype: Any) -> Any:
    """A new, writable, C-contiguous, 64-byte aligned NumPy array (its values unset)."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.hasobject:
        from .errors import UnsupportedConversionError

        raise UnsupportedConversionError(
            f"a NumPy array of dtype {dtype} holds Python object references, not values in "
            "a buffer: interop copies buffers only; cast it to a numeric dtype first "
            "(arr.astype(...))")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def fresh_copy(arr: Any, dtype: Any = None) -> Any:
    """A new, writable, C-contiguous, 64-byte aligned copy of the NumPy array ``arr``, cast
    to ``dtype`` (a narrower one of the same kind) if given."""
    import numpy as np

    out = fresh_buffer(arr.shape, arr.dtype if dtype is None else dtype)
    np.copyto(out, arr, casting="no" if out.dtype == arr.dtype else "same_kind")
    return out


class _Alias:
    """An ``__array_interface__`` over memory ``base`` owns, keeping ``base`` alive."""

    __slots__ = ("__array_interface__", "base")

    def __init__(self, interface: dict, base: Any) -> None:
        self.__array_interface__ = interface
        self.base = base


def writable_view(arr: Any) -> Any:
    """A writable NumPy array over the memory of the read-only array ``arr`` (same shape,
    strides and dtype), keeping ``arr`` alive: for a consumer that takes only writable arrays
    and never says read-only (the edge that uses it records the hazard). An empty array has no
    memory to share: a new empty one."""
    import numpy as np

    if not arr.size:
        return np.empty(arr.shape, arr.dtype)
    interface = dict(arr.__array_interface__)
    interface["data"] = (interface["data"][0], False)
    out = np.asarray(_Alias(interface, arr))
    return out if out.dtype == arr.dtype else out.view(arr.dtype)  # ml_dtypes read as void
