"""Values of several arrays (:class:`~interop.adapters.base.CompositeAdapter`): converted part
by part through the registry's own dense rules, then rebuilt on the target side; explained
as the plans of their parts.

A kind that converts itself (tables: nulls, chunks; DALI batches: padding) declares
``convert`` and ``explain``; any other is its :attr:`~CompositeAdapter.parts` and a
:attr:`~CompositeAdapter.rebuild`: its own, or, for a kind of a framework (``of``: sparse
values), the rebuild of the target framework's kind of the same layout
(:meth:`~interop.registry.Registry.builder`), after the :class:`~interop.adapters.base.Fix`
es that kind's needs ask for (:attr:`~CompositeAdapter.prepare`). ``format=`` changes the
layout first, by the source framework's own call (:attr:`~CompositeAdapter.reformat`). A
value stays itself converted to its own framework (:attr:`~CompositeAdapter.home`); taking
it apart may copy (:attr:`~interop.adapters.base.Parts.copied`: ``copy=False`` refuses) or
find nulls (:attr:`~interop.adapters.base.Parts.nulls`: only ``copy=True`` goes on); a
target framework with a type of its own for the layout builds it
(:func:`~interop.adapters.base.assembly`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .adapters.base import CompositeAdapter, Fix, Parts
from .errors import (
    InteropError,
    MalformedError,
    NullsError,
    UnsupportedConversionError,
    ZeroCopyError,
)

Convert = Callable[[Any], Any]
FORMAT = "format"
"""The option naming the layout of the result (``"csr"``, ``"coo"`` ... ``"dense"``)."""


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
    fmt = _format(reg, adapter, opts)
    if opts and not adapter.options:
        from .route import no_options

        raise no_options(reg, adapter.name, opts)
    if (fmt is None and tgt == adapter.home and copy is not True and device is None
            and not opts):
        return _itself

    def by_parts(x: Any) -> Any:
        parts = take(adapter, x, opts, reg)
        if fmt is not None and fmt != parts.layout:
            return reg.convert(_reformat(adapter, x, parts, fmt, copy), tgt, copy=copy,
                               device=device, stream=stream)
        why = blocked(adapter, parts, copy)
        if why is not None:
            raise (NullsError if parts.nulls and copy is not True else ZeroCopyError)(why)
        builder = _builder(reg, adapter, parts, tgt)
        parts, fixes = _prepared(reg, adapter, parts, builder)
        if fixes and copy is False:
            raise ZeroCopyError(f"{adapter.name} -> {tgt}: copy=False, but "
                                + "; ".join(_fix_reason(parts.layout, f) for f in fixes))
        for f in fixes:
            parts = f.apply(parts)
        dense = builder.dense or builder.of or tgt
        return builder.rebuild(reg, parts.with_arrays(tuple(  # type: ignore[misc]
            (role, reg.convert(a, dense, copy=copy, device=device, stream=stream))
            for role, a in parts.arrays)), tgt)

    return by_parts


def _itself(x: Any) -> Any:
    return x


def explain(reg: Any, adapter: CompositeAdapter, x: Any, tgt: str, device: Any,
            copy: bool | None, options: dict[str, Any] | None) -> Any:
    """The plan of ``x`` to ``tgt``: the kind's own, or its parts'
    (:func:`interop.plan.of_parts`), after the format change and the fixes its parts need."""
    from .plan import Plan, Step, of_parts

    if adapter.explain is not None:
        return adapter.explain(reg, x, tgt, copy=copy, **(options or {}))
    opts = dict(options or {})
    fmt = _format(reg, adapter, opts)
    if (fmt is None and tgt == adapter.home and copy is not True and device is None
            and not opts):
        return Plan(adapter.name, tgt, (Step(adapter.name, tgt, "identity"),), True)
    try:
        parts = take(adapter, x, opts, reg)
    except NullsError as e:  # nulls no copy fills (integers): what the conversion raises
        return Plan(adapter.name, tgt, (), False, (str(e),), supported=False, error="nulls")
    except UnsupportedConversionError as e:  # a value of the kind it cannot take apart
        return Plan(adapter.name, tgt, (), False, (str(e),), supported=False,
                    error="unsupported")
    except MalformedError as e:  # a value breaking its kind's invariants (offsets)
        return Plan(adapter.name, tgt, (), False, (str(e),), supported=False,
                    error="malformed")
    if fmt is not None and fmt != parts.layout:
        step = Step(adapter.name, adapter.name, f"format={fmt!r} ({parts.layout} -> {fmt})",
                    copies=True)
        why = (f"format={fmt!r} changes the layout from {parts.layout}: every buffer is "
               "rebuilt (a copy)")
        if copy is False:
            return Plan(adapter.name, tgt, (step,), False, (why,), supported=False,
                        error="zero-copy")
        try:
            again = _reformatted(adapter, x, parts, fmt)
        except InteropError as e:
            return Plan(adapter.name, tgt, (step,), False, (str(e),), supported=False,
                        error="unsupported")
        rest = reg.explain(again, tgt, device, copy)
        return Plan(adapter.name, tgt, (step, *rest.steps), False, (why, *rest.reasons),
                    (), rest.supported, rest.error)
    blocked_why = blocked(adapter, parts, copy)
    if blocked_why is not None:
        return Plan(adapter.name, tgt, (), False, (blocked_why,), supported=False,
                    error="nulls" if parts.nulls and copy is not True else "zero-copy")
    try:
        builder = _builder(reg, adapter, parts, tgt)
        parts, fixes = _prepared(reg, adapter, parts, builder)
    except InteropError as e:
        return Plan(adapter.name, tgt, (), False, (str(e),), supported=False,
                    error="unsupported")
    fixed = [_fix_reason(parts.layout, f) for f in fixes]
    first = [Step(adapter.name, adapter.name, f"{parts.layout} {', '.join(map(str, f.roles))}"
                  f" copied", copies=True) for f in fixes]
    if fixes and copy is False:
        return Plan(adapter.name, tgt, tuple(first), False, tuple(fixed), supported=False,
                    error="zero-copy")
    for f in fixes:
        parts = f.apply(parts)
    dense = builder.dense or builder.of or tgt
    layout = (adapter.describe(reg, parts, tgt),) if adapter.describe is not None else ()
    made = of_parts(adapter.name, tgt, parts.layout,
                    [(role, reg.explain(a, dense, device, copy)) for role, a in parts.arrays],
                    first, (*layout, *parts.copied, *((parts.nulls,) if parts.nulls else ()),
                            *fixed))
    if not parts.copied and not parts.nulls and not fixes:
        return made
    return Plan(made.source, made.target, made.steps, False, made.reasons, made.hazards,
                made.supported, made.error)  # (the buffers still shared keep their hazards)


def _format(reg: Any, adapter: CompositeAdapter, opts: dict[str, Any]) -> str | None:
    """The ``format=`` asked, taken out of ``opts`` (``None``: keep the layout); refused for
    a kind that cannot change its layout."""
    if FORMAT not in opts:
        return None
    fmt = opts.pop(FORMAT)
    if adapter.reformat is None:
        from .route import no_options

        raise no_options(reg, adapter.name, {FORMAT: fmt})
    if not isinstance(fmt, str):
        raise InteropError(f"format= names a layout ('csr', 'coo', 'dense' ...), got {fmt!r}")
    return fmt


def _reformat(adapter: CompositeAdapter, x: Any, parts: Parts, fmt: str,
              copy: bool | None) -> Any:
    if copy is False:
        raise ZeroCopyError(f"{adapter.name}: copy=False, but format={fmt!r} changes the "
                            f"layout from {parts.layout}, which rebuilds every buffer (a copy)")
    return _reformatted(adapter, x, parts, fmt)


def _reformatted(adapter: CompositeAdapter, x: Any, parts: Parts, fmt: str) -> Any:
    """``x`` in layout ``fmt`` by its framework's own call; what that call refuses (a 1-D
    value to a compressed layout, a layout it cannot convert from) is an
    :class:`UnsupportedConversionError` naming the format, not the framework's own error."""
    try:
        return adapter.reformat(x, fmt)  # type: ignore[misc]
    except InteropError:
        raise
    except (ValueError, TypeError, RuntimeError, NotImplementedError) as e:
        shape = tuple(getattr(x, "shape", ()) or ())
        raise UnsupportedConversionError(
            f"format={fmt!r}: {adapter.name} cannot turn this {parts.layout} value of shape "
            f"{shape} into {fmt} ({type(e).__name__}: {e}); ask another format, or "
            "format='dense'") from e


