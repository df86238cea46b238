"""TensorFlow: no external-allocator hook. Set ``TF_FORCE_GPU_ALLOW_GROWTH=true``; not routed."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ._base import FrameworkStatus, Unrestored
from ._nohook import NoHook

NAME = "tensorflow"
MODULE = "tensorflow"
OPTIONS: tuple[str, ...] = ()
ENV_VAR = "TF_FORCE_GPU_ALLOW_GROWTH"


def _started() -> tuple[bool, bool]:
    if "tensorflow" not in sys.modules:
        return False, False
    try:
        context = sys.modules["tensorflow.python.eager.context"].context_safe()
        if context is None or context._context_handle is None:
            return False, False
        gpus = [d for d in context.list_logical_devices() if d.device_type == "GPU"]
        return True, bool(gpus)
    except Exception:  # noqa: BLE001 - TF internals vary: assume the worst
        return True, True


_HOOK = NoHook(
    key=NAME,
    name="TensorFlow",
    module=MODULE,
    env_var=ENV_VAR,
    env_value="true",
    started=_started,
    default_behaviour="reserves nearly all GPU memory",
)


def check(devices: Sequence[int]) -> None:
    """Nothing to refuse: a TensorFlow runtime that is already up only earns a warning."""


def install(resources: Mapping[int, Any]) -> Any:
    """Tell TensorFlow to grow on demand (if it has not started); return the old value."""
    return _HOOK.install()


def uninstall(previous: Any) -> Unrestored | None:
    """Restore ``TF_FORCE_GPU_ALLOW_GROWTH`` exactly."""
    _HOOK.uninstall(previous)
    return None


def status(backend: str | None = None) -> FrameworkStatus:
    """Always not routed; says whether TensorFlow will reserve or already holds GPU memory."""
    return _HOOK.status()
