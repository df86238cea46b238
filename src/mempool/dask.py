"""Dask: ``RMMPoolPlugin`` sets the same pool up on every worker of a distributed cluster.

    >>> from mempool.dask import RMMPoolPlugin, worker_outcomes   # doctest: +SKIP
    >>> client.register_plugin(RMMPoolPlugin("8GiB"))             # doctest: +SKIP
    >>> worker_outcomes(client)                                   # doctest: +SKIP
    {'tcp://...': {'ok': True, 'pool': 'devices [0]: initial 8.0 GiB, ...', 'error': None}}

Importing this module imports ``distributed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import ConfigError, MempoolError, MissingDependencyError
from .sizes import check_size_syntax

try:
    from distributed import WorkerPlugin
except ImportError as exc:  # pragma: no cover - the dask extra is missing
    raise MissingDependencyError(
        f"mempool.dask needs dask.distributed ({exc}); pip install 'dask[distributed]'"
    ) from exc

__all__ = ["RMMPoolPlugin", "worker_outcomes"]

# The outcome of the plugin's setup in *this* (worker) process.
_OUTCOME: dict[str, Any] = {"ok": None, "pool": None, "error": None}


class RMMPoolPlugin(WorkerPlugin):
    """A worker plugin that calls :func:`mempool.use_rmm_pool` in each worker's ``setup``.

    Takes the arguments of :func:`use_rmm_pool`; sizes are checked on the client when the
    plugin is made. ``strict=True`` (default) makes a worker's setup fail with the pool's
    error (``client.register_plugin`` then re-raises it, e.g. ``NoDeviceError``);
    ``strict=False`` records it and lets the worker run without a pool. Either way
    :func:`worker_outcomes` reports every worker.
    """

    name = "mempool-rmm-pool"
    idempotent = True

    def __init__(
        self,
        initial_size: int | float | str | None = None,
        *,
        maximum: int | float | str | None = None,
        limit: int | float | str | None = None,
        managed: bool = False,
        devices: int | list[int] | str | None = None,
        frameworks: Iterable[str] | None = None,
        strict: bool = True,
    ) -> None:
        for what, value in (("initial_size", initial_size), ("maximum", maximum),
                            ("limit", limit)):
            check_size_syntax(value, what=what)
        if not isinstance(strict, bool):
            raise ConfigError(f"strict={strict!r}: pass True or False")
        self.kwargs: dict[str, Any] = {
            "maximum": maximum,
            "limit": limit,
            "managed": managed,
            "devices": devices,
            "frameworks": None if frameworks is None else list(frameworks),
        }
        self.initial_size = initial_size
        self.strict = strict
        self.pool: Any = None

    def setup(self, worker: Any = None) -> None:
        """Create the pool in this worker process and record the outcome."""
        from .api import use_rmm_pool

        try:
            self.pool = use_rmm_pool(self.initial_size, **self.kwargs)
        except MempoolError as exc:
            _OUTCOME.update(ok=False, pool=None, error=f"{type(exc).__name__}: {exc}")
            if self.strict:
                raise
            return
        _OUTCOME.update(ok=True, pool=self.pool.settings.describe(), error=None)

    def teardown(self, worker: Any = None) -> None:
        """Close the worker's pool."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def _outcome() -> dict[str, Any]:
    return dict(_OUTCOME)


def worker_outcomes(client: Any) -> dict[str, dict[str, Any]]:
    """Per worker address: ``{"ok": bool | None, "pool": str | None, "error": str | None}``.

    ``ok`` is None on a worker where the plugin has not run.
    """
    return client.run(_outcome)
