"""JAX/XLA: no external-allocator hook; routed only natively, on the device's default pool.

Before JAX's backend starts, :func:`install` sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false``
(XLA then allocates on demand instead of taking 75% of the GPU) and, if asked,
``XLA_PYTHON_CLIENT_ALLOCATOR`` (``"platform"``: cudaMalloc/cudaFree per buffer, frees at
once; ``"cuda_async"``: XLA's ``GpuCudaMallocAsyncAllocator``). JAX reads them when its
backend starts (``jaxlib.xla_client.generate_pjrt_gpu_plugin_options``).

With ``backend="pool"`` JAX allocates beside RMM's pool: not routed, and a JAX already
started only earns a warning. With ``backend="async"`` the pool *is* the device's default
pool, which XLA's ``cuda_async`` allocator draws from (``cuDeviceGetDefaultMemPool``), so
JAX is routed natively. That allocator also writes the pool's release threshold when JAX's
GPU backend starts: its memory fraction of the device if it preallocates, else 0 (the pool
would then give back everything unused at every synchronisation). So with an
``initial_size`` mempool lets XLA preallocate that fraction
(``XLA_PYTHON_CLIENT_PREALLOCATE=true``, ``XLA_PYTHON_CLIENT_MEM_FRACTION`` = the initial
size over the device's memory, :func:`mempool.asyncpool.xla_fraction`): XLA primes the shared
pool with it and keeps at least that much, in whichever order the frameworks start; a
fraction or preallocation the user set wins. A JAX that already started on the GPU with
another allocator is an :class:`OrderError` there; the allocator a JAX started with under
the pool is remembered after ``close()`` (XLA keeps it for the life of the process).
:func:`status` shows what JAX's GPU devices hold.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..asyncpool import xla_fraction
from ..device import device_memory
from ..errors import ConfigError, MempoolWarning, OrderError
from ..sizes import format_size
from ._base import FrameworkStatus, Unrestored, restore_env, set_env
from ._nohook import UNTOUCHED, NoHook

NAME = "jax"
MODULE = "jax"
OPTIONS: tuple[str, ...] = ("allocator", "backend", "initial")
ENV_VAR = "XLA_PYTHON_CLIENT_PREALLOCATE"
ALLOCATOR_VAR = "XLA_PYTHON_CLIENT_ALLOCATOR"
ALLOCATORS = ("platform", "cuda_async")
SHARED = "cuda_async"  # the XLA allocator that draws from the device's default pool
# The memory fraction XLA reads (jaxlib 0.10: the first is new, the second deprecated but
# read by every jaxlib); a preallocating XLA sets the default pool's release threshold to
# fraction x memory, a non-preallocating one to 0.
FRACTION_VARS = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")
_GPU_PLATFORMS = ("cuda", "gpu", "rocm")
_started_with: list[str] = []
"""The allocator a JAX started on the GPU under the pool runs with (read at ``uninstall``,
before the variable is given back): XLA keeps it for the life of the process."""


def _started() -> tuple[bool, bool]:
    bridge = sys.modules.get("jax._src.xla_bridge")
    backends = dict(getattr(bridge, "_backends", None) or {})
    return bool(backends), any(p in backends for p in _GPU_PLATFORMS)


_HOOK = NoHook(
    key=NAME,
    name="JAX",
    module=MODULE,
    env_var=ENV_VAR,
    env_value="false",
    started=_started,
    default_behaviour="preallocates 75% of the GPU",
)


def check_allocator(allocator: str | None) -> None:
    """Raise :class:`ConfigError` unless *allocator* is None, ``"platform"`` or ``"cuda_async"``."""
    if allocator is not None and allocator not in ALLOCATORS:
        raise ConfigError(
            f"jax_allocator={allocator!r}: pass None (XLA's default BFC allocator, not "
            f"preallocating), 'platform' or 'cuda_async'"
        )


def _env_allocator() -> str:
    """The allocator a started JAX runs with: the one remembered, else the variable's."""
    if _started_with and _started()[1]:
        return _started_with[0]
    return os.environ.get(ALLOCATOR_VAR, "default").strip().lower()


def check(devices: Sequence[int], allocator: str | None = None, backend: str = "pool",
          initial: Mapping[int, int | None] | None = None) -> None:
    """``backend="async"``: :class:`OrderError` if JAX already started on the GPU with an
    allocator other than ``cuda_async``. Otherwise a started JAX only earns a warning."""
    if backend == "async" and _started()[1] and _env_allocator() != SHARED:
        raise OrderError(
            f"JAX already started on the GPU with XLA's {_env_allocator()!r} allocator, which "
            "XLA chooses once, when its backend starts, so it cannot share the device's "
            "default pool: call use_rmm_pool(backend='async') before the first JAX "
            f"operation, or start Python with {ALLOCATOR_VAR}={SHARED}, or pass "
            "frameworks=[...] without 'jax'"
        )


def _preallocate(backend: str, initial: Mapping[int, int | None] | None) -> tuple[Any, Any]:
    """``backend="async"`` with an initial size: XLA preallocates it (the module's doc).
    Returns the previous values of the fraction and preallocation variables."""
    if (backend != "async" or _started()[0] or ENV_VAR in os.environ
            or any(v in os.environ for v in FRACTION_VARS)):
        return UNTOUCHED, UNTOUCHED  # the user's choice wins (status() shows the threshold)
    sizes = [(size, device_memory(d)[1]) for d, size in (initial or {}).items() if size]
    if not sizes:
        return UNTOUCHED, UNTOUCHED  # no initial size: XLA allocates on demand (threshold 0)
    size, total = max(sizes, key=lambda st: st[0] / st[1])
    return set_env(FRACTION_VARS[1], xla_fraction(size, total)), set_env(ENV_VAR, "true")


