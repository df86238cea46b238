"""PyTorch: the pluggable allocator, ``torch.cuda.memory.change_current_allocator``.

PyTorch can swap its allocator only before CUDA is initialised (before the first CUDA
tensor), and never back afterwards. RMM's PyTorch allocator frees through RMM's *current*
per-device resource, so once PyTorch has used it the pool must stay that resource: the
pool then reports itself pinned instead of restoring (see :meth:`mempool.Pool.close`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import OrderError
from ._base import FrameworkStatus, is_installed

NAME = "torch"
MODULE = "torch"

SKIPPED = "skipped"  # install() changed nothing (no CUDA build / no device for torch)
ALREADY = "already"  # PyTorch already allocated through RMM before install()


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


def check(devices: Sequence[int]) -> None:
    """Raise :class:`OrderError` if PyTorch already initialised CUDA with its own allocator."""
    torch = sys.modules.get("torch")
    if torch is None or _no_cuda_reason(torch) is not None:
        return
    if torch.cuda.is_initialized() and not _uses_rmm(torch):
        raise OrderError(
            "PyTorch already initialised CUDA with its own caching allocator and cannot swap it "
            "any more: call use_rmm_pool() before the first CUDA tensor (or any torch.cuda "
            "call that initialises CUDA), or pass frameworks=[...] without 'torch'"
        )


def install(resources: Mapping[int, Any]) -> Any:
    """Make RMM PyTorch's CUDA allocator; return the previous allocator, or a marker."""
    import torch

    if _no_cuda_reason(torch) is not None:
        return SKIPPED
    check(list(resources))
    from rmm.allocators.torch import rmm_torch_allocator

    if rmm_torch_allocator is None:  # torch.cuda.is_available() was False
        return SKIPPED
    if _uses_rmm(torch):
        return ALREADY
    previous = torch._C._cuda_getAllocator()
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    return previous


def uninstall(previous: Any) -> bool:
    """Restore PyTorch's allocator; False if PyTorch already used RMM's (it cannot go back)."""
    if previous == SKIPPED:
        return True
    import torch

    if _uses_rmm(torch) and torch.cuda.is_initialized():
        return False
    if previous == ALREADY:
        return True
    torch._C._cuda_changeCurrentAllocator(previous)
    return True


def status() -> FrameworkStatus:
    """Whether PyTorch's CUDA allocator is RMM's."""
    if not is_installed(MODULE):
        return FrameworkStatus(NAME, False, "not installed", installed=False)
    torch = sys.modules.get("torch")
    if torch is None:
        return FrameworkStatus(NAME, False, "not imported yet (no PyTorch allocations)")
    reason = _no_cuda_reason(torch)
    if reason is not None:
        return FrameworkStatus(NAME, False, reason)
    if _uses_rmm(torch):
        return FrameworkStatus(
            NAME, True, "torch.cuda.memory.change_current_allocator(rmm_torch_allocator)"
        )
    if torch.cuda.is_initialized():
        return FrameworkStatus(
            NAME, False,
            "PyTorch initialised CUDA with its own caching allocator first; call "
            "use_rmm_pool() before the first CUDA tensor",
        )
    return FrameworkStatus(NAME, False, "PyTorch's own caching allocator")
