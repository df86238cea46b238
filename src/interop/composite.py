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

from .adapters.base import CompositeAdapter, Fix, Parts, RegistryLike
from .errors import (
    InteropError,
    MalformedError,
    NullsError,
    TooLargeError,
    UnsupportedConversionError,
    ZeroCopyError,
)

Convert = Callable[[Any], Any]
SHARED = "shared with the source (no copy): "
"""How ``explain`` begins the line naming the buffers a composite plan shares."""
FORMAT = "format"
"""The option naming the layout of the result (``"csr"``, ``"coo"`` ... ``"dense"``)."""


def take(adapter: CompositeAdapter, x: Any, options: dict[str, Any] | None,
         reg: RegistryLike = None) -> Parts:
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


def plan(reg: RegistryLike, adapter: CompositeAdapter, tgt: str, device: Any, copy: bool | None,
         stream: Any, options: dict[str, Any] | None) -> Convert:
    """The converter of ``adapter``'s values to ``tgt``."""
    opts = dict(options or {})
    if adapter.convert is not None:
        convert = adapter.convert
        if stream is not None and adapter.stream:
            opts["stream"] = stream  # its samples' DLPack export takes it

        def own(x: Any) -> Any:
            return convert(reg, x, tgt, copy=copy, device=device, **opts)

        if (adapter.reader is None or adapter.rebuilder is None or opts or copy is not None
                or device is not None):
            return own
        return _own_fast(reg, adapter, tgt, own)
    fmt = _format(reg, adapter, opts)
    if opts and not adapter.options:
        from .route import no_options

        raise no_options(reg, adapter.name, opts)
    if (fmt is None and tgt == adapter.home and copy is not True and device is None
            and not opts):
        return _itself

    builders: dict[str, CompositeAdapter] = {}  # per layout: what the decision read
    leaves: dict[tuple[Any, type, str], Convert] = {}  # per role and array type: its kept plan

    def leaf(role: Any, a: Any, dense: str) -> Convert:
        fn = leaves.get((role, type(a), dense))
        if fn is None:
            fn = reg.leaf_plan(a, dense, device, copy, stream)
            leaves[(role, type(a), dense)] = fn
        return fn

    fast: list[Convert] = []  # the fast form, made from the last value the walk converted

    def by_parts(x: Any) -> Any:
        if fast:
            return fast[0](x)
        return walk(x)

    def walk(x: Any) -> Any:
        parts, builder, fixes = decided(reg, adapter, x, opts, fmt, tgt, copy, builders)
        if builder is None:  # format= changes the layout
            assert fmt is not None
            again = _reformat(reg, adapter, x, parts, fmt, copy)
            return reg.convert(again, tgt, copy=copy, device=device, stream=stream)
        if fixes and copy is False:
            raise ZeroCopyError(f"{adapter.name} -> {tgt}: copy=False, but "
                                + "; ".join(_fix_reason(parts.layout, f) for f in fixes))
        for f in fixes:
            parts = f.apply(parts)
        dense = builder.dense or builder.of or tgt
        made = builder.rebuild(reg, parts.with_arrays(tuple(  # type: ignore[misc]
            (role, leaf(role, a, dense)(a)) for role, a in parts.arrays)), tgt)
        if (adapter.reader is not None and not opts and fmt is None and not fixes
                and not parts.copied and not parts.nulls):  # the fast form, made from x
            read = adapter.reader(x, parts)
            if read is not None:
                fast[:] = [_fast(reg, read, parts, builder, tgt,
                                 tuple(leaf(role, a, dense) for role, a in parts.arrays), walk)]
        return made

    return by_parts


def decided(reg: RegistryLike, adapter: CompositeAdapter, x: Any, opts: dict[str, Any],
            fmt: str | None, tgt: str, copy: bool | None,
            builders: dict[str, CompositeAdapter] | None = None
            ) -> tuple[Parts, CompositeAdapter | None, tuple[Fix, ...]]:
    """The decisions of converting ``x`` to ``tgt``, read by the walk (which converts by
    them) and by :func:`explain` (which describes them): ``x``'s parts checked; where
    ``format=`` changes the layout, those parts and no builder; else the parts as the builder
    takes them (kept per layout in ``builders``) and the fixes it needs (not applied: under
    ``copy=False`` each caller names them). Raises what the conversion raises: a broken value,
    nulls without ``copy=True``, a copy to take it apart under ``copy=False``, a target
    without the layout."""
    parts = _checked(reg, adapter, take(adapter, x, opts, reg))
    if fmt is not None and fmt != parts.layout:
        return parts, None, ()
    if parts.nulls or parts.copied:
        why = blocked(adapter, parts, copy)
        if why is not None:
            raise (NullsError if parts.nulls and copy is not True else ZeroCopyError)(why)
    builder = builders.get(parts.layout) if builders is not None else None
    if builder is None:
        builder = _builder(reg, adapter, parts, tgt)
        if builders is not None:
            builders[parts.layout] = builder
    parts, fixes = _prepared(reg, adapter, parts, builder)
    return parts, builder, fixes


