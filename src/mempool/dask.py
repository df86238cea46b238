"""Dask: one RMM pool in every worker process, set before the worker runs its first task.

Two ways, both calling :func:`mempool.use_rmm_pool` inside each worker process:

* ``dask worker --preload mempool.dask`` (or ``LocalCluster(preload=["mempool.dask"])``):
  the pool comes from the worker's ``MEMPOOL_*`` environment variables (as
  ``mempool.auto``) and is set while the worker starts, before it registers with the
  scheduler, so before any task can allocate. The way to guarantee "before the first
  allocation".
* ``client.register_plugin(RMMPoolPlugin("8GiB"))``: set on the workers that are running
  now (and on those that join later). A worker that already ran tasks may already have
  allocated with a framework's own allocator; its outcome says how many tasks it had run.

    >>> from mempool.dask import RMMPoolPlugin, worker_outcomes, worker_status  # doctest: +SKIP
    >>> client.register_plugin(RMMPoolPlugin("8GiB"))                           # doctest: +SKIP
    >>> worker_outcomes(client)                                                 # doctest: +SKIP
    {'tcp://...': {'ok': True, 'pool': 'devices [0]: initial 8.0 GiB, ...', 'error': None, ...}}
    >>> worker_status(client)    # each worker's mempool.status(), as a dict  # doctest: +SKIP

Importing this module imports ``distributed``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import Any

from .adapters.jax import check_allocator
from .api import check_backend
from .errors import ConfigError, MempoolError, MempoolWarning, MissingDependencyError
from .sizes import check_size_syntax

try:
    from distributed import WorkerPlugin
except ImportError as exc:  # pragma: no cover - the dask extra is missing
    raise MissingDependencyError(
        f"mempool.dask needs dask.distributed ({exc}); pip install 'dask[distributed]'"
    ) from exc

__all__ = ["RMMPoolPlugin", "dask_setup", "dask_teardown", "worker_outcomes", "worker_status"]

# The outcome of the pool's setup in *this* (worker) process.
_OUTCOME: dict[str, Any] = {"ok": None, "pool": None, "error": None, "via": None,
                            "tasks_before": None}


def _tasks_run(worker: Any) -> int | None:
    state = getattr(worker, "state", None)
    count = getattr(state, "executed_count", None)
    return None if count is None else int(count)


def _record(worker: Any, via: str, pool: Any, error: BaseException | None) -> None:
    _OUTCOME.update(
        ok=error is None,
        pool=None if pool is None else pool.settings.describe(),
        error=None if error is None else f"{type(error).__name__}: {error}",
        via=via,
        tasks_before=_tasks_run(worker),
    )


class RMMPoolPlugin(WorkerPlugin):
    """A worker plugin that calls :func:`mempool.use_rmm_pool` in each worker's ``setup``.

    Takes the arguments of :func:`~mempool.use_rmm_pool`; sizes are checked on the client when the
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
        jax_allocator: str | None = None,
        backend: str = "pool",
        strict: bool = True,
    ) -> None:
        for what, value in (("initial_size", initial_size), ("maximum", maximum),
                            ("limit", limit)):
            check_size_syntax(value, what=what)
        if not isinstance(strict, bool):
            raise ConfigError(f"strict={strict!r}: pass True or False")
        check_allocator(jax_allocator)
        check_backend(backend, managed, maximum, limit, jax_allocator)
        self.kwargs: dict[str, Any] = {
            "maximum": maximum,
            "limit": limit,
            "managed": managed,
            "devices": devices,
            "frameworks": None if frameworks is None else list(frameworks),
            "jax_allocator": jax_allocator,
            "backend": backend,
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
            _record(worker, "plugin", None, exc)
            if self.strict:
                raise
            return
        _record(worker, "plugin", self.pool, None)

    def teardown(self, worker: Any = None) -> None:
        """Close the worker's pool."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def dask_setup(worker: Any) -> None:
    """Preload hook (``--preload mempool.dask``): the pool from ``MEMPOOL_*``, before any task.

    Malformed variables raise :class:`~mempool.errors.ConfigError`. Without a device the
    worker runs without a pool and its outcome says why (a warning in its log); with
    ``MEMPOOL_STRICT=1`` the error is raised instead (distributed logs a failed preload and
    still starts the worker, so :func:`worker_outcomes` is where to look either way).
    """
    from .api import use_rmm_pool
    from .envconfig import config_from_env, flag

    try:
        config = config_from_env(os.environ)
        pool = use_rmm_pool(config.pop("initial_size"), **config)
    except MempoolError as exc:
        _record(worker, "preload", None, exc)
        if isinstance(exc, ConfigError) or flag(os.environ, "MEMPOOL_STRICT"):
            raise
        warnings.warn(f"mempool.dask: this worker runs without an RMM pool: {exc}",
                      MempoolWarning, stacklevel=2)
        return
    _record(worker, "preload", pool, None)


def dask_teardown(worker: Any) -> None:
    """Preload hook: close the pool :func:`dask_setup` made, if any."""
    from .api import current_pool

    pool = current_pool()
    if pool is not None and _OUTCOME["via"] == "preload":
        pool.close()


def _outcome() -> dict[str, Any]:
    return dict(_OUTCOME)


def _status() -> dict[str, Any]:
    from .report import status

    return {"pid": os.getpid(), **status().to_dict()}


def worker_outcomes(client: Any) -> dict[str, dict[str, Any]]:
    """Per worker address: how its pool setup went.

    ``{"ok": bool | None, "pool": str | None, "error": str | None, "via": "preload" |
    "plugin" | None, "tasks_before": int | None}``; ``ok`` is None on a worker where
    neither ran, ``tasks_before`` the tasks the worker had run when the pool was set.
    """
    return client.run(_outcome)


def worker_status(client: Any) -> dict[str, dict[str, Any]]:
    """Per worker address: that worker's :func:`mempool.status` (``to_dict()``) and its pid."""
    return client.run(_status)
