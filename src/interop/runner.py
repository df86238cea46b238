"""The runner: compiles a route into the callable a conversion runs, and runs what no route
does alone (the copy route :mod:`interop.copyroute` describes, device moves).

A compiled plan is a chain of checked steps (each asks its edge's check, then converts or
acts on the verdict) and, for ``copy=None``, their fast form (:mod:`interop.fastplan`).
:mod:`interop.explanation` walks the same edges with the same checks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .adapters.base import (
    NEEDS_COPY,
    NULLS,
    STEP_COPIES,
    UNSUPPORTED,
    Edge,
    NeedsCopy,
)
from .adapters.edge import CAI, DLPACK
from .copyroute import CopyRoute, describe, empty
from .errors import (
    FrameworkMissingError,
    InteropError,
    NullsError,
    UnsupportedConversionError,
    ZeroCopyError,
)
from .protocols import dlpack

if TYPE_CHECKING:
    from .route import Route
    from .routing import Routes

Convert = Callable[[Any], Any]


class Compiled:
    """A route made runnable: its ``edges`` (what ``explain`` walks), ``run`` (the checked
    plan) and ``fast`` (makes the plan's fast form; ``None``: the checked plan serves)."""

    __slots__ = ("edges", "run", "fast")

    def __init__(self, edges: tuple[Edge, ...], run: Convert,
                 fast: Callable[[], Convert] | None = None) -> None:
        self.edges, self.run, self.fast = edges, run, fast


HOST = ("cpu", 0)
"""Where a host value lives, as :attr:`ArrayAdapter.device` says it."""


class Runner:
    """Compiles routes of ``routes`` between the ``adapters`` and runs the copy route."""

    def __init__(self, adapters: dict[str, Any], routes: Routes) -> None:
        self.adapters = adapters
        self.routes = routes
        self._accepting: dict[int, tuple[Edge, tuple[type, ...], frozenset | None]] = {}
        """Per edge (by id: an edge's hash reads every field), what its ``accepts`` takes."""
        self.copies: dict[tuple[str, str, str, int | None, bool], Convert] = {}
        """The copy routes' plans made (:meth:`copying`), kept until the plans are cleared."""
        self.described: dict[tuple[str, str, str, bool], CopyRoute] = {}
        """The copy routes described (:meth:`copy_description`), kept as long."""
        self.split: Callable[[Route, bool | None], Split | None] = lambda route, copy: None
        """``(route, copy)`` -> ``(several, divert)``: which values of the source's array type
        are of several buffers (a torch sparse tensor) and the plan they take instead (set
        by the registry), or ``None``. The route's plans test it at their checked entry, and
        their fast form where its first step would take any value."""

    # ---- compiling -----------------------------------------------------------------------
    def compile(self, src: str, tgt: str, copy: bool | None, device: str = "cpu",
                stream: Any = None, source_type: type | None = None,
                edges: tuple[Edge, ...] | None = None,
                split: Split | None = None) -> Compiled:
        """The plan of ``edges`` (by default the route from ``src`` to ``tgt`` on ``device``):
        its checked steps and, when ``copy`` is ``None`` and a ``source_type`` is given,
        what makes their fast form (made when asked: a pair converted once never needs
        it). ``split`` wraps the checked entry (:attr:`split`)."""
        if edges is None:
            edges = self.routes.route(src, tgt, device)
        if edges is None:
            raise UnsupportedConversionError(
                f"no conversion path from {src} to {tgt} on {device}")
        entry = _diverting(split)
        if copy is True:
            if device == "cpu":  # no value on the host is an empty device value
                return Compiled(tuple(edges), entry(self.copying(src, tgt, device, stream)))
            return Compiled(tuple(edges), entry(
                lambda x: self.copy_route(src, x, tgt, device, stream)))
        if not edges:
            return Compiled((), entry(_identity))
        if stream is not None:
            edges = [self._with_stream(e, stream) for e in edges]

        def obstacle(verdict: tuple[str, str], e: Edge, x: Any) -> Any:
            return self.obstacle(verdict, e, x, tgt, copy, device, stream)

        checked, calls = self._steps(edges, copy, obstacle)
        checked[0] = entry(checked[0])
        if copy is not None or source_type is None:
            return Compiled(tuple(edges), checked[0])

        def fast() -> Convert:
            from .fastplan import fast_plan  # loaded by a pair's second call, not its first

            return fast_plan([(e.accepts, e.check is None, c, k)
                              for e, c, k in zip(edges, calls, checked)], source_type,
                             split if edges[0].check is None else None) or checked[0]

        return Compiled(tuple(edges), checked[0], fast)

    def plan(self, route: Route, copy: bool | None, source_type: type | None = None,
             keep: Callable[[Convert], None] | None = None) -> Convert:
        """The plan of an array ``route`` (of ``EDGES`` or ``MOVE``): the move, a plan that
        reads each value's device (:meth:`dispatch`), or the compiled route (ordered on the
        route's stream, where the call names one). ``keep``: where
        the plan is kept for values of ``source_type`` (the fast form is made, from the
        second value on, only then)."""
        if route.per_value:
            return self.dispatch(route, copy, source_type if keep is not None else None)
        split = self.split(route, copy)
        if route.move is not None:
            name, tgt, move = route.source, route.target, route.move
            have = route.have  # read once, by the route (a capsule's read consumes it)
            return _diverting(split)(lambda x: self.move(name, x, tgt, move, copy, have))
        stream = route.stream  # the DLPack stream number (decide read stream=)
        route.raise_no_path()
        compiled = self.compile(route.source, route.target, copy, route.have[0], stream,
                                source_type, route.edges, split)
        if compiled.fast is None or keep is None:
            return compiled.run
        return promoting(compiled.run, compiled.fast, keep)

    def dispatch(self, route: Route, copy: bool | None,
                 source_type: type | None = None) -> Convert:
        """A plan that reads each value's device (for frameworks on host and GPU, and for
        every ``device=``): one plan per device the values live on (the route from there,
        :meth:`~interop.route.Route.on`), its fast form from the second value on, for
        values of ``source_type``."""
        plans: dict[tuple[str, int], Convert] = {}
        device_of = route.adapter.device

        def plan(x: Any, have: tuple[str, int]) -> Any:
            fn = plans.get(have)
            if fn is None:
                def keep(fn: Convert) -> None:
                    plans[have] = fn

                fn = plans[have] = self.plan(route.on(have), copy, source_type,
                                             keep if source_type is not None else None)
            return fn(x)

        def run(x: Any) -> Any:
            return plan(x, device_of(x))

        on_host = route.adapter.on_host
        if on_host is None or route.device is not None:  # device= reads each value's own
            return run

        def run_host_first(x: Any) -> Any:  # a host value costs one cheap test more
            fn = plans.get(HOST)
            if fn is not None and on_host(x):
                return fn(x)
            return run(x)

        def each(xs: Any, out: list) -> list:  # (see fastplan: the plan over a structure's
            fn = plans.get(HOST)               # leaves of one type)
            many = getattr(fn, "each", None)
            if many is not None and all(map(on_host, xs)):  # each would take the host plan
                return many(xs, out)
            out.extend(map(run_host_first, xs))
            return out

        run_host_first.each = each  # type: ignore[attr-defined]
        return run_host_first

    def _steps(self, edges: Sequence[Edge], copy: bool | None,
               obstacle: Callable[[tuple[str, str], Edge, Any], Any]
               ) -> tuple[list[Convert], list[Convert]]:
        """The checked steps of ``edges`` (each step runs the rest of the chain after it) and
        their edges' conversions: each step's check decides, and an obstacle is handed to
        ``obstacle(verdict, edge, value)`` with the value as it is there; a step whose check
        says it copies converts where ``copy`` is ``None``."""
        calls = [e.converter() for e in edges]
        checked: list[Convert] = []
        then: Convert | None = None
        for e, call in zip(reversed(edges), reversed(calls)):
            then = _checked_step(e, call, then, copy, obstacle)
            checked.append(then)
        checked.reverse()
        return checked, calls

    def own_stream(self, e: Edge) -> str:
        """Why edge ``e``'s consumer takes no stream from the user and orders the import on
        its own (:attr:`ConsumerRules.own_stream`), or ``""``."""
        if e.protocol != DLPACK:
            return ""
        target = self.adapters[e.target]
        rules = target.rules if e.device == "cpu" else target.gpu_rules
        return rules.own_stream if rules is not None else ""

    def _with_stream(self, e: Edge, stream: Any) -> Edge:
        """The edge, ordered for the user's ``stream``: a DLPack export for it, or a CUDA Array
        Interface import on it (the consumer waits for the producer's stream). A consumer
        that orders the import on its own stream (:meth:`own_stream`) keeps the plain edge."""
        from dataclasses import replace

        if e.protocol == CAI:
            export_cai = self.adapters[e.source].export_cai
            from_cai = self.adapters[e.target].from_cai

            def on_stream(x: Any) -> Any:
                return from_cai(export_cai(x), stream)

            return replace(e, converter=lambda: on_stream)
        if e.protocol != DLPACK or self.own_stream(e):
            return e
        source = self.adapters[e.source]
        export, order = source.export_dlpack, source.export_stream
        consume = self.adapters[e.target].from_dlpack
        target = self.adapters[e.target]
        legacy = not (target.rules if e.device == "cpu" else target.gpu_rules).versioned

        def convert(x: Any) -> Any:
            on = stream if order is None else order(x, stream)
            cap = dlpack.export(export(x), stream=on, versioned=not legacy)
            return consume(dlpack.CapsuleProducer(cap))

        return replace(e, converter=lambda: convert)

    # ---- acting on a verdict ---------------------------------------------------------------
    def obstacle(self, verdict: tuple[str, str], edge: Edge, x: Any, tgt: str,
                 copy: bool | None, device: str = "cpu", stream: int | None = None) -> Any:
        """Act on a failed zero-copy check: raise, or take the copy route when allowed."""
        what, reason = verdict
        where = f"{edge.source} -> {edge.target} ({edge.via})"
        if what == UNSUPPORTED:
            raise UnsupportedConversionError(f"{where}: {reason}")
        if what == NULLS:
            raise NullsError(f"{where}: {reason}")
        if copy is False:
            raise ZeroCopyError(f"copy=False but {where} needs a copy: {reason}")
        if what == STEP_COPIES:  # with copy=True: the step's own copy, then the rest
            y = edge.convert(x)
            rest = self.routes.route(edge.target, tgt, device)
            return self.compile(edge.target, tgt, copy, device, stream).run(y) if rest else y
        return self.copy_route(edge.source, x, tgt, device, stream)

    def copy_route(self, src: str, x: Any, tgt: str, device: str = "cpu",
                   stream: int | None = None) -> Any:
        """One copy into a fresh compact buffer (with NumPy on the host; on a GPU with the
        source's own framework, or the copy hub), then zero-copy on to the target (ordered on
        ``stream`` when one is given): the :class:`~interop.copyroute.CopyRoute`
        :func:`~interop.copyroute.describe` makes, run by the plan :meth:`copying` keeps."""
        return self.copying(src, tgt, device, stream, empty(x, device))(x)

    def copying(self, src: str, tgt: str, device: str = "cpu", stream: int | None = None,
                empty: bool = False) -> Convert:
        """The plan that runs the copy route of ``src`` values to ``tgt`` on ``device``
        (``empty``: device values of no elements), made once and kept until the plans are
        cleared."""
        key = (src, tgt, device, stream, empty)
        run = self.copies.get(key)
        if run is None:
            route = self.copy_description(src, tgt, device, empty)
            if route.missing is not None:
                raise FrameworkMissingError(route.missing)
            run = self.copies[key] = self._copy_plan(route, stream)
        return run

    def copy_description(self, src: str, tgt: str, device: str = "cpu",
                         empty: bool = False) -> CopyRoute:
        """The copy route of ``src`` values to ``tgt`` on ``device``, as
        :func:`~interop.copyroute.describe` makes it, kept until the plans are cleared (one
        that finds no framework to copy with is made again each time); ``explain`` renders
        what this returns."""
        key = (src, tgt, device, empty)
        route = self.described.get(key)
        if route is None:
            route = describe(self.adapters, self.routes, src, tgt, device, empty)
            if route.missing is None:
                self.described[key] = route
        return route

    def _copy_plan(self, route: CopyRoute, stream: int | None) -> Convert:
        """What runs ``route``: the value read where the hub copies it, one copy (cast as
        :meth:`CopyRoute.cast` says), then placed, or on along the route's edges."""
        from .host import fresh_copy

        src, hub = route.source, route.hub
        source = self.adapters[src]
        if route.empty:  # no bytes to move, and an empty device buffer may not export
            to_device = self.adapters[route.target].to_device

            def read_back(x: Any) -> Any:
                arr = source.to_numpy(x)
                narrow = route.cast(arr.dtype, warn=True)
                if narrow is not None:
                    arr = arr.astype(narrow[0])
                return to_device(arr, source.device(x)[1])

            return read_back
        onward = self._after_copy(route, stream)
        if route.device == "cpu":
            to_numpy = source.to_numpy
            place = self.adapters[route.target].place if route.placed else None

            def on_host(x: Any) -> Any:
                try:
                    arr = to_numpy(x)
                except NeedsCopy as nc:  # to host NumPy is the copy: what it refuses is refused
                    raise UnsupportedConversionError(f"{src} -> numpy: {nc.reason}") from None
                narrow = route.cast(arr.dtype, warn=True)
                arr = fresh_copy(arr, None if narrow is None else narrow[0])
                if place is not None:  # where the source is: its device, sharding
                    return place(arr, x)
                return onward(arr)

            return on_host
        maker = self.adapters[hub]
        reach = _identity if hub == src else self.compile(src, hub, False, route.device,
                                                            stream).run

        def on_device(x: Any) -> Any:
            try:
                arr = reach(x)
            except ZeroCopyError:  # it cannot reach the hub as it is: through the host
                arr = maker.to_device(source.to_numpy(x), source.device(x)[1])
            narrow = route.cast(maker.view(arr).dtype, warn=True)
            return onward(maker.device_copy(arr, None if narrow is None else narrow[0]))

        return on_device

    def _after_copy(self, route: CopyRoute, stream: int | None) -> Convert:
        """The checked steps of ``route``'s edges after the copy (ordered on ``stream``): a
        step that says it copies converts, a refusal raises (a fresh buffer meets every other
        rule)."""
        edges = route.edges
        if edges is None:
            why = route.no_path()

            def no_path(x: Any) -> Any:
                raise UnsupportedConversionError(why)

            return no_path
        if not edges:
            return _identity
        if stream is not None:
            edges = tuple(self._with_stream(e, stream) for e in edges)
        checked, _ = self._steps(edges, None, _unmet)
        return checked[0]

    def move(self, src: str, x: Any, tgt: str, where: tuple[str, int | None],
             copy: bool | None, have: tuple[str, int | None] = HOST) -> Any:
        """Copy a value living on ``have`` to another device (``where``), as ``device=``
        asked: the value read to the host once (:meth:`host`), one copy (cast as the target
        holds it), refused where the target refuses a fresh buffer (:meth:`refused`), then
        placed."""
        if copy is False:
            to = "the current CUDA device" if where[1] is None else f"{where[0]}:{where[1]}"
            why = (f" ({tgt} holds CUDA device memory only)" if where[1] is None else "")
            raise ZeroCopyError(f"copy=False, but moving {src} data to {to}{why} copies it")
        arr = self.host(src, x, copy, have)
        place = self.adapters[tgt].place
        if where[0] == "cpu" and place is None:  # device data to a framework of one CPU device
            return self.copy_route("numpy", arr, tgt) if copy else \
                self.compile("numpy", tgt, None).run(arr)
        route = self.copy_description("numpy", tgt)  # the host copy a move makes
        narrow = route.cast(arr.dtype, warn=True)
        if have[0] == "cpu":  # the source's own host memory (or a view of it)
            from .host import fresh_copy

            arr = fresh_copy(arr, narrow and narrow[0])
        elif narrow is not None:  # device data: already a host copy
            arr = arr.astype(narrow[0])
        refused = self.refused(arr, route.edges or ())
        if refused is not None:
            raise (NullsError if refused[0] == NULLS else UnsupportedConversionError)(
                refused[1])
        if where[0] == "cpu":
            return place(arr, where[1])  # onto CPU device N
        from . import devices

        index = devices.current_cuda_device(tgt) if where[1] is None else where[1]
        devices.require_cuda(index)
        return self.adapters[tgt].to_device(arr, index)

    def host(self, src: str, x: Any, copy: bool | None, have: tuple[str, int | None]) -> Any:
        """The value on the host as a NumPy array, read once, for a copy: a host value as its
        own plan to NumPy reads it (``copy=None``: nulls refused, as on its own device), else
        through ``to_numpy``, the copy route's read (``copy=True``: floats' nulls are NaN;
        device data: a host copy)."""
        if have[0] == "cpu" and copy is None:
            return self.compile(src, "numpy", None).run(x)
        try:
            return self.adapters[src].to_numpy(x)
        except NeedsCopy as nc:  # to host NumPy is the copy: what it refuses is refused
            raise UnsupportedConversionError(f"{src} -> numpy: {nc.reason}") from None

    def refused(self, arr: Any, edges: Sequence[Edge]) -> tuple[str, str] | None:
        """What the ``edges`` from host NumPy refuse of the fresh compact host array ``arr``
        (``(UNSUPPORTED or NULLS, why)``, naming the step), or ``None``: their checks, each
        step's value converted for the next, up to a step that copies. The copy's one judge:
        ``explain`` asks it of a buffer of the copy's shape and dtype, along the copy route's
        edges (:class:`~interop.copyroute.CopyRoute`)."""
        for i, e in enumerate(edges):
            verdict = None if e.check is None or self._accepted(e, arr) else e.check(arr)
            if verdict is not None and verdict[0] in (UNSUPPORTED, NULLS):
                return verdict[0], f"{e.source} -> {e.target} ({e.via}): {verdict[1]}"
            if verdict is not None and verdict[0] == NEEDS_COPY:
                return None
            if i + 1 < len(edges):
                arr = e.convert(arr)
        return None

    def _accepted(self, e: Edge, arr: Any) -> bool:
        """Whether ``e``'s :class:`~interop.adapters.edge.Accepts` takes ``arr`` (its exact
        type, dtype, flags and dimensions): then its check says ``None`` or ``STEP_COPIES``
        (the declaration's promise), and is not asked (a buffer view costs microseconds)."""
        accepts = e.accepts
        if accepts is None or accepts.unset:
            return False
        known = self._accepting.get(id(e))
        if known is None or known[0] is not e:
            known = self._accepting[id(e)] = (
                e, accepts.types(), accepts.dtypes() if accepts.dtypes is not None else None)
        _, types, dtypes = known
        return (type(arr) in types and (dtypes is None or arr.dtype in dtypes)
                and arr.flags.num & accepts.flags == accepts.flags
                and (accepts.ndim is None or arr.ndim == accepts.ndim))


def _identity(x: Any) -> Any:
    return x


def _checked_step(e: Edge, call: Convert, then: Convert | None, copy: bool | None,
                  obstacle: Callable[[tuple[str, str], Edge, Any], Any]) -> Convert:
    """Edge ``e``'s step, then ``then`` (the rest of the plan): its check decides, and an
    obstacle is handed to ``obstacle`` with the value as it is here."""
    check = e.check

    def step(x: Any) -> Any:
        verdict = check(x) if check is not None else None
        if verdict is None or (verdict[0] == STEP_COPIES and copy is None):
            try:
                y = call(x)
            except NeedsCopy as nc:
                verdict = (nc.verdict, nc.reason)
            else:
                return y if then is None else then(y)
        return obstacle(verdict, e, x)

    return step


def _unmet(verdict: tuple[str, str], e: Edge, x: Any) -> Any:
    """A step after the copy route's copy refuses the fresh buffer: only a value the target
    cannot hold at all (a fresh buffer meets every layout rule)."""
    if verdict[0] == UNSUPPORTED:
        raise UnsupportedConversionError(f"{e.source} -> {e.target} ({e.via}): {verdict[1]}")
    raise InteropError(  # pragma: no cover - a fresh buffer meets every rule
        f"internal: a fresh buffer still failed {e.via}: {verdict[1]}")


Split = tuple[Callable[[Any], bool], Convert]
"""``(several, divert)``: :attr:`Runner.split`'s answer."""


def _diverting(split: Split | None) -> Callable[[Convert], Convert]:
    """What wraps a plan's entry so that the values ``split`` names take its other plan."""
    if split is None:
        return _identity
    several, divert = split

    def wrap(fn: Convert) -> Convert:
        def plan(x: Any) -> Any:
            return divert(x) if several(x) else fn(x)

        return plan

    return wrap


def promoting(checked: Convert, make: Callable[[], Convert],
              keep: Callable[[Convert], None]) -> Convert:
    """The one promoter: a plan that runs ``checked`` on its first value and then, from the
    next, the fast form ``make()``, made once and handed to ``keep`` (which puts it where the
    plan is looked up). ``settle()`` makes and keeps the fast form at once, returning it."""
    def settle() -> Convert:
        fast = make()
        keep(fast)
        return fast

    def promote(x: Any) -> Any:
        return settle()(x)

    def first(x: Any) -> Any:
        keep(promote)
        return checked(x)

    first.settle = promote.settle = settle  # type: ignore[attr-defined]
    return first
