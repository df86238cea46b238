"""The RMM resource stack and the :class:`Pool` handle that owns it.

Per device, top to bottom, ``backend="pool"`` (the default)::

    StatisticsResourceAdaptor      bytes in use, peak, allocation counts
    LimitingResourceAdaptor        only with limit=: caps the bytes handed out
    PoolMemoryResource             initial_size, maximum
    CudaMemoryResource | ManagedMemoryResource (managed=True)

``backend="async"``::

    LimitingResourceAdaptor        only with limit=
    CudaAsyncViewMemoryResource    over a cudaMemPool that mempool creates (initial_size,
                                   maximum); bytes in use and peak come from the driver's
                                   counters of that pool, read when asked (see asyncpool)

The top of the stack becomes RMM's per-device resource (``rmm.mr.set_per_device_resource``);
:meth:`Pool.close` puts the previous resources back.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from . import adapters, asyncpool
from .device import current_device, set_device
from .errors import ConfigError, MempoolWarning
from .sizes import format_size

__all__ = ["BACKENDS", "DeviceStack", "Pool", "Settings", "activate", "build_stack", "restore"]

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
    backend: str = "pool"  # "pool": RMM's PoolMemoryResource; "async": a cudaMallocAsync pool

    def options(self) -> dict[str, dict[str, Any]]:
        """Per framework, the keyword arguments its adapter's ``install`` takes."""
        return {"jax": {"allocator": self.jax_allocator}}

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
        if self.backend != "pool":
            text += f", {self.backend} backend (cudaMallocAsync)"
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
    handle: Any = None  # the cudaMemPool_t of backend="async"

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

    if backend == "async":
        if not hasattr(rmm.mr, "CudaAsyncViewMemoryResource"):
            raise ConfigError(
                f"backend='async' needs RMM's CudaAsyncViewMemoryResource, which RMM "
                f"{getattr(rmm, '__version__', '?')} lacks; upgrade RMM, or use backend='pool'"
            )
        handle = asyncpool.create(device, initial, maximum)
        try:
            pool = rmm.mr.CudaAsyncViewMemoryResource(handle)
        except BaseException:
            asyncpool.destroy(handle)
            raise
        limiter = None if limit is None else rmm.mr.LimitingResourceAdaptor(pool, limit)
        return DeviceStack(device, None, pool, limiter, None, handle=handle)
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


def restore(stacks: Sequence[DeviceStack]) -> None:
    """Give every device back the resource it had before :func:`set_resources`.

    A ``backend="async"`` pool is destroyed too; the driver frees it once the last
    allocation still out (a CuPy array, a Numba array) is freed.
    """
    import rmm.mr

    for stack in reversed(stacks):
        if stack.previous is not None:
            rmm.mr.set_per_device_resource(stack.device, stack.previous)
        if stack.handle is not None:
            asyncpool.destroy(stack.handle)
            stack.handle = None


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
                raise ConfigError(
                    f"could not reserve an initial pool of {format_size(initial)} on device "
                    f"{device} ({exc}); pass a smaller initial_size, e.g. '50%' or '1GiB'"
                ) from exc
            stacks.append(stack)
        set_resources(stacks)
    except BaseException:
        restore(stacks)
        raise
    finally:
        set_device(original)
    return stacks


def _stats_of(stack: DeviceStack) -> dict[str, Any]:
    if stack.stats is None:  # backend="async": the driver's counters; it counts no allocations
        if stack.handle is None:  # closed: the driver's pool is destroyed
            return dict.fromkeys(("pool_bytes", "in_use_bytes", "peak_bytes", "allocations",
                                  "total_allocations", "total_bytes"))
        held = asyncpool.statistics(stack.handle)
        return {"pool_bytes": held["reserved"], "in_use_bytes": held["in_use"],
                "peak_bytes": held["peak"], "allocations": None, "total_allocations": None,
                "total_bytes": None}
    counts = stack.stats.allocation_counts
    return {
        "pool_bytes": int(stack.pool.pool_size()),
        "in_use_bytes": int(counts.current_bytes),
        "peak_bytes": int(counts.peak_bytes),
        "allocations": int(counts.current_count),
        "total_allocations": int(counts.total_count),
        "total_bytes": int(counts.total_bytes),
    }


@dataclass(eq=False)
class Pool:
    """A live RMM pool and the framework hooks installed for it. Get one from use_rmm_pool()."""

    settings: Settings
    stacks: list[DeviceStack]
    installed: list[tuple[ModuleType, Any]]
    on_close: Callable[[Pool], None] | None = None
    closed: bool = False
    pinned_by: tuple[str, ...] = field(default=())

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
        return {stack.device: _stats_of(stack) for stack in self.stacks}

    def reinstall(self, chosen: Sequence[ModuleType]) -> None:
        """Re-open a pinned pool: route the frameworks again over the same resources."""
        self.installed = adapters.install_all(
            chosen, {s.device: s.top for s in self.stacks}, self.settings.options()
        )
        self.closed = False
        self.pinned_by = ()

    def close(self) -> None:
        """Give every framework its previous allocator and every device its previous resource.

        Idempotent. If PyTorch already allocated through RMM it cannot switch back, and it
        frees through RMM's current resource, so the pool then stays RMM's resource for its
        devices (``pinned_by`` names the framework) and a :class:`MempoolWarning` says so;
        every other framework is still restored.
        """
        if self.closed:
            return
        stuck = adapters.uninstall_all(self.installed)
        self.installed = []
        if stuck:
            self.pinned_by = tuple(stuck)
            warnings.warn(
                f"{', '.join(stuck)} already allocated through the RMM pool and cannot switch "
                "its allocator back, so the pool stays RMM's resource on devices "
                f"{list(self.devices)} for it; every other framework got its allocator back. "
                "A later use_rmm_pool() with the same settings re-opens this pool; other "
                "settings need a new process.",
                MempoolWarning,
                stacklevel=2,
            )
        else:
            restore(self.stacks)
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
