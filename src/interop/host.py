"""Host-memory helpers shared by the copy route: fresh aligned buffers and pointers."""

from __future__ import annotations

from typing import Any

ALIGNMENT = 64
"""Byte alignment of every buffer interop allocates (what XLA on the CPU needs)."""


def fresh_copy(arr: Any) -> Any:
    """A new, writable, C-contiguous, 64-byte aligned copy of the NumPy array ``arr``."""
    import numpy as np

    if arr.dtype.hasobject:
        from .errors import UnsupportedConversionError

        raise UnsupportedConversionError(
            f"a NumPy array of dtype {arr.dtype} holds Python object references, not values in "
            "a buffer: interop copies buffers only; cast it to a numeric dtype first "
            "(arr.astype(...))")
    nbytes = arr.size * arr.dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    out = raw[start:start + nbytes].view(arr.dtype).reshape(arr.shape)
    np.copyto(out, arr, casting="no")
    return out