def _builder(reg: Any, adapter: CompositeAdapter, parts: Parts, tgt: str) -> CompositeAdapter:
    """The kind whose rebuild makes ``parts`` on ``tgt``: the target framework's kind of the
    same layout, or, for a kind of no framework, the kind itself."""
    assert adapter.rebuild is not None or adapter.of, adapter.name
    if not adapter.of:
        return adapter
    builder = reg.builder(tgt, parts.layout)
    if builder is not None:
        return builder
    has = reg.layouts(tgt)
    fix = ("format='dense' makes a dense array" if not has else
           f"format= one of {has} changes the layout (a copy), format='dense' densifies")
    raise UnsupportedConversionError(
        f"{adapter.name} -> {tgt}: {tgt} has no {parts.layout} values"
        + (f" (it builds {', '.join(has)})" if has else "")
        + f"; interop changes a layout only when asked: {fix}")


def _prepared(reg: Any, adapter: CompositeAdapter, parts: Parts,
              builder: CompositeAdapter) -> tuple[Parts, tuple[Fix, ...]]:
    if adapter.prepare is None:
        return parts, ()
    return adapter.prepare(reg, parts, builder)


def _fix_reason(layout: str, fix: Fix) -> str:
    return f"{layout} {', '.join(map(str, fix.roles))}: copied: {fix.why}"
