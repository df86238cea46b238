"""The ``python -m interop`` commands: ``table``, ``demo`` and ``doctor``.

Each command lives in its own module with a ``main(args) -> int``; nothing here is
imported by ``import interop``.
"""

from __future__ import annotations


def cuda_devices() -> tuple[int, str]:
    """How many CUDA devices CuPy sees, and a sentence saying why when there are none.

    Never raises: no CuPy, no driver or no device all give ``(0, reason)``.
    """
    try:
        import cupy
    except Exception as e:  # not installed, or broken
        return 0, f"CuPy is not importable ({type(e).__name__}: {e})"
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:
        return 0, f"CuPy reports {type(e).__name__}: {e}"
    return n, f"{n} CUDA device(s)" if n else "no CUDA device"
