"""Values of several arrays (:class:`~interop.adapters.base.CompositeAdapter`): converted part
by part through the registry's own dense rules, then rebuilt on the target side; explained
as the plans of their parts.

A kind that converts itself (tables: nulls, chunks; DALI batches: padding) declares
``convert`` and ``explain``; any other is its :attr:`~CompositeAdapter.parts` and its
:attr:`~CompositeAdapter.rebuild`, and the plans here are the whole of it: a value stays
itself converted to its own framework (:attr:`~CompositeAdapter.home`); taking it apart may
copy (:attr:`~interop.adapters.base.Parts.copied`: ``copy=False`` refuses) or find nulls
(:attr:`~interop.adapters.base.Parts.nulls`: only ``copy=True`` goes on); a target framework
with a type of its own for the layout builds it
(:func:`~interop.adapters.base.assembly`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .adapters.base import CompositeAdapter, Parts
from .errors import NullsError, UnsupportedConversionError, ZeroCopyError

Convert = Callable[[Any], Any]


def take(adapter: CompositeAdapter, x: Any, options: dict[str, Any] | None,
         reg: Any = None) -> Parts:
    """``x`` taken apart, with the call's options where the kind declares them (any other
    option is refused)."""
    opts = dict(options or {})
    assert adapter.parts is not None, adapter.name
    if opts and not adapter.options:
        from .route import no_options

        raise no_options(reg, adapter.name, opts)
    return adapter.parts(x, **opts) if opts else adapter.parts(x)


def blocked(adapter: CompositeAdapter, parts: Parts, copy: bool | None) -> str | None:
    """Why the parts cannot go on under ``copy=`` (nulls without ``copy=True``; a copy taking
    them apart under ``copy=False``); ``None``: they can."""
    if parts.nulls and copy is not True:
        return parts.nulls
    if parts.copied and copy is False:
        return f"copy=False but {adapter.name}: {'; '.join(parts.copied)}"
    return None


def plan(reg: Any, adapter: CompositeAdapter, tgt: str, device: Any, copy: bool | None,
         stream: Any, options: dict[str, Any] | None) -> Convert:
    """The converter of ``adapter``'s values to ``tgt``."""
    opts = dict(options or {})
    if adapter.convert is not None:
        convert = adapter.convert
        if stream is not None and adapter.stream:
            opts["stream"] = stream  # its samples' DLPack export takes it

        def own(x: Any) -> Any:
            return convert(reg, x, tgt, copy=copy, device=device, **opts)

        return own
    rebuild = adapter.rebuild
    assert adapter.parts is not None and rebuild is not None, adapter.name
    if opts and not adapter.options:
        from .route import no_options

        raise no_options(reg, adapter.name, opts)
    if tgt == adapter.home and copy is not True and device is None and not opts:
        return _itself

    def by_parts(x: Any) -> Any:
        parts = take(adapter, x, opts, reg)
        why = blocked(adapter, parts, copy)
        if why is not None:
            raise (NullsError if parts.nulls and copy is not True else ZeroCopyError)(why)
        return rebuild(reg, parts.with_arrays(tuple(
            (role, reg.convert(a, tgt, copy=copy, device=device, stream=stream))
            for role, a in parts.arrays)), tgt)

    return by_parts


def _itself(x: Any) -> Any:
    return x


def explain(reg: Any, adapter: CompositeAdapter, x: Any, tgt: str, device: Any,
            copy: bool | None, options: dict[str, Any] | None) -> Any:
    """The plan of ``x`` to ``tgt``: the kind's own, or its parts'
    (:func:`interop.plan.of_parts`)."""
    if adapter.explain is not None:
        return adapter.explain(reg, x, tgt, copy=copy, **(options or {}))
    from .plan import Plan, Step, of_parts

    if tgt == adapter.home and copy is not True and device is None and not options:
        return Plan(adapter.name, tgt, (Step(adapter.name, tgt, "identity"),), True)
    try:
        parts = take(adapter, x, options, reg)
    except NullsError as e:  # nulls no copy fills (integers): what the conversion raises
        return Plan(adapter.name, tgt, (), False, (str(e),), supported=False, error="nulls")
    except UnsupportedConversionError as e:  # a value of the kind it cannot take apart
        return Plan(adapter.name, tgt, (), False, (str(e),), supported=False,
                    error="unsupported")
    why = blocked(adapter, parts, copy)
    if why is not None:
        return Plan(adapter.name, tgt, (), False, (why,), supported=False,
                    error="nulls" if parts.nulls and copy is not True else "zero-copy")
    layout = (adapter.describe(reg, parts, tgt),) if adapter.describe is not None else ()
    made = of_parts(adapter.name, tgt, parts.layout,
                    [(role, reg.explain(a, tgt, device, copy)) for role, a in parts.arrays],
                    why=(*layout, *parts.copied, *((parts.nulls,) if parts.nulls else ())))
    if not parts.copied and not parts.nulls:
        return made
    return Plan(made.source, made.target, made.steps, False, made.reasons, (), made.supported,
                made.error)
