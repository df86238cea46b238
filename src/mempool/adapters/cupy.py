"""CuPy: ``cupy.cuda.set_allocator(...)`` with RMM's allocator, or the device's default pool.

``backend="pool"``: ``rmm_cupy_allocator`` allocates a ``DeviceBuffer`` from RMM's current
device resource, and the buffer keeps that resource alive, so CuPy arrays stay valid after
the pool is closed. ``backend="async"``: ``MemoryAsyncPool(pool_handles=...)`` with
``"default"`` for the pool's devices, so CuPy calls ``cudaMallocAsync`` itself, with no RMM
and no Python allocator of ours on the path (CuPy 14: ``set_pool`` makes that pool the
device's current one, and ``set_limit`` writes the pool's release threshold).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ._base import FrameworkStatus, Unrestored, is_installed

NAME = "cupy"
MODULE = "cupy"
OPTIONS: tuple[str, ...] = ("backend",)


def check(devices: Sequence[int], backend: str = "pool") -> None:
    """CuPy's allocator can be swapped at any time: nothing to check."""


def install(resources: Mapping[int, Any], backend: str = "pool") -> Any:
    """Point CuPy at the pool; return CuPy's previous allocator."""
    import cupy

    previous = cupy.cuda.get_allocator()
    if backend == "async":
        count = cupy.cuda.runtime.getDeviceCount()
        handles = ["default" if d in resources else "current" for d in range(count)]
        cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool(pool_handles=handles).malloc)
    else:
        from rmm.allocators.cupy import rmm_cupy_allocator

        cupy.cuda.set_allocator(rmm_cupy_allocator)
    return previous


def uninstall(previous: Any) -> Unrestored | None:
    """Give CuPy back exactly the allocator it had before :func:`install`."""
    import cupy

    cupy.cuda.set_allocator(previous)
    return None


def _on_default_pool(cupy: Any, owner: Any) -> bool:
    device = cupy.cuda.runtime.getDevice()
    return int(owner._pools[device]) == int(cupy.cuda.runtime.deviceGetDefaultMemPool(device))


def status(backend: str | None = None) -> FrameworkStatus:
    """Whether CuPy's current allocator is RMM's, or the device's default pool under async."""
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
    if isinstance(owner, cupy.cuda.MemoryAsyncPool):
        if _on_default_pool(cupy, owner):
            how = "cupy.cuda.MemoryAsyncPool(pool_handles='default'): cudaMallocAsync"
            if backend == "async":
                return FrameworkStatus(NAME, True, f"{how} from the device's default pool")
            return FrameworkStatus(
                NAME, False, f"{how} from the device's default pool, which is not the pool"
            )
        return FrameworkStatus(NAME, False, "CuPy allocates with a MemoryAsyncPool of another pool")
    if isinstance(owner, cupy.cuda.MemoryPool):
        what = "CuPy's own memory pool"
    else:
        what = f"allocator {getattr(allocator, '__qualname__', repr(allocator))}"
    return FrameworkStatus(NAME, False, f"CuPy allocates with {what}")
