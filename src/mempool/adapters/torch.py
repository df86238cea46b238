"""PyTorch: RMM's pluggable allocator (``backend="pool"``), or its native ``cudaMallocAsync``.

``backend="pool"``: ``torch.cuda.memory.change_current_allocator(rmm_torch_allocator)``,
only before CUDA is initialised. PyTorch never swaps an installed pluggable allocator back
("Can't swap an already initialized allocator"; pytorch#140687), and RMM's PyTorch
allocator frees through RMM's *current* per-device resource, so once it is installed the
pool must stay that resource: :func:`uninstall` says so and the pool reports itself pinned
(see :meth:`mempool.Pool.close`).

``backend="async"``: ``PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync``, PyTorch's own
stream-ordered backend (``c10/cuda/CUDAMallocAsyncAllocator.cpp``: ``cudaMallocAsync`` on
the device's current pool, which mempool makes the default pool; on its first allocation
on a device it writes that pool's release threshold, "keep everything"). PyTorch picks its
backend when it is *imported* (a static initialiser of ``libc10_cuda`` reads the variable),
so the variable must be written before ``import torch``; later is an :class:`OrderError`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, OrderError
from ._base import FrameworkStatus, Unrestored, is_installed, restore_env, set_env

NAME = "torch"
MODULE = "torch"
OPTIONS: tuple[str, ...] = ("backend",)

SKIPPED = "skipped"  # install() changed nothing (no CUDA build / no device for torch)
ALREADY = "already"  # PyTorch already allocated the way the pool wants before install()
INSTALLED = "installed"  # install() made RMM's pluggable allocator PyTorch's
ASYNC = "cudaMallocAsync"
# PyTorch's CUDA allocator reads the first of these that is set (c10/cuda/CUDAAllocatorConfig.h).
CONF_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


@dataclass(frozen=True)
class _Env:
    """What install() wrote for ``backend="async"``: the variable and its previous value."""

    var: str
    previous: Any


def _rmm_allocator() -> Any:
    module = sys.modules.get("rmm.allocators.torch")
    return None if module is None else module.rmm_torch_allocator


def _uses_rmm(torch: Any) -> bool:
    """True if PyTorch's current CUDA allocator is RMM's pluggable allocator."""
    allocator = _rmm_allocator()
    if allocator is None or not hasattr(torch._C, "_cuda_getAllocator"):
        return False
    current = torch._C._cuda_getAllocator()
    return current is allocator.allocator() or current == allocator.allocator()


def _no_cuda_reason(torch: Any) -> str | None:
    if getattr(torch.version, "cuda", None) is None:
        if getattr(torch.version, "hip", None):
            return "built for ROCm, not CUDA"
        return "built without CUDA"
    if not hasattr(torch._C, "_cuda_changeCurrentAllocator"):
        return "this PyTorch has no pluggable-allocator hook"
    return None


def _backend(torch: Any) -> str:
    """The CUDA allocator backend the imported PyTorch chose (``native``, ``cudaMallocAsync``)."""
    return str(torch._C._cuda_getAllocatorBackend())


def _conf() -> tuple[str, str | None]:
    """The variable PyTorch will read its allocator settings from, and its value."""
    for var in CONF_VARS:
        if var in os.environ:
            return var, os.environ[var]
    return CONF_VARS[0], None


def _backend_in(conf: str) -> str | None:
    """The ``backend:`` a settings string asks for (PyTorch's own split: commas, spaces)."""
    for option in re.split(r"[\s,]+", conf):
        key, _, value = option.partition(":")
        if key == "backend":
            return value
    return None


def _check_conf() -> None:
    var, conf = _conf()
    wanted = None if conf is None else _backend_in(conf)
    if wanted not in (None, ASYNC):
        raise ConfigError(
            f"backend='async' runs PyTorch on its {ASYNC} backend, but the environment sets "
            f"{var}={conf!r}; remove 'backend:{wanted}' from it, or use backend='pool'"
        )


def check(devices: Sequence[int], backend: str = "pool") -> None:
    """Raise :class:`OrderError` if it is too late to route PyTorch; changes nothing."""
    if backend == "async":
        _check_conf()
    torch = sys.modules.get("torch")
    if torch is None or _no_cuda_reason(torch) is not None:
        return
    if backend == "async":
        if _backend(torch) != ASYNC:
            raise OrderError(
                f"PyTorch was imported before use_rmm_pool(backend='async') and chose its "
                f"{_backend(torch)!r} CUDA allocator then (it reads PYTORCH_CUDA_ALLOC_CONF "
                "once, when it is imported): call use_rmm_pool(backend='async') before "
                f"'import torch', or start Python with PYTORCH_CUDA_ALLOC_CONF=backend:{ASYNC}, "
                "or pass frameworks=[...] without 'torch'"
            )
        return
    if torch.cuda.is_initialized() and not _uses_rmm(torch):
        raise OrderError(
            "PyTorch already initialised CUDA with its own caching allocator and cannot swap it "
            "any more: call use_rmm_pool() before the first CUDA tensor (or any torch.cuda "
            "call that initialises CUDA), or pass frameworks=[...] without 'torch'"
        )


def _install_async(resources: Mapping[int, Any]) -> Any:
    torch = sys.modules.get("torch")
    if torch is not None:  # imported: check() made sure it already runs cudaMallocAsync
        check(list(resources), backend="async")
        return SKIPPED if _no_cuda_reason(torch) is not None else ALREADY
    _check_conf()
    var, conf = _conf()
    if conf is not None and _backend_in(conf) == ASYNC:
        return ALREADY
    value = f"backend:{ASYNC}" if not conf else f"{conf},backend:{ASYNC}"
    return _Env(var, set_env(var, value))


def install(resources: Mapping[int, Any], backend: str = "pool") -> Any:
    """Route PyTorch; return what :func:`uninstall` needs."""
    if backend == "async":
        return _install_async(resources)
    import torch

    if _no_cuda_reason(torch) is not None:
        return SKIPPED
    check(list(resources))
    from rmm.allocators.torch import rmm_torch_allocator

    if rmm_torch_allocator is None:  # torch.cuda.is_available() was False
        return SKIPPED
    if _uses_rmm(torch):
        return ALREADY
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    return INSTALLED


def uninstall(previous: Any) -> Unrestored | None:
    """Give PyTorch back what can be given back; say what cannot.

    ``backend="pool"``: RMM's pluggable allocator stays (PyTorch refuses to swap an
    installed one, CUDA initialised or not), so the pool must stay RMM's resource.
    ``backend="async"``: the variable is restored; a PyTorch imported meanwhile keeps
    ``cudaMallocAsync`` for the life of the process, on the device's default pool.
    """
    if previous == SKIPPED:
        return None
    if isinstance(previous, _Env):
        restore_env(previous.var, previous.previous)
        torch = sys.modules.get("torch")
        if torch is None or _no_cuda_reason(torch) is not None or _backend(torch) != ASYNC:
            return None
        return Unrestored(NAME, (
            f"PyTorch was imported under {previous.var}=backend:{ASYNC} and keeps that "
            "backend for the life of the process (it reads the variable once, when it is "
            "imported): it still allocates natively from the device's default pool"
        ), keeps_pool=True)
    if previous == ALREADY and _rmm_allocator() is None:
        return None
    import torch

    if not _uses_rmm(torch):
        return None
    return Unrestored(NAME, (
        "its allocator is RMM's pluggable allocator and PyTorch cannot switch its allocator "
        "back (it refuses to swap an installed one: 'Can't swap an already initialized "
        "allocator'), and RMM's PyTorch allocator frees through RMM's current resource"
    ), keeps_pool=True)


SHARED_NOTE = ("; on the shared pool torch.cuda.empty_cache() trims the pool for every "
               "framework (to 0 bytes kept), torch.cuda.reset_peak_memory_stats() resets the "
               "peaks status() reads, for every framework, and torch.cuda.memory_allocated() / "
               "memory_reserved() count the whole pool (every framework's bytes), not "
               "PyTorch's share")
"""What PyTorch's cudaMallocAsync backend does to the whole pool (``status()`` says it): its
``getDeviceStats`` (``c10/cuda/CUDAMallocAsyncAllocator.cpp``) reads the default pool's
``cudaMemPoolAttrUsedMemCurrent`` / ``ReservedMemCurrent`` as allocated / reserved bytes."""


def status(backend: str | None = None) -> FrameworkStatus:
    """Whether PyTorch allocates from the pool: RMM's allocator, or natively on the default pool."""
    if not is_installed(MODULE):
        return FrameworkStatus(NAME, False, "not installed", installed=False)
    torch = sys.modules.get("torch")
    if torch is None:
        var, conf = _conf()
        if conf is not None and _backend_in(conf) == ASYNC:
            how = (f"{var}=backend:{ASYNC}: once imported, PyTorch allocates natively from "
                   "the device's default pool (not imported yet)")
            return FrameworkStatus(NAME, backend == "async", how)
        return FrameworkStatus(NAME, False, "not imported yet (no PyTorch allocations)")
    reason = _no_cuda_reason(torch)
    if reason is not None:
        return FrameworkStatus(NAME, False, reason)
    if _uses_rmm(torch):
        return FrameworkStatus(
            NAME, True, "torch.cuda.memory.change_current_allocator(rmm_torch_allocator)",
        )
    if _backend(torch) == ASYNC:
        how = f"backend:{ASYNC}: PyTorch allocates natively from the device's default pool"
        if backend == "async":
            return FrameworkStatus(NAME, True, how + SHARED_NOTE)
        return FrameworkStatus(NAME, False, f"{how}, which is not the pool")
    if torch.cuda.is_initialized():
        return FrameworkStatus(
            NAME, False,
            "PyTorch initialised CUDA with its own caching allocator first; call "
            "use_rmm_pool() before the first CUDA tensor",
        )
    return FrameworkStatus(NAME, False, "PyTorch's own caching allocator")


__all__ = ["ASYNC", "CONF_VARS"]
