"""Which values are nodes of a structure, and how one is taken apart and put back.

A node is recognised by a pytree registry, never by a list of container types written here:
optree (the built-in containers: ``dict``, ``list``, ``tuple``, named tuples, ``OrderedDict``,
``defaultdict``, ``deque``, struct sequences, and whatever is registered with optree), then,
only when the framework is already imported, JAX's registry (``jax.tree_util``: Flax, Equinox
and other nodes registered by their owners) and torch's (``torch.utils._pytree``). A ``dict``
of a subclass no registry knows (:class:`interop.tables.Columns`) is walked as a ``dict``.
``None`` is a leaf (kept as it is). Importing this module imports none of those libraries.

Without optree (a dependency, but absent from some images), a ``dict``, ``list`` or ``tuple``
is still a node (optree's answer for them), so flat dicts of columns, tables and structures
of those work; a ``list`` or ``tuple`` subclass no other registry knows (a named tuple, a
struct sequence) needs optree to be taken apart: a :class:`FrameworkMissingError` naming the
install.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..errors import FrameworkMissingError

DICT, LIST, TUPLE, NAMEDTUPLE, GENERIC = "dict", "list", "tuple", "namedtuple", "generic"
"""The kinds of node: the first four are run by code made for them; a generic node is taken
apart and put back by the functions of the registry that knows it."""


class Node:
    """One node of a structure, taken apart one level.

    ``keys`` name the children (dict keys, indices, field names, a registry's entries) and
    ``labels`` render them in a path (``['w']``, ``[3]``, ``.field``). A generic node carries
    ``flatten`` (node -> (children, meta)) and ``unflatten`` ((meta, children) -> node) from its
    registry, and the ``meta`` a value must have to share the node's plan.
    """

    __slots__ = ("kind", "type", "keys", "children", "labels", "meta", "flatten", "unflatten")

    def __init__(self, kind: str, tp: type, keys: tuple, children: list, labels: tuple[str, ...],
                 meta: Any = None, flatten: Callable[[Any], tuple[list, Any]] | None = None,
                 unflatten: Callable[[Any, list], Any] | None = None) -> None:
        self.kind, self.type, self.keys, self.children, self.labels = (kind, tp, keys, children,
                                                                      labels)
        self.meta, self.flatten, self.unflatten = meta, flatten, unflatten


def node_of(x: Any) -> Node | None:
    """``x`` taken apart one level, or ``None`` when ``x`` is a leaf for every registry."""
    if x is None:
        return None
    optree = _optree()
    node = _plain_node(x) if optree is None else _optree_node(optree, x)
    if node is None and isinstance(x, dict):
        node = _dict_node(x)
    if node is None and sys.modules.get("jax") is not None:
        node = _jax_node(x)
    if node is None and sys.modules.get("torch.utils._pytree") is not None:
        node = _torch_node(x)
    if node is None and optree is None and isinstance(x, (list, tuple)):
        tp = type(x)
        raise FrameworkMissingError(
            f"a {tp.__module__}.{tp.__qualname__} (a {tp.__mro__[1].__name__} subclass) is read "
            "as a structure through optree, which is not installed: pip install optree "
            "(interop depends on it; dicts, lists and tuples work without it)")
    return node


def is_node(x: Any) -> bool:
    """Whether ``x`` is a node of a structure (see :func:`node_of`)."""
    return type(x) in _PLAIN or node_of(x) is not None


_PLAIN = (dict, list, tuple)
"""The types every registry takes for nodes (a shortcut: optree's answer for them)."""


def _dict_node(x: Any) -> Node:
    keys = tuple(x)
    return Node(DICT, type(x), keys, list(x.values()), tuple(f"[{k!r}]" for k in keys))


def _optree() -> Any:
    """The optree module, or ``None`` when it is not installed."""
    try:
        import optree
    except ImportError:
        return None
    return optree


def _plain_node(x: Any) -> Node | None:
    """A ``dict``, ``list`` or ``tuple`` taken apart as optree would, without optree."""
    tp = type(x)
    if tp is dict or tp is OrderedDict:
        return _dict_node(x)
    if tp is list or tp is tuple:
        n = len(x)
        return Node(LIST if tp is list else TUPLE, tp, tuple(range(n)), list(x),
                    tuple(f"[{i}]" for i in range(n)))
    return None


def _optree_node(optree: Any, x: Any) -> Node | None:
    """``x`` as optree's registry takes it apart, or ``None`` for a leaf. What ``x`` is is
    asked first (``tree_is_leaf``): taking a leaf apart raises a ``ValueError`` whose message
    formats the value's ``repr`` (the user's, and its leaves'), which planning never runs."""
    if optree.tree_is_leaf(x, none_is_leaf=True):
        return None
    plain = _plain_node(x)
    if plain is not None:
        return plain
    tp = type(x)
    if optree.is_namedtuple_class(tp):
        fields = tuple(tp._fields)
        return Node(NAMEDTUPLE, tp, fields, list(x), tuple(f".{f}" for f in fields))
    one = optree.tree_flatten_one_level(x, none_is_leaf=True)
    unflatten = one.unflatten_func

    def flatten(y: Any) -> tuple[list, Any]:  # the metadata and the keys the node names
        o = optree.tree_flatten_one_level(y, none_is_leaf=True)
        return o.children, (o.metadata, o.entries)

    return Node(GENERIC, tp, tuple(one.entries), list(one.children),
                tuple(f"[{e!r}]" for e in one.entries), (one.metadata, one.entries), flatten,
                lambda meta, children: unflatten(meta[0], children))


def _jax_node(x: Any) -> Node | None:
    tu = sys.modules["jax"].tree_util

    def flatten(y: Any) -> tuple[list, Any]:
        children, treedef = tu.tree_flatten(y, is_leaf=lambda z: z is not y)
        # JAX compares treedefs' node data with ==: the root's own, compared as keys are
        return children, (treedef, treedef.node_data())

    children, meta = flatten(x)
    treedef = meta[0]
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:  # a leaf (a node of no children
        return None                                          # is an empty node, not a leaf)
    paths, _ = tu.tree_flatten_with_path(x, is_leaf=lambda z: z is not x)
    labels = tuple(_jax_label(tu, p[0]) for p, _ in paths)
    return Node(GENERIC, type(x), labels, children, labels, meta, flatten,
                lambda meta, ch: meta[0].unflatten(ch))


def _jax_label(tu: Any, key: Any) -> str:
    """``['k']``, ``.name``, or ``[i]`` for a node registered without keys."""
    if isinstance(key, tu.FlattenedIndexKey):
        return f"[{key.key}]"
    return tu.keystr((key,))


def _torch_node(x: Any) -> Node | None:
    node_def = sys.modules["torch.utils._pytree"].SUPPORTED_NODES.get(type(x))
    if node_def is None:
        return None
    flatten = node_def.flatten_fn
    children, context = flatten(x)
    labels = tuple(f"[{i}]" for i in range(len(children)))
    return Node(GENERIC, type(x), tuple(range(len(children))), list(children), labels, context,
                flatten, lambda ctx, ch: node_def.unflatten_fn(ch, ctx))
