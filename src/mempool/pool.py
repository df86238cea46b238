"""The RMM resource stack and the :class:`Pool` handle that owns it.

Per device, top to bottom, ``backend="pool"`` (the default)::

    StatisticsResourceAdaptor      bytes in use, peak, allocation counts
    LimitingResourceAdaptor        only with limit=: caps the bytes handed out
    PoolMemoryResource             initial_size, maximum
    CudaMemoryResource | ManagedMemoryResource (managed=True)

``backend="async"``::

    CudaAsyncViewMemoryResource    over the device's *default* CUDA pool, the one PyTorch's
                                   cudaMallocAsync backend, XLA's cuda_async allocator and
                                   CuPy's malloc_async allocate from natively;
                                   reserved, in use and peak bytes come from the driver's
                                   counters of that pool, read when asked (see asyncpool)

The top of the stack becomes RMM's per-device resource (``rmm.mr.set_per_device_resource``);
:meth:`Pool.close` puts the previous resources back.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import adapters, asyncpool
from .adapters import FrameworkAdapter, Unrestored
from .adapters import jax as jax_adapter
from .device import current_device, set_device
from .errors import ConfigError, MempoolWarning
from .sizes import format_size

__all__ = [
    "BACKENDS", "STATISTICS", "DeviceStack", "Pool", "Settings", "activate", "build_stack",
    "restore", "settle",
]

BACKENDS = ("pool", "async")


@dataclass(frozen=True)
class Settings:
    """A pool's resolved settings; two calls with equal settings share one pool."""

    devices: tuple[int, ...]
    initial: tuple[int | None, ...]  # bytes per device, None = RMM's default (half the free memory)
    maximum: tuple[int | None, ...]
    limit: tuple[int | None, ...]
    managed: bool
    frameworks: tuple[str, ...]
    jax_allocator: str | None = None  # XLA_PYTHON_CLIENT_ALLOCATOR to set before JAX starts
    backend: str = "pool"  # "pool": RMM's PoolMemoryResource; "async": the default CUDA pool

    def options(self) -> dict[str, dict[str, Any]]:
        """Per framework, the keyword arguments its adapter's ``check`` and ``install`` take
        (those it declares in ``OPTIONS``)."""
        values = {"allocator": self.jax_allocator, "backend": self.backend,
                  "initial": dict(zip(self.devices, self.initial, strict=True))}
        return {name: {k: values[k] for k in adapters.load(name).OPTIONS}
                for name in adapters.ADAPTERS}

    def describe(self) -> str:
        """One line, e.g. ``devices [0]: initial 8.0 GiB, maximum 30.0 GiB, CUDA memory``."""
        def per_device(values: tuple[int | None, ...]) -> str:
            shown = dict.fromkeys(format_size(v) for v in values)
            return "/".join(shown)

        text = f"devices {list(self.devices)}: initial {per_device(self.initial)}"
        if any(v is not None for v in self.maximum):
            text += f", maximum {per_device(self.maximum)}"
        if any(v is not None for v in self.limit):
            text += f", limit {per_device(self.limit)}"
        text += ", managed memory" if self.managed else ", CUDA memory"
        if self.backend == "async":
            text += ", async backend (the device's default CUDA pool, shared natively)"
        text += f", frameworks {list(self.frameworks)}"
        if self.jax_allocator is not None:
            text += f", JAX allocator {self.jax_allocator}"
        return text


@dataclass
class DeviceStack:
    """The resources of one device, and the resource they replaced."""

    device: int
    upstream: Any
    pool: Any
    limit: Any
    stats: Any  # None with backend="async": the driver counts
    previous: Any = None
    shared: asyncpool.Shared | None = None  # backend="async": the default pool, until closed

    @property
    def top(self) -> Any:
        """The resource RMM hands out allocations from (the topmost adaptor)."""
        for resource in (self.stats, self.limit, self.pool):
            if resource is not None:
                return resource
        raise AssertionError("a stack always has a pool")  # pragma: no cover


