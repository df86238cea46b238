"""The host buffers the CLI's probes start from: 64-byte aligned, or 4 bytes off on purpose.

A probe's outcome must not depend on where the allocator happened to put its sample (JAX
and TensorFlow treat buffers that are not 64-byte aligned differently), so every sample is
built here, at a known alignment.
"""

from __future__ import annotations

from typing import Any

N = 1024
"""Elements in a probe sample."""


def aligned(n: int = N, dtype: str = "float32") -> Any:
    """``numpy.arange(n, dtype=dtype)`` in a fresh 64-byte aligned buffer."""
    import numpy as np

    from ..host import fresh_copy

    return fresh_copy(np.arange(n, dtype=dtype))


def misaligned(n: int = N) -> Any:
    """A float32 array of ``n`` elements that starts 4 bytes past a 64-byte boundary."""
    import numpy as np

    return aligned(n * 4 + 64, "uint8")[4:4 + n * 4].view(np.float32)
