"""Sample builders and zero-copy proofs shared by the tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from interop.host import fresh_copy


def aligned(values: Any, dtype: Any = None) -> np.ndarray:
    """A 64-byte aligned, C-contiguous, writable copy of ``values``."""
    return fresh_copy(np.asarray(values, dtype=dtype))


def data_pointer(x: Any) -> int:
    """The address of the first element, for any framework's value."""
    import interop.api as api

    return api._view(x).ptr