def build_stack(
    *, initial: int | None, maximum: int | None, limit: int | None, managed: bool,
    backend: str = "pool", device: int = -1,
) -> DeviceStack:
    """Build one device's stack on the *current* device, which is *device*."""
    import rmm
    import rmm.mr

    if backend == "async":  # initial: primed by settle(), once every framework is routed
        if not hasattr(rmm.mr, "CudaAsyncViewMemoryResource"):
            raise ConfigError(
                f"backend='async' needs RMM's CudaAsyncViewMemoryResource, which RMM "
                f"{getattr(rmm, '__version__', '?')} lacks; upgrade RMM, or use backend='pool'"
            )
        shared = asyncpool.share(device)
        try:
            pool = rmm.mr.CudaAsyncViewMemoryResource(shared.handle)
        except BaseException:
            asyncpool.unshare(shared, keep_threshold=True)  # settle() has not written it
            raise
        return DeviceStack(device, None, pool, None, None, shared=shared)
    upstream = rmm.mr.ManagedMemoryResource() if managed else rmm.mr.CudaMemoryResource()
    pool = rmm.mr.PoolMemoryResource(
        upstream, initial_pool_size=initial, maximum_pool_size=maximum
    )
    limiter = None if limit is None else rmm.mr.LimitingResourceAdaptor(pool, limit)
    stats = rmm.mr.StatisticsResourceAdaptor(pool if limiter is None else limiter)
    return DeviceStack(device, upstream, pool, limiter, stats)


def set_resources(stacks: Sequence[DeviceStack]) -> None:
    """Make each stack's top RMM's resource for its device, remembering the previous one."""
    import rmm.mr

    for stack in stacks:
        stack.previous = rmm.mr.get_per_device_resource(stack.device)
        rmm.mr.set_per_device_resource(stack.device, stack.top)


def restore(stacks: Sequence[DeviceStack], keep_threshold: bool = False) -> None:
    """Give every device back the resource it had before :func:`set_resources`.

    ``backend="async"``: also the device's previous current pool and (unless
    *keep_threshold*, see :func:`asyncpool.unshare`) the default pool's release threshold.
    The default pool itself lives on; allocations still out stay valid.
    """
    import rmm.mr

    for stack in reversed(stacks):
        if stack.previous is not None:
            rmm.mr.set_per_device_resource(stack.device, stack.previous)
        if stack.shared is not None:
            asyncpool.unshare(stack.shared, keep_threshold)
            stack.shared = None


def settle(stacks: Sequence[DeviceStack], settings: Settings) -> None:
    """After the frameworks are routed: write each default pool's one release threshold
    and prime it with ``initial`` bytes (``backend="async"``; nothing for ``"pool"``)."""
    original = current_device()
    try:
        for stack, initial in zip(stacks, settings.initial, strict=True):
            if stack.shared is not None:
                set_device(stack.device)
                try:
                    asyncpool.settle(stack.shared, initial)
                except MemoryError as exc:
                    raise _too_large(initial, stack.device, exc) from exc
    finally:
        set_device(original)


def _too_large(initial: int | None, device: int, exc: BaseException) -> ConfigError:
    """The one error for an ``initial_size`` the device cannot reserve, either backend."""
    return ConfigError(
        f"could not reserve an initial pool of {format_size(initial or 0)} on device {device} "
        f"({exc}); pass a smaller initial_size, e.g. '50%' or '1GiB'")


def activate(settings: Settings) -> list[DeviceStack]:
    """Create a stack on every device of *settings* and install them; all or nothing."""
    stacks: list[DeviceStack] = []
    original = current_device()
    try:
        for device, initial, maximum, limit in zip(
            settings.devices, settings.initial, settings.maximum, settings.limit, strict=True
        ):
            set_device(device)
            try:
                stack = build_stack(
                    initial=initial, maximum=maximum, limit=limit, managed=settings.managed,
                    backend=settings.backend, device=device,
                )
            except MemoryError as exc:
                raise _too_large(initial, device, exc) from exc
            stacks.append(stack)
        set_resources(stacks)
    except BaseException:
        restore(stacks, keep_threshold=True)  # settle() has not written it yet
        raise
    finally:
        set_device(original)
    return stacks


STATISTICS = ("pool_bytes", "pool_peak_bytes", "in_use_bytes", "peak_bytes",
              "release_threshold", "release_threshold_by", "allocations", "total_allocations",
              "total_bytes")


def _stats_of(stack: DeviceStack, initial: int | None = None) -> dict[str, Any]:
    """One device's statistics (keys: ``STATISTICS``; None where the backend has no such count)."""
    stats: dict[str, Any] = dict.fromkeys(STATISTICS)
    if stack.stats is None:  # backend="async": the driver's counters, every framework at once
        if stack.shared is not None:  # None once closed: the pool is no longer mempool's
            held = asyncpool.statistics(stack.shared.handle)
            stats.update(pool_bytes=held["reserved"], pool_peak_bytes=held["reserved_peak"],
                         in_use_bytes=held["in_use"], peak_bytes=held["peak"],
                         release_threshold=held["release_threshold"],
                         release_threshold_by=asyncpool.threshold_writer(
                             held["release_threshold"], initial, jax_adapter.threshold_note()))
        return stats
    counts = stack.stats.allocation_counts
    stats.update(
        pool_bytes=int(stack.pool.pool_size()),
        in_use_bytes=int(counts.current_bytes),
        peak_bytes=int(counts.peak_bytes),
        allocations=int(counts.current_count),
        total_allocations=int(counts.total_count),
        total_bytes=int(counts.total_bytes),
    )
    return stats


