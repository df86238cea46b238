"""One module per framework that routes its GPU allocations to RMM.

Every adapter module has the same small interface, :class:`FrameworkAdapter` (a
``typing.Protocol``: ``NAME``, ``MODULE``, ``OPTIONS``, ``check``, ``install``,
``uninstall``, ``status``).

Adding a framework: write its module and add its name to ``ADAPTERS``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ._base import FrameworkAdapter, FrameworkStatus, Unrestored, is_installed

__all__ = [
    "ADAPTERS",
    "FrameworkAdapter",
    "FrameworkStatus",
    "Unrestored",
    "install_all",
    "load",
    "select",
    "statuses",
    "uninstall_all",
]

ADAPTERS: tuple[str, ...] = ("cupy", "numba", "torch", "cudf", "jax", "tensorflow")


def load(name: str) -> FrameworkAdapter:
    """The adapter module for framework *name*."""
    if name not in ADAPTERS:
        raise ConfigError(
            f"unknown framework {name!r}; mempool has adapters for {', '.join(ADAPTERS)}"
        )
    return importlib.import_module(f"{__name__}.{name}")  # type: ignore[return-value]


def select(frameworks: Iterable[str] | None) -> list[FrameworkAdapter]:
    """Adapters to install: the named ones, or (``None``) every installed framework."""
    if frameworks is None:
        return [load(n) for n in ADAPTERS if is_installed(load(n).MODULE)]
    if isinstance(frameworks, str):
        frameworks = [frameworks]
    chosen = []
    for name in dict.fromkeys(frameworks):
        adapter = load(name)
        if not is_installed(adapter.MODULE):
            raise ConfigError(
                f"frameworks=[..., {name!r}, ...] but {adapter.MODULE} is not installed; "
                f"install it or leave {name!r} out"
            )
        chosen.append(adapter)
    return chosen


def install_all(
    adapters: Sequence[FrameworkAdapter],
    resources: Mapping[int, Any],
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[tuple[FrameworkAdapter, Any]]:
    """Install *adapters* in order; if one fails, uninstall the ones before it and re-raise.

    *options* maps a framework's name to the keyword arguments of its ``install``.
    """
    options = options or {}
    installed: list[tuple[FrameworkAdapter, Any]] = []
    try:
        for adapter in adapters:
            installed.append((adapter, adapter.install(resources, **options.get(adapter.NAME, {}))))
    except BaseException:
        uninstall_all(installed)
        raise
    return installed


def uninstall_all(installed: Sequence[tuple[FrameworkAdapter, Any]]) -> list[Unrestored]:
    """Uninstall every adapter, in reverse order; return what could not be restored.

    One adapter that cannot give its framework back never stops the others.
    """
    left = []
    for adapter, state in reversed(installed):
        outcome = adapter.uninstall(state)
        if outcome is not None:
            left.append(outcome)
    return left


def statuses(backend: str | None = None) -> dict[str, FrameworkStatus]:
    """Every framework's live routing status under a pool of *backend* (None: no pool)."""
    return {name: load(name).status(backend) for name in ADAPTERS}
