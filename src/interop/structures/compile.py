"""A structure's plan: made once per structure from its walk, as nested closures, two per
node: a check and a run. The check holds the node's type and keys and, per child, the child's
type (and a nested node's check); the run holds, per child, its converter (an array leaf's own
per-type plan from the registry, a nested node's run, or nothing for a leaf kept as it is).
The plan checks the whole value against the structure it was made for (node types, keys,
leaf types) before it converts any leaf, and raises :class:`Mismatch` at the first
difference: the caller then plans the value afresh, and no leaf was used (a DLPack capsule
is consumed by its conversion).

Keys match when they are the same key: equal, of the same type, and (for keys other than
strings, ints, bools, bytes and ``None``) of the same ``repr``; ``{1: a}`` does not run the
plan made for ``{True: a}``, which would give back the other dict's keys.

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
    check, run, whole = _compile(tree, leaf_plan, narrows)
    if whole is not None:  # a node run by code made for its shape: checks, then converts
        return whole

    def convert(x: Any) -> Any:
        check(x)  # the whole structure, before any leaf is converted
        return run(x)

    return convert


Check = Callable[[Any], None]


def _compile(tree: Tree, leaf_plan: Callable[[Leaf], Convert],
             narrows: bool) -> tuple[Check, Convert, Convert | None]:
    """The check and the run of the node ``tree`` (see the module doc), and, for a node run
    by code made for its shape, both in one function (``None`` otherwise)."""
    types, fns, checks, paths = [], [], [], []
    for c in tree.children:
        paths.append(c.path if isinstance(c, Leaf) else None)
        checks.append(None)
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
            checks[-1], run, _ = _compile(c, leaf_plan, narrows)
            fns.append(run)
    node = tree.node
    ktypes, kreprs = key_facts(node.keys) if node.kind == DICT else ((), None)
    if node.kind != GENERIC and len(types) <= SMALL:
        shape = tuple("N" if isinstance(c, Tree) else "K" if isinstance(c, Kept) else "L"
                      for c in tree.children)
        key = (node.kind, shape, kreprs is not None)
        make = _MAKERS.get(key)
        if make is None:
            make = _MAKERS[key] = _straight(*key)
        rebuild = rebuilder(node.type) if node.kind == DICT else None
        return make(node.type, len(types), node.keys, ktypes, kreprs, tuple(types), tuple(fns),
                    tuple(checks), tuple(paths), rebuild)
    children = _children_check(tuple(types), tuple(checks))
    if node.kind == DICT:
        return (_dict_check(node.type, node.keys, ktypes, kreprs, children),
                _dict_run(node.type, node.keys, tuple(fns), paths), None)
    seq = _sequence(tuple(fns), tuple(paths))
    if node.kind == GENERIC:
        return (*_generic_run(node.type, len(types), node.meta, node.flatten, node.unflatten,
                              children, seq), None)
    return (_sequence_check(node.type, len(types), children),
            _sequence_run(node.kind, node.type, seq), None)


_PLAIN_KEYS = (str, int, bool, bytes, type(None))
"""Key types whose equal keys of one type are the same key (not so for floats: ``-0.0`` and
``0.0``; nor for tuples: ``(1,)`` and ``(True,)``)."""


def key_facts(keys: tuple) -> tuple[tuple, tuple | None]:
    """What a dict's keys must match to be the same keys as ``keys`` (see the module doc),
    besides equality: their types, and their reprs (``None`` where equality and type
    decide)."""
    types = tuple(map(type, keys))
    return types, None if all(t in _PLAIN_KEYS for t in types) else tuple(map(repr, keys))


SMALL = 16
"""A node of up to this many children (a batch) runs straight-line code made for its shape,
compiled once per shape and process (as :mod:`interop.fastplan` does for plans); a larger one
(a model's weights) runs a loop: straight-line code of a thousand children runs slower than
the loop and takes a quarter of a second to compile (measured; see the notes of issue 30)."""

_MAKERS: dict[tuple, Callable[..., tuple[Check, Convert, Convert]]] = {}


def _straight(kind: str, shape: tuple[str, ...],
              strict: bool) -> Callable[..., tuple[Check, Convert, Convert]]:
    """The maker of a node's check, run and both in one (``whole``) for ``kind`` and
    ``shape`` (per child ``"L"``: an array leaf, ``"K"``: a leaf kept, ``"N"``: a nested
    node); ``strict``: keys are matched by ``repr`` too. For a dict of an array leaf and a
    nested node ``whole`` reads::

        def whole(x):
            if (type(x) is not T or len(x) != N or tuple(x) != keys
                    or tuple(map(type, x)) != ktypes):
                raise Mismatch
            v0, v1, = x.values()
            if type(v0) is not t0 or type(v1) is not t1:
                raise Mismatch
            c1(v1)
            try:
                r0 = f0(v0)
            except InteropError as e:
                raise at_path(e, p0) from e
            r1 = f1(v1)
            return {k0: r0, k1: r1} if rebuild is None else rebuild(x, {k0: r0, k1: r1})

    ``check`` is its lines up to ``c1(v1)``; ``run`` unpacks the values and converts.
    """
    n = len(shape)
    names = lambda p: ", ".join(f"{p}{i}" for i in range(n)) + "," if n else ""  # noqa: E731
    values = f"{names('v')} = {'x.values()' if kind == DICT else 'x'}"
    same = ""
    if kind == DICT:
        same = " or tuple(x) != keys or tuple(map(type, x)) != ktypes" + (
            " or tuple(map(repr, x)) != kreprs" if strict else "")
    check = [f"if type(x) is not T or len(x) != N{same}:", "    raise Mismatch"]
    convert = []
    if n:
        check += [values, "if " + " or ".join(f"type(v{i}) is not t{i}" for i in range(n))
                  + ":", "    raise Mismatch"]
        check += [f"c{i}(v{i})" for i, c in enumerate(shape) if c == "N"]
    for i, c in enumerate(shape):
        if c == "L":
            convert += ["try:", f"    r{i} = f{i}(v{i})", "except InteropError as e:",
                        f"    raise at_path(e, p{i}) from e"]
        else:
            convert.append(f"r{i} = {'v' if c == 'K' else 'f'}{i}"
                           + ("" if c == "K" else f"(v{i})"))
    items = ", ".join(f"k{i}: r{i}" for i in range(n)) if kind == DICT else names("r")
    built = {DICT: f"{{{items}}}", LIST: f"[{items}]", TUPLE: f"({items})",
             NAMEDTUPLE: f"T({names('r')[:-1]})"}[kind]
    convert.append(f"return {built}" if kind != DICT else
                   f"return {built} if rebuild is None else rebuild(x, {built})")
    unpack = [f"{names(p)} = {whole}" for p, whole in (("t", "types"), ("f", "fns"),
                                                       ("c", "checks"), ("p", "paths"),
                                                       ("k", "keys"))] if n else []
    bodies = (("check", check), ("run", ([values] if n else []) + convert),
              ("whole", check + convert))
    source = ("def make(T, N, keys, ktypes, kreprs, types, fns, checks, paths, rebuild):\n"
              + "".join(f"    {line}\n" for line in unpack)
              + "".join(f"    def {name}(x):\n" + "".join(f"        {line}\n" for line in body)
                        for name, body in bodies)
              + "    return check, run, whole\n")
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


def _children_check(types: tuple, checks: tuple) -> Check:
    """The check of a node's children (their types, nested nodes' own checks)."""
    def check(values: Any) -> None:
        for v, t, c in zip(values, types, checks):
            if type(v) is not t:
                raise Mismatch
            if c is not None:
                c(v)

    return check


def _dict_check(tp: type, keys: tuple, ktypes: tuple, kreprs: tuple | None,
                children: Check) -> Check:
    n = len(keys)

    def check(x: Any) -> None:
        if (type(x) is not tp or len(x) != n or tuple(x) != keys
                or tuple(map(type, x)) != ktypes
                or (kreprs is not None and tuple(map(repr, x)) != kreprs)):
            raise Mismatch
        children(x.values())

    return check


def _dict_run(tp: type, keys: tuple, fns: tuple, paths: list) -> Convert:
    at = dict(zip(keys, paths))
    rebuild = rebuilder(tp)

    def run(x: Any) -> Any:
        out = {}
        k = None
        try:
            for k, v, f in zip(keys, x.values(), fns):
                out[k] = v if f is None else f(v)
        except InteropError as e:
            if at[k] is None:  # a nested node named its leaf already
                raise
            raise at_path(e, at[k]) from e
        return out if rebuild is None else rebuild(x, out)

    return run


def _sequence(fns: tuple, paths: tuple) -> Callable[[Any], list]:
    """The children of a sequence-like node (a list of values), converted."""
    def convert(values: Any) -> list:
        out = []
        i = 0
        try:
            for i, (v, f) in enumerate(zip(values, fns)):  # noqa: B007 - read below
                out.append(v if f is None else f(v))
        except InteropError as e:
            if paths[i] is None:
                raise
            raise at_path(e, paths[i]) from e
        return out

    return convert


def _sequence_check(tp: type, n: int, children: Check) -> Check:
    def check(x: Any) -> None:
        if type(x) is not tp or len(x) != n:
            raise Mismatch
        children(x)

    return check


def _sequence_run(kind: str, tp: type, seq: Callable[[Any], list]) -> Convert:
    def run(x: Any) -> Any:
        out = seq(x)
        return out if kind == LIST else tuple(out) if kind == TUPLE else tp(*out)

    assert kind in (LIST, TUPLE, NAMEDTUPLE)
    return run


def _generic_run(tp: type, n: int, meta: Any, flatten: Callable, unflatten: Callable,
                 children: Check, seq: Callable[[Any], list]) -> tuple[Check, Convert]:
    def check(x: Any) -> None:
        if type(x) is not tp:
            raise Mismatch
        values, m = flatten(x)
        if len(values) != n or not _same(m, meta):
            raise Mismatch
        children(values)

    def run(x: Any) -> Any:
        values, m = flatten(x)
        return unflatten(m, seq(values))

    return check, run


def _same(a: Any, b: Any) -> bool:
    """Whether two nodes' metadata are equal (metadata that cannot say never are)."""
    try:
        return bool(a == b)
    except Exception:
        return False
