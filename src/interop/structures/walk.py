"""The one walk of a structure: its nodes (:mod:`.nodes`), its array leaves (values the
registry owns: arrays, tables, and any value of a framework registered later) and the other
leaves, kept as they are. Converting (:mod:`.compile`), explaining (:mod:`.explain`), reading a
flat dict as a table and ``shares_memory`` all read the structure through :func:`walk`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..adapters.base import RegistryLike
from .nodes import Node


class Leaf:
    """A value the registry owns (``owner`` names its adapter): converted by its own plan."""

    __slots__ = ("path", "type", "owner", "value")

    def __init__(self, path: str, value: Any, owner: str) -> None:
        self.path, self.type, self.owner, self.value = path, type(value), owner, value


class Kept:
    """A leaf that is no array (``None``, a number, a string, an object): kept as it is."""

    __slots__ = ("path", "type", "value")

    def __init__(self, path: str, value: Any) -> None:
        self.path, self.type, self.value = path, type(value), value


class Tree:
    """A node and its walked children (``Leaf``, ``Kept`` or ``Tree``), in the node's order."""

    __slots__ = ("path", "node", "children")

    def __init__(self, path: str, node: Node, children: list) -> None:
        self.path, self.node, self.children = path, node, children


Walked = Leaf | Kept | Tree


KEPT_TYPES = (bytes,)
"""Leaves kept as they are although an adapter reads them (``bytes`` speaks the buffer
protocol): in a structure they are data, like ``str``, not arrays."""


def walk(reg: RegistryLike, x: Any, node_owner: str, path: str = "",
         within: tuple[int, ...] = ()) -> Walked:
    """``x`` walked: every value the registry owns is a leaf, unless its owner is
    ``node_owner`` (the structures' own adapter); values nobody owns, and ``bytes``, are kept.
    ``within``: the ids of the nodes above ``x`` (a node among them is a structure that
    contains itself, refused)."""
    if type(x) in KEPT_TYPES:
        return Kept(path, x)
    owner = reg.find_owner(x)
    if owner is None:
        return Kept(path, x)
    if owner != node_owner:
        return Leaf(path, x, owner)
    from .nodes import node_of

    if id(x) in within:
        from ..errors import UnsupportedConversionError

        raise UnsupportedConversionError(
            f"this {type(x).__name__} contains itself (at {path or 'its root'}): a structure "
            "with a cycle has no finite conversion; break the cycle first")
    node = node_of(x)  # owned as a node: a node for some registry (or a dict)
    assert node is not None
    inner = (*within, id(x))
    return Tree(path, node, [walk(reg, c, node_owner, path + label, inner)
                             for c, label in zip(node.children, node.labels)])


def leaves(w: Walked) -> Iterator[Leaf]:
    """The array leaves of a walked structure, in order."""
    return _ends(w, Leaf)


def kept(w: Walked) -> Iterator[Kept]:
    """The leaves kept as they are, in order."""
    return _ends(w, Kept)


def _ends(w: Walked, kind: type) -> Iterator[Any]:
    if isinstance(w, kind):
        yield w
    elif isinstance(w, Tree):
        for c in w.children:
            yield from _ends(c, kind)
