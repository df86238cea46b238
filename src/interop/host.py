"""Host-memory helpers shared by the copy route: fresh aligned buffers and pointers."""

from __future__ import annotations

from typing import Any

ALIGNMENT = 64
"""Byte alignment of every buffer interop allocates (what XLA on the CPU needs)."""


def fresh_copy(arr: Any, dtype: Any = None) -> Any:
    """A new, writable, C-contiguous, 64-byte aligned copy of the NumPy array ``arr``, cast
    to ``dtype`` (a narrower one of the same kind) if given."""
    import numpy as np

    dtype = arr.dtype if dtype is None else np.dtype(dtype)
    nbytes = arr.size * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    out = raw[start:start + nbytes].view(dtype).reshape(arr.shape)
    np.copyto(out, arr, casting="no" if dtype == arr.dtype else "same_kind")
    return out

