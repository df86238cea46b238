"""``explain``: the plan a conversion follows, rendered from the same route
(:func:`interop.route.decide`, which the runner compiles) and the same checks the runner
runs, for one value."""

from __future__ import annotations

from typing import Any

from . import composite, devices
from .adapters.base import NEEDS_COPY, NULLS, UNSUPPORTED, NeedsCopy, RegistryLike
from .copyroute import empty
from .errors import InteropError, NullsError
from .plan import Plan, Step
from .protocols import dlpack
from .route import COMPOSITE, STRUCTURE, decide


def explain(reg: RegistryLike, x: Any, target: str, device: Any = None,
            copy: bool | None = None, options: dict[str, Any] | None = None,
            stream: Any = None) -> Plan:
    """The plan for this value: steps, zero-copy or not, reasons and hazards; with a
    ``stream``, the steps whose consumer orders the import on a stream of its own say so."""
    route = decide(reg, x, target, device, copy, stream, options)
    stream = route.stream
    src, tgt, adapter = route.source, route.target, route.adapter
    if route.failure is not None:
        what, why = route.failure
        return Plan(src, tgt, (), False, (why,), supported=False, error=what)
    if route.kind == STRUCTURE:
        return adapter.explain(reg, x, tgt, device, copy, options)
    if route.kind == COMPOSITE:
        return composite.explain(reg, adapter, x, tgt, device, copy, options)
    have = route.have
    if route.move is not None:
        return _move_plan(reg, x, route, device, copy)
    edges = route.edges  # what the runner compiles the plan of
    if edges is None:
        return Plan(src, tgt, (), False, (f"no conversion path from {src} to {tgt}",), (),
                    supported=False)
    if copy is True:
        return _copy_plan(reg, src, tgt, ["copy=True asks for a fresh buffer"], [], [],
                          device=have[0], value=x)
    return _edges_plan(reg, x, src, tgt, edges, have[0], copy, stream)


def _edges_plan(reg: RegistryLike, x: Any, src: str, tgt: str, edges: tuple, dev: str,
                copy: bool | None, stream: int | None = None) -> Plan:
    """The plan of ``x`` along ``edges`` (``copy`` ``None`` or ``False``): each edge's check,
    as the runner's checked steps ask it, and the copy route where one says it copies."""
    consumable = reg.adapters[src].consumable
    steps: list[Step] = []
    reasons: list[str] = []
    hazards: list[str] = []
    zero_copy = True
    v = x
    for i, e in enumerate(edges):
        if e.hazard is not None:
            h = e.hazard(v)  # one hazard, or a tuple of them (an edge of two calls)
            hazards.extend(h if isinstance(h, tuple) else (h,) if h else ())
        verdict = e.check(v) if e.check is not None else None
        if verdict is not None:
            what, reason = verdict
            if what in (UNSUPPORTED, NULLS):
                return Plan(src, tgt, tuple(steps), False, (reason,), tuple(hazards),
                            supported=False, error=what)
            reasons.append(reason)
            zero_copy = False
            if copy is False:
                return Plan(src, tgt, tuple(steps), False, tuple(reasons),
                            tuple(hazards), supported=False, error="zero-copy")
            if what == NEEDS_COPY:  # the result shares nothing: no sharing hazards
                return _copy_plan(reg, e.source, tgt, reasons, [], steps, origin=src,
                                  device=dev, value=v)
            steps.append(Step(e.source, e.target, e.via, copies=True))
        else:
            steps.append(Step(e.source, e.target, e.via))
        if i + 1 < len(edges):
            v = reg.adapters[e.source].preview(v) if consumable and i == 0 else e.convert(v)
    if not edges:
        steps.append(Step(src, tgt, "identity"))
    if stream is not None:
        reasons.extend(f"stream={stream}: {why}" for why in dict.fromkeys(
            reg.runner.own_stream(e) for e in edges) if why)
    return Plan(src, tgt, tuple(steps), zero_copy, tuple(reasons),
                tuple(hazards) if zero_copy else ())  # a copy shares nothing


def _move_plan(reg: RegistryLike, x: Any, route: Any, device: Any, copy: bool | None) -> Plan:
    """A move to another device: a copy, so what the copy route refuses of the value (and,
    without ``copy=True``, what its own plan to host NumPy refuses: nulls) is refused as the
    runner's :meth:`~interop.runner.Runner.move` refuses it, then the copy's placement."""
    src, tgt, have, move = route.source, route.target, route.have, route.move
    copying = reg.runner.copy_description("numpy", tgt)  # the host copy a move makes
    narrow = _planned_cast(reg, copying, src, x, host=have[0] == "cpu")
    cast = f", cast to {narrow[0]}" if narrow is not None else ""
    if move[1] is None:  # host data for a device-only target
        step = Step(src, tgt, "copy to the current CUDA device" + cast, True)
        why = (f"{tgt} holds CUDA device memory only: the host data is copied to the "
               f"current CUDA device, as {tgt} itself does (device='cuda:N' picks one)")
    else:
        step = Step(src, tgt, f"copy to {move[0]}:{move[1]}{cast}", True)
        held = f"{have[0]}:{have[1]}" if have[1] is not None else f"several {have[0]} devices"
        why = f"device={device!r} moves the data from {held}"
    reasons = (why,) if narrow is None else (why, narrow[1])
    if copy is False:  # refused first, as the conversion itself refuses it
        return Plan(src, tgt, (step,), False, reasons, supported=False, error="zero-copy")
    refused = _move_refused(reg, x, src, copying, have, copy)
    if refused is not None:
        return Plan(src, tgt, (), False, (refused[1],), supported=False, error=refused[0])
    if move[0] == "cuda" and (move[1] or 0) >= devices.cuda_device_count():
        return Plan(src, tgt, (step,) if move[1] is None else (), False,
                    (why, devices.NO_CUDA) if move[1] is None else
                    (f"device={device!r}: no such CUDA device on this machine",),
                    supported=False, error="device")
    return Plan(src, tgt, (step,), False, reasons)


