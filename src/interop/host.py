"""Host-memory helpers shared by the copy route: fresh aligned buffers and pointers."""

from __future__ import annotations

from typing import Any

ALIGNMENT = 64
"""Byte alignment of every buffer interop allocates (what XLA on the CPU needs)."""


def fresh_copy(arr: Any) -> Any:
    """A new, writable, C-contiguous, 64-byte aligned copy of the NumPy array ``arr``."""
    import numpy as np

    nbytes = arr.size * arr.dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    out = raw[start:start + nbytes].view(arr.dtype).reshape(arr.shape)
    np.copyto(out, arr, casting="no")
    return out

