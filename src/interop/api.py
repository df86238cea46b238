"""The public calls: to_framework, explain, can_convert, shares_memory, frameworks."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .adapters.base import ArrayAdapter, Edge, StructureAdapter, fixed, installed
from .default import REGISTRY
from .devices import same_memory
from .errors import InteropError

if TYPE_CHECKING:
    from .plan import Plan

to_framework = REGISTRY.convert
to_framework.__module__ = __name__


def explain(x: Any, target: str, *, device: Any = None, copy: bool | None = None,
            stream: Any = None, **options: Any) -> Plan:
    """The plan ``to_framework(x, target, ...)`` would follow: steps, zero-copy, reasons."""
    return REGISTRY.explain(x, target, device, copy, options, stream)


def can_convert(x: Any, target: str, *, device: Any = None, copy: bool | None = None,
                stream: Any = None, **options: Any) -> bool:
    """Whether ``to_framework(x, target, ...)`` would succeed; converts nothing (where the plan
    copies, the value is read to host NumPy as the copy would read it, to judge what follows)."""
    try:
        return explain(x, target, device=device, copy=copy, stream=stream, **options).supported
    except InteropError:
        return False


def shares_memory(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` (of any frameworks) overlap in memory on the same device; a
    value of several chunks, of several buffers (an Arrow validity bitmap, offsets and
    values), a JAX array sharded or replicated over several devices (each shard's buffer), or
    a structure, overlaps where any of its buffers or array leaves does. Every CPU device
    (JAX can run several) addresses the one host memory. A value of a framework whose
    buffers interop cannot read (a polars ``Object`` Series) shares memory with itself
    (unless it is empty), and with nothing else."""
    views = _views(a)
    if a is b and not views:
        return _unreadable(a)
    return any(same_memory(va.device, vb.device) and _overlap(va.extent(), vb.extent())
               for va in views for vb in _views(b))


def _unreadable(x: Any) -> bool:
    """Whether ``x`` is a non-empty value of a framework whose memory interop cannot read
    (reading its buffers and its view both fail: a polars ``Object`` Series), as opposed to
    one that holds none (an Arrow ``NullArray``)."""
    try:
        adapter = REGISTRY.adapters[REGISTRY.owner(x)]
    except InteropError:
        return False
    if not isinstance(adapter, ArrayAdapter):
        return False
    for read in (adapter.buffers, adapter.view):
        if read is None:
            continue
        try:
            read(x)
        except Exception:  # this reading fails: the next one, or none can be read
            continue
        return False
    try:
        return len(x) > 0
    except TypeError:  # no length: one value
        return True


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _views(x: Any) -> list:
    """The buffer views of ``x``: every buffer of each chunk (values, validity, offsets),
    one per array leaf of a structure, or its one view, or none (no known buffer)."""
    try:
        adapter = REGISTRY.composite(x) or REGISTRY.adapters[REGISTRY.owner(x)]
    except InteropError:
        return []
    if isinstance(adapter, StructureAdapter):
        return [v for leaf in adapter.leaves(REGISTRY, x) for v in _views(leaf)]
    if not isinstance(adapter, ArrayAdapter) and getattr(adapter, "buffers", None) is not None:
        return adapter.buffers(x)
    if not isinstance(adapter, ArrayAdapter):
        take = getattr(adapter, "parts", None)
        return ([v for _, part in take(x).arrays for v in _views(part)] if take is not None
                else [])
    parts = adapter.chunks(x) if adapter.chunks is not None else None
    if parts is not None:
        return [v for part in parts for v in _views(part)]
    if adapter.buffers is not None:
        try:
            return adapter.buffers(x)
        except Exception:  # not readable this way (a polars value without pyarrow): its view
            pass
    if adapter.view is None:
        return []
    try:
        return [adapter.view(x)]
    except Exception:  # a value with no buffer interop can read shares none
        return []


def frameworks() -> list[dict[str, Any]]:
    """Each known framework: importable, imported, version, devices, what it speaks, and
    whether it is a ``target`` (DALI is a source only)."""
    from .versions import package_version

    out = []
    for name, a in sorted(REGISTRY.adapters.items()):
        if not isinstance(a, ArrayAdapter) or not (a.target or a.modules) or name == "dlpack":
            continue
        importable = installed(a.package)
        version = package_version(a.package) if importable else None
        if importable and version is None:
            version = getattr(sys.modules.get(a.package), "__version__", None)
        speaks = []
        if a.export_dlpack is not None:
            speaks.append("DLPack export")
        if a.from_dlpack is not None:
            speaks.append("DLPack import")
        out.append({"name": name, "aliases": list(a.aliases), "importable": importable,
                    "imported": a.package in sys.modules, "version": version,
                    "devices": list(a.devices), "protocols": speaks, "target": a.target})
    return out


def register_converter(source: str, target: str, convert: Callable[[Any], Any], *,
                       via: str = "custom", check: Callable[[Any], Any] | None = None,
                       cost: float = 0.5) -> None:
    """Add a conversion step between two registered frameworks.

    ``check(x)`` returns ``None`` when ``convert`` is zero-copy for ``x``, or a
    ``(verdict, reason)`` pair (verdicts in :mod:`interop.adapters.verdicts`). A lower
    ``cost`` than the built-in paths (1 for a fast path, 2.2 for DLPack) makes it win.
    """
    REGISTRY.add_edge(Edge(source, target, via, fixed(convert), check=check, cost=cost))


def register_framework(adapter: ArrayAdapter) -> None:
    """Add a framework (an :class:`~interop.adapters.base.ArrayAdapter`) to the registry."""
    REGISTRY.add(adapter)
