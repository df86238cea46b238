"""The public calls: to_framework, explain, can_convert, shares_memory, frameworks."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import InteropError
from .frameworks import ADAPTERS
from .frameworks.base import Adapter, Edge, installed
from .registry import Registry

if TYPE_CHECKING:
    from .plan import Plan

REGISTRY = Registry()
for _adapter in ADAPTERS:
    REGISTRY.add(_adapter)
_PLANS = REGISTRY.plans
_FAST = REGISTRY.fast


def to_framework(x: Any, target: str, *, device: str | None = None, copy: bool | None = None,
                 stream: Any = None, **options: Any) -> Any:
    """Convert ``x`` to framework ``target``, without copying whenever the layouts allow.

    ``copy=None`` copies only when it must (``explain`` says why), ``copy=False`` raises
    :class:`~interop.errors.ZeroCopyError` instead, ``copy=True`` always returns a fresh
    buffer. ``device=None`` keeps the data where it is; ``stream`` orders GPU work.
    ``options`` (``nulls=``, ``fill_value=``, ``columns=``) apply to tables and dataframes.
    """
    if device is None and copy is None and stream is None and not options:
        try:
            fast = _FAST[target][type(x)]
        except (KeyError, TypeError):  # a first call, or an unhashable target (named below)
            pass
        else:
            try:
                return fast(x)
            except Exception:  # a fast step left this value to the checked plan (NeedsCopy),
                # or its framework call refused it: the checked plan converts or says why
                fn = _PLANS.get((type(x), target, None, None))  # (None: cleared meanwhile)
                if fn is not None:
                    return fn(x)
    elif stream is None and not options:
        try:
            fn = _PLANS.get((type(x), target, device, copy))
        except TypeError:  # an unhashable argument, named by the runner
            fn = None
        if fn is not None:
            return fn(x)
    return REGISTRY.runner(x, target, device, copy, stream, options)(x)


def explain(x: Any, target: str, *, device: str | None = None,
            copy: bool | None = None, **options: Any) -> Plan:
    """The plan ``to_framework(x, target, ...)`` would follow: steps, zero-copy, reasons."""
    return REGISTRY.explain(x, target, device, copy, options)


def can_convert(x: Any, target: str, *, device: str | None = None,
                copy: bool | None = None) -> bool:
    """Whether ``to_framework(x, target, ...)`` would succeed; converts nothing (where the plan
    copies, the value is read to host NumPy as the copy would read it, to judge what follows)."""
    try:
        return explain(x, target, device=device, copy=copy).supported
    except InteropError:
        return False


def shares_memory(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` (of any frameworks) overlap in memory on the same device; a
    value of several chunks overlaps where any of its chunks does."""
    return any(va.device == vb.device and _overlap(va.extent(), vb.extent())
               for va in _views(a) for vb in _views(b))


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _views(x: Any) -> list:
    """The buffer views of ``x``: one, one per chunk, or none (no known buffer)."""
    try:
        adapter = REGISTRY.adapters[REGISTRY.kind(x)]
    except InteropError:
        return []
    parts = adapter.chunks(x) if adapter.chunks is not None else None
    if parts is not None:
        return [v for part in parts for v in _views(part)]
    if adapter.view is None:
        return []
    try:
        return [adapter.view(x)]
    except Exception:  # a value with no single buffer (nulls, sharded) shares none
        return []


def frameworks() -> list[dict[str, Any]]:
    """Each known framework: importable, imported, version, devices, and what it speaks."""
    import importlib.metadata

    out = []
    dists: dict[str, list[str]] | None = None
    for name, a in sorted(REGISTRY.adapters.items()):
        if a.kind in ("source", "table") or name == "dlpack":
            continue
        spec = installed(a.package)
        version = None
        if spec:
            try:
                version = importlib.metadata.version(a.package)
            except importlib.metadata.PackageNotFoundError:
                # the distribution is named otherwise (tensorflow-cpu, paddlepaddle, ...)
                if dists is None:
                    dists = importlib.metadata.packages_distributions()
                for dist in dists.get(a.package, []):
                    version = importlib.metadata.version(dist)
                    break
            if version is None:
                version = getattr(sys.modules.get(a.package), "__version__", None)
        speaks = []
        if a.export_dlpack is not None:
            speaks.append("DLPack export")
        if a.from_dlpack is not None:
            speaks.append("DLPack import")
        out.append({"name": name, "aliases": list(a.aliases), "importable": bool(spec),
                    "imported": a.package in sys.modules, "version": version,
                    "devices": list(a.devices), "protocols": speaks})
    return out


def register_converter(source: str, target: str, convert: Callable[[Any], Any], *,
                       via: str = "custom", check: Callable[[Any], Any] | None = None,
                       cost: float = 0.5) -> None:
    """Add a conversion step between two registered frameworks.

    ``check(x)`` returns ``None`` when ``convert`` is zero-copy for ``x``, or a
    ``(verdict, reason)`` pair (verdicts in :mod:`interop.frameworks.base`). A lower
    ``cost`` than the built-in paths (1 for a fast path, 2.2 for DLPack) makes it win.
    """
    REGISTRY.add_edge(Edge(source, target, via, convert, check=check, cost=cost))


def register_framework(adapter: Adapter) -> None:
    """Add a framework (an :class:`~interop.frameworks.base.Adapter`) to the registry."""
    REGISTRY.add(adapter)
