"""The route of one call, decided in one place: :func:`decide`.

Which adapter owns the value, the target framework, whether the call fails before any step
(the target not installed, a value its framework keeps to itself), and how the value goes:
to a composite's or a structure's own plan, to another device, or along a chain of edges on
the device it lives on. The registry compiles a :class:`Route` into the plan a conversion
runs (:mod:`interop.runner`), and ``explain`` renders the same value
(:mod:`interop.explanation`): they cannot take different ways.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .adapters.base import (
    ArrayAdapter,
    CompositeAdapter,
    Edge,
    RegistryLike,
    StructureAdapter,
)
from .arguments import check_copy
from .devices import DATALESS, no_data
from .errors import (
    DeviceError,
    FrameworkMissingError,
    InteropError,
    UnsupportedConversionError,
)
from .protocols import dlpack
from .record import record

if TYPE_CHECKING:
    from .routing import Routes

EDGES, MOVE, COMPOSITE, STRUCTURE, FAILS = "edges", "move", "composite", "structure", "fails"
"""The kinds of route: a chain of edges, a copy to another device, a composite's own plan
(its parts each converted through the registry), a structure's, or a failure."""
MISSING, REFUSED = "missing", "unsupported"
"""The failures a route records (``explain`` reports them, a conversion raises them)."""


@record(frozen=True)
class Route:
    """How one call converts: ``source`` (the owning adapter's name) to ``target`` (the
    framework's name), of ``kind`` ``EDGES``, ``MOVE``, ``COMPOSITE``, ``STRUCTURE`` or
    ``FAILS``."""

    source: str
    target: str
    kind: str
    adapter: Any
    """The owning adapter."""
    failure: tuple[str, str] | None = None
    """``(MISSING or REFUSED, why)`` for a route that fails before any step."""
    have: tuple[str, int] = ("cpu", 0)
    """Where the value lives."""
    move: tuple[str, int | None] | None = None
    """Where ``device=`` moves the data (``("cuda", None)``: the current CUDA device)."""
    edges: tuple[Edge, ...] | None = None
    """The steps on the value's device (``()``: the same framework; ``None``: no path)."""
    per_value: bool = False
    """Where the data lives is read per value (the plan dispatches on it: :meth:`on`)."""
    device: Any = None
    """The ``device=`` asked for (a string)."""
    stream: int | None = None
    """The DLPack stream number of the ``stream=`` asked for (:func:`stream_number`)."""
    routes: Routes | None = None
    target_adapter: Any = None
    """The target framework's adapter (for :meth:`on`)."""

    def on(self, have: tuple[str, int]) -> Route:
        """The route of a value of the same source and target that lives on ``have``."""
        move, edges = _array_way(self.routes, self.adapter, have, self.target_adapter,
                                 self.device)
        return Route(self.source, self.target, MOVE if move is not None else EDGES,
                     self.adapter, have=have, move=move, edges=edges, device=self.device,
                     routes=self.routes, target_adapter=self.target_adapter)

    def raise_failure(self) -> None:
        """Raise what a conversion along this route raises before any step, if anything."""
        if self.failure is None:
            return
        what, why = self.failure
        error = FrameworkMissingError if what == MISSING else UnsupportedConversionError
        raise error(f"{self.source} -> {self.target}: {why}")

    def raise_no_path(self) -> None:
        if self.edges is None:
            raise UnsupportedConversionError(
                f"no conversion path from {self.source} to {self.target} on {self.have[0]}")


def decide(reg: RegistryLike, x: Any, target: str, device: Any = None, copy: bool | None = None,
           stream: Any = None, options: dict[str, Any] | None = None) -> Route:
    """The route of ``to_framework(x, target, device=, copy=, stream=, **options)``. Raises
    for arguments no call could take (a ``copy`` that is not a bool, an unknown target, an
    option the value takes none of, a stream for host data, a device the target cannot
    hold); records what fails for this value (:attr:`Route.failure`). ``device`` is a
    string (:func:`interop.devices.device_name`)."""
    check_copy(copy)
    src = reg.owner(x)
    tgt = reg.target(target)
    adapter = reg.adapters[src]
    target_adapter = reg.adapters[tgt]
    missing = target_adapter.missing()
    if missing:
        return Route(src, tgt, FAILS, adapter, failure=(MISSING, missing))
    refuse = getattr(adapter, "refuse", None)
    why = refuse(x) if refuse is not None and tgt != src else None
    if why:
        return Route(src, tgt, FAILS, adapter, failure=(REFUSED, why))
    if isinstance(adapter, StructureAdapter):
        return Route(src, tgt, STRUCTURE, adapter, device=device)
    if isinstance(adapter, CompositeAdapter):
        return Route(src, tgt, COMPOSITE, adapter, device=device)
    inner = reg.inner(src, x)
    if inner is not None:  # a sparse torch tensor, a chunked list column
        return Route(inner.name, tgt, COMPOSITE, inner, device=device)
    if options:
        raise no_options(reg, src, options)
    assert isinstance(adapter, ArrayAdapter)
    have = adapter.device(x)
    if have[0] == DATALESS and (device is not None or copy is True):  # (elsewhere: refuse)
        return Route(src, tgt, FAILS, adapter, failure=(REFUSED, no_data(src)))
    move, edges = _array_way(reg.routes, adapter, have, target_adapter, device)
    number = stream_number(src, have[0], stream)
    per_value = stream is None and (device is not None or move is not None
                                    or adapter.gpu_present())
    return Route(src, tgt, MOVE if move is not None else EDGES, adapter, have=have, move=move,
                 edges=edges, per_value=per_value, device=device, stream=number,
                 routes=reg.routes, target_adapter=target_adapter)


