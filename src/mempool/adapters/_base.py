"""What every adapter reports, and small helpers shared by the adapter modules."""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["ABSENT", "FrameworkStatus", "Unrestored", "is_installed", "restore_env", "set_env"]


@dataclass(frozen=True)
class FrameworkStatus:
    """One framework's routing: ``routed`` is True only when its allocations really go to RMM."""

    name: str
    routed: bool
    reason: str
    installed: bool = True

    def __str__(self) -> str:
        state = "routed" if self.routed else "not routed"
        return f"{state}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class Unrestored:
    """What an adapter's ``uninstall`` could not give back, and why.

    ``keeps_pool``: the framework still allocates from the pool afterwards (PyTorch on
    RMM's pluggable allocator, or natively on the device's default pool; XLA's
    ``cuda_async``), so the pool's side must stay as the framework uses it.
    """

    name: str
    reason: str
    keeps_pool: bool = False

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


def is_installed(module: str) -> bool:
    """True if *module* can be imported; checks ``sys.modules`` first and never imports it."""
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class _Absent:
    def __repr__(self) -> str:
        return "<unset>"


ABSENT: Any = _Absent()


def set_env(name: str, value: str) -> Any:
    """Set an environment variable; return its previous value or ``ABSENT``."""
    previous = os.environ.get(name, ABSENT)
    os.environ[name] = value
    return previous


def restore_env(name: str, previous: Any) -> None:
    """Put an environment variable back exactly as :func:`set_env` found it."""
    if previous is ABSENT:
        os.environ.pop(name, None)
    else:
        os.environ[name] = previous
