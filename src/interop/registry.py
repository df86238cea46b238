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

from .adapters.base import ArrayAdapter, Edge, StructureAdapter, TableAdapter
from .arguments import check_copy
from .devices import device_name
from .errors import (
    FrameworkMissingError,
    InteropError,
    UnknownFrameworkError,
    UnsupportedConversionError,
)
from .routing import Routes
from .runner import Runner, device_move, stream_number

if TYPE_CHECKING:
    from .plan import Plan

AnyAdapter = ArrayAdapter | TableAdapter | StructureAdapter
Convert = Callable[[Any], Any]


class Registry:
    """All adapters, their routes, and the plans made so far."""

    def __init__(self) -> None:
        self.adapters: dict[str, AnyAdapter] = {}
        self._names: dict[str, str] = {}
        self._owners: dict[type, str | None] = {}
        self.routes = Routes(self.adapters)
        self.runner = Runner(self.adapters, self.routes)
        self.plans: dict[str, dict[type, Convert]] = {}
        """The plans for ``device=None, copy=None``: ``{target: {source type: plan}}``, the
        target as the framework's name and as each name it was asked by (one dict each)."""
        self.other: dict[tuple, Convert] = {}
        """The plans for other ``device``/``copy``: ``{(type, target, device, copy): plan}``."""
        self.structures: dict[tuple, list[Convert]] = {}
        """The plans made per structure (:mod:`interop.structures`), newest first, per
        ``(root type, target, device, copy, structure option)``."""
        self._lock = threading.RLock()
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
        self.plans.clear()
        self.other.clear()
        self.structures.clear()

    def kept(self) -> dict[tuple, Convert]:
        """Every plan kept, as ``{(source type, target as asked, device, copy): plan}``."""
        out = {(tp, target, None, None): fn for target, per_type in self.plans.items()
               for tp, fn in per_type.items()}
        out.update(self.other)
        return out

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

    def refusal(self, adapter: AnyAdapter, x: Any, tgt: str) -> str | None:
        """Why ``x`` goes to no framework but its own (:attr:`ArrayAdapter.refuse`)."""
        refuse = getattr(adapter, "refuse", None)
        return refuse(x) if refuse is not None and tgt != adapter.name else None

    # ---- plans --------------------------------------------------------------------------------
    def plan_for(self, x: Any, target: str, device: Any, copy: bool | None, stream: Any,
                 options: dict[str, Any] | None = None) -> Convert:
        """The plan converting values of ``type(x)`` to ``target`` (made, and kept, once)."""
        if device is not None:
            device = device_name(device)  # a framework's device object: plans kept by its string
        with self._lock:
            src = self.owner(x)
            tgt = self.target(target)
            missing = self.adapters[tgt].missing()
            if missing:
                raise FrameworkMissingError(f"{src} -> {tgt}: {missing}")
            check_copy(copy)
            adapter = self.adapters[src]
            why = self.refusal(adapter, x, tgt)
            if why:
                raise UnsupportedConversionError(f"{src} -> {tgt}: {why}")
            if target != tgt and stream is None and not options:
                fn = self._known(x, target, tgt, device, copy)  # planned under another name
                if fn is not None:
                    return fn
            if isinstance(adapter, StructureAdapter):
                fn = adapter.plan(self, x, target, tgt, device, copy, stream, options)
                if stream is None and not options:
                    self._keep(x, target, tgt, device, copy, fn)
                return fn
            if isinstance(adapter, TableAdapter):
                return self._table_plan(adapter, x, target, tgt, device, copy, stream, options)
            if options:
                raise _no_options(self, src, options)
            have = adapter.device(x)
            move = device_move(adapter, have, self.adapters[tgt], device)  # raises early
            if stream is not None:
                stream = stream_number(src, have[0], stream)
                if move is not None:
                    return lambda x: self.runner.move(src, x, tgt, move, copy)
                return self.runner.compile(src, tgt, copy, have[0], stream).run
            fast = not adapter.per_value_owner
            if device is not None or move is not None or adapter.gpu_present():
                # where the data lives (and where device= sends it) is read per value
                fn = self.runner.dispatch(adapter, tgt, copy, device, type(x) if fast else None)
            else:
                compiled = self.runner.compile(src, tgt, copy, have[0], source_type=type(x))
                fn = compiled.run
                if compiled.fast is not None and fast:
                    # this call runs the checked plan; the next makes the fast form
                    self._keep(x, target, tgt, device, copy,
                               self._promoting(x, target, tgt, compiled.fast))
                    return fn
            if fast:
                self._keep(x, target, tgt, device, copy, fn)
            return fn

    def _promoting(self, x: Any, target: str, tgt: str,
                   make: Callable[[], Convert]) -> Convert:
        """A kept plan that, on its first call, makes the fast form and keeps it instead
        (``promote.settle()`` does that at once, returning the fast form)."""
        def settle() -> Convert:
            fast = make()
            self._keep(x, target, tgt, None, None, fast)
            return fast

        def promote(y: Any) -> Any:
            return settle()(y)

        promote.settle = settle  # type: ignore[attr-defined]
        return promote

    def leaf_plan(self, x: Any, target: str, device: Any, copy: bool | None,
                  stream: Any, options: dict[str, Any] | None = None) -> Convert:
        """What a structure's plan binds for its leaves of ``type(x)``: the plan kept for the
        type (its fast form made now), or, where plans depend on each value or call (a device
        move, a stream, the leaf's own options such as a DALI batch's ``ragged=``, an owner
        decided per value), a call planning each value."""
        per_call = stream is not None or bool(options)
        kept = None if per_call else self._kept_plan(type(x), target, device, copy)
        if kept is None:
            self.plan_for(x, target, device, copy, stream, options)  # raises if it cannot go
            if per_call:
                return lambda v: self.plan_for(v, target, device, copy, stream, options)(v)
            kept = self._kept_plan(type(x), target, device, copy)
            if kept is None:  # not kept: planned per value
                return lambda v: self.convert(v, target, device=device, copy=copy)
        settle = getattr(kept, "settle", None)
        return settle() if settle is not None else kept

    def _kept_plan(self, tp: type, target: str, device: Any, copy: bool | None
                   ) -> Convert | None:
        if device is None and copy is None:
            return self.plans.get(target, {}).get(tp)
        return self.other.get((tp, target, device, copy))

    def _table_plan(self, adapter: TableAdapter, x: Any, target: str, tgt: str, device: Any,
                    copy: bool | None, stream: Any,
                    options: dict[str, Any] | None) -> Convert:
        convert, opts = adapter.convert, dict(options or {})
        if stream is not None and adapter.stream:
            opts["stream"] = stream  # its samples' DLPack export takes it

        def fn(x: Any) -> Any:
            return convert(self, x, tgt, copy=copy, device=device, **opts)

        if not opts:
            self._keep(x, target, tgt, device, copy, fn)
        return fn

    def _keep(self, x: Any, target: str, tgt: str, device: Any, copy: bool | None,
              fn: Convert) -> None:
        """Keep a plan under the framework's name ``tgt`` and the name as asked
        (``target``, an alias such as ``"pt"``): aliases share plans."""
        if device is None and copy is None:
            self._per_type(target, tgt)[type(x)] = fn
        else:
            self.other[(type(x), tgt, device, copy)] = fn
            if target != tgt:
                self.other[(type(x), target, device, copy)] = fn

    def _per_type(self, target: str, tgt: str) -> dict[type, Convert]:
        """``plans[target]``, which is ``plans[tgt]`` itself (one dict per framework)."""
        per_type = self.plans.get(tgt)
        if per_type is None:
            per_type = self.plans[tgt] = {}
        if target != tgt:
            self.plans[target] = per_type
        return per_type

    def _known(self, x: Any, target: str, tgt: str, device: Any,
               copy: bool | None) -> Convert | None:
        """The plan kept for ``type(x)`` under the framework's name, now also under the name
        as asked; ``None`` if there is none yet."""
        if device is None and copy is None:
            fn = self.plans.get(tgt, {}).get(type(x))
        else:
            fn = self.other.get((type(x), tgt, device, copy))
        if fn is not None:
            self._keep(x, target, tgt, device, copy, fn)
        return fn

    def declared_options(self) -> dict[str, tuple[str, ...]]:
        """The options table adapters declare for themselves (not the table options), by
        adapter name: a DALI batch's ``ragged=`` and ``fill_value=``."""
        return {a.name: a.options for a in self.adapters.values()
                if isinstance(a, TableAdapter) and a.options}

    def explain(self, x: Any, target: str, device: Any = None, copy: bool | None = None,
                options: dict[str, Any] | None = None, stream: Any = None) -> Plan:
        """The plan for this value: steps, zero-copy or not, reasons and hazards."""
        from .explanation import explain  # loaded by the first explain, not by a first call

        if device is not None:
            device = device_name(device)
        return explain(self, x, target, device, copy, options, stream)


def _no_options(reg: Registry, src: str, options: dict[str, Any]) -> InteropError:
    from .names import unknown_option

    unknown = unknown_option(options, reg.declared_options())
    if unknown:
        return InteropError(unknown)
    return InteropError(f"options {sorted(options)} apply to tables, dataframes, batches of "
                        f"samples and structures, not to a {src} value")


def _converter(reg: Registry) -> Callable[..., Any]:
    """``to_framework`` on ``reg``: a call with no keywords is one dict test, two lookups and
    the plan; any other goes on to the full call, whose name, signature, annotations and
    docstring it carries (``functools.update_wrapper``: ``inspect.signature`` and ``help``
    show the keywords). Keyword-only parameters cost a lookup in ``__kwdefaults__`` each per
    call, so the call without keywords takes ``**options`` only."""
    plans, other, plan_for = reg.plans, reg.other, reg.plan_for

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