def stream_number(src: str, where: str, stream: Any) -> int | None:
    """The DLPack stream number for ``stream=`` on a ``src`` value living on ``where``
    (``None`` without one); an :class:`InteropError` for a CPU value, which no stream orders."""
    if stream is None:
        return None
    if where == "cpu":
        raise InteropError(
            f"stream={stream!r} was given for a CPU {src} value: streams order GPU "
            "work only; pass stream=None for CPU data")
    return dlpack.stream_argument(stream, dlpack.Device.CUDA)


def _array_way(routes: Any, adapter: ArrayAdapter, have: tuple[str, int],
               target: ArrayAdapter, device: Any
               ) -> tuple[tuple[str, int | None] | None, tuple[Edge, ...] | None]:
    """``(move, None)`` where the data changes device, else ``(None, edges)`` on its own."""
    move = device_move(adapter, have, target, device)  # raises early
    if move is not None:
        return move, None
    edges = routes.route(adapter.name, target.name, have[0])
    return None, tuple(edges) if edges is not None else None


def device_move(src: ArrayAdapter, have: tuple[str, int], tgt: ArrayAdapter,
                device: Any) -> tuple[str, int | None] | None:
    """Where ``device=`` moves the data (``None``: it stays); raises when it cannot stay.
    Host data for a target that holds device memory only (CuPy, Numba, cuDF) goes to the
    current CUDA device: ``("cuda", None)``. Every CPU device holds host memory: ``"cpu"``
    keeps data on whichever it is, and ``"cpu:N"`` names the target's CPU device ``N``
    (JAX can run several; for a framework of one, ``cpu:0`` is ``cpu``): data on another
    is copied there."""
    if device is not None:
        from .devices import cpu_index, parse_device  # loaded by the first device= given

        kind, index = parse_device(device)
        if kind == "cpu" and "cpu" in tgt.devices:
            count = tgt.cpu_devices() if tgt.cpu_devices is not None else 1
            index = cpu_index(index, count, tgt.name, device)
        if kind == have[0] and (index is None or index == have[1]):
            if tgt.devices == ("cuda",) and have[0] == "cpu":
                raise DeviceError(
                    f"{tgt.name} holds CUDA device memory only, but device={device!r} asks "
                    f"to keep the {src.name} value on the host: pass device=None (the "
                    "current CUDA device) or device='cuda:N'")
            device = None
        else:
            if kind not in tgt.devices:
                raise DeviceError(f"{tgt.name} cannot hold data on {device!r} "
                                  f"(it supports {list(tgt.devices)})")
            return kind, index or 0
    if have[0] == "cpu" and tgt.devices == ("cuda",):
        return "cuda", None  # a device-only target: to the current device, as it would itself
    if have[0] not in tgt.devices and tgt is not src:  # (its own framework holds it there)
        raise DeviceError(
            f"the {src.name} value lives on {have[0]}:{have[1]} but {tgt.name} holds "
            f"{' / '.join(tgt.devices)} memory only: pass device='cpu' to copy it to the host"
            if tgt.devices == ("cpu",) else
            f"the {src.name} value lives on {have[0]}:{have[1]}; {tgt.name} holds "
            f"{list(tgt.devices)} memory: pass device=... to copy it")
    return None


def no_options(reg: RegistryLike, src: str, options: dict[str, Any]) -> InteropError:
    """The error for ``options`` a ``src`` value takes none of."""
    from .names import unknown_option

    unknown = unknown_option(options, reg.declared_options())
    if unknown:
        return InteropError(unknown)
    return InteropError(f"options {sorted(options)} apply to tables, dataframes, batches of "
                        f"samples and structures, not to a {src} value")
