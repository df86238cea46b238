"""JAX/XLA: no external-allocator hook, so coexistence: not routed, told not to preallocate.

Before JAX's backend starts, :func:`install` sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false``
(XLA then allocates on demand beside the pool instead of taking 75% of the GPU) and, if
asked, ``XLA_PYTHON_CLIENT_ALLOCATOR`` (``"platform"``: cudaMalloc/cudaFree per buffer, frees
at once; ``"cuda_async"``: CUDA's stream-ordered allocator). JAX reads both when its backend
starts; afterwards they change nothing, and a warning says so. :func:`status` shows what
JAX's GPU devices hold (``Device.memory_stats()``).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError, MempoolWarning
from ..sizes import format_size
from ._base import FrameworkStatus, restore_env, set_env
from ._nohook import UNTOUCHED, NoHook

NAME = "jax"
MODULE = "jax"
ENV_VAR = "XLA_PYTHON_CLIENT_PREALLOCATE"
ALLOCATOR_VAR = "XLA_PYTHON_CLIENT_ALLOCATOR"
ALLOCATORS = ("platform", "cuda_async")
_GPU_PLATFORMS = ("cuda", "gpu", "rocm")


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


def check(devices: Sequence[int]) -> None:
    """Nothing to refuse: a JAX backend that is already up only earns a warning."""


def _set_allocator(allocator: str | None) -> Any:
    if allocator is None:
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


def install(resources: Mapping[int, Any], allocator: str | None = None) -> Any:
    """Tell XLA not to preallocate (and which allocator, if given) before it starts.

    Returns the variables' previous values for :func:`uninstall`.
    """
    check_allocator(allocator)
    chosen = _set_allocator(allocator)
    try:
        return _HOOK.install(), chosen
    except BaseException:
        if chosen is not UNTOUCHED:
            restore_env(ALLOCATOR_VAR, chosen)
        raise


def uninstall(previous: Any) -> bool:
    """Restore both variables exactly as :func:`install` found them."""
    preallocate, allocator = previous
    if allocator is not UNTOUCHED:
        restore_env(ALLOCATOR_VAR, allocator)
    return _HOOK.uninstall(preallocate)


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


def status() -> FrameworkStatus:
    """Always not routed; says how XLA allocates, and what its GPU devices hold."""
    report = _HOOK.status()
    allocator = os.environ.get(ALLOCATOR_VAR)
    reason = report.reason
    if allocator and report.installed and not _started()[0]:
        reason += f"; {ALLOCATOR_VAR}={allocator}"
    held = memory() if report.installed else {}
    if held:
        reason += f"; {describe_memory(held)} (beside the pool, not in it)"
    return FrameworkStatus(report.name, False, reason, report.installed)


__all__ = ["ALLOCATORS", "check_allocator", "describe_memory", "memory"]
