"""cuDF: allocates through RMM's current device resource natively; nothing to hook."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ._base import FrameworkStatus, Unrestored, is_installed

NAME = "cudf"
MODULE = "cudf"
OPTIONS: tuple[str, ...] = ()


def check(devices: Sequence[int]) -> None:
    """cuDF reads RMM's resource at every allocation: never too late."""


def install(resources: Mapping[int, Any]) -> Any:
    """Verify RMM's per-device resources are the pool's; cuDF needs no hook."""
    import rmm.mr

    for device, resource in resources.items():
        current = rmm.mr.get_per_device_resource(device)
        if current is not resource:  # pragma: no cover - the pool sets them just before
            raise RuntimeError(
                f"RMM's resource for device {device} is {type(current).__name__}, not the pool"
            )
    return None


def uninstall(previous: Any) -> Unrestored | None:
    """Nothing was hooked, nothing to undo."""
    return None


def status(backend: str | None = None) -> FrameworkStatus:
    """cuDF is routed whenever it is installed: it always allocates through RMM."""
    if not is_installed(MODULE):
        return FrameworkStatus(NAME, False, "not installed", installed=False)
    imported = "" if "cudf" in sys.modules else " (not imported yet)"
    return FrameworkStatus(
        NAME, True, f"allocates through RMM's current device resource natively{imported}"
    )
