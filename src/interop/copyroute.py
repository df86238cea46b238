"""The copy route, described once: one copy into a fresh compact buffer (with NumPy on the
host; on a GPU with the source's own framework or the copy hub), then zero-copy on to the
target.

:func:`describe` decides it (which framework copies, whether the copy goes back where the
source lives, the steps after the copy) and :func:`cast` the one value-dependent decision
(the dtype the target holds the copy as). The runner runs the :class:`CopyRoute`
(:meth:`~interop.runner.Runner.copy_route`) and ``explain`` renders its :meth:`CopyRoute.steps`:
neither decides any of it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import FrameworkMissingError
from .protocols import dlpack
from .record import record

if TYPE_CHECKING:
    from .adapters.base import Edge
    from .plan import Step
    from .routing import Routes

Narrows = Callable[[str], "tuple[str, str] | None"]


@record(frozen=True)
class CopyRoute:
    """The copy route of a ``source`` value to ``target`` on ``device`` (``"cpu"`` or a GPU
    kind): who copies (``hub``), whether the copy goes back where the value lives
    (``placed``), whether the value is a device value of no elements (``empty``: read to the
    host and put on its device by the target, no device copy), and the ``edges`` from the hub
    to the target after the copy (``None``: no path)."""

    source: str
    target: str
    device: str
    hub: str
    """The framework that makes the copy: ``"numpy"`` on the host (and for an empty device
    value); on a GPU the source itself when it makes device copies, else the copy hub."""
    placed: bool = False
    """The same framework with a ``place`` on the host (JAX): the copy goes onto the source's
    own devices (its device or sharding), not along ``edges``."""
    empty: bool = False
    """A device value of no elements: no bytes to move, and an empty device buffer may not
    export; read to the host, then put on the value's device by the target."""
    edges: tuple[Edge, ...] | None = ()
    """The zero-copy steps from ``hub`` to ``target`` after the copy (``None``: no path)."""
    narrows: Narrows | None = None
    """The target's narrowing rule (:attr:`ConsumerRules.narrows`), read by :meth:`cast`."""
    missing: str | None = None
    """Why no framework here can copy on the GPU (the :class:`FrameworkMissingError`)."""

    def cast(self, dtype: Any, warn: bool = False) -> tuple[str, str] | None:
        """``(dtype string, why)`` of the narrower dtype the target holds the copy of a
        ``dtype`` (a dtype or its string) value as, or ``None`` (:func:`cast`)."""
        return cast(self.narrows, dtype, warn)

    def no_path(self) -> str:
        """What a conversion with no path after the copy raises (:attr:`edges` ``None``)."""
        return f"no conversion path from {self.hub} to {self.target}"

    def steps(self, cast_to: str | None = None) -> list[Step]:
        """The steps' names, as the runner takes them (``cast_to``: the name of the dtype the
        copy is cast to)."""
        from .plan import Step  # explain's: not loaded by a conversion

        cast_name = f", cast to {cast_to}" if cast_to is not None else ""
        src, hub = self.source, self.hub
        if self.empty:
            return [Step(src, hub, "to host NumPy (no elements to copy on the device)"),
                    Step(hub, self.target, f"onto the source's device{cast_name}", True)]
        steps = [] if src == hub else [
            Step(src, hub, "to host NumPy" if hub == "numpy" else f"to {hub}")]
        steps.append(Step(hub, hub, "fresh aligned copy" + cast_name, copies=True))
        if self.placed:
            steps.append(Step(hub, self.target,
                              "onto the source's devices (its device or sharding)"))
        else:
            steps.extend(Step(e.source, e.target, e.via) for e in self.edges or ())
        return steps


def empty(x: Any, device: str) -> bool:
    """Whether ``x``, a value on ``device``, is a device value of no elements (whose copy
    route is :attr:`CopyRoute.empty`)."""
    return device != "cpu" and any(n == 0 for n in getattr(x, "shape", (1,)))


def describe(adapters: dict[str, Any], routes: Routes, src: str, tgt: str,
             device: str = "cpu", empty: bool = False) -> CopyRoute:
    """The copy route of a ``src`` value to ``tgt`` on ``device`` (``empty``: a device value
    of no elements); the one place its hub, placement and steps are decided."""
    narrows = narrowing_rule(adapters[tgt])
    if device == "cpu" or empty:
        placed = device == "cpu" and src == tgt and adapters[tgt].place is not None
        edges = () if placed or empty else _found(routes.route("numpy", tgt, device))
        return CopyRoute(src, tgt, device, "numpy", placed, empty, edges, narrows)
    try:
        hub = copy_hub(adapters, src)
    except FrameworkMissingError as e:
        return CopyRoute(src, tgt, device, "", narrows=narrows, missing=str(e))
    return CopyRoute(src, tgt, device, hub, edges=_found(routes.route(hub, tgt, device)),
                     narrows=narrows)


def copy_hub(adapters: dict[str, Any], src: str) -> str:
    """Where a device value of ``src`` is copied on the GPU: ``src`` itself when it makes
    device copies (CuPy, torch), else the first framework here that does (CuPy, the GPU hub,
    first); a :class:`FrameworkMissingError` naming them when none is installed."""
    if adapters[src].device_copy is not None:
        return src
    makers = sorted((a for a in adapters.values()
                     if getattr(a, "device_copy", None) is not None), key=lambda a: not a.hub)
    for a in makers:
        if a.missing() is None:
            return a.name
    raise FrameworkMissingError(
        f"copying a {src} value on the GPU needs a framework that makes device copies "
        f"({' or '.join(a.name for a in makers)}), and none is installed: pip install "
        "cupy-cuda12x (or cupy-cuda13x), or a CUDA build of torch")


def narrowing_rule(target: Any) -> Narrows | None:
    """The target adapter's narrowing rule (JAX's, with 64-bit types off), or ``None``."""
    rules = getattr(target, "rules", None)
    return rules.narrows if rules is not None else None


def cast(narrows: Narrows | None, dtype: Any, warn: bool = False) -> tuple[str, str] | None:
    """``(dtype string, why)``: what ``narrows`` (a target's rule) holds ``dtype`` (a dtype or
    its string) as, or ``None`` when the target keeps it; ``warn``: emit the
    :class:`~interop.errors.NarrowingWarning` saying so (a conversion makes the cast)."""
    if narrows is None:
        return None
    narrow = narrows(dtype if isinstance(dtype, str) else dlpack.typestr_of(dtype))
    if narrow is not None and warn:
        from .narrowing import warn as warn_narrowing

        warn_narrowing(narrow[1])
    return narrow


def _found(edges: list[Edge] | None) -> tuple[Edge, ...] | None:
    return tuple(edges) if edges is not None else None
