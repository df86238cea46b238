"""The device's default CUDA memory pool behind ``backend="async"``, shared by every framework.

Every framework that allocates stream-ordered on its own draws from the device's *default*
pool (``cudaDeviceGetDefaultMemPool``): PyTorch's ``backend:cudaMallocAsync``
(``cudaMallocAsync`` from the device's current pool), XLA's ``cuda_async`` allocator
(``cuMemAllocFromPoolAsync`` on the default pool), CuPy's ``MemoryAsyncPool("default")``,
and RMM's ``CudaAsyncViewMemoryResource`` over the default pool's handle. So mempool
creates no pool here: :func:`share` makes the default pool the device's current pool (the
one ``cudaMallocAsync`` uses), :func:`settle` writes the pool's one release threshold
(keep everything) and primes it, :func:`unshare` puts back what can be put back, and
:func:`statistics` reads the driver's own counters, which count every framework at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .device import _error_text, _runtime
from .errors import MempoolError

__all__ = ["KEEP_EVERYTHING", "Shared", "settle", "share", "statistics", "unshare"]

# The release threshold mempool writes, once: the pool keeps what it reserved across
# synchronisations (the value PyTorch's cudaMallocAsync backend writes too).
KEEP_EVERYTHING = (1 << 64) - 1


@dataclass
class Shared:
    """One device's default pool, and what mempool changed on it (for :func:`unshare`)."""

    device: int
    handle: Any  # the default pool's cudaMemPool_t
    previous_current: Any  # the device's current pool before share()
    previous_threshold: int  # the default pool's release threshold before settle()


def _call(runtime: Any, call: str, *args: Any) -> Any:
    """Call ``runtime.<call>(*args)``; its value, or MemoryError / MempoolError saying why."""
    err, *value = getattr(runtime, call)(*args)
    if err != runtime.cudaError_t.cudaSuccess:
        text = f"{call} failed: {_error_text(runtime, err)}"
        if err == runtime.cudaError_t.cudaErrorMemoryAllocation:
            raise MemoryError(text)
        raise MempoolError(text)
    return value[0] if value else None


def _threshold(runtime: Any, pool: Any) -> int:
    attr = runtime.cudaMemPoolAttr.cudaMemPoolAttrReleaseThreshold
    return int(_call(runtime, "cudaMemPoolGetAttribute", pool, attr))


def _set_threshold(runtime: Any, pool: Any, value: int) -> None:
    from cuda.bindings import driver

    attr = runtime.cudaMemPoolAttr.cudaMemPoolAttrReleaseThreshold
    _call(runtime, "cudaMemPoolSetAttribute", pool, attr, driver.cuuint64_t(value))


def share(device: int) -> Shared:
    """Make *device*'s default pool its current pool; remember what it replaced."""
    runtime = _runtime()
    handle = _call(runtime, "cudaDeviceGetDefaultMemPool", device)
    current = _call(runtime, "cudaDeviceGetMemPool", device)
    shared = Shared(device, handle, current, _threshold(runtime, handle))
    if int(current) != int(handle):
        _call(runtime, "cudaDeviceSetMemPool", device, handle)
    return shared


def settle(shared: Shared, initial: int | None) -> None:
    """Write the pool's release threshold (keep everything) and prime it with *initial* bytes.

    Called once, after every framework is routed: CuPy's ``MemoryAsyncPool`` writes the
    threshold when it is built (``CUPY_GPU_MEMORY_LIMIT``, else keep everything), so
    mempool's write comes last.
    """
    runtime = _runtime()
    _set_threshold(runtime, shared.handle, KEEP_EVERYTHING)
    if initial:
        ptr = _call(runtime, "cudaMallocFromPoolAsync", initial, shared.handle, 0)
        _call(runtime, "cudaFreeAsync", ptr, 0)
        _call(runtime, "cudaStreamSynchronize", 0)


def unshare(shared: Shared, keep_threshold: bool) -> None:
    """Give the device its previous current pool and (unless *keep_threshold*) threshold.

    *keep_threshold*: a framework that cannot be given back still allocates natively
    from the pool (PyTorch's backend, XLA's allocator); it keeps the threshold it runs with.
    """
    runtime = _runtime()
    if int(shared.previous_current) != int(shared.handle):
        _call(runtime, "cudaDeviceSetMemPool", shared.device, shared.previous_current)
    if not keep_threshold:
        _set_threshold(runtime, shared.handle, shared.previous_threshold)


def statistics(pool: Any) -> dict[str, int]:
    """The driver's counters of *pool*, for every framework at once (bytes).

    ``reserved`` / ``reserved_peak`` (``cudaMemPoolAttrReservedMem{Current,High}``),
    ``in_use`` / ``peak`` (``cudaMemPoolAttrUsedMem{Current,High}``) and the
    ``release_threshold`` the pool runs with now.
    """
    runtime = _runtime()
    attr = runtime.cudaMemPoolAttr

    def read(which: Any) -> int:
        return int(_call(runtime, "cudaMemPoolGetAttribute", pool, which))

    return {
        "reserved": read(attr.cudaMemPoolAttrReservedMemCurrent),
        "reserved_peak": read(attr.cudaMemPoolAttrReservedMemHigh),
        "in_use": read(attr.cudaMemPoolAttrUsedMemCurrent),
        "peak": read(attr.cudaMemPoolAttrUsedMemHigh),
        "release_threshold": read(attr.cudaMemPoolAttrReleaseThreshold),
    }
