"""CUDA device queries that never crash: through cuda-bindings' runtime API, imported lazily."""

from __future__ import annotations

from typing import Any

from .errors import MissingDependencyError, NoDeviceError

__all__ = [
    "cuda_device_count",
    "current_device",
    "current_device_total_memory",
    "device_memory",
    "require_devices",
    "set_device",
]


def _runtime() -> Any:
    try:
        from cuda.bindings import runtime
    except ImportError as exc:  # pragma: no cover - cuda-bindings ships with RMM
        raise MissingDependencyError(
            "cuda-bindings is not installed; install the GPU extra of your CUDA major version: "
            'pip install "interop-mempool[gpu-cu12]" or "interop-mempool[gpu-cu13]"'
        ) from exc
    return runtime


def _error_text(runtime: Any, err: Any) -> str:
    try:
        name = runtime.cudaGetErrorName(err)[1].decode()
        text = runtime.cudaGetErrorString(err)[1].decode()
        return f"{name}: {text}"
    except Exception:  # noqa: BLE001 - best effort description only
        return str(err)


def _check(runtime: Any, result: tuple[Any, ...], call: str) -> Any:
    err = result[0]
    if err != runtime.cudaError_t.cudaSuccess:
        raise NoDeviceError(f"{call} failed: {_error_text(runtime, err)}")
    return result[1:] if len(result) > 2 else result[1]


def cuda_device_count() -> tuple[int, str]:
    """Return ``(count, reason)``; *reason* says why the count is 0. Never raises."""
    try:
        runtime = _runtime()
    except MissingDependencyError as exc:
        return 0, str(exc)
    try:
        result = runtime.cudaGetDeviceCount()
    except Exception as exc:  # noqa: BLE001 - any failure means "no device"
        return 0, f"cudaGetDeviceCount raised {type(exc).__name__}: {exc}"
    err, count = result
    if err != runtime.cudaError_t.cudaSuccess:
        return 0, _error_text(runtime, err)
    if count == 0:
        return 0, "cudaGetDeviceCount() returned 0 devices"
    return int(count), f"{count} CUDA device(s)"


def require_devices() -> int:
    """Return the number of CUDA devices, or raise :class:`NoDeviceError` saying why."""
    count, reason = cuda_device_count()
    if count == 0:
        raise NoDeviceError(
            f"no CUDA device is available ({reason}); an RMM pool needs a CUDA GPU. "
            "Nothing was changed: every framework keeps its own allocator. Run on a machine "
            "with a GPU and a matching driver, or leave use_rmm_pool() out on CPU-only machines."
        )
    return count


def current_device() -> int:
    """The current CUDA device ordinal."""
    runtime = _runtime()
    return int(_check(runtime, runtime.cudaGetDevice(), "cudaGetDevice"))


def set_device(device: int) -> None:
    """Make *device* the current CUDA device."""
    runtime = _runtime()
    (err,) = runtime.cudaSetDevice(device)
    if err != runtime.cudaError_t.cudaSuccess:
        raise NoDeviceError(f"cudaSetDevice({device}) failed: {_error_text(runtime, err)}")


def device_memory(device: int) -> tuple[int, int]:
    """``(free, total)`` bytes of *device*; the current device is restored afterwards."""
    runtime = _runtime()
    previous = current_device()
    set_device(device)
    try:
        free, total = _check(runtime, runtime.cudaMemGetInfo(), "cudaMemGetInfo")
    finally:
        set_device(previous)
    return int(free), int(total)


def current_device_total_memory() -> int:
    """Total memory of the current device; :class:`NoDeviceError` without one."""
    require_devices()
    return device_memory(current_device())[1]
