"""Values of several arrays (:class:`~interop.adapters.base.CompositeAdapter`): converted part
by part through the registry's own dense rules, then rebuilt on the target side; explained
as the plans of their parts.

A kind that converts itself (tables: nulls, chunks; DALI batches: padding) declares
``convert`` and ``explain``; any other is its :attr:`~CompositeAdapter.parts` and its
:attr:`~CompositeAdapter.rebuild`, and the plans here are the whole of it: a value stays
itself converted to its own framework (:attr:`~CompositeAdapter.home`); taking it apart may
copy (:attr:`~interop.adapters.base.Parts.copied`: ``copy=False`` refuses) or find nulls
(:attr:`~interop.adapters.base.Parts.nulls`: only ``copy=True`` goes on); a target framework
with a type of its own for the layout builds it (:func:`assembly`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .adapters.base import CompositeAdapter, Parts
from .errors import NullsError, ZeroCopyError

Convert = Callable[[Any], Any]


class Jagged:
    """Rows of different lengths in a framework without a ragged type: ``values`` (the rows'
    items, one after another) and ``offsets`` (``rows + 1``, from 0: row ``i`` is
    ``values[offsets[i]:offsets[i + 1]]``), each an array of the target framework. Unpacks
    as ``values, offsets``; converted on (to torch, to pyarrow), it becomes that
    framework's ragged type."""

    __slots__ = ("values", "offsets")

    def __init__(self, values: Any, offsets: Any) -> None:
        self.values, self.offsets = values, offsets

    def __iter__(self) -> Any:
        return iter((self.values, self.offsets))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        return f"Jagged(values={self.values!r}, offsets={self.offsets!r})"


def jagged_parts(j: Any) -> Parts:
    """A :class:`Jagged` taken apart."""
    return Parts("jagged", (("values", j.values), ("offsets", j.offsets)))


def rebuild_jagged(reg: Any, p: Parts, tgt: str) -> Any:
    """Converted ``values`` and ``offsets`` as ``tgt``'s ragged type where it has one
    (:func:`assembly`), else a :class:`Jagged` of them."""
    made = assembly(reg, tgt, "jagged")
    arrays = dict(p.arrays)
    return made[1](p) if made is not None else Jagged(arrays["values"], arrays["offsets"])


def describe_jagged(reg: Any, p: Parts, tgt: str, what: str) -> str:
    """The explain line of ``what``, values and offsets, rebuilt by :func:`rebuild_jagged`."""
    made = assembly(reg, tgt, "jagged")
    arrays = dict(p.arrays)
    v = arrays["values"]
    return (f"{what}: {len(arrays['offsets']) - 1} rows: values {tuple(v.shape)} + offsets "
            f"-> {made[0] if made is not None else 'interop.Jagged(values, offsets)'}")


def assembly(reg: Any, tgt: str, layout: str) -> tuple[str, Callable[[Parts], Any]] | None:
    """``(call, make)``: how framework ``tgt`` builds its own value of ``layout`` from parts
    converted to it (:attr:`~interop.adapters.base.ArrayAdapter.assemble`); ``None``: it has
    no type of that layout."""
    for name, call, make in getattr(reg.adapters[tgt], "assemble", ()):
        if name == layout:
            return call, make
    return None


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