def _fast(reg: RegistryLike, read: Callable[[Any], Any], parts: Parts, builder: CompositeAdapter,
          tgt: str, convs: tuple[Convert, ...], walk: Convert) -> Convert:
    """The fast form of a composite plan: the kind's reader (:attr:`CompositeAdapter.reader`)
    hands a value's arrays, each goes by the dense plan its role took (``convs``: kept plans,
    for arrays of the types the walk converted), and the kind's rebuild bound to the layout
    and meta of the value the reader was made from (:func:`rebuilder`) makes the result; a
    value the reader declines, or whose arrays are of other types, takes the full walk."""
    types = tuple(type(a) for _, a in parts.arrays)
    make = rebuilder(reg, builder, parts, tgt)
    if len(convs) == 1:
        (conv,), (kind,) = convs, types

        def one(x: Any) -> Any:
            got = read(x)
            if got is None or type(got[0]) is not kind:
                return walk(x)
            return make((conv(got[0]),))

        return one

    def run(x: Any) -> Any:
        got = read(x)
        if got is None or tuple(map(type, got)) != types:
            return walk(x)
        return make(tuple([f(a) for f, a in zip(convs, got)]))

    return run


def _own_fast(reg: RegistryLike, adapter: CompositeAdapter, tgt: str, own: Convert) -> Convert:
    """The plan of a kind that converts itself (a table), with the fast form of the walk's
    plans: made from a value ``own`` converted without a narrowing (whose reasons the kind
    gathers and labels), that the kind's reader reads and its rebuilder builds for ``tgt``;
    a value the fast form declines or refuses takes ``own`` (the kind's own answer, error
    messages included), which makes the fast form anew from it."""
    from . import narrowing

    fast: list[Convert] = []
    never: list[bool] = []  # the rebuilder builds nothing for tgt (a table target): own alone

    def first(x: Any) -> Any:
        with narrowing.gather() as narrowed:
            out = own(x)
        for why in narrowed:
            narrowing.warn(why)
        if narrowed:
            return out
        whole = take(adapter, x, None, reg)
        read = adapter.reader(x, whole)  # type: ignore[misc]
        arrays = read(x) if read is not None else None
        if arrays is not None:
            parts = Parts(whole.layout, tuple((r, a) for (r, _), a in zip(whole.arrays, arrays)))
            if adapter.rebuilder(reg, parts, tgt) is None:  # type: ignore[misc]
                never.append(True)
            else:
                fast[:] = [_fast(reg, read, parts, adapter, tgt, tuple(
                    reg.leaf_plan(a, tgt, None, None, None) for a in arrays), first)]
        return out

    def by_own(x: Any) -> Any:
        if fast:
            try:
                return fast[0](x)
            except InteropError:
                return first(x)
        return own(x) if never else first(x)

    return by_own


def rebuilder(reg: RegistryLike, builder: CompositeAdapter, parts: Parts,
              tgt: str) -> Callable[[tuple[Any, ...]], Any]:
    """``builder``'s rebuild on ``tgt`` over the layout and meta of ``parts``, as a function of
    the converted arrays in the parts' role order: the kind's own bound form
    (:attr:`CompositeAdapter.rebuilder`) where it has one, else its rebuild over new parts."""
    if builder.rebuilder is not None:
        return builder.rebuilder(reg, parts, tgt)
    roles, rebuild = tuple(r for r, _ in parts.arrays), builder.rebuild
    assert rebuild is not None

    def make(arrays: tuple[Any, ...]) -> Any:
        return rebuild(reg, parts.with_arrays(tuple(zip(roles, arrays))), tgt)

    return make


def _itself(x: Any) -> Any:
    return x


