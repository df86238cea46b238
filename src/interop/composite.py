"""Values of several arrays (:class:`~interop.adapters.base.CompositeAdapter`): converted part
by part through the registry's own dense rules, then rebuilt on the target side; explained
as the plans of their parts.

A kind that converts itself (tables: nulls, chunks; DALI batches: padding) declares
``convert`` and ``explain``; any other is its :attr:`~CompositeAdapter.parts` and its
:attr:`~CompositeAdapter.rebuild`, and the plans here are the whole of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .adapters.base import CompositeAdapter

Convert = Callable[[Any], Any]


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
    take, rebuild = adapter.parts, adapter.rebuild
    assert take is not None and rebuild is not None, adapter.name
    if opts:
        from .route import no_options

        raise no_options(reg, adapter.name, opts)

    def by_parts(x: Any) -> Any:
        parts = take(x)
        return rebuild(reg, parts.with_arrays(tuple(
            (role, reg.convert(a, tgt, copy=copy, device=device, stream=stream))
            for role, a in parts.arrays)), tgt)

    return by_parts


def explain(reg: Any, adapter: CompositeAdapter, x: Any, tgt: str, device: Any,
            copy: bool | None, options: dict[str, Any] | None) -> Any:
    """The plan of ``x`` to ``tgt``: the kind's own, or its parts'
    (:func:`interop.plan.of_parts`)."""
    if adapter.explain is not None:
        return adapter.explain(reg, x, tgt, copy=copy, **(options or {}))
    if options:
        from .route import no_options

        raise no_options(reg, adapter.name, options)
    assert adapter.parts is not None, adapter.name
    parts = adapter.parts(x)
    from .plan import of_parts

    return of_parts(adapter.name, tgt, parts.layout,
                    [(role, reg.explain(a, tgt, device, copy)) for role, a in parts.arrays])
