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
pool with it and writes it as the threshold (which counts memory in use too: see
:func:`mempool.asyncpool.threshold_writer` for what that keeps, by start order); a fraction or
preallocation the user set wins, and XLA is not let preallocate where JAX would start on a
device outside the pool (it would prime and keep the size on each); :func:`threshold_note`
says why it was not. A JAX that already started on the GPU with
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
from ..device import cuda_device_count, device_memory
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


VISIBLE_VAR = "JAX_CUDA_VISIBLE_DEVICES"  # jax's jax_cuda_visible_devices: the devices it uses
_not_preallocated: list[str] = []
"""Why mempool did not let XLA preallocate the pool's initial size (while the pool lives):
read by :func:`threshold_note`."""


def _jax_devices() -> list[int]:
    """The CUDA devices JAX's backend will start on: ``JAX_CUDA_VISIBLE_DEVICES`` (``"all"``
    or a comma-separated list, ``jax._src.xla_bridge``), else every visible device."""
    named = os.environ.get(VISIBLE_VAR, "all").strip()
    if named and named != "all":
        return sorted(int(d) for d in named.split(","))
    return list(range(cuda_device_count()[0]))


def _users_settings() -> str:
    """The preallocation and fraction variables the user set, as ``NAME=value`` text."""
    return " and ".join(f"{v}={os.environ[v]}" for v in (ENV_VAR, *FRACTION_VARS)
                        if v in os.environ)


def _preallocate(backend: str, initial: Mapping[int, int | None] | None) -> tuple[Any, Any]:
    """``backend="async"`` with an initial size: XLA preallocates it (the module's doc), unless
    the user set the variables (theirs win), or JAX would start on a device outside the
    pool: XLA primes and keeps its fraction on *every* device it starts on
    (``se_gpu_pjrt_client.cc``, one allocator per device, one fraction for all), which would
    take that memory on GPUs the pool was not given (a dask-cuda worker sees every GPU). Why
    it did not is kept for :func:`threshold_note`. Returns the previous values of the
    fraction and preallocation variables."""
    _not_preallocated.clear()
    sizes = [(size, d) for d, size in (initial or {}).items() if size]
    if backend != "async" or _started()[0] or not sizes:
        return UNTOUCHED, UNTOUCHED  # no initial size: XLA allocates on demand (threshold 0)
    yours = _users_settings()
    if yours:  # the user's choice wins
        _not_preallocated.append(
            f"your {yours} kept: XLA writes what the variables say (its fraction of the "
            f"device if it preallocates, 0 if not; mempool sets {ENV_VAR}=false where you "
            "did not set it), not the pool's initial_size; to keep initial_size, unset them "
            "before use_rmm_pool() (mempool then lets XLA preallocate it)")
        return UNTOUCHED, UNTOUCHED
    outside = sorted(set(_jax_devices()) - set(initial or {}))
    if outside:
        _not_preallocated.append(
            f"JAX would start on devices {outside} outside the pool's {sorted(initial or {})} "
            "too, and XLA would prime and keep the initial size on each; so XLA does not "
            f"preallocate: to keep initial_size, set {VISIBLE_VAR}="
            f"{','.join(map(str, sorted(initial or {})))} before JAX starts (JAX then uses "
            "the pool's devices only), or pass devices='all'")
        return UNTOUCHED, UNTOUCHED
    size, total = max(((s, device_memory(d)[1]) for s, d in sizes), key=lambda st: st[0] / st[1])
    return set_env(FRACTION_VARS[1], xla_fraction(size, total)), set_env(ENV_VAR, "true")


def threshold_note() -> str:
    """Why XLA did not preallocate the pool's initial size (``""``: it was let to)."""
    return _not_preallocated[-1] if _not_preallocated else ""


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
    _not_preallocated.clear()
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


def describe_memory(held: Mapping[str, Mapping[str, int]], shared: bool = False) -> str:
    """``"cuda:0 holds 1.0 GiB in use (peak 2.0 GiB, limit 60.0 GiB)"``, one clause per device.

    *shared*: XLA runs its ``cuda_async`` allocator, whose ``AllocateRaw``
    (``gpu_cudamallocasync_allocator.cc``) calls ``cuMemAllocFromPoolAsync`` without comparing
    with ``bytes_limit``: the figure is named as XLA's, not enforced, instead of a limit."""
    parts = []
    for device, stats in held.items():
        text = f"{device} holds {format_size(stats.get('bytes_in_use', 0))} in use"
        extra = [f"{label} {format_size(stats[key])}" for key, label in (
            ("peak_bytes_in_use", "peak"), ("bytes_reserved", "reserved"),
            ("bytes_limit", "bytes_limit" if shared else "limit")) if key in stats]
        if shared and "bytes_limit" in stats:
            extra[-1] += ", which XLA's cuda_async allocator does not enforce"
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
            reason += (f"; {describe_memory(held, shared=True)} (XLA's own count of its share "
                       "of the pool)")
        return FrameworkStatus(NAME, True, reason + ("" if started else " (not started yet)"))
    allocator = os.environ.get(ALLOCATOR_VAR)
    reason = report.reason
    if allocator and report.installed and not started:
        reason += f"; {ALLOCATOR_VAR}={allocator}"
    held = memory() if report.installed else {}
    if held:
        shared = _env_allocator() == SHARED
        reason += f"; {describe_memory(held, shared)} (beside the pool, not in it)"
    return FrameworkStatus(report.name, False, reason, report.installed)


__all__ = ["ALLOCATORS", "FRACTION_VARS", "SHARED", "check_allocator", "describe_memory", "memory"]