def _move_refused(reg: RegistryLike, x: Any, src: str, copying: Any, have: tuple[str, Any],
                  copy: bool | None) -> tuple[str, str] | None:
    """Why a move of the host value ``x`` (its host copy: ``copying``) is refused
    (``(UNSUPPORTED or NULLS, why)``), as
    :meth:`~interop.runner.Runner.host` and :meth:`~interop.runner.Runner.refused` decide
    it; device data is read to the host by the move itself (reading it here would copy it)."""
    if have[0] != "cpu":
        return None
    if copy is None:  # the move reads the value as its own plan to host NumPy does
        edges = reg.routes.route(src, "numpy", "cpu")
        if edges is None:
            return UNSUPPORTED, f"no conversion path from {src} to numpy on cpu"
        pre = _edges_plan(reg, x, src, "numpy", tuple(edges), "cpu", None)
        if not pre.supported:
            return pre.error, pre.reasons[-1]
    return _refused_after_copy(reg, copying, src, x)


def _copy_plan(reg: RegistryLike, at: str, tgt: str, reasons: list[str], hazards: list[str],
               steps: list[Step], origin: str | None = None, device: str = "cpu",
               value: Any = None) -> Plan:
    """The plan of the copy route the runner takes from ``at`` (after ``steps``): the
    :class:`~interop.copyroute.CopyRoute` :func:`~interop.copyroute.describe` makes, its
    refusals judged as the runner meets them."""
    route = reg.runner.copy_description(at, tgt, device, empty(value, device))
    src = origin or at
    refused = _refused_after_copy(reg, route, at, value) if device == "cpu" else None
    if refused is not None:
        return Plan(src, tgt, tuple(steps), False, (*reasons, refused[1]),
                    tuple(hazards), supported=False, error=refused[0])
    if route.missing is not None:
        return Plan(src, tgt, tuple(steps), False, (*reasons, route.missing),
                    supported=False, error="missing")
    narrow = _planned_cast(reg, route, at, value)
    if narrow is not None and narrow[1] not in reasons:
        reasons = [*reasons, narrow[1]]
    steps = [*steps, *route.steps(narrow[0] if narrow is not None else None)]
    if route.edges is None:
        return Plan(src, tgt, tuple(steps), False, (*reasons, route.no_path()),
                    tuple(hazards), supported=False, error=UNSUPPORTED)
    return Plan(src, tgt, tuple(steps), False, tuple(reasons), tuple(hazards))


def _planned_cast(reg: RegistryLike, route: Any, at: str, value: Any,
                  host: bool = True) -> tuple[str, str] | None:
    """``(dtype name, why)`` of the cast the copy ``route`` (or a move, which casts as it
    does) makes of ``value``, a value of ``at``, or ``None``; ``host``: the value may be read
    on the host for its dtype (device data is not: that read would copy it)."""
    if route.narrows is None or value is None:
        return None
    dtype = _dtype_string(reg.adapters[at], value, host)
    narrow = route.cast(dtype) if dtype is not None else None
    if narrow is None:
        return None
    import numpy

    return numpy.dtype(narrow[0]).name, narrow[1]


def _refused_after_copy(reg: RegistryLike, route: Any, at: str,
                        value: Any) -> tuple[str, str] | None:
    """Why the host copy ``route`` would refuse ``value``, a value of ``at``
    (``(UNSUPPORTED or NULLS, reason)``), judged as it runs: the whole value to host NumPy
    (nulls, strings, object dtypes show there), a fresh buffer of its shape and dtype as the
    target holds it (the values are not copied: no later check reads them), and the checks of
    the route's steps after the copy (dimensions, dtypes). A consumable value (a capsule) is
    read through its preview, so it stays unused."""
    from .host import fresh_buffer

    adapter = reg.adapters[at]
    try:
        arr = adapter.preview(value) if adapter.consumable else adapter.to_numpy(value)
        narrow = route.cast(arr.dtype)
        arr = fresh_buffer(arr.shape, narrow[0] if narrow is not None else arr.dtype)
        arr.reshape(-1).view("u1").fill(0)  # values a consumer validates (dates) must be valid
    except NullsError as e:
        return NULLS, str(e)
    except InteropError as e:
        return UNSUPPORTED, str(e)
    except NeedsCopy as nc:
        return UNSUPPORTED, nc.reason
    return reg.runner.refused(arr, route.edges or ())


def _dtype_string(adapter: Any, x: Any, host: bool = True) -> str | None:
    """The dtype string of ``x``: its buffer view's, or (``host``) its host NumPy array's."""
    try:
        if adapter.view is not None:
            return adapter.view(x).dtype
    except Exception:  # no single buffer (nulls, chunks): read it on the host
        pass
    if not host:
        return None
    try:
        return dlpack.typestr_of(adapter.to_numpy(x).dtype)
    except Exception:  # the conversion itself names what is wrong
        return None
