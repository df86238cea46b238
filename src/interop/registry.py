"""The registry: the adapters, their names, which one owns a value, and the plan cache.

Finding routes is :mod:`interop.routing`'s job, running them :mod:`interop.runner`'s and
explaining them :mod:`interop.explanation`'s; the default registry is built in
:mod:`interop.default`. A conversion is a dict lookup (the plan for the value's type and the
target) and the plan; the first call of a pair plans.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import update_wrapper
from typing import TYPE_CHECKING, Any

from . import composite
from .adapters.base import ArrayAdapter, CompositeAdapter, Edge, StructureAdapter
from .arguments import check_copy
from .cache import PlanCache
from .devices import device_name
from .errors import UnknownFrameworkError, UnsupportedConversionError
from .route import COMPOSITE, STRUCTURE, decide
from .routing import Routes
from .runner import Runner, Split

if TYPE_CHECKING:
    from .plan import Plan

AnyAdapter = ArrayAdapter | CompositeAdapter | StructureAdapter
Convert = Callable[[Any], Any]


class Registry:
    """All adapters, their routes, and the plans made so far."""

    def __init__(self) -> None:
        self.adapters: dict[str, AnyAdapter] = {}
        self._names: dict[str, str] = {}
        self._owners: dict[type, str | None] = {}
        self.routes = Routes(self.adapters)
        self.runner = Runner(self.adapters, self.routes)
        self.runner.split = _splitting(self)
        self.cache = PlanCache()
        """The plans made so far (a pair's later calls look them up)."""
        self._lock = threading.RLock()
        self.builders: dict[tuple[str, str], CompositeAdapter] = {}
        """The composite kind that builds values of ``(framework, layout)``."""
        self.within: dict[str, list[CompositeAdapter]] = {}
        """The composite kinds of each framework whose values of several buffers share its
        arrays' type (torch's sparse tensors, pyarrow's chunked list columns), in the order
        registered: each tells its values apart (:meth:`inner`)."""
        self.convert = _converter(self)
        """``to_framework`` on this registry."""

    # ---- registration -------------------------------------------------------------------
    def add(self, adapter: AnyAdapter) -> None:
        """Register a framework (its names and its edges) or a kind of table."""
        with self._lock:
            self.adapters[adapter.name] = adapter
            for name in [n for n, a in self.adapters.items()
                         if isinstance(a, StructureAdapter) and a is not adapter]:
                self.adapters[name] = self.adapters.pop(name)  # structures are detected last
            for n in (adapter.name, *adapter.aliases):
                self._names[n.lower()] = adapter.name
            if isinstance(adapter, ArrayAdapter):
                self.routes.add(adapter.edges())
            if isinstance(adapter, CompositeAdapter):
                for layout in adapter.layouts if adapter.of else ():
                    self.builders[(adapter.of, layout)] = adapter
                    for served in adapter.serves:  # (a framework's own kind comes first)
                        self.builders.setdefault((served, layout), adapter)
                if adapter.within:
                    kinds = self.within.setdefault(adapter.of or adapter.home, [])
                    kinds[:] = [k for k in kinds if k.name != adapter.name] + [adapter]
            self._changed()

    def add_edge(self, edge: Edge) -> None:
        """Register one conversion step; it wins over generic paths of higher cost."""
        with self._lock:
            for n in (edge.source, edge.target):
                if n not in self.adapters:
                    raise UnknownFrameworkError(f"unknown framework {n!r}; known: {self.known()}")
            self.routes.add([edge])
            self._changed()

    def _changed(self) -> None:
        self.routes.changed()
        self._owners.clear()
        self.clear_plans()

    def clear_plans(self) -> None:
        """Forget every plan made (the next call of each pair plans again)."""
        self.cache.clear()
        self.runner.copies.clear()
        self.runner.described.clear()

    def known(self) -> list[str]:
        return sorted(n for n, a in self.adapters.items() if a.target)

    # ---- names and owners -------------------------------------------------------------------
    def target(self, name: str) -> str:
        """The framework name for a target name or alias (case-insensitive)."""
        if not isinstance(name, str):
            raise UnknownFrameworkError(
                f"target must be a framework name (str), got {type(name).__name__}; "
                f"known: {self.known()}")
        canon = self._names.get(name.lower())
        if canon is None or not self.adapters[canon].target:
            targets = [a for a in self.adapters.values() if a.target]
            from .names import did_you_mean  # the error path only: not loaded by a first call

            hint = did_you_mean(name, {n: a.name for a in targets for n in (a.name, *a.aliases)})
            raise UnknownFrameworkError(
                f"unknown target framework {name!r}{hint}; known: "
                f"{', '.join(sorted(a.name for a in targets))} (aliases such as 'pt', 'np' "
                "and 'tf' work too, in any case)")
        return canon

    def owner(self, x: Any) -> str:
        """The name of the adapter owning ``x``; found once per type."""
        name = self.find_owner(x)
        if name is None:
            tp = type(x)
            raise UnsupportedConversionError(
                f"interop does not know how to read a {tp.__module__}.{tp.__qualname__}: it is "
                "not an array of a known framework and speaks no DLPack, array interface or "
                f"buffer protocol; known frameworks: {self.known()}")
        return name

    def find_owner(self, x: Any) -> str | None:
        """The name of the adapter owning ``x``, or ``None`` when none does."""
        tp = type(x)
        try:
            return self._owners[tp]
        except KeyError:
            name = next((a.name for a in self.adapters.values() if a.owns(x)), None)
            if name is not None and not self.adapters[name].per_value_owner:
                self._owners[tp] = name
            return name

    def composite(self, x: Any) -> CompositeAdapter | None:
        """The composite kind of ``x``: its owner's, or, for a value of several buffers of an
        array type (a torch sparse tensor), the kind :attr:`within` that framework."""
        name = self.owner(x)
        adapter = self.adapters[name]
        if isinstance(adapter, CompositeAdapter):
            return adapter
        return self.inner(name, x)

    def inner(self, name: str, x: Any) -> CompositeAdapter | None:
        """The composite kind :attr:`within` framework ``name`` that ``x`` is a value of (a
        torch sparse tensor: torch's sparse kind), or ``None`` (an array of ``name``)."""
        for kind in self.within.get(name, ()):
            if kind.is_value(x):
                return kind
        return None

    def builder(self, target: str, layout: str) -> CompositeAdapter | None:
        """The kind that builds ``layout`` values of framework ``target``, if any."""
        return self.builders.get((target, layout))

    def layouts(self, target: str) -> list[str]:
        """The layouts ``target`` builds composite values of."""
        return [layout for (of, layout) in self.builders if of == target]

    # ---- plans --------------------------------------------------------------------------------
    def plan_for(self, x: Any, target: str, device: Any, copy: bool | None, stream: Any,
                 options: dict[str, Any] | None = None) -> Convert:
        """The plan converting values of ``type(x)`` to ``target``: compiled from the call's
        route (:func:`~interop.route.decide`), and kept once made where it serves every
        later value of the type."""
        if device is not None:
            device = device_name(device)  # a framework's device object: plans kept by its string
        with self._lock:
            route = decide(self, x, target, device, copy, stream, options)
            route.raise_failure()
            tgt = route.target
            kept = stream is None and not options and not route.adapter.per_value_owner
            if kept and target != tgt:
                fn = self.cache.alias(type(x), target, tgt, device, copy)  # another name's
                if fn is not None:
                    return fn
            if route.kind == STRUCTURE:
                fn = route.adapter.plan(self, x, target, tgt, device, copy, stream, options)
            elif route.kind == COMPOSITE:
                fn = self.composite_plan(route.adapter, tgt, device, copy, stream, options)
                if kept is False and route.adapter.within and stream is None and not options \
                        and getattr(self.adapters[route.source], "refuse", None) is None:
                    fn = self._within_entry(route.adapter, fn, x, target, device, copy)
                    self.cache.keep(type(x), target, tgt, device, copy, fn)
            else:
                tp = type(x)

                def keep(fn: Convert) -> None:
                    self.cache.keep(tp, target, tgt, device, copy, fn)

                fn = self.runner.plan(route, copy, tp, keep if kept else None)
            if kept:
                self.cache.keep(type(x), target, tgt, device, copy, fn)
            return fn

    def composite_plan(self, adapter: CompositeAdapter, tgt: str, device: Any,
                       copy: bool | None, stream: Any, options: dict[str, Any] | None) -> Convert:
        """The plan of ``adapter``'s values to ``tgt`` (:func:`interop.composite.plan`); kept
        per kind (and ``device``, ``copy``) for a kind :attr:`within` a framework's array type,
        whose plans are not kept per type (that type's other values take other plans)."""
        if not adapter.within or stream is not None or options:
            return composite.plan(self, adapter, tgt, device, copy, stream, options)
        key = (adapter.name, tgt, device, copy)
        fn = self.cache.composites.get(key)
        if fn is None:
            fn = composite.plan(self, adapter, tgt, device, copy, None, None)
            self.cache.composites[key] = fn
        return fn

    def _within_entry(self, inner: CompositeAdapter, fn: Convert, x: Any, target: str,
                      device: Any, copy: bool | None) -> Convert:
        """What is kept for ``type(x)`` when its first value was of the kind ``inner`` within
        its framework: ``fn`` for the values ``inner`` tells apart, a planned call for the
        others (whose own plan, once made, replaces this one and diverts the kind's values
        back to ``fn``: :func:`_splitting`)."""
        several = inner.is_value

        def entry(v: Any) -> Any:
            if several(v):
                return fn(v)
            return self.plan_for(v, target, device, copy, None)(v)

        return entry

    def leaf_plan(self, x: Any, target: str, device: Any, copy: bool | None,
                  stream: Any, options: dict[str, Any] | None = None) -> Convert:
        """What a structure's plan binds for its leaves of ``type(x)``: the plan kept for the
        type (its fast form made now), or, where plans depend on each value or call (a device
        move, a stream, the leaf's own options such as a DALI batch's ``ragged=``, an owner
        decided per value), a call planning each value."""
        per_call = stream is not None or bool(options)
        kept = None if per_call else self.cache.get(type(x), target, device, copy)
        if kept is None:
            self.plan_for(x, target, device, copy, stream, options)  # raises if it cannot go
            if per_call:
                return lambda v: self.plan_for(v, target, device, copy, stream, options)(v)
            kept = self.cache.get(type(x), target, device, copy)
            if kept is None:  # not kept: planned per value
                return lambda v: self.convert(v, target, device=device, copy=copy)
        settle = getattr(kept, "settle", None)
        return settle() if settle is not None else kept

    def declared_options(self) -> dict[str, tuple[str, ...]]:
        """The options table adapters declare for themselves (not the table options), by
        adapter name: a DALI batch's ``ragged=`` and ``fill_value=``."""
        return {a.name: a.options for a in self.adapters.values()
                if isinstance(a, CompositeAdapter) and a.options}

    def explain(self, x: Any, target: str, device: Any = None, copy: bool | None = None,
                options: dict[str, Any] | None = None, stream: Any = None) -> Plan:
        """The plan for this value: steps, zero-copy or not, reasons and hazards."""
        from .explanation import explain  # loaded by the first explain, not by a first call

        if device is not None:
            device = device_name(device)
        return explain(self, x, target, device, copy, options, stream)


def _splitting(reg: Registry) -> Callable[[Any, bool | None], Split | None]:
    """The runner's :attr:`~interop.runner.Runner.split`: for a route out of a framework
    whose values of several buffers share its arrays' type (torch's sparse tensors), which
    values those are and the plan they take instead (their composite route)."""
    def split(route: Any, copy: bool | None) -> Split | None:
        kinds = reg.within.get(route.source)
        if not kinds:
            return None
        source, target, device = route.source, route.target, route.device

        def divert(x: Any) -> Any:
            kind = reg.inner(source, x)
            assert kind is not None
            return reg.composite_plan(kind, target, device, copy, None, None)(x)

        if len(kinds) == 1:
            return kinds[0].is_value, divert
        tests = tuple(k.is_value for k in kinds)
        return (lambda x: any(t(x) for t in tests)), divert

    return split


def _converter(reg: Registry) -> Callable[..., Any]:
    """``to_framework`` on ``reg``: a call with no keywords is one dict test, two lookups and
    the plan; any other goes on to the full call, whose name, signature, annotations and
    docstring it carries (``functools.update_wrapper``: ``inspect.signature`` and ``help``
    show the keywords). Keyword-only parameters cost a lookup in ``__kwdefaults__`` each per
    call, so the call without keywords takes ``**options`` only."""
    plans, other, plan_for = reg.cache.plain, reg.cache.other, reg.plan_for

    def to_framework(x: Any, target: str, *, device: Any = None,
                     copy: bool | None = None, stream: Any = None, **options: Any) -> Any:
        """Convert ``x`` to framework ``target``, without copying whenever the layouts allow.

        ``copy=None`` copies only when it must (``explain`` says why), ``copy=False`` raises
        :class:`~interop.errors.ZeroCopyError` instead, ``copy=True`` always returns a fresh
        buffer. ``device=None`` keeps the data where it is; ``device="cpu"``, ``"cuda:N"`` or a
        framework's device object (``torch.device``, a JAX ``Device``, ``cupy.cuda.Device``)
        names where the result lives (moving between devices is a copy). ``stream`` orders GPU
        work.
        ``options`` (``nulls=``, ``fill_value=``, ``columns=``) apply to tables and
        dataframes. A structure (nested dicts, lists, tuples, pytrees) comes back the same
        with each array leaf converted; ``structure="tree"`` or ``"table"`` says how to read
        a flat dict of arrays (:mod:`interop.structures.adapter`).
        """
        if device is None and copy is None and stream is None and not options:
            try:
                plan = plans[target][type(x)]
            except (KeyError, TypeError):  # a first call, or an unhashable target (named below)
                pass
            else:
                return plan(x)
        elif stream is None and not options:
            check_copy(copy)  # before the lookup: 1 would find the plan kept for True
            try:
                plan = other.get((type(x), target, device, copy))
            except TypeError:  # an unhashable argument, named by plan_for
                plan = None
            if plan is not None:
                return plan(x)
        return plan_for(x, target, device, copy, stream, options)(x)

    def fast(x: Any, target: str, **options: Any) -> Any:
        if not options:
            try:
                plan = plans[target][type(x)]
            except (KeyError, TypeError):  # a first call, or an unhashable target
                pass
            else:
                return plan(x)
        return to_framework(x, target, **options)

    return update_wrapper(fast, to_framework)
