"""``status()``: which frameworks are routed, and what the pool holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import adapters
from .adapters import FrameworkStatus
from .device import cuda_device_count
from .sizes import format_size

_KEEP_ALL = 1 << 62  # a release threshold at least this large never releases (>= any device)

__all__ = ["StatusReport", "status"]


@dataclass
class StatusReport:
    """A snapshot: CUDA devices, the pool (if any) with its statistics, each framework."""

    #: How many CUDA devices this process sees.
    cuda_devices: int
    #: The CUDA driver and runtime found, or why none is usable.
    cuda: str
    #: The live (or pinned) pool's description, ``None`` when there is none.
    pool: str | None
    #: The frameworks that keep a closed pool as RMM's resource (see :meth:`mempool.Pool.close`).
    pinned_by: tuple[str, ...]
    #: Per device: pool size, bytes in use, peak bytes, allocation counts.
    statistics: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: Per framework: whether its allocations really go to the pool, and why (not).
    frameworks: dict[str, FrameworkStatus] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        """True while a pool is live (or pinned)."""
        return self.pool is not None

    def routed(self) -> list[str]:
        """Names of the frameworks whose allocations really go into the pool."""
        return [name for name, s in self.frameworks.items() if s.routed]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "active": self.active,
            "cuda_devices": self.cuda_devices,
            "cuda": self.cuda,
            "pool": self.pool,
            "pinned_by": list(self.pinned_by),
            "statistics": {str(d): s for d, s in self.statistics.items()},
            "frameworks": {n: s.to_dict() for n, s in self.frameworks.items()},
        }

    def __str__(self) -> str:
        lines = [f"CUDA: {self.cuda}"]
        if self.pool is None:
            lines.append("pool: none (use_rmm_pool() has not been called, or was closed)")
        else:
            pinned = f" [pinned by {', '.join(self.pinned_by)}]" if self.pinned_by else ""
            lines.append(f"pool: {self.pool}{pinned}")
            for device, s in self.statistics.items():
                if s["pool_bytes"] is None:
                    lines.append(f"  device {device}: closed")
                    continue
                line = f"  device {device}: pool {format_size(s['pool_bytes'])}"
                if s.get("pool_peak_bytes") is not None:
                    line += f" (peak {format_size(s['pool_peak_bytes'])})"
                line += (f", in use {format_size(s['in_use_bytes'])}, peak "
                         f"{format_size(s['peak_bytes'])}")
                threshold = s.get("release_threshold")
                if threshold is not None:
                    line += (", keeps everything it reserved" if threshold >= _KEEP_ALL
                             else f", releases what it holds above {format_size(threshold)} "
                                  "at each synchronisation")
                    if s.get("release_threshold_by"):
                        line += f" (written last by {s['release_threshold_by']})"
                if s["allocations"] is not None:
                    line += (f", {s['allocations']} live allocations "
                             f"({s['total_allocations']} in total)")
                lines.append(line)
        lines.append("frameworks:")
        width = max(len(n) for n in self.frameworks) if self.frameworks else 0
        for name, s in self.frameworks.items():
            lines.append(f"  {name:<{width}}  {s}")
        return "\n".join(lines)


def status() -> StatusReport:
    """Report the pool and every framework's routing, read live; imports no framework."""
    from .api import _pinned, current_pool

    count, reason = cuda_device_count()
    pool = current_pool() or _pinned
    report = StatusReport(
        cuda_devices=count,
        cuda=reason,
        pool=None if pool is None else pool.settings.describe(),
        pinned_by=() if pool is None else pool.pinned_by,
        frameworks=adapters.statuses(None if pool is None else pool.settings.backend),
    )
    if pool is not None:
        report.statistics = pool.statistics()
    return report
