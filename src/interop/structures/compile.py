"""A structure's plan: made once per structure from its walk, as nested closures, one per
node, each holding its node's keys and, per child, the child's type and its converter (an
array leaf's own per-type plan from the registry, a nested node's closure, or nothing for a
leaf kept as it is). Running it checks the value against the structure it was made for (node
types, keys, leaf types) as it goes, and raises :class:`Mismatch` at the first difference,
before returning anything: the caller then plans the value afresh.

An :class:`~interop.errors.InteropError` from a leaf is raised again, of the same class,
naming the leaf's path (``['layers'][3]['w']``); nothing converted before it is returned.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import narrowing
from ..errors import InteropError
from .nodes import DICT, GENERIC, LIST, NAMEDTUPLE, TUPLE
from .walk import Kept, Leaf, Tree

Convert = Callable[[Any], Any]


class Mismatch(Exception):
    """The value has not the structure the plan was made for (not an interop error: the
    plan's caller catches it and plans again)."""


def at_path(e: InteropError, path: str) -> InteropError:
    """``e`` again, of its class, naming the leaf at ``path``."""
    out = type(e)(f"leaf {path}: {e}")
    out.__cause__ = e
    return out


def compile_tree(tree: Tree, leaf_plan: Callable[[Leaf], Convert],
                 narrows: bool = False) -> Convert:
    """The closure converting values of the structure of ``tree``; ``leaf_plan`` gives each
    array leaf's converter; ``narrows``: the target may narrow dtypes, so each leaf's
    narrowing reasons are labelled with its path (:func:`interop.narrowing.gathered`)."""
    types, fns, paths = [], [], []
    for c in tree.children:
        paths.append(c.path if isinstance(c, Leaf) else None)
        if isinstance(c, Leaf):
            types.append(c.type)
            try:
                fn = leaf_plan(c)
            except InteropError as e:
                raise at_path(e, c.path) from e
            fns.append(_labelled(fn, c.path) if narrows else fn)
        elif isinstance(c, Kept):
            types.append(c.type)
            fns.append(None)
        else:
            types.append(c.node.type)
            fns.append(compile_tree(c, leaf_plan, narrows))
    node = tree.node
    if node.kind != GENERIC and len(types) <= SMALL:
        shape = tuple("N" if isinstance(c, Tree) else "K" if isinstance(c, Kept) else "L"
                      for c in tree.children)
        make = _MAKERS.get((node.kind, shape))
        if make is None:
            make = _MAKERS[(node.kind, shape)] = _straight(node.kind, shape)
        rebuild = rebuilder(node.type) if node.kind == DICT else None
        return make(node.type, len(types), node.keys, tuple(types), tuple(fns), tuple(paths),
                    rebuild)
    if node.kind == DICT:
        return _dict_run(node.type, node.keys, tuple(types), tuple(fns), paths)
    seq = _sequence(tuple(types), tuple(fns), tuple(paths))
    if node.kind == GENERIC:
        return _generic_run(node.type, len(types), node.meta, node.flatten, node.unflatten, seq)
    return _sequence_run(node.kind, node.type, len(types), seq)


SMALL = 16
"""A node of up to this many children (a batch) runs straight-line code made for its shape,
compiled once per shape and process (as :mod:`interop.fastplan` does for plans); a larger one
(a model's weights) runs a loop: straight-line code of a thousand children runs slower than
the loop and takes a quarter of a second to compile (measured; see the notes of issue 30)."""

_MAKERS: dict[tuple, Callable[..., Convert]] = {}


def _straight(kind: str, shape: tuple[str, ...]) -> Callable[..., Convert]:
    """The maker of a node's closure for ``kind`` and ``shape`` (per child ``"L"``: an array
    leaf, ``"K"``: a leaf kept, ``"N"``: a nested node). For a dict of an array leaf and a
    kept one it reads::

        def run(x):
            if type(x) is not T or len(x) != N or tuple(x) != keys:
                raise Mismatch
            v0, v1, = x.values()
            if type(v0) is not t0 or type(v1) is not t1:
                raise Mismatch
            try:
                r0 = f0(v0)
            except InteropError as e:
                raise at_path(e, p0) from e
            r1 = v1
            return {k0: r0, k1: r1} if rebuild is None else rebuild(x, {k0: r0, k1: r1})
    """
    n = len(shape)
    names = lambda p: ", ".join(f"{p}{i}" for i in range(n)) + "," if n else ""  # noqa: E731
    body = ["if type(x) is not T or len(x) != N" + (" or tuple(x) != keys:" if kind == DICT
                                                    else ":"), "    raise Mismatch"]
    if n:
        body.append(f"{names('v')} = {'x.values()' if kind == DICT else 'x'}")
        body += ["if " + " or ".join(f"type(v{i}) is not t{i}" for i in range(n)) + ":",
                 "    raise Mismatch"]
    for i, c in enumerate(shape):
        if c == "L":
            body += ["try:", f"    r{i} = f{i}(v{i})", "except InteropError as e:",
                     f"    raise at_path(e, p{i}) from e"]
        else:
            body.append(f"r{i} = {'v' if c == 'K' else 'f'}{i}" + ("" if c == "K" else f"(v{i})"))
    items = ", ".join(f"k{i}: r{i}" for i in range(n)) if kind == DICT else names("r")
    built = {DICT: f"{{{items}}}", LIST: f"[{items}]", TUPLE: f"({items})",
             NAMEDTUPLE: f"T({names('r')[:-1]})"}[kind]
    body.append(f"return {built}" if kind != DICT else
                f"return {built} if rebuild is None else rebuild(x, {built})")
    unpack = [f"{names(p)} = {whole}" for p, whole in (("t", "types"), ("f", "fns"),
                                                       ("p", "paths"), ("k", "keys"))] if n \
        else []
    source = ("def make(T, N, keys, types, fns, paths, rebuild):\n"
              + "".join(f"    {line}\n" for line in unpack) + "    def run(x):\n"
              + "".join(f"        {line}\n" for line in body) + "    return run\n")
    namespace: dict[str, Any] = {"__name__": __name__, "Mismatch": Mismatch,
                                 "InteropError": InteropError, "at_path": at_path}
    exec(compile(source, f"<interop structure {kind} {''.join(shape)}>", "exec"), namespace)
    return namespace["make"]


def _labelled(fn: Convert, path: str) -> Convert:
    """``fn`` whose narrowing reasons name the leaf (one warning per call names them all)."""
    def leaf(v: Any) -> Any:
        got = narrowing.gathered()
        n = len(got) if got is not None else 0
        out = fn(v)
        if got is not None and len(got) > n:
            got[n:] = [f"leaf {path}: {why}" for why in got[n:]]
        return out

    return leaf


def rebuilder(tp: type) -> Callable[[Any, dict], Any] | None:
    """How a converted dict node of type ``tp`` is put back: ``None`` for a ``dict``; for a
    subclass (a torch ``state_dict``'s ``OrderedDict``, ``Columns``) a new ``tp`` made as
    ``copy.copy`` makes one (no ``__init__`` call), holding the converted items and the
    source's instance attributes (a ``state_dict``'s ``_metadata``, which ``load_state_dict``
    hands to the modules), the same objects, as torch's own copies of a state dict keep it."""
    if tp is dict:
        return None
    put = OrderedDict.__setitem__ if issubclass(tp, OrderedDict) else dict.__setitem__

    def rebuild(x: Any, items: dict) -> Any:
        out = tp.__new__(tp)
        for k, v in items.items():
            put(out, k, v)
        attrs = getattr(x, "__dict__", None)
        if attrs:
            out.__dict__.update(attrs)
        return out

    return rebuild


def _dict_run(tp: type, keys: tuple, types: tuple, fns: tuple, paths: list) -> Convert:
    n = len(keys)
    at = dict(zip(keys, paths))
    rebuild = rebuilder(tp)

    def run(x: Any) -> Any:
        if type(x) is not tp or len(x) != n or tuple(x) != keys:
            raise Mismatch
        out = {}
        k = None
        try:
            for k, v, t, f in zip(keys, x.values(), types, fns):
                if type(v) is not t:
                    raise Mismatch
                out[k] = v if f is None else f(v)
        except InteropError as e:
            if at[k] is None:  # a nested node named its leaf already
                raise
            raise at_path(e, at[k]) from e
        return out if rebuild is None else rebuild(x, out)

    return run


def _sequence(types: tuple, fns: tuple, paths: tuple) -> Callable[[Any], list]:
    """The children of a sequence-like node (a list of values, checked and converted)."""
    def convert(values: Any) -> list:
        out = []
        i = 0
        try:
            for i, (v, t, f) in enumerate(zip(values, types, fns)):  # noqa: B007 - read below
                if type(v) is not t:
                    raise Mismatch
                out.append(v if f is None else f(v))
        except InteropError as e:
            if paths[i] is None:
                raise
            raise at_path(e, paths[i]) from e
        return out

    return convert


def _sequence_run(kind: str, tp: type, n: int, seq: Callable[[Any], list]) -> Convert:
    def run(x: Any) -> Any:
        if type(x) is not tp or len(x) != n:
            raise Mismatch
        out = seq(x)
        return out if kind == LIST else tuple(out) if kind == TUPLE else tp(*out)

    assert kind in (LIST, TUPLE, NAMEDTUPLE)
    return run


def _generic_run(tp: type, n: int, meta: Any, flatten: Callable, unflatten: Callable,
                 seq: Callable[[Any], list]) -> Convert:
    def run(x: Any) -> Any:
        if type(x) is not tp:
            raise Mismatch
        children, m = flatten(x)
        if len(children) != n or not _same(m, meta):
            raise Mismatch
        return unflatten(m, seq(children))

    return run


def _same(a: Any, b: Any) -> bool:
    """Whether two nodes' metadata are equal (metadata that cannot say never are)."""
    try:
        return bool(a == b)
    except Exception:
        return False
