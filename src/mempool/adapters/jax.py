"""JAX/XLA: no external-allocator hook. Set ``XLA_PYTHON_CLIENT_PREALLOCATE=false``; not routed."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ._base import FrameworkStatus
from ._nohook import NoHook

NAME = "jax"
MODULE = "jax"
ENV_VAR = "XLA_PYTHON_CLIENT_PREALLOCATE"
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


def check(devices: Sequence[int]) -> None:
    """Nothing to refuse: a JAX backend that is already up only earns a warning."""


def install(resources: Mapping[int, Any]) -> Any:
    """Tell XLA not to preallocate (if it has not started); return the variable's old value."""
    return _HOOK.install()


def uninstall(previous: Any) -> bool:
    """Restore ``XLA_PYTHON_CLIENT_PREALLOCATE`` exactly."""
    return _HOOK.uninstall(previous)


def status() -> FrameworkStatus:
    """Always not routed; says whether XLA preallocates or already holds GPU memory."""
    return _HOOK.status()
