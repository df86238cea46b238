"""The structures as the registry sees them: one ``StructureAdapter`` owning every node
(after the frameworks, the table kinds and the generic producers, so any value some adapter
owns is a leaf), its plans cached per structure, and where a ``dict`` is a table.

A dict is read as a table (one ``pa.Table``/DataFrame, or ``interop.tables.Columns`` with
the table options ``nulls=``, ``fill_value=``, ``columns=``) when ``structure="table"`` is
given, or, by default, when it is flat (each value an array, or a ``(values, mask)`` pair)
and either its target is a table framework (pyarrow, pandas, polars, cuDF), or one of its
values is a column of one (an Arrow array, a pandas or polars Series: their nulls and temporal
types follow the table rules), or a table option is given that none of its values takes as
its own (a DALI batch takes ``fill_value=``). Otherwise it is a structure, as is
any dict with ``structure="tree"``: each leaf converted on its own, the same keys returned.

Options on a structure reach each leaf that takes them (``leaf_options``: a DALI batch's
``ragged=``/``fill_value=``, a table leaf's ``nulls=``/``fill_value=``/``columns=``); an option
no leaf takes is an error naming it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..adapters.base import RegistryLike, StructureAdapter
from ..errors import InteropError
from ..tables import TABLE_TARGETS
from .nodes import DICT, TUPLE, is_node

if TYPE_CHECKING:
    from .walk import Leaf, Tree

# The walk, the compiled plans and the explanation load with the first structure converted:
# an array's first conversion never needs them.

NAME = "structure"
MODES = (None, "tree", "table")
KEEP = 4
"""Plans kept per (root type, target, device, copy): the structures last seen, newest first."""

Convert = Callable[[Any], Any]
_LOCK = threading.RLock()
"""Guards the reordering of the kept plans (the structure seen last is tried first)."""


def structure_mode(options: dict[str, Any]) -> str | None:
    """The ``structure=`` option, checked, taken out of ``options``."""
    mode = options.pop("structure", None)
    if mode not in MODES:
        raise InteropError(f"structure must be 'tree', 'table' or None (the default: a flat "
                           f"dict of columns is a table where its target expects one), got "
                           f"{mode!r}")
    return mode


def is_table(w: Tree, tgt: str, mode: str | None, options: dict[str, Any]) -> bool:
    """Whether the walked dict ``w`` converts as a table (the module's rule)."""
    from ..names import TABLE_OPTIONS
    from .walk import Leaf, Tree, leaves

    if mode is not None or w.node.kind != DICT:
        return mode == "table" and w.node.kind == DICT
    columns = all(isinstance(c, Leaf) or (isinstance(c, Tree) and c.node.kind == TUPLE
                                          and len(c.children) == 2
                                          and all(isinstance(m, Leaf) for m in c.children))
                  for c in w.children)
    return columns and (tgt in TABLE_TARGETS or any(o in options for o in TABLE_OPTIONS)
                        or any(leaf.owner in TABLE_TARGETS for leaf in leaves(w)))


def leaf_options(reg: RegistryLike, leaf: Leaf, options: dict[str, Any]) -> dict[str, Any]:
    """The options of a call that ``leaf``'s own conversion takes (a DALI batch's ``ragged=``,
    a table leaf's ``nulls=``): those its adapter declares (:attr:`CompositeAdapter.options`)."""
    from ..names import TABLE_OPTIONS

    adapter = reg.composite(leaf.value)  # (a torch sparse tensor: the kind within torch)
    if adapter is None:
        return {}
    takes = TABLE_OPTIONS if adapter.options is None else adapter.options
    return {k: v for k, v in options.items() if k in takes}


def _as_table(reg: RegistryLike, w: Tree, tgt: str, mode: str | None,
              options: dict[str, Any]) -> bool:
    """:func:`is_table`; for a structure, the check its conversion makes first (options no
    leaf takes), raised. An option some leaf takes (a DALI batch's
    ``fill_value=``) does not make the dict a table."""
    from ..names import unknown_option
    from .walk import leaves

    taken = {k for leaf in leaves(w) for k in leaf_options(reg, leaf, options)}
    if is_table(w, tgt, mode, {k: v for k, v in options.items() if k not in taken}):
        return True
    unused = sorted(k for k in options if k not in taken)
    if unused:
        unknown = unknown_option(unused, reg.declared_options())
        raise InteropError(unknown or (
            f"options {unused} apply to tables, dataframes and batches of samples (a DALI "
            f"TensorList); this {w.node.type.__name__} is converted as a structure and none of "
            "its leaves takes them (structure='table' reads a flat dict of columns as a table)"))
    return False


def _table_run(w: Tree, convert: Convert) -> Convert:
    """The table reading of the dict ``w``, for values of its keys and leaf types."""
    from .compile import Mismatch
    from .walk import Leaf

    tp, keys = w.node.type, w.node.keys
    types = tuple(c.type if isinstance(c, Leaf) else c.node.type for c in w.children)

    def run(x: Any) -> Any:
        if (type(x) is not tp or len(x) != len(keys) or tuple(x) != keys
                or any(type(v) is not t for v, t in zip(x.values(), types))):
            raise Mismatch
        return convert(x)

    return run


def _plan(reg: RegistryLike, x: Any, target: str, tgt: str, device: Any, copy: bool | None,
          stream: Any, options: dict[str, Any] | None) -> Convert:
    """The converter of structures of ``type(x)``: the kept plan of the structure seen, or
    one made for it (and kept) when the value has another structure."""
    from ..tables.adapters import DICT
    from .compile import Mismatch, compile_tree
    from .walk import Tree, walk

    opts = dict(options or {})
    mode = structure_mode(opts)
    rules = getattr(reg.adapters[tgt], "rules", None)
    narrows = rules is not None and rules.narrows is not None

    def leaf_plan(leaf: Leaf) -> Convert:
        return reg.leaf_plan(leaf.value, target, device, copy, stream,
                             leaf_options(reg, leaf, opts))

    def make(y: Any) -> Convert:
        w = walk(reg, y, NAME)
        assert isinstance(w, Tree)
        if _as_table(reg, w, tgt, mode, opts):
            return _table_run(w, lambda z: DICT.convert(reg, z, tgt, copy=copy, device=device,
                                                        **opts))
        return compile_tree(w, leaf_plan, narrows)

    if stream is not None or opts:  # planned for this call only
        return lambda y: make(y)(y)
    made = reg.cache.structures((type(x), target, device, copy, mode))

    def convert(y: Any) -> Any:
        if made:
            try:
                return made[0](y)  # the structure seen last
            except Mismatch:  # another structure
                pass
        with _LOCK:
            for i, run in enumerate(made[1:], 1):
                try:
                    out = run(y)
                except Mismatch:
                    continue
                made.insert(0, made.pop(i))
                return out
            run = make(y)
            made.insert(0, run)
            del made[KEEP:]
        return run(y)

    return convert


def _explain(reg: RegistryLike, x: Any, tgt: str, device: Any, copy: bool | None,
             options: dict[str, Any] | None) -> Any:
    from ..tables.adapters import DICT
    from .explain import explain
    from .walk import Tree, walk

    opts = dict(options or {})
    mode = structure_mode(opts)
    w = walk(reg, x, NAME)
    assert isinstance(w, Tree)
    if _as_table(reg, w, tgt, mode, opts):
        return DICT.explain(reg, x, tgt, copy=copy, **opts)
    return explain(reg, w, tgt, device, copy, lambda leaf: leaf_options(reg, leaf, opts))


def _leaves(reg: RegistryLike, x: Any) -> list[Any]:
    from .walk import leaves, walk

    return [leaf.value for leaf in leaves(walk(reg, x, NAME))]


STRUCTURES = StructureAdapter(name=NAME, is_value=is_node, plan=_plan, explain=_explain,
                              leaves=_leaves)
