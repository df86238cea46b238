"""The CUDA stream-ordered memory pool behind ``backend="async"`` (cudaMallocAsync).

mempool creates the pool itself (``cudaMemPoolCreate``) and hands it to RMM as a
``CudaAsyncViewMemoryResource``, so it holds the pool's handle: :func:`statistics` reads
bytes in use, peak and reserved from the driver's own counters when asked, and no
statistics adaptor sits on the allocation path. The pool keeps what it reserved (release
threshold = the maximum), as RMM's ``PoolMemoryResource`` does.
"""

from __future__ import annotations

from typing import Any

from .device import _error_text, _runtime
from .errors import ConfigError, MempoolError

__all__ = ["create", "destroy", "statistics"]

_KEEP_EVERYTHING = (1 << 64) - 1


def _call(runtime: Any, call: str, *args: Any) -> Any:
    """Call ``runtime.<call>(*args)``; its value, or MemoryError / MempoolError saying why."""
    err, *value = getattr(runtime, call)(*args)
    if err != runtime.cudaError_t.cudaSuccess:
        text = f"{call} failed: {_error_text(runtime, err)}"
        if err == runtime.cudaError_t.cudaErrorMemoryAllocation:
            raise MemoryError(text)
        raise MempoolError(text)
    return value[0] if value else None


def _props(runtime: Any, device: int, maximum: int | None) -> Any:
    props = runtime.cudaMemPoolProps()
    props.allocType = runtime.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.handleTypes = runtime.cudaMemAllocationHandleType.cudaMemHandleTypeNone
    props.location.type = runtime.cudaMemLocationType.cudaMemLocationTypeDevice
    props.location.id = device
    if hasattr(props, "maxSize"):  # CUDA 12.2+
        props.maxSize = maximum or 0  # 0: no cap (up to the device's memory)
    elif maximum is not None:
        raise ConfigError(
            f"maximum={maximum} with backend='async' needs cuda-bindings 12.2 or newer (its "
            "cudaMemPoolProps has no maxSize); upgrade cuda-bindings, or use backend='pool'"
        )
    return props


def create(device: int, initial: int | None, maximum: int | None) -> Any:
    """A new pool on *device* that keeps what it reserves, primed with *initial* bytes."""
    from cuda.bindings import driver

    runtime = _runtime()
    pool = _call(runtime, "cudaMemPoolCreate", _props(runtime, device, maximum))
    try:
        _call(runtime, "cudaMemPoolSetAttribute", pool,
              runtime.cudaMemPoolAttr.cudaMemPoolAttrReleaseThreshold,
              driver.cuuint64_t(_KEEP_EVERYTHING))
        if initial:
            ptr = _call(runtime, "cudaMallocFromPoolAsync", initial, pool, 0)
            _call(runtime, "cudaFreeAsync", ptr, 0)
            _call(runtime, "cudaStreamSynchronize", 0)
    except BaseException:
        destroy(pool)
        raise
    return pool


def destroy(pool: Any) -> None:
    """Destroy *pool*; the driver frees it once its last outstanding allocation is freed."""
    runtime = _runtime()
    runtime.cudaMemPoolDestroy(pool)


def statistics(pool: Any) -> dict[str, int]:
    """The driver's counters: ``reserved``, ``in_use``, ``peak`` bytes."""
    runtime = _runtime()
    attr = runtime.cudaMemPoolAttr

    def read(which: Any) -> int:
        return int(_call(runtime, "cudaMemPoolGetAttribute", pool, which))

    return {
        "reserved": read(attr.cudaMemPoolAttrReservedMemCurrent),
        "in_use": read(attr.cudaMemPoolAttrUsedMemCurrent),
        "peak": read(attr.cudaMemPoolAttrUsedMemHigh),
    }
