"""The interface every adapter module has (:class:`FrameworkAdapter`), what it reports, and
small helpers shared by the adapter modules."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["ABSENT", "FrameworkAdapter", "FrameworkStatus", "Unrestored", "is_installed",
           "restore_env", "set_env"]


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


@runtime_checkable
class FrameworkAdapter(Protocol):
    """What every adapter module (``mempool.adapters.<name>``) is: its names, the options
    its ``check`` and ``install`` take, and four functions. *options* are the keyword
    arguments named in ``OPTIONS`` (the framework's entry of ``Settings.options()``);
    *backend* is the live (or pinned) pool's backend, ``None`` without one."""

    NAME: str
    """The name users pass in ``frameworks=[...]``."""
    MODULE: str
    """The importable package, checked without importing it."""
    OPTIONS: tuple[str, ...]
    """The keyword options ``check`` and ``install`` take (``"backend"``, ``"allocator"``)."""

    def check(self, devices: Sequence[int], **options: Any) -> None:
        """Raise ``OrderError`` if it is too late to route the framework; changes nothing."""

    def install(self, resources: Mapping[int, Any], **options: Any) -> Any:
        """Hook the framework; return what ``uninstall`` needs."""

    def uninstall(self, previous: Any) -> Unrestored | None:
        """Put the previous hook back; ``None`` when it could."""

    def status(self, backend: str | None = None) -> FrameworkStatus:
        """The live truth, read from the framework; imports nothing."""


def is_installed(module: str) -> bool:
    """True if *module* can be imported; checks ``sys.modules`` first and never imports it
    (a module set to ``None`` there refuses imports: not installed, as ``interop`` says)."""
    if sys.modules.get(module) is not None:
        return True
    if module in sys.modules:
        return False
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
