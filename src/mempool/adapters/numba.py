"""Numba: ``numba.cuda.set_memory_manager(RMMNumbaManager)`` (Numba's EMM plugin interface).

Numba binds a memory manager to a CUDA context when it creates the context
(``Context.__init__``: ``self.memory_manager = _memory_manager(context=self)``) and keeps it
for the context's life, so the plugin must be set before Numba's first CUDA call; a context
that already exists is an order error. For the same reason a context made under the pool
keeps ``RMMNumbaManager`` after :func:`uninstall`: its ``memalloc`` makes a ``DeviceBuffer``
from RMM's *current* device resource, which after ``close()`` is no longer the pool.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import OrderError
from ._base import FrameworkStatus, Unrestored, is_installed

NAME = "numba"
MODULE = "numba"
OPTIONS: tuple[str, ...] = ()
_DRIVER = "numba.cuda.cudadrv.driver"


def _live_contexts() -> dict[int, Any]:
    """Numba's already-created CUDA contexts by device, without creating any.

    Read from the registry Numba itself keeps: ``driver.driver.devices`` (device number ->
    ``Device``), where a ``Device`` holds its ``primary_context`` once Numba created it (and
    with it bound a memory manager). ``numba.cuda.gpus.lst`` is no guide: numba-cuda 0.30
    caches it with ``functools.cache``, so it never appears in the instance ``__dict__``.
    """
    module = sys.modules.get(_DRIVER)
    registry = getattr(getattr(module, "driver", None), "devices", None)
    if not registry:
        return {}
    contexts = {}
    for device in list(registry.values()):
        context = getattr(device, "primary_context", None)
        if context is not None:
            contexts[int(device.id)] = context
    return contexts


def _is_rmm_manager(manager: Any) -> bool:
    plugin = sys.modules.get("rmm.allocators.numba")
    return plugin is not None and manager is plugin.RMMNumbaManager


def check(devices: Sequence[int]) -> None:
    """Raise :class:`OrderError` if Numba already has a context on one of *devices*."""
    for device, context in _live_contexts().items():
        manager = getattr(context, "memory_manager", None)
        if device in devices and not _is_rmm_manager(type(manager)):
            raise OrderError(
                f"Numba already created its CUDA context on device {device} with "
                f"{type(manager).__name__}, which it keeps for the life of the context: "
                "call use_rmm_pool() before the first numba.cuda call, or pass frameworks=[...] "
                "without 'numba'"
            )


def install(resources: Mapping[int, Any]) -> Any:
    """Set RMM's EMM plugin; return Numba's previous memory manager class (or None)."""
    from numba import cuda
    from numba.cuda.cudadrv import driver
    from rmm.allocators.numba import RMMNumbaManager

    previous = driver._memory_manager
    cuda.set_memory_manager(RMMNumbaManager)
    return previous


def _manager_name(manager: Any) -> str:
    return "Numba's default memory manager" if manager is None else manager.__name__


def _on_rmm() -> list[int]:
    """Devices whose live Numba context holds RMMNumbaManager."""
    return [d for d, ctx in _live_contexts().items()
            if _is_rmm_manager(type(getattr(ctx, "memory_manager", None)))]


def _kept(devices: list[int], manager: Any) -> str:
    return (f"Numba's context on device(s) {devices} was created under the pool and keeps "
            "RMMNumbaManager for its life (Numba binds a context's memory manager when it "
            "creates the context): it allocates through RMM's current device resource, "
            f"whatever that is now; new contexts use {_manager_name(manager)}")


def uninstall(previous: Any) -> Unrestored | None:
    """Put Numba's previous memory manager back (``None`` means Numba's default).

    New contexts get it; a context created under the pool keeps RMMNumbaManager, and the
    returned :class:`Unrestored` says on which devices.
    """
    from numba.cuda.cudadrv import driver

    # set_memory_manager() refuses None, the "not chosen yet" value Numba starts with.
    driver._memory_manager = previous
    kept = _on_rmm()
    return Unrestored(NAME, _kept(kept, previous)) if kept else None


def status(backend: str | None = None) -> FrameworkStatus:
    """Whether Numba allocates through RMM while a pool is RMM's resource, per live context."""
    if not is_installed(MODULE):
        return FrameworkStatus(NAME, False, "not installed", installed=False)
    driver = sys.modules.get(_DRIVER)
    if driver is None:
        return FrameworkStatus(NAME, False, "numba.cuda not imported yet (no Numba allocations)")
    contexts = _live_contexts()
    on_rmm = _on_rmm()
    stale = [d for d in contexts if d not in on_rmm]
    if _is_rmm_manager(driver._memory_manager):
        if stale:
            return FrameworkStatus(
                NAME, False,
                f"RMMNumbaManager is set, but Numba's context on device(s) {stale} was created "
                "earlier and keeps its own memory manager",
            )
        return FrameworkStatus(NAME, True, "numba.cuda.set_memory_manager(RMMNumbaManager)")
    if on_rmm:  # routed while a pool is RMM's resource (a pinned one too), not after close()
        return FrameworkStatus(NAME, backend is not None, _kept(on_rmm, driver._memory_manager))
    return FrameworkStatus(NAME, False,
                           f"Numba allocates with {_manager_name(driver._memory_manager)}")