@dataclass(eq=False)
class Pool:
    """A live RMM pool and the framework hooks installed for it. Get one from use_rmm_pool()."""

    #: What :func:`~mempool.use_rmm_pool` was asked for: devices, sizes, frameworks, backend.
    settings: Settings
    #: Per device, the RMM resources the pool built over the device's previous one.
    stacks: list[DeviceStack]
    #: The framework adapters installed, each with the state :meth:`close` gives back.
    installed: list[tuple[FrameworkAdapter, Any]]
    #: Called once when the pool closes.
    on_close: Callable[[Pool], None] | None = None
    #: Whether :meth:`close` has run.
    closed: bool = False
    #: The frameworks that keep this pool as RMM's resource after :meth:`close`.
    pinned_by: tuple[str, ...] = field(default=())
    #: What :meth:`close` could not give back, each with its reason.
    unrestored: tuple[Unrestored, ...] = field(default=())

    @property
    def devices(self) -> tuple[int, ...]:
        """The devices this pool serves."""
        return self.settings.devices

    @property
    def frameworks(self) -> tuple[str, ...]:
        """The frameworks whose adapters were installed (see status() for which are routed)."""
        return tuple(adapter.NAME for adapter, _ in self.installed)

    def resource(self, device: int | None = None) -> Any:
        """The top RMM resource of *device* (default: the first device)."""
        device = self.devices[0] if device is None else device
        for stack in self.stacks:
            if stack.device == device:
                return stack.top
        raise ConfigError(f"device={device} is not one of this pool's devices {list(self.devices)}")

    def statistics(self) -> dict[int, dict[str, Any]]:
        """Per device: pool size, bytes in use, peak bytes, live and total allocation counts."""
        initial = dict(zip(self.settings.devices, self.settings.initial, strict=True))
        return {stack.device: _stats_of(stack, initial.get(stack.device))
                for stack in self.stacks}

    def reinstall(self, chosen: Sequence[FrameworkAdapter]) -> None:
        """Re-open a pinned pool: route the frameworks again over the same resources."""
        self.installed = adapters.install_all(
            chosen, {s.device: s.top for s in self.stacks}, self.settings.options()
        )
        self.closed = False
        self.pinned_by = ()
        self.unrestored = ()

    def close(self) -> None:
        """Give back everything that can be given back, then say exactly what cannot.

        Idempotent. Every framework is uninstalled (one that cannot be given back never
        stops the others), then every device gets its previous RMM resource, and with
        ``backend="async"`` its previous current pool and release threshold. What cannot
        be given back is kept in ``unrestored`` and named in one
        :class:`~mempool.errors.MempoolWarning`:

        * ``backend="pool"`` with PyTorch routed: PyTorch keeps RMM's pluggable allocator
          and frees through RMM's current resource, so the pool stays RMM's resource on its
          devices (``pinned_by``); a later ``use_rmm_pool()`` with the same settings re-opens
          it, other settings need a new process.
        * ``backend="async"``: a PyTorch imported under the pool keeps its cudaMallocAsync
          backend, a JAX started under it keeps cuda_async; both go on allocating from the
          default pool, which keeps its release threshold for them.
        * Numba contexts created under the pool keep RMMNumbaManager.
        """
        if self.closed:
            return
        left = adapters.uninstall_all(self.installed)
        self.installed = []
        keeps = tuple(u.name for u in left if u.keeps_pool)
        text = "; ".join(str(u) for u in left)
        if keeps and self.settings.backend == "pool":
            self.pinned_by = keeps
            text += (f". So the pool stays RMM's resource on devices {list(self.devices)} for "
                     f"{', '.join(keeps)}; a later use_rmm_pool() with the same settings "
                     "re-opens it, other settings need a new process")
        else:
            restore(self.stacks, keep_threshold=bool(keeps))
            if keeps:
                text += (f". So the device's default pool keeps the release threshold "
                         f"{', '.join(keeps)} runs with")
        self.unrestored = tuple(left)
        if left:
            warnings.warn(
                f"close() gave back everything else, but not: {text}.",
                MempoolWarning,
                stacklevel=2,
            )
        self.closed = True
        if self.on_close is not None:
            self.on_close(self)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "live"
        if self.pinned_by:
            state += f", pinned by {', '.join(self.pinned_by)}"
        return f"<mempool.Pool {state}: {self.settings.describe()}>"
