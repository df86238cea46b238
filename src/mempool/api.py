"""``use_rmm_pool`` / ``rmm_pool``: create the pool, route the frameworks, all or nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from . import adapters
from .adapters.jax import check_allocator
from .device import current_device, device_memory, require_devices
from .errors import ConfigError, MissingDependencyError, OrderError
from .pool import BACKENDS, Pool, Settings, activate, restore, settle
from .sizes import check_size_syntax, is_percent, parse_size

__all__ = ["current_pool", "rmm_pool", "use_rmm_pool"]

Size = int | float | str | None
Devices = int | Sequence[int] | str | None

_lock = threading.RLock()
_live: Pool | None = None
_pinned: Pool | None = None


def current_pool() -> Pool | None:
    """The live pool, or ``None``."""
    return _live


def _released(pool: Pool) -> None:
    global _live, _pinned
    with _lock:
        if _live is pool:
            _live = None
        _pinned = pool if pool.pinned_by else (None if _pinned is pool else _pinned)


def _import_rmm() -> None:
    try:
        import rmm.mr  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"use_rmm_pool() needs RMM ({exc}); install the GPU extra of your CUDA major "
            'version (nvidia-smi shows it): pip install "interop-mempool[gpu-cu12]" or '
            '"interop-mempool[gpu-cu13]"'
        ) from exc


def _resolve_devices(devices: Devices, count: int) -> tuple[int, ...]:
    if devices is None:
        return (current_device(),)
    if devices == "all":
        return tuple(range(count))
    if isinstance(devices, int) and not isinstance(devices, bool):
        devices = [devices]
    if isinstance(devices, str) or not isinstance(devices, Iterable):
        raise ConfigError(f"devices={devices!r}: pass None, 'all', an int or a list of ints")
    resolved = tuple(dict.fromkeys(devices))
    if not resolved:
        raise ConfigError("devices=[]: name at least one device, or pass None for the current one")
    for device in resolved:
        if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < count:
            raise ConfigError(
                f"devices={list(resolved)}: {device!r} is not a visible CUDA device; "
                f"this process sees {count} device(s), numbered 0..{count - 1}"
            )
    return resolved


def _resolve_sizes(value: Size, devices: tuple[int, ...], what: str) -> tuple[int | None, ...]:
    if is_percent(value):
        return tuple(parse_size(value, total=device_memory(d)[1], what=what) for d in devices)
    size = parse_size(value, what=what)
    return tuple(size for _ in devices)


def _settings(
    initial_size: Size, maximum: Size, limit: Size, managed: bool,
    devices: tuple[int, ...], frameworks: tuple[str, ...], jax_allocator: str | None = None,
    backend: str = "pool",
) -> Settings:
    settings = Settings(
        devices=devices,
        initial=_resolve_sizes(initial_size, devices, "initial_size"),
        maximum=_resolve_sizes(maximum, devices, "maximum"),
        limit=_resolve_sizes(limit, devices, "limit"),
        managed=managed,
        frameworks=frameworks,
        jax_allocator=jax_allocator,
        backend=backend,
    )
    for device, initial, top in zip(devices, settings.initial, settings.maximum, strict=True):
        if initial is not None and top is not None and top < initial:
            raise ConfigError(
                f"maximum={maximum!r} ({top} bytes) is smaller than initial_size="
                f"{initial_size!r} ({initial} bytes) on device {device}; raise maximum or "
                "lower initial_size"
            )
    return settings


def check_backend(
    backend: str, managed: bool, maximum: Size = None, limit: Size = None,
    jax_allocator: str | None = None,
) -> None:
    """Raise :class:`ConfigError` for an unknown backend, or what ``"async"`` cannot do."""
    if backend not in BACKENDS:
        raise ConfigError(
            f"backend={backend!r}: pass 'pool' (RMM's pool) or 'async' (the device's default "
            "CUDA pool, shared by every framework natively)"
        )
    if backend != "async":
        return
    refused = {
        "managed=True": (managed, "the default CUDA pool holds device memory only; pass "
                                  "backend='pool' for managed memory"),
        f"maximum={maximum!r}": (maximum is not None, "the device's default CUDA pool has no "
                                 "maximum size; leave maximum out, or use backend='pool'"),
        f"limit={limit!r}": (limit is not None, "a limit would cap only what goes through "
                             "RMM (Numba, cuDF), not PyTorch, JAX or CuPy, which allocate "
                             "natively; leave limit out, or use backend='pool'"),
        f"jax_allocator={jax_allocator!r}": (
            jax_allocator not in (None, "cuda_async"),
            "JAX shares the pool only with XLA's cuda_async allocator; leave jax_allocator "
            "out (backend='async' sets cuda_async), or use backend='pool'"),
    }
    for what, (bad, fix) in refused.items():
        if bad:
            raise ConfigError(f"backend='async' with {what}: {fix}")


def check_conflict(live: Settings, wanted: Settings) -> None:
    """Raise :class:`ConfigError` if a second pool is requested with different settings."""
    if live != wanted:
        raise ConfigError(
            "use_rmm_pool() was already called with different settings.\n"
            f"  live pool: {live.describe()}\n"
            f"  requested: {wanted.describe()}\n"
            "Call pool.close() on the live pool first (or use the rmm_pool() context manager), "
            "or call use_rmm_pool() with the same settings to get the live pool back."
        )


def use_rmm_pool(
    initial_size: Size = None,
    *,
    maximum: Size = None,
    limit: Size = None,
    managed: bool = False,
    devices: Devices = None,
    frameworks: Iterable[str] | None = None,
    jax_allocator: str | None = None,
    backend: str = "pool",
) -> Pool:
    """Create an RMM pool and route every framework's GPU allocations through it.

    *initial_size*, *maximum* and *limit* take bytes or strings like ``"8GiB"``, ``"512MB"``
    or ``"50%"`` (of each device's total memory); ``initial_size=None`` is RMM's default
    (half the free memory). *maximum* caps the pool's growth, *limit* caps the bytes
    handed out. ``managed=True`` builds the pool on managed (oversubscribable) memory.
    *devices*: None (the current device), ``"all"``, an int or a list of ints.
    *frameworks*: names to route (``mempool.adapters.ADAPTERS``); None = every installed one.
    *backend*: ``"pool"`` (RMM's ``PoolMemoryResource`` under a statistics adaptor) or
    ``"async"``: every framework on the device's *default* CUDA pool, the stream-ordered
    pool of ``cudaMallocAsync``: PyTorch natively (``PYTORCH_CUDA_ALLOC_CONF=
    backend:cudaMallocAsync``, written before ``import torch``), JAX natively
    (``XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async``; with *initial_size* XLA preallocates that
    much where JAX starts on the pool's devices alone and the user set no XLA variable, and
    writes it as the release threshold, which counts memory in use: docs/pool.md), CuPy by
    ``cupy.cuda.malloc_async`` (``adapters.cupy.malloc_shared``: out of memory is CuPy's
    ``OutOfMemoryError``; a ``CUPY_GPU_MEMORY_LIMIT`` is refused),
    Numba and cuDF through RMM's ``CudaAsyncViewMemoryResource`` of that pool; mempool writes
    the pool's release threshold (keep everything), torch and XLA write theirs when they
    start, and ``status()`` reads it, who wrote it, and reserved, in-use and peak bytes from
    the driver. Not with ``managed``, ``maximum`` or ``limit``.
    *jax_allocator*: with ``backend="pool"`` JAX is never routed; before JAX starts the pool
    sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` and, with ``"platform"`` or
    ``"cuda_async"``, ``XLA_PYTHON_CLIENT_ALLOCATOR`` (a warning if JAX already started).
    ``backend="async"`` implies ``"cuda_async"``.

    Order: arguments are validated, then the CUDA device is checked (no device:
    :class:`~mempool.errors.NoDeviceError`), then every framework is checked for order
    problems (:class:`~mempool.errors.OrderError`); only then is anything changed, and if
    a step fails everything done so far is undone. A second call with the same settings
    returns the live pool; with different settings it raises
    :class:`~mempool.errors.ConfigError`.
    """
    global _live, _pinned
    for what, value in (("initial_size", initial_size), ("maximum", maximum), ("limit", limit)):
        check_size_syntax(value, what=what)
    if not isinstance(managed, bool):
        raise ConfigError(f"managed={managed!r}: pass True or False")
    check_allocator(jax_allocator)
    check_backend(backend, managed, maximum, limit, jax_allocator)
    if backend == "async":
        jax_allocator = "cuda_async"
    chosen = adapters.select(frameworks)
    names = tuple(a.NAME for a in chosen)
    _import_rmm()
    count = require_devices()
    with _lock:
        wanted = _settings(
            initial_size, maximum, limit, managed, _resolve_devices(devices, count), names,
            jax_allocator, backend,
        )
        if _live is not None:
            check_conflict(_live.settings, wanted)
            return _live
        if _pinned is not None:
            if _pinned.settings != wanted:
                raise OrderError(
                    f"{', '.join(_pinned.pinned_by)} still allocates from the closed pool "
                    f"({_pinned.settings.describe()}) and cannot switch allocators in this "
                    "process; call use_rmm_pool() with those same settings to re-open it, or "
                    "start a new process for different settings"
                )
            _check_order(chosen, wanted)
            _pinned.reinstall(chosen)
            _live, _pinned = _pinned, None
            return _live
        _check_order(chosen, wanted)
        stacks = activate(wanted)
        try:
            installed = adapters.install_all(
                chosen, {s.device: s.top for s in stacks}, wanted.options()
            )
        except BaseException:
            restore(stacks, keep_threshold=True)
            raise
        try:
            settle(stacks, wanted)
        except BaseException:
            adapters.uninstall_all(installed)
            restore(stacks)
            raise
        _live = Pool(wanted, stacks, installed, on_close=_released)
        return _live


def _check_order(chosen: Sequence[Any], wanted: Settings) -> None:
    """Every chosen framework's order check, with its options; changes nothing."""
    options = wanted.options()
    for adapter in chosen:
        adapter.check(wanted.devices, **options.get(adapter.NAME, {}))


@contextmanager
def rmm_pool(initial_size: Size = None, **kwargs: Any) -> Iterator[Pool]:
    """``with rmm_pool("2GiB") as pool: ...``; on exit every previous allocator is back.

    Takes the same arguments as :func:`use_rmm_pool`. If an equal pool is already live,
    the block uses it and leaves it open.
    """
    before = _live
    pool = use_rmm_pool(initial_size, **kwargs)
    try:
        yield pool
    finally:
        if pool is not before:
            pool.close()