def explain(reg: RegistryLike, adapter: CompositeAdapter, x: Any, tgt: str, device: Any,
            copy: bool | None, options: dict[str, Any] | None) -> Any:
    """The plan of ``x`` to ``tgt``: the kind's own, or its parts'
    (:func:`interop.plan.of_parts`), by the walk's decisions (:func:`decided`): the format
    change, or the builder and the fixes its parts need; what the walk raises, a refusal."""
    from .plan import Plan, Step, of_parts

    if adapter.explain is not None:
        return adapter.explain(reg, x, tgt, copy=copy, **(options or {}))
    opts = dict(options or {})
    fmt = _format(reg, adapter, opts)
    if (fmt is None and tgt == adapter.home and copy is not True and device is None
            and not opts):
        return Plan(adapter.name, tgt, (Step(adapter.name, tgt, "identity"),), True)
    try:
        parts, builder, fixes = decided(reg, adapter, x, opts, fmt, tgt, copy)
    except (NullsError, MalformedError, ZeroCopyError, UnsupportedConversionError) as e:
        error = ("nulls" if isinstance(e, NullsError) else "malformed"
                 if isinstance(e, MalformedError) else "zero-copy"
                 if isinstance(e, ZeroCopyError) else "unsupported")
        return Plan(adapter.name, tgt, (), False, (str(e),), supported=False, error=error)
    if builder is None:  # format= changes the layout
        assert fmt is not None
        return _format_plan(reg, adapter, x, parts, fmt, tgt, device, copy)
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
    plans = [(role, reg.explain(a, dense, device, copy)) for role, a in parts.arrays]
    made = of_parts(adapter.name, tgt, parts.layout, plans, first,
                    (*layout, *parts.copied, *((parts.nulls,) if parts.nulls else ()),
                     *fixed, *_shared(reg, adapter, x, parts, plans, fixes)))
    if not parts.copied and not parts.nulls and not fixes:
        return made
    return Plan(made.source, made.target, made.steps, False, made.reasons, made.hazards,
                made.supported, made.error)  # (the buffers still shared keep their hazards)


def _format_plan(reg: RegistryLike, adapter: CompositeAdapter, x: Any, parts: Parts, fmt: str,
                 tgt: str, device: Any, copy: bool | None) -> Any:
    """The plan of ``format=fmt`` changing ``x``'s layout (the source framework's own call,
    every buffer new), then of the new value to ``tgt``."""
    from .plan import Plan, Step

    step = Step(adapter.name, adapter.name, f"format={fmt!r} ({parts.layout} -> {fmt})",
                copies=True)
    why = (f"format={fmt!r} changes the layout from {parts.layout}: the source "
           "framework's own call rebuilds the value, and any buffer it keeps of the "
           "source is copied: every buffer of the result is new")
    if copy is False:
        return Plan(adapter.name, tgt, (step,), False, (why,), supported=False,
                    error="zero-copy")
    try:
        again = _reformatted(adapter, x, parts, fmt)
    except InteropError as e:
        return Plan(adapter.name, tgt, (step,), False, (str(e),), supported=False,
                    error="memory" if isinstance(e, TooLargeError) else "unsupported")
    rest = reg.explain(again, tgt, device, copy)
    later = tuple(r for r in rest.reasons if not r.startswith(SHARED))  # (of the new value)
    return Plan(adapter.name, tgt, (step, *rest.steps), False, (why, *later),
                (), rest.supported, rest.error)


def _shared(reg: RegistryLike, adapter: CompositeAdapter, x: Any, parts: Parts,
            plans: list[tuple[Any, Any]], fixes: tuple[Fix, ...]) -> tuple[str, ...]:
    """The line naming the buffers handed over as they are (no fix copied them, their own plan
    is zero-copy, and, where taking the value apart copied some (``Parts.copied``: rebased
    offsets, joined chunks), they lie in the source's own buffers), or none."""
    fixed = {r for f in fixes for r in f.roles}
    if parts.copied:
        regions = [b.extent() for b in adapter.buffers(x)] if adapter.buffers else []
        fixed |= {role for role, a in parts.arrays if not _inside(reg, a, regions)}
    roles = [str(role) for role, p in plans if p.zero_copy and role not in fixed]
    return (f"{SHARED}{parts.layout} {', '.join(roles)}",) if roles else ()


def _inside(reg: RegistryLike, a: Any, regions: list[tuple[int, int]]) -> bool:
    """Whether the elements of the dense array ``a`` lie in one of ``regions`` (byte ranges)."""
    view = getattr(reg.adapters[reg.owner(a)], "view", None)
    if view is None:
        return False
    lo, hi = view(a).extent()
    return any(r_lo <= lo and hi <= r_hi for r_lo, r_hi in regions)


def _format(reg: RegistryLike, adapter: CompositeAdapter, opts: dict[str, Any]) -> str | None:
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


