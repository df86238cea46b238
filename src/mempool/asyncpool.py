"""The device's default CUDA memory pool behind ``backend="async"``, shared by every framework.

Every framework that allocates stream-ordered on its own draws from the device's *default*
pool (``cudaDeviceGetDefaultMemPool``): PyTorch's ``backend:cudaMallocAsync``
(``cudaMallocAsync`` from the device's current pool), XLA's ``cuda_async`` allocator
(``cuMemAllocFromPoolAsync`` on the default pool), CuPy's ``cupy.cuda.malloc_async``
(``cudaMallocAsync`` from the device's current pool), and RMM's
``CudaAsyncViewMemoryResource`` over the default pool's handle. So mempool creates no pool
here: :func:`share` makes the default pool the device's current pool (the one
``cudaMallocAsync`` uses), :func:`settle` writes the pool's release threshold (keep
everything) and primes it, :func:`unshare` puts back what can be put back, and
:func:`statistics` reads the driver's own counters, which count every framework at once.

The release threshold is one attribute of the pool, and two frameworks write it when they
start, after mempool did: PyTorch's ``cudaMallocAsync`` backend writes "keep everything" at
its first allocation, and XLA's ``cuda_async`` allocator writes its memory fraction of the
device *if it preallocates*, else 0 (``se_gpu_pjrt_client.cc``). So the JAX adapter lets XLA
preallocate :func:`xla_fraction` of the device: XLA then primes the pool with the pool's
initial size and writes it as the threshold, which counts memory in use too, so what the
pool keeps depends on which of the two starts last; :func:`threshold_writer` says who wrote
the value the pool runs with, and what it keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .device import _error_text, _runtime
from .errors import MempoolError

__all__ = ["KEEP_EVERYTHING", "Shared", "settle", "share", "statistics", "threshold_writer",
           "unshare", "xla_fraction"]

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

    Called once, after every framework is routed. A framework that starts later may write
    the threshold again (see the module's doc and :func:`threshold_writer`).
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


def xla_fraction(initial: int, total: int) -> str:
    """The ``XLA_PYTHON_CLIENT_MEM_FRACTION`` that makes a preallocating XLA write *initial*
    bytes as the release threshold of a device of *total* bytes (and prime that much)."""
    return repr(initial / total)


def threshold_writer(value: int, initial: int | None, xla: str = "") -> str:
    """Who wrote the release threshold *value*, judged by the values each writer writes:
    mempool and PyTorch "keep everything", XLA its fraction of the device (the pool's
    *initial* size, see :func:`xla_fraction`), or 0 when it does not preallocate. *xla*: why
    mempool did not let XLA preallocate the initial size (the JAX adapter's
    ``threshold_note``), which then says what XLA wrote.

    The threshold counts every byte the pool holds, in use or not (``cudaMemPoolAttr
    ReleaseThreshold``): XLA's value keeps at most the initial size reserved in all, so once
    the frameworks hold more, what they free goes back to the driver at each synchronisation
    (and is mapped again at the next allocation). Which value the pool runs with depends on
    the order: XLA's when JAX's backend starts after PyTorch's first allocation, "keep
    everything" when PyTorch allocates after JAX started."""
    if value >= KEEP_EVERYTHING:
        return "mempool, or PyTorch's cudaMallocAsync backend at its first allocation"
    if initial and abs(value - initial) <= 1 << 20:
        return ("XLA when JAX's GPU backend started (XLA_PYTHON_CLIENT_MEM_FRACTION x the "
                "device's memory: the pool's initial size), after PyTorch's first allocation "
                "if PyTorch runs: the pool keeps at most that much reserved, memory in use "
                "included, and gives back what is freed above it at each synchronisation")
    if xla:
        return f"XLA when JAX's GPU backend started: {xla}"
    if value == 0:
        return ("XLA when JAX's GPU backend started without preallocation (or the driver's "
                "default)" + ("" if initial else ": pass initial_size= to keep that much "
                              "across synchronisations"))
    return "another writer (CuPy's set_limit or CUPY_GPU_MEMORY_LIMIT, or the user)"