def _set_allocator(allocator: str | None) -> Any:
    if allocator is None or (_started()[0] and _env_allocator() == allocator):
        return UNTOUCHED
    if _started()[0]:
        warnings.warn(
            f"JAX already started, so jax_allocator={allocator!r} ({ALLOCATOR_VAR}) has no "
            "effect in this process: JAX reads it only when its backend starts. Call "
            "use_rmm_pool() before the first JAX operation, or set the variable before "
            "starting Python.",
            MempoolWarning,
            stacklevel=4,
        )
        return UNTOUCHED
    current = os.environ.get(ALLOCATOR_VAR)
    if current is not None and current.strip().lower() != allocator:
        raise ConfigError(
            f"jax_allocator={allocator!r} but the environment already sets "
            f"{ALLOCATOR_VAR}={current!r}; leave jax_allocator out to keep it, or unset it"
        )
    return set_env(ALLOCATOR_VAR, allocator)


def install(
    resources: Mapping[int, Any], allocator: str | None = None, backend: str = "pool",
    initial: Mapping[int, int | None] | None = None,
) -> Any:
    """Tell XLA how to allocate (and which allocator, if given) before it starts.

    ``backend="async"`` with an *initial* size (bytes per device) lets XLA preallocate it
    (see the module's doc). Returns the variables' previous values for :func:`uninstall`.
    """
    check_allocator(allocator)
    chosen = _set_allocator(allocator)
    fraction, preallocate = UNTOUCHED, UNTOUCHED
    try:
        fraction, preallocate = _preallocate(backend, initial)
        # A JAX already on the GPU under "async" runs cuda_async (check() made sure): shared.
        shared = backend == "async" and _started()[1]
        if preallocate is UNTOUCHED and not shared:
            preallocate = _HOOK.install()
        return preallocate, chosen, fraction, backend
    except BaseException:
        if chosen is not UNTOUCHED:
            restore_env(ALLOCATOR_VAR, chosen)
        if fraction is not UNTOUCHED:
            restore_env(FRACTION_VARS[1], fraction)
        raise


def uninstall(previous: Any) -> Unrestored | None:
    """Restore the variables exactly as :func:`install` found them; say if XLA keeps the pool.

    A JAX that started on the GPU under ``backend="async"`` keeps ``cuda_async`` (XLA chose
    it when its backend started) and keeps allocating from the device's default pool; that
    allocator is remembered, so a later pool sees it after the variable is given back.
    """
    preallocate, allocator, fraction, backend = previous
    if _started()[1] and not _started_with:
        _started_with.append(_env_allocator())
    if allocator is not UNTOUCHED:
        restore_env(ALLOCATOR_VAR, allocator)
    if fraction is not UNTOUCHED:
        restore_env(FRACTION_VARS[1], fraction)
    _HOOK.uninstall(preallocate)
    if backend == "async" and _started()[1]:
        return Unrestored(NAME, (
            f"XLA chose its {SHARED} allocator when JAX's GPU backend started and keeps it "
            "for the life of the process: it still allocates from the device's default pool"
        ), keeps_pool=True)
    return None


def memory() -> dict[str, dict[str, int]]:
    """What each of JAX's started GPU devices holds (``memory_stats()``), by device name.

    Empty when JAX has not started on a GPU, or its devices report nothing; imports nothing.
    """
    if not _started()[1]:
        return {}
    jax = sys.modules["jax"]
    held = {}
    for device in jax.devices():
        stats = device.memory_stats() if device.platform in _GPU_PLATFORMS else None
        if stats:
            held[str(device)] = {k: int(v) for k, v in stats.items() if isinstance(v, int)}
    return held


def describe_memory(held: Mapping[str, Mapping[str, int]]) -> str:
    """``"cuda:0 holds 1.0 GiB in use (peak 2.0 GiB, limit 60.0 GiB)"``, one clause per device."""
    parts = []
    for device, stats in held.items():
        text = f"{device} holds {format_size(stats.get('bytes_in_use', 0))} in use"
        extra = [f"{label} {format_size(stats[key])}" for key, label in (
            ("peak_bytes_in_use", "peak"), ("bytes_reserved", "reserved"),
            ("bytes_limit", "limit")) if key in stats]
        parts.append(text + (f" ({', '.join(extra)})" if extra else ""))
    return "; ".join(parts)


def status(backend: str | None = None) -> FrameworkStatus:
    """Says how XLA allocates and what its GPU devices hold; routed only natively, on the
    default pool, while that pool is the pool (``backend="async"``)."""
    report = _HOOK.status()
    started, on_gpu = _started()
    if report.installed and backend == "async" and _env_allocator() == SHARED and (
            on_gpu or not started):
        reason = f"{ALLOCATOR_VAR}={SHARED}: XLA allocates natively from the device's default pool"
        held = memory()
        if held:
            reason += f"; {describe_memory(held)} (XLA's own count of its share of the pool)"
        return FrameworkStatus(NAME, True, reason + ("" if started else " (not started yet)"))
    allocator = os.environ.get(ALLOCATOR_VAR)
    reason = report.reason
    if allocator and report.installed and not started:
        reason += f"; {ALLOCATOR_VAR}={allocator}"
    held = memory() if report.installed else {}
    if held:
        reason += f"; {describe_memory(held)} (beside the pool, not in it)"
    return FrameworkStatus(report.name, False, reason, report.installed)


__all__ = ["ALLOCATORS", "FRACTION_VARS", "SHARED", "check_allocator", "describe_memory", "memory"]
