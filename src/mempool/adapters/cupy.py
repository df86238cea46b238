"""CuPy: ``cupy.cuda.set_allocator(...)`` with RMM's allocator, or the device's default pool.

``backend="pool"``: ``rmm_cupy_allocator`` allocates a ``DeviceBuffer`` from RMM's current
device resource, and the buffer keeps that resource alive, so CuPy arrays stay valid after
the pool is closed. ``backend="async"``: :func:`malloc_shared`, ``cupy.cuda.malloc_async`` (CuPy
calls ``cudaMallocAsync`` itself from the device's current pool, which mempool made the
default pool on the pool's devices), with no RMM on the path; one Python call of ours turns
the runtime's out-of-memory into CuPy's ``OutOfMemoryError`` after CuPy's own retries. Not
``MemoryAsyncPool``: built with a list of handles it visits every visible GPU and writes
each one's release threshold (``CUPY_GPU_MEMORY_LIMIT``, else keep everything), and its
``malloc`` takes the threshold as its limit, refusing to grow the pool past it; another
framework lowers that threshold when it starts (XLA writes 0 without preallocation), and
CuPy would then refuse every allocation that grows the shared pool. For the same reason a
``CUPY_GPU_MEMORY_LIMIT`` cannot be honoured on the shared pool: it is refused.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ._base import FrameworkStatus, Unrestored, is_installed

NAME = "cupy"
MODULE = "cupy"
OPTIONS: tuple[str, ...] = ("backend",)


LIMIT_VAR = "CUPY_GPU_MEMORY_LIMIT"
_OUT_OF_MEMORY = 2  # cudaErrorMemoryAllocation, the status of CuPy's CUDARuntimeError


def malloc_shared(size: int) -> Any:
    """CuPy's allocator on the shared pool: ``cupy.cuda.malloc_async``, retried as CuPy's
    ``MemoryAsyncPool.malloc`` retries it (``cupy/cuda/memory.pyx``: after synchronising the
    current stream, twice, so that memory freed on it returns to the pool), without that
    pool's limit check. ``malloc_async`` alone raises the runtime's ``CUDARuntimeError`` (a
    ``RuntimeError``) when the pool is out of memory; what CuPy users and CuPy itself catch
    (``except MemoryError``, the fallbacks of ``cupy._core`` / ``cupy.cuda.cub``) is
    ``cupy.cuda.memory.OutOfMemoryError``, raised here."""
    cuda = sys.modules["cupy"].cuda
    for attempt in range(3):
        try:
            return cuda.malloc_async(size)
        except cuda.runtime.CUDARuntimeError as e:
            if e.status != _OUT_OF_MEMORY:
                raise
            error = e
        if attempt < 2:
            cuda.get_current_stream().synchronize()
    raise cuda.memory.OutOfMemoryError(size, -1) from error


def check(devices: Sequence[int], backend: str = "pool") -> None:
    """CuPy's allocator can be swapped at any time; ``backend="async"`` refuses a
    ``CUPY_GPU_MEMORY_LIMIT``, which the shared pool cannot honour (the module's doc)."""
    limit = os.environ.get(LIMIT_VAR)
    if backend == "async" and limit:
        raise ConfigError(
            f"{LIMIT_VAR}={limit!r}: with backend='async' CuPy allocates from the device's "
            "default pool, shared by every framework, whose only limit is its release "
            "threshold, which PyTorch and XLA write again when they start, so CuPy's limit "
            f"cannot be honoured there; unset {LIMIT_VAR}, or use backend='pool' with limit="
        )


def install(resources: Mapping[int, Any], backend: str = "pool") -> Any:
    """Point CuPy at the pool; return CuPy's previous allocator."""
    import cupy

    previous = cupy.cuda.get_allocator()
    if backend == "async":
        check(list(resources), backend)
        cupy.cuda.set_allocator(malloc_shared)
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


def _current_is_default(cupy: Any) -> bool:
    device = cupy.cuda.runtime.getDevice()
    runtime = cupy.cuda.runtime
    return int(runtime.deviceGetMemPool(device)) == int(runtime.deviceGetDefaultMemPool(device))


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
    if allocator is malloc_shared or allocator is cupy.cuda.malloc_async:
        how = "cupy.cuda.malloc_async: cudaMallocAsync from the device's current pool"
        if not _current_is_default(cupy):
            return FrameworkStatus(NAME, False, f"{how}, which is not its default pool")
        if backend == "async":
            return FrameworkStatus(NAME, True, f"{how}, its default pool")
        return FrameworkStatus(NAME, False, f"{how}, its default pool, which is not the pool")
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
