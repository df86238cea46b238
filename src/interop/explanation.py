"""``explain``: the plan a conversion follows, rendered from the same route
(:func:`interop.route.decide`, which the runner compiles) and the same checks the runner
runs, for one value."""

from __future__ import annotations

from typing import Any

from . import composite, devices
from .adapters.base import NEEDS_COPY, NULLS, UNSUPPORTED, NeedsCopy
from .errors import FrameworkMissingError, InteropError, NullsError
from .plan import Plan, Step
from .protocols import dlpack
from .route import COMPOSITE, STRUCTURE, decide


def explain(reg: Any, x: Any, target: str, device: Any = None,
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
        return _move_plan(src, tgt, have, route.move, device, copy)
    dev = have[0]
    edges = route.edges  # what the runner compiles the plan of
    if edges is None:
        return Plan(src, tgt, (), False, (f"no conversion path from {src} to {tgt}",), (),
                    supported=False)
    if copy is True:
        return _copy_plan(reg, src, tgt, ["copy=True asks for a fresh buffer"], [], [],
                          device=dev, value=x)
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
            v = reg.adapters[e.source].preview(v) if adapter.consumable and i == 0 \
                else e.convert(v)
    if not edges:
        steps.append(Step(src, tgt, "identity"))
    if stream is not None:
        reasons.extend(f"stream={stream}: {why}" for why in dict.fromkeys(
            reg.runner.own_stream(e) for e in edges) if why)
    return Plan(src, tgt, tuple(steps), zero_copy, tuple(reasons),
                tuple(hazards) if zero_copy else ())  # a copy shares nothing


def _move_plan(src: str, tgt: str, have: tuple[str, int], move: tuple[str, int | None],
               device: Any, copy: bool | None) -> Plan:
    if move[1] is None:  # host data for a device-only target
        step = Step(src, tgt, "copy to the current CUDA device", True)
        why = (f"{tgt} holds CUDA device memory only: the host data is copied to the "
               f"current CUDA device, as {tgt} itself does (device='cuda:N' picks one)")
        if copy is not False and not devices.cuda_device_count():
            # (copy=False is refused first, as the conversion itself refuses it)
            return Plan(src, tgt, (step,), False, (why, devices.NO_CUDA), supported=False,
                        error="device")
    else:
        if copy is not False and move[0] == "cuda" and move[1] >= devices.cuda_device_count():
            return Plan(src, tgt, (), False, (f"device={device!r}: no such CUDA device on "
                                              "this machine",), supported=False,
                        error="device")
        step = Step(src, tgt, f"copy to {move[0]}:{move[1]}", True)
        held = f"{have[0]}:{have[1]}" if have[1] is not None else f"several {have[0]} devices"
        why = f"device={device!r} moves the data from {held}"
    return Plan(src, tgt, (step,), False, (why,), supported=copy is not False,
                error=None if copy is not False else "zero-copy")


def _copy_plan(reg: Any, at: str, tgt: str, reasons: list[str], hazards: list[str],
               steps: list[Step], origin: str | None = None, device: str = "cpu",
               value: Any = None) -> Plan:
    refused = _refused_after_copy(reg, at, value, tgt) if device == "cpu" else None
    if refused is not None:
        return Plan(origin or at, tgt, tuple(steps), False, (*reasons, refused[1]),
                    tuple(hazards), supported=False, error=refused[0])
    steps = list(steps)
    try:
        hub = "numpy" if device == "cpu" else reg.runner.copy_hub(at)  # as the runner picks
    except FrameworkMissingError as e:
        return Plan(origin or at, tgt, tuple(steps), False, (*reasons, str(e)),
                    supported=False, error="missing")
    if at != hub:
        steps.append(Step(at, hub, "to host NumPy" if hub == "numpy" else f"to {hub}"))
    fresh = "fresh aligned copy"
    narrow = _planned_narrowing(reg, at, value, tgt)
    if narrow is not None:
        fresh += f", cast to {narrow[0]}"
        if narrow[1] not in reasons:
            reasons = [*reasons, narrow[1]]
    steps.append(Step(hub, hub, fresh, copies=True))
    if at == tgt and device == "cpu" and reg.adapters[tgt].place is not None:
        steps.append(Step(hub, tgt, "onto the source's devices (its device or sharding)"))
    else:
        for e in reg.routes.route(hub, tgt, device) or []:
            steps.append(Step(e.source, e.target, e.via))
    return Plan(origin or at, tgt, tuple(steps), False, tuple(reasons), tuple(hazards))


def _planned_narrowing(reg: Any, at: str, value: Any, tgt: str) -> tuple[str, str] | None:
    """``(dtype name, why)`` of the cast the copy route will make for ``value`` (a value
    of ``at``) on its way to ``tgt``, or ``None``."""
    rules = getattr(reg.adapters[tgt], "rules", None)
    if rules is None or rules.narrows is None or value is None:
        return None
    dtype = _dtype_string(reg.adapters[at], value)
    narrow = rules.narrows(dtype) if dtype is not None else None
    if narrow is None:
        return None
    import numpy

    return numpy.dtype(narrow[0]).name, narrow[1]


def _refused_after_copy(reg: Any, at: str, value: Any,
                        tgt: str) -> tuple[str, str] | None:
    """Why the copy route would refuse ``value`` (``(UNSUPPORTED or NULLS, reason)``),
    judged as it runs: the whole value to host NumPy (nulls, strings, object dtypes show
    there), a fresh buffer of its shape and dtype as the target holds it (the values are
    not copied: no later check reads them), and the checks of the steps after it
    (dimensions, dtypes). A consumable value (a capsule) is read through its preview, so
    it stays unused."""
    from .host import fresh_buffer

    adapter = reg.adapters[at]
    try:
        arr = adapter.preview(value) if adapter.consumable else adapter.to_numpy(value)
        arr = fresh_buffer(arr.shape, reg.runner.narrowing(arr.dtype, tgt) or arr.dtype)
        arr.reshape(-1).view("u1").fill(0)  # values a consumer validates (dates) must be valid
    except NullsError as e:
        return NULLS, str(e)
    except InteropError as e:
        return UNSUPPORTED, str(e)
    except NeedsCopy as nc:
        return UNSUPPORTED, nc.reason
    for e in reg.routes.route("numpy", tgt, "cpu") or ():
        verdict = e.check(arr) if e.check is not None else None
        if verdict is not None and verdict[0] in (UNSUPPORTED, NULLS):
            return verdict[0], f"{e.source} -> {e.target} ({e.via}): {verdict[1]}"
        if verdict is not None and verdict[0] == NEEDS_COPY:
            return None
        arr = e.convert(arr)
    return None


def _dtype_string(adapter: Any, x: Any) -> str | None:
    """The dtype string of ``x``: its buffer view's, or its host NumPy array's."""
    try:
        if adapter.view is not None:
            return adapter.view(x).dtype
    except Exception:  # no single buffer (nulls, chunks): read it on the host
        pass
    try:
        return dlpack.typestr_of(adapter.to_numpy(x).dtype)
    except Exception:  # the conversion itself names what is wrong
        return None