def _checked(reg: RegistryLike, adapter: CompositeAdapter, parts: Parts) -> Parts:
    """``parts`` checked by the kind's :attr:`~CompositeAdapter.check` (a broken value raises
    before any framework call, its own layout change included)."""
    return parts if adapter.check is None else adapter.check(reg, parts)


def _reformat(reg: RegistryLike, adapter: CompositeAdapter, x: Any, parts: Parts, fmt: str,
              copy: bool | None) -> Any:
    """``x`` in layout ``fmt``, of buffers of its own: a buffer the framework's call kept
    (JAX's ``BCSR.to_bcoo()`` keeps the values, pyarrow's ``to_scipy()`` its immutable
    buffers), judged by addresses after the call, is copied, so that the result is no
    unnamed alias of the source."""
    if copy is False:
        raise ZeroCopyError(f"{adapter.name}: copy=False, but format={fmt!r} changes the "
                            f"layout from {parts.layout}, which rebuilds every buffer (a copy)")
    again = _reformatted(adapter, x, parts, fmt)
    if not _kept(reg, parts, again):
        return again
    kind = reg.composite(again)
    home = (kind.of or kind.home) if kind is not None else reg.owner(again)
    return reg.convert(again, home, copy=True)


def _kept(reg: RegistryLike, parts: Parts, again: Any) -> bool:
    """Whether ``again`` (the framework's layout change of the value of ``parts``) holds any
    of their buffers, by the buffers' addresses."""
    kind = reg.composite(again)
    arrays = [a for _, a in take(kind, again, None, reg).arrays] if kind is not None else [again]
    mine = [e for _, a in parts.arrays for e in _extents(reg, a)]
    return any(a0 < b1 and b0 < a1 for a in arrays for a0, a1 in _extents(reg, a)
               for b0, b1 in mine)


def _extents(reg: RegistryLike, a: Any) -> list[tuple[int, int]]:
    """The byte range of the dense array ``a`` (none where it has no readable buffer or no
    bytes)."""
    adapter = reg.adapters[reg.owner(a)]
    read = getattr(adapter, "view", None)
    try:
        view = read(a) if read is not None else None
    except Exception:  # an array interop cannot view holds no buffer it could share
        return []
    if view is None:
        return []
    low, high = view.extent()
    return [(low, high)] if high > low else []


def _reformatted(adapter: CompositeAdapter, x: Any, parts: Parts, fmt: str) -> Any:
    """``x`` in layout ``fmt`` by its framework's own call; what that call refuses (a 1-D
    value to a compressed layout, a layout it cannot convert from) is an
    :class:`UnsupportedConversionError` naming the format, not the framework's own error."""
    need = adapter.reformat_bytes(parts, fmt) if adapter.reformat_bytes is not None else 0
    if need > _available_memory():
        raise TooLargeError(
            f"format={fmt!r}: the {fmt} form of this {parts.layout} value of shape "
            f"{parts.get('shape')} needs at least {need:,} bytes, more than this machine has "
            f"available; keep it {parts.layout}")
    try:
        return adapter.reformat(x, fmt)  # type: ignore[misc]
    except InteropError:
        raise
    except MemoryError as e:
        shape = tuple(getattr(x, "shape", ()) or ())
        raise TooLargeError(
            f"format={fmt!r}: the {fmt} form of this {parts.layout} value of shape {shape} "
            f"needs more memory than can be allocated ({e}); keep it {parts.layout}") from e
    except (ValueError, TypeError, RuntimeError, NotImplementedError) as e:
        shape = tuple(getattr(x, "shape", ()) or ())
        raise UnsupportedConversionError(
            f"format={fmt!r}: {adapter.name} cannot turn this {parts.layout} value of shape "
            f"{shape} into {fmt} ({type(e).__name__}: {e}); ask another format, or "
            "format='dense'") from e


def _available_memory() -> float:
    """The host memory available now, in bytes (unbounded where the system does not say)."""
    import os

    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return float("inf")


def _builder(reg: RegistryLike, adapter: CompositeAdapter, parts: Parts,
             tgt: str) -> CompositeAdapter:
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


def _prepared(reg: RegistryLike, adapter: CompositeAdapter, parts: Parts,
              builder: CompositeAdapter) -> tuple[Parts, tuple[Fix, ...]]:
    if adapter.prepare is None:
        return parts, ()
    return adapter.prepare(reg, parts, builder)


def _fix_reason(layout: str, fix: Fix) -> str:
    return f"{layout} {', '.join(map(str, fix.roles))}: copied: {fix.why}"
