"""CuPy: ``cupy.cuda.set_allocator(rmm_cupy_allocator)``.

RMM's CuPy allocator allocates a ``DeviceBuffer`` from RMM's current device resource, and
the buffer keeps that resource alive, so CuPy arrays stay valid after the pool is closed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ._base import FrameworkStatus, is_installed

NAME = "cupy"
MODULE = "cupy"


def check(devices: Sequence[int]) -> None:
    """CuPy's allocator can be swapped at any time: nothing to check."""


def install(resources: Mapping[int, Any]) -> Any:
    """Point CuPy at RMM; return CuPy's previous allocator."""
    import cupy
    from rmm.allocators.cupy import rmm_cupy_allocator

    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    return previous


def uninstall(previous: Any) -> bool:
    """Give CuPy back exactly the allocator it had before :func:`install`."""
    import cupy

    cupy.cuda.set_allocator(previous)
    return True


def status() -> FrameworkStatus:
    """Whether CuPy's current allocator is RMM's."""
    if not is_installed(MODULE):
        return FrameworkStatus(NAME, False, "not installed", installed=False)
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return FrameworkStatus(NAME, False, "not imported yet (no CuPy allocations)")
    allocator = cupy.cuda.get_allocator()
    rmm_cupy = sys.modules.get("rmm.allocators.cupy")
    if rmm_cupy is not None and allocator is rmm_cupy.rmm_cupy_allocator:
        return FrameworkStatus(NAME, True, "cupy.cuda.set_allocator(rmm_cupy_allocator)")
    owner = getattr(allocator, "__self__", None)
    if owner is not None and type(owner).__name__ == "MemoryPool":
        what = "CuPy's own memory pool"
    else:
        what = f"allocator {getattr(allocator, '__qualname__', repr(allocator))}"
    return FrameworkStatus(NAME, False, f"CuPy allocates with {what}")
