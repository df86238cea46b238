"""Finds and caches the path between two frameworks; runs it with the copy semantics.

The registry decides, adapters execute: every conversion is a chain of :class:`Edge`
steps found by a shortest-path search over the edges the framework modules declare
plus the generic DLPack edges between every producer and consumer. Plans are built once
per (source type, target, device, copy); a call is a dict lookup and the framework call.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable
from inspect import signature
from typing import TYPE_CHECKING, Any

from .devices import NO_CUDA, cuda_device_count, current_cuda_device, parse_device, require_cuda
from .errors import (
    DeviceError,
    FrameworkMissingError,
    InteropError,
    NullsError,
    UnknownFrameworkError,
    UnsupportedConversionError,
    ZeroCopyError,
)
from .frameworks.base import (
    COPIES,
    COPY_ROUTE,
    NULLS,
    UNSUPPORTED,
    Adapter,
    Edge,
    NeedsCopy,
    handover_check,
)
from .protocols import dlpack

if TYPE_CHECKING:
    from .plan import Plan, Step

DLPACK_COST = 2.2  # on the host, two fast-path steps through NumPy (1.0 each) beat it
LEGACY_PENALTY = 2.5
HUB_BONUS = 0.1


class Registry:
    """All adapters, their edges, and the plan cache."""

    def __init__(self) -> None:
        self.adapters: dict[str, Adapter] = {}
        self._names: dict[str, str] = {}
        self._direct: list[Edge] = []
        self._routes: dict[tuple[str, str], list[Edge] | None] = {}
        self._kinds: dict[type, str | None] = {}
        self.plans: dict[tuple, Callable[[Any], Any]] = {}
        self.fast: dict[str, dict[type, Callable[[Any], Any]]] = {}
        """The plans with ``device=None, copy=None``, as ``{target: {source type: plan}}``:
        the common call looks them up without building a key tuple. Where every step has a
        fast form (:attr:`Edge.fast`) the plan here is made of those: any exception from it
        (``NeedsCopy``, or a framework refusing the value) sends the value to the checked plan
        in :attr:`plans`, which gives the result or the error."""
        self._lock = threading.RLock()

    # ---- registration -------------------------------------------------------------
    def add(self, adapter: Adapter) -> None:
        """Register a framework (its names and its edges)."""
        with self._lock:
            self.adapters[adapter.name] = adapter
            for n in (adapter.name, *adapter.aliases):
                self._names[n.lower()] = adapter.name
            self._direct.extend(adapter.edges())
            self._invalidate()

    def add_edge(self, edge: Edge) -> None:
        """Register one conversion step; it wins over generic paths of higher cost."""
        with self._lock:
            for n in (edge.source, edge.target):
                if n not in self.adapters:
                    raise UnknownFrameworkError(f"unknown framework {n!r}; known: {self.known()}")
            self._direct.append(edge)
            self._invalidate()

    def _invalidate(self) -> None:
        self._routes.clear()
        self._kinds.clear()
        self.clear_plans()

    def clear_plans(self) -> None:
        """Forget every cached plan (the next call of each pair plans again)."""
        self.plans.clear()
        self.fast.clear()

    def _store(self, x: Any, target: str, tgt: str, device: Any, copy: bool | None,
               fn: Callable[[Any], Any], fast: Callable[[Any], Any] | None = None) -> None:
        """Cache a plan under the canonical name ``tgt``; the name as typed (``target``, an
        alias such as ``"pt"``) is an entry for the same plan, so aliases share plans."""
        tp = type(x)
        self.plans[(tp, tgt, device, copy)] = fn
        self._alias(target, tgt)
        if target != tgt:
            self.plans[(tp, target, device, copy)] = fn
        if device is None and copy is None:
            self.fast[tgt][tp] = fast or fn

    def _alias(self, target: str, tgt: str) -> None:
        """``fast[target]`` is ``fast[tgt]`` itself (one dict of plans per framework)."""
        per_type = self.fast.get(tgt)
        if per_type is None:
            per_type = self.fast[tgt] = {}
        if target != tgt:
            self.fast[target] = per_type

    def _cached(self, x: Any, target: str, tgt: str, device: Any,
                copy: bool | None) -> Callable[[Any], Any] | None:
        """The plan cached for ``type(x)`` under the canonical name, now also under the name
        as typed; ``None`` if there is none yet."""
        key = (type(x), tgt, device, copy)
        fn = self.plans.get(key)
        if fn is not None and target != tgt:
            self.plans[(type(x), target, device, copy)] = fn
            self._alias(target, tgt)
        return fn

    def known(self) -> list[str]:
        return sorted(n for n, a in self.adapters.items() if a.kind != "source")

    # ---- names and kinds ----------------------------------------------------------
    def target(self, name: str) -> str:
        """The canonical framework name for a target name or alias (case-insensitive)."""
        if not isinstance(name, str):
            raise UnknownFrameworkError(
                f"target must be a framework name (str), got {type(name).__name__}; "
                f"known: {self.known()}")
        canon = self._names.get(name.lower())
        if canon is None or self.adapters[canon].kind == "source":
            targets = [a for a in self.adapters.values() if a.kind == "array"]
            from .names import did_you_mean  # the error path only: not loaded by a first call

            hint = did_you_mean(name, {n: a.name for a in targets for n in (a.name, *a.aliases)})
            raise UnknownFrameworkError(
                f"unknown target framework {name!r}{hint}; known: "
                f"{', '.join(sorted(a.name for a in targets))} (aliases such as 'pt', 'np' "
                "and 'tf' work too, in any case)")
        return canon

    def kind(self, x: Any) -> str:
        """The adapter name owning ``x``; cached per type."""
        tp = type(x)
        try:
            k = self._kinds[tp]
        except KeyError:
            k = next((a.name for a in self.adapters.values() if a.owns(x)), None)
            if k is not None and not self.adapters[k].per_value_kind:
                self._kinds[tp] = k
        if k is None:
            raise UnsupportedConversionError(
                f"interop does not know how to read a {tp.__module__}.{tp.__qualname__}: it is "
                "not an array of a known framework and speaks no DLPack, array interface or "
                f"buffer protocol; known frameworks: {self.known()}")
        return k

    # ---- routes ---------------------------------------------------------------------
    def _edges(self, device: str) -> list[Edge]:
        out = [e for e in self._direct if e.device == device]
        here = [a for a in self.adapters.values() if device in a.devices]
        for s in here:
            for t in here:
                if t is s:
                    continue
                if s.export_dlpack is not None and t.from_dlpack is not None and t.rules:
                    cost = DLPACK_COST
                    if s.exports_versioned_only and not t.rules.versioned:
                        cost += LEGACY_PENALTY
                    if s.hub or t.hub:
                        cost -= HUB_BONUS
                    out.append(_dlpack_edge(s, t, cost, device))
                if device != "cpu" and s.export_cai is not None and t.from_cai is not None:
                    out.append(_cai_edge(s, t, DLPACK_COST - HUB_BONUS * (s.hub or t.hub)))
        return out

    def route(self, source: str, target: str, device: str = "cpu") -> list[Edge] | None:
        """Cheapest chain of edges from ``source`` to ``target`` on ``device`` (``[]``: same).

        It needs no live value, so GPU plans can be inspected on a machine without a GPU.
        """
        key = (source, target, device)
        if key in self._routes:
            return self._routes[key]
        if source == target:
            return []
        edges = self._edges(device)
        out: dict[str, list[Edge]] = {}
        for e in edges:
            out.setdefault(e.source, []).append(e)
        best: dict[str, float] = {source: 0.0}
        queue: list[tuple[float, int, str, list[Edge]]] = [(0.0, 0, source, [])]
        counter = 1
        found = None
        while queue:
            cost, _, node, path = heapq.heappop(queue)
            if node == target:
                found = path
                break
            if cost > best.get(node, float("inf")):
                continue
            for e in out.get(node, []):
                c = cost + e.cost
                if c < best.get(e.target, float("inf")):
                    best[e.target] = c
                    heapq.heappush(queue, (c, counter, e.target, path + [e]))
                    counter += 1
        self._routes[key] = found
        return found

    # ---- running --------------------------------------------------------------------
    def runner(self, x: Any, target: str, device: Any, copy: bool | None,
               stream: Any, options: dict[str, Any] | None = None) -> Callable[[Any], Any]:
        """Build (and cache) the callable converting values of ``type(x)`` to ``target``."""
        with self._lock:
            src = self.kind(x)
            tgt = self.target(target)
            missing = self.adapters[tgt].missing()
            if missing:
                raise FrameworkMissingError(f"{src} -> {tgt}: {missing}")
            if copy not in (None, True, False):
                raise InteropError(f"copy must be None, True or False, got {copy!r}")
            adapter = self.adapters[src]
            why = _refusal(adapter, x, tgt)
            if why:
                raise UnsupportedConversionError(f"{src} -> {tgt}: {why}")
            if target != tgt and stream is None and not options:
                fn = self._cached(x, target, tgt, device, copy)  # planned under another name
                if fn is not None:
                    return fn
            if adapter.convert_table is not None:
                conv, opts = adapter.convert_table, dict(options or {})
                fn = lambda x: conv(x, tgt, copy=copy, device=device, **opts)  # noqa: E731
                if not opts:
                    self._store(x, target, tgt, device, copy, fn)
                return fn
            if options:
                from .names import CALL_OPTIONS, TABLE_OPTIONS, did_you_mean

                unknown = sorted(o for o in options if o not in TABLE_OPTIONS)
                if unknown:
                    raise InteropError(
                        f"unknown option {unknown[0]!r}"
                        f"{did_you_mean(unknown[0], CALL_OPTIONS + TABLE_OPTIONS)}; known: "
                        f"{', '.join(o + '=' for o in CALL_OPTIONS)} and, for tables and "
                        f"dataframes, {', '.join(o + '=' for o in TABLE_OPTIONS)}")
                raise InteropError(
                    f"options {sorted(options)} apply to tables and dataframes, not to a "
                    f"{src} value")
            target_adapter = self.adapters[tgt]
            have = adapter.device(x)
            move = _device_move(adapter, have, target_adapter, device)
            if stream is not None and have[0] == "cpu":
                raise InteropError(
                    f"stream={stream!r} was given for a CPU {src} value: streams order GPU "
                    "work only; pass stream=None for CPU data")
            if move is not None:
                return lambda x: self.move(src, x, tgt, move, copy)
            if stream is not None:
                stream = dlpack.stream_argument(stream, dlpack.Device.CUDA)
                return self._compile(src, tgt, copy, have[0], stream)
            fast = None
            if adapter.gpu_present():
                fn = self._dispatch(adapter, tgt, copy, device)
            else:
                fn = self._compile(src, tgt, copy, have[0])
                if copy is None and device is None:
                    fast = self._compile_fast(src, tgt, have[0])
            if not adapter.per_value_kind:
                self._store(x, target, tgt, device, copy, fn, fast)
            return fn

    def _dispatch(self, adapter: Adapter, tgt: str, copy: bool | None,
                  device: Any) -> Callable[[Any], Any]:
        """A plan that looks at each value's device (for frameworks on host and GPU)."""
        fns: dict[str, Callable[[Any], Any]] = {}
        target_adapter = self.adapters[tgt]

        def run(x: Any) -> Any:
            have = adapter.device(x)
            fn = fns.get(have[0])
            if fn is None:
                move = _device_move(adapter, have, target_adapter, device)
                if move is not None:
                    return self.move(adapter.name, x, tgt, move, copy)
                fn = fns[have[0]] = self._compile(adapter.name, tgt, copy, have[0])
            return fn(x)

        return run

    def _compile(self, src: str, tgt: str, copy: bool | None, device: str = "cpu",
                 stream: Any = None) -> Callable[[Any], Any]:
        edges = self.route(src, tgt, device)
        if edges is None:
            raise UnsupportedConversionError(
                f"no conversion path from {src} to {tgt} on {device}")
        if copy is True:
            return lambda x: self.copy_route(src, x, tgt, device)
        if not edges:
            return _identity
        if stream is not None:
            edges = [_with_stream(e, self.adapters, stream) for e in edges]
        fn: Callable[[Any], Any] | None = None
        for e in reversed(edges):
            fn = self._step(e, fn, tgt, copy, device)
        return fn

    def _compile_fast(self, src: str, tgt: str, device: str) -> Callable[[Any], Any] | None:
        """The ``copy=None`` plan of fast steps (:attr:`Edge.fast`), or ``None`` if a step
        has none (the checked plan then serves every call)."""
        steps: list[Callable[[Any], Any]] = []
        for e in self.route(src, tgt, device) or ():
            if e.fast is not None and steps and "before" in signature(e.fast).parameters:
                steps[-1] = e.fast(before=steps[-1])
            elif e.fast is not None:
                steps.append(e.fast())
            elif e.eafp or e.check is None:
                steps.append(e.convert)
            else:
                return None
        if not steps:
            return None
        if len(steps) == 1:
            return steps[0]
        if len(steps) == 2:
            first, second = steps
            return lambda x: second(first(x))

        def chain(x: Any) -> Any:
            for step in steps:
                x = step(x)
            return x

        return chain

    def _step(self, e: Edge, then: Callable[[Any], Any] | None, tgt: str,
              copy: bool | None, device: str) -> Callable[[Any], Any]:
        """One step of a plan, followed by ``then`` (the rest of the plan, already compiled),
        with as little work per call as the edge allows. An obstacle at this step hands the
        value, as it is here, to :meth:`obstacle`."""
        convert = e.convert
        if e.check is None and not e.eafp:
            if then is None:
                return convert
            return lambda x: then(convert(x))
        if e.check is None or (e.eafp and copy is None):
            def run_eafp(x: Any) -> Any:
                try:
                    y = convert(x)
                except NeedsCopy as nc:
                    return self.obstacle((nc.verdict, nc.reason), e, x, tgt, copy, device)
                return y if then is None else then(y)

            return run_eafp
        check = e.check
        if then is None:
            def run_checked(x: Any) -> Any:
                verdict = check(x)
                if verdict is None or (verdict[0] == COPIES and copy is None):
                    try:
                        return convert(x)
                    except NeedsCopy as nc:  # an eafp converter's safety net
                        verdict = (nc.verdict, nc.reason)
                return self.obstacle(verdict, e, x, tgt, copy, device)

            return run_checked

        def run_checked_then(x: Any) -> Any:
            verdict = check(x)
            if verdict is None or (verdict[0] == COPIES and copy is None):
                try:
                    y = convert(x)
                except NeedsCopy as nc:
                    verdict = (nc.verdict, nc.reason)
                else:
                    return then(y)
            return self.obstacle(verdict, e, x, tgt, copy, device)

        return run_checked_then

    def obstacle(self, verdict: tuple[str, str], edge: Edge, x: Any, tgt: str,
                 copy: bool | None, device: str = "cpu") -> Any:
        """Act on a failed zero-copy check: raise, or take the copy route when allowed."""
        what, reason = verdict
        where = f"{edge.source} -> {edge.target} ({edge.via})"
        if what == UNSUPPORTED:
            raise UnsupportedConversionError(f"{where}: {reason}")
        if what == NULLS:
            raise NullsError(f"{where}: {reason}")
        if copy is False:
            raise ZeroCopyError(f"copy=False but {where} needs a copy: {reason}")
        if what == COPIES:
            return self._finish(edge, edge.convert(x), tgt, copy, device)
        return self.copy_route(edge.source, x, tgt, device)

    def _finish(self, edge: Edge, x: Any, tgt: str, copy: bool | None, device: str) -> Any:
        rest = self.route(edge.target, tgt, device)
        return self._compile(edge.target, tgt, copy, device)(x) if rest else x

    def copy_route(self, src: str, x: Any, tgt: str, device: str = "cpu") -> Any:
        """One copy into a fresh compact buffer on the hub (NumPy on the host, CuPy on a
        GPU), then zero-copy on to the target."""
        if device == "cpu":
            from .host import fresh_copy

            try:
                arr = self.adapters[src].to_numpy(x)
            except NeedsCopy as nc:  # to host NumPy is the copy: what it refuses is refused
                raise UnsupportedConversionError(f"{src} -> numpy: {nc.reason}") from None
            hub, arr = "numpy", fresh_copy(arr, self.narrowing(arr.dtype, tgt, warn=True))
        elif _empty(x):  # no bytes to move, and an empty device buffer may not export
            adapter = self.adapters[src]
            arr = adapter.to_numpy(x)
            narrow = self.narrowing(arr.dtype, tgt, warn=True)
            return self.adapters[tgt].to_device(arr if narrow is None else arr.astype(narrow),
                                                adapter.device(x)[1])
        else:
            hub, arr = "cupy", self._compile(src, "cupy", None, device)(x)
            arr = _cupy_fresh(arr, self.narrowing(arr.dtype, tgt, warn=True))
        if tgt == hub:
            return arr
        edges = self.route(hub, tgt, device)
        if edges is None:
            raise UnsupportedConversionError(f"no conversion path from {hub} to {tgt}")
        for e in edges:
            verdict = e.check(arr) if e.check is not None else None
            if verdict is not None and verdict[0] not in (COPIES,):
                if verdict[0] == UNSUPPORTED:
                    raise UnsupportedConversionError(
                        f"{e.source} -> {e.target} ({e.via}): {verdict[1]}")
                raise InteropError(  # pragma: no cover - a fresh buffer meets every rule
                    f"internal: a fresh buffer still failed {e.via}: {verdict[1]}")
            arr = e.convert(arr)
        return arr

    def narrowing(self, dtype: Any, tgt: str, warn: bool = False) -> str | None:
        """The narrower dtype string ``tgt`` holds ``dtype`` as (JAX with 64-bit types off),
        or ``None``; ``warn``: emit the :class:`~interop.errors.NarrowingWarning` saying so."""
        rules = self.adapters[tgt].rules
        if rules is None or rules.narrows is None:
            return None
        narrow = rules.narrows(dlpack.typestr_of(dtype))
        if narrow is None:
            return None
        if warn:
            from .narrowing import warn as warn_narrowing

            warn_narrowing(narrow[1])
        return narrow[0]

    def move(self, src: str, x: Any, tgt: str, where: tuple[str, int],
             copy: bool | None) -> Any:
        """Copy a value to another device (``where``), as ``device=`` asked."""
        if copy is False:
            to = "the current CUDA device" if where[1] is None else f"{where[0]}:{where[1]}"
            why = (f" ({tgt} holds CUDA device memory only)" if where[1] is None else "")
            raise ZeroCopyError(f"copy=False, but moving {src} data to {to}{why} copies it")
        arr = self.adapters[src].to_numpy(x)
        if where[0] == "cpu":
            return self.copy_route("numpy", arr, tgt) if copy else \
                self._compile("numpy", tgt, None)(arr)
        if where[1] is None:  # the current device, for a device-only target
            where = ("cuda", current_cuda_device(tgt))
        require_cuda(where[1])
        narrow = self.narrowing(arr.dtype, tgt, warn=True)
        return self.adapters[tgt].to_device(arr if narrow is None else arr.astype(narrow),
                                            where[1])

    # ---- explaining -----------------------------------------------------------------
    def explain(self, x: Any, target: str, device: Any = None,
                copy: bool | None = None, options: dict[str, Any] | None = None) -> Plan:
        """The plan for this value: steps, zero-copy or not, reasons and hazards."""
        from .plan import Plan, Step  # loaded by the first explain, not by every first call

        src = self.kind(x)
        tgt = self.target(target)
        adapter = self.adapters[src]
        missing = self.adapters[tgt].missing()
        if missing:
            return Plan(src, tgt, (), False, (missing,), supported=False, error="missing")
        why = _refusal(adapter, x, tgt)
        if why:
            return Plan(src, tgt, (), False, (why,), supported=False, error=UNSUPPORTED)
        if adapter.explain_table is not None:
            return adapter.explain_table(x, tgt, copy=copy, **(options or {}))
        have = adapter.device(x)
        move = _device_move(adapter, have, self.adapters[tgt], device)
        if move is not None:
            if move[1] is None:  # host data for a device-only target
                step = Step(src, tgt, "copy to the current CUDA device", True)
                why = (f"{tgt} holds CUDA device memory only: the host data is copied to the "
                       f"current CUDA device, as {tgt} itself does (device='cuda:N' picks one)")
                if copy is not False and not cuda_device_count():
                    # (copy=False is refused first, as the conversion itself refuses it)
                    return Plan(src, tgt, (step,), False, (why, NO_CUDA), supported=False,
                                error="device")
            else:
                if copy is not False and move[0] == "cuda" and move[1] >= cuda_device_count():
                    return Plan(src, tgt, (), False, (f"device={device!r}: no such CUDA "
                                                      "device on this machine",),
                                supported=False, error="device")
                step = Step(src, tgt, f"copy to {move[0]}:{move[1]}", True)
                why = f"device={device!r} moves the data from {have[0]}:{have[1]}"
            return Plan(src, tgt, (step,), False, (why,), supported=copy is not False,
                        error=None if copy is not False else "zero-copy")
        dev = have[0]
        edges = self.route(src, tgt, dev)
        if edges is None:
            return Plan(src, tgt, (), False, (f"no conversion path from {src} to {tgt}",),
                        (), supported=False)
        if copy is True:
            return self._copy_plan(src, tgt, ["copy=True asks for a fresh buffer"], [], [],
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
                if what == COPY_ROUTE:  # the result shares nothing: no sharing hazards
                    return self._copy_plan(e.source, tgt, reasons, [], steps,
                                           origin=src, device=dev, value=v)
                steps.append(Step(e.source, e.target, e.via, copies=True))
            else:
                steps.append(Step(e.source, e.target, e.via))
            if i + 1 < len(edges):
                v = self.adapters[e.source].preview(v) if adapter.consumable and i == 0 \
                    else e.convert(v)
        if not edges:
            steps.append(Step(src, tgt, "identity"))
        return Plan(src, tgt, tuple(steps), zero_copy, tuple(reasons),
                    tuple(hazards) if zero_copy else ())  # a copy shares nothing

    def _copy_plan(self, at: str, tgt: str, reasons: list[str], hazards: list[str],
                   steps: list[Step], origin: str | None = None, device: str = "cpu",
                   value: Any = None) -> Plan:
        from .plan import Plan, Step

        refused = self._refused_after_copy(at, value, tgt) if device == "cpu" else None
        if refused is not None:
            return Plan(origin or at, tgt, tuple(steps), False, (*reasons, refused[1]),
                        tuple(hazards), supported=False, error=refused[0])
        steps = list(steps)
        hub = "numpy" if device == "cpu" else "cupy"
        if at != hub:
            steps.append(Step(at, hub, "to host NumPy" if hub == "numpy" else "to CuPy"))
        fresh = "fresh aligned copy"
        narrow = self._plan_narrowing(at, value, tgt)
        if narrow is not None:
            fresh += f", cast to {narrow[0]}"
            if narrow[1] not in reasons:
                reasons = [*reasons, narrow[1]]
        steps.append(Step(hub, hub, fresh, copies=True))
        for e in self.route(hub, tgt, device) or []:
            steps.append(Step(e.source, e.target, e.via))
        return Plan(origin or at, tgt, tuple(steps), False, tuple(reasons), tuple(hazards))

    def _plan_narrowing(self, at: str, value: Any, tgt: str) -> tuple[str, str] | None:
        """``(dtype name, why)`` of the cast the copy route will make for ``value`` (a value
        of ``at``) on its way to ``tgt``, or ``None``."""
        rules = self.adapters[tgt].rules
        if rules is None or rules.narrows is None or value is None:
            return None
        dtype = _dtype_string(self.adapters[at], value)
        narrow = rules.narrows(dtype) if dtype is not None else None
        if narrow is None:
            return None
        import numpy

        return numpy.dtype(narrow[0]).name, narrow[1]

    def _refused_after_copy(self, at: str, value: Any, tgt: str) -> tuple[str, str] | None:
        """Why :meth:`copy_route` would refuse ``value`` (``(UNSUPPORTED or NULLS, reason)``),
        judged as it runs: the whole value to host NumPy (nulls, strings, object dtypes show
        there), a fresh buffer of its shape and dtype as the target holds it (the values are
        not copied: no later check reads them), and the checks of the steps after it
        (dimensions, dtypes). A consumable value (a capsule) is read through its preview, so
        it stays unused."""
        from .host import fresh_buffer

        adapter = self.adapters[at]
        try:
            arr = adapter.preview(value) if adapter.consumable else adapter.to_numpy(value)
            arr = fresh_buffer(arr.shape, self.narrowing(arr.dtype, tgt) or arr.dtype)
        except NullsError as e:
            return NULLS, str(e)
        except InteropError as e:
            return UNSUPPORTED, str(e)
        except NeedsCopy as nc:
            return UNSUPPORTED, nc.reason
        for e in self.route("numpy", tgt, "cpu") or ():
            verdict = e.check(arr) if e.check is not None else None
            if verdict is not None and verdict[0] in (UNSUPPORTED, NULLS):
                return verdict[0], f"{e.source} -> {e.target} ({e.via}): {verdict[1]}"
            if verdict is not None and verdict[0] != COPIES:
                return None
            arr = e.convert(arr)
        return None


def _refusal(adapter: Adapter, x: Any, tgt: str) -> str | None:
    """Why ``x`` goes to no framework but its own (:attr:`Adapter.refuse`), or ``None``."""
    return adapter.refuse(x) if adapter.refuse is not None and tgt != adapter.name else None


def _dtype_string(adapter: Adapter, x: Any) -> str | None:
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


def _identity(x: Any) -> Any:
    return x


def _dlpack_edge(s: Adapter, t: Adapter, cost: float, device: str = "cpu") -> Edge:
    export, consume = s.export_dlpack, t.from_dlpack

    def convert(x: Any) -> Any:
        return consume(export(x))

    rules = t.rules if device == "cpu" else t.gpu_rules
    return Edge(s.name, t.name, f"DLPack: {t.dlpack_call}", convert,
                check=handover_check(s, rules), hazard=t.dlpack_hazard, cost=cost,
                device=device)


def _cai_edge(s: Adapter, t: Adapter, cost: float) -> Edge:
    export, consume = s.export_cai, t.from_cai

    def convert(x: Any) -> Any:
        return consume(export(x))

    return Edge(s.name, t.name, "CUDA Array Interface", convert,
                check=handover_check(s, t.gpu_rules),
                hazard=_cai_readonly_hazard(s, t), cost=cost, device="cuda")


def _cai_readonly_hazard(s: Adapter, t: Adapter) -> Callable[[Any], str | None] | None:
    """A read-only CAI source (``data[1]``) handed to a consumer that cannot say read-only."""
    if t.holds_read_only or s.view is None:
        return None
    view = s.view

    def hazard(x: Any) -> str | None:
        if view(x).readonly:
            return (f"the source is read-only (its CUDA Array Interface says so) and {t.name} "
                    "arrays cannot be: writes through the result change it")
        return None

    return hazard


def _with_stream(e: Edge, adapters: dict[str, Adapter], stream: Any) -> Edge:
    """The edge, exporting DLPack for the user's ``stream`` (CAI edges sync by themselves)."""
    if not e.via.startswith("DLPack"):
        return e
    from dataclasses import replace

    export = adapters[e.source].export_dlpack
    consume = adapters[e.target].from_dlpack
    legacy = not adapters[e.target].rules.versioned

    def convert(x: Any) -> Any:
        cap = dlpack.export(export(x), stream=stream, versioned=not legacy)
        return consume(dlpack.CapsuleProducer(cap))

    return replace(e, convert=convert)


def _empty(x: Any) -> bool:
    return any(n == 0 for n in getattr(x, "shape", (1,)))


def _cupy_fresh(x: Any, dtype: Any = None) -> Any:
    import cupy

    return cupy.array(x, dtype=dtype, copy=True, order="C")


def _device_move(src: Adapter, have: tuple[str, int], tgt: Adapter,
                 device: Any) -> tuple[str, int | None] | None:
    """Where ``device=`` moves the data (``None``: it stays); raises when it cannot stay.
    Host data for a target that holds device memory only (CuPy, Numba, cuDF) goes to the
    current CUDA device: ``("cuda", None)``."""
    if device is not None:
        kind, index = parse_device(device)
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
    if have[0] not in tgt.devices:
        raise DeviceError(
            f"the {src.name} value lives on {have[0]}:{have[1]} but {tgt.name} holds "
            f"{' / '.join(tgt.devices)} memory only: pass device='cpu' to copy it to the host"
            if tgt.devices == ("cpu",) else
            f"the {src.name} value lives on {have[0]}:{have[1]}; {tgt.name} holds "
            f"{list(tgt.devices)} memory: pass device=... to copy it")
    return None
