"""A structure's plan: made once per structure from its walk, as nested closures per node: a
check, a run, and both in one (``whole``, what the root runs). The check holds the node's
type and keys and, per child, the child's type (and a nested node's check); the run holds,
per child, its converter (an array leaf's own per-type plan from the registry, a nested
node's run, or nothing for a leaf kept as it is; children that are all leaves of one plan
go to that plan's ``each`` together).
The plan checks the whole value against the structure it was made for (node types, keys,
leaf types) before it converts any leaf, and raises :class:`Mismatch` at the first
difference: the caller then plans the value afresh, and no leaf was used (a DLPack capsule
is consumed by its conversion).

Keys match when they are the same key (:func:`same`): equal and of the same type, all the way
down; ``{1: a}`` does not run the plan made for ``{True: a}``, which would name its leaves by
the other dict's keys. The same holds for every kind of node: a generic node's registry
metadata (where optree keeps a ``defaultdict``'s keys) is matched by :func:`same` too. A
converted dict holds the value's own keys.

An :class:`~interop.errors.InteropError` from a leaf is raised again, of the same class,
naming the leaf's path (``['layers'][3]['w']``); nothing converted before it is returned.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from operator import is_
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
    array leaf's converter; ``narrows``: the target may narrow dtypes, so the leaves'
    narrowing reasons are gathered, each labelled with its leaf's path, into one
    :class:`~interop.errors.NarrowingWarning` per call naming them all."""
    return _compile(tree, leaf_plan, narrows, True)[2]  # checks it all, then converts


Check = Callable[[Any], None]


def _compile(tree: Tree, leaf_plan: Callable[[Leaf], Convert], narrows: bool,
             root: bool = False) -> tuple[Check, Convert, Convert]:
    """The check and the run of the node ``tree`` (see the module doc), and both in one
    function (``whole``: the check, then the run, each child's values read once; for the
    ``root`` of a target that ``narrows``, within the call's gathering of reasons)."""
    types, fns, checks, paths = [], [], [], []
    for c in tree.children:
        paths.append(c.path if isinstance(c, Leaf) else None)
        checks.append(None)
        if isinstance(c, Leaf):
            types.append(c.type)
            try:
                fns.append(leaf_plan(c))
            except InteropError as e:
                raise at_path(e, c.path) from e
        elif isinstance(c, Kept):
            types.append(c.type)
            fns.append(None)
        else:
            types.append(c.node.type)
            checks[-1], run, _ = _compile(c, leaf_plan, narrows)
            fns.append(run)
    node = tree.node
    ktypes, strict = key_facts(node.keys) if node.kind == DICT else ((), False)
    if node.kind != GENERIC and len(types) <= SMALL:
        shape = tuple("N" if isinstance(c, Tree) else "K" if isinstance(c, Kept) else "L"
                      for c in tree.children)
        key = (node.kind, shape, strict, narrows, root and narrows)
        make = _MAKERS.get(key)
        if make is None:
            make = _MAKERS[key] = _straight(*key)
        rebuild = rebuilder(node.type) if node.kind == DICT else None
        return make(node.type, len(types), node.keys, ktypes, same, tuple(types), tuple(fns),
                    tuple(checks), tuple(paths), rebuild)
    values_check = _values_check(tuple(types), tuple(checks))
    convert = (_labelling if narrows else _converting)(tuple(fns), tuple(paths))
    if node.kind == DICT:
        check, run, whole = _dict(node.type, node.keys, ktypes, strict, values_check, convert)
    elif node.kind == GENERIC:
        check, run, whole = _generic(node.type, len(types), node.meta, node.flatten,
                                     node.unflatten, values_check, convert)
    else:
        check, run, whole = _sequence(node.kind, node.type, len(types), values_check, convert)
    if root and narrows:
        whole = _gathering(whole, node.type.__name__)
    return check, run, whole


_PLAIN_KEYS = (str, int, bool, bytes, type(None))
"""Key types whose equal keys of one type are the same key (not so for floats: ``-0.0`` and
``0.0``; nor for tuples: ``(1,)`` and ``(True,)``)."""


def key_facts(keys: tuple) -> tuple[tuple, bool]:
    """What a dict's keys must match to be the same keys as ``keys`` (see the module doc),
    besides equality: their types, and whether equality and type do not decide (then
    :func:`same` does)."""
    types = tuple(map(type, keys))
    return types, not all(t in _PLAIN_KEYS for t in types)


def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` (keys, or a node's registry metadata) are the same: one object,
    or of one type and equal all the way down (the items of tuples, lists and dicts in order,
    of sets with their types, a float's sign of zero), so ``True``, ``1`` and ``1.0`` differ.
    It formats nothing (no ``repr``); values that cannot say whether they are equal never
    are."""
    if a is b:
        return True
    tp = type(a)
    if tp is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return len(a) == len(b) and same(tuple(a), tuple(b)) and same(tuple(a.values()),
                                                                    tuple(b.values()))
    try:
        if isinstance(a, (set, frozenset)):
            return {(type(k), k) for k in a} == {(type(k), k) for k in b}
        if isinstance(a, float):
            return bool(a == b) and math.copysign(1.0, a) == math.copysign(1.0, b)
        if isinstance(a, complex):
            return same(a.real, b.real) and same(a.imag, b.imag)
        return bool(a == b)
    except Exception:
        return False


SMALL = 16
"""A node of up to this many children (a batch) runs straight-line code made for its shape,
compiled once per shape and process (as :mod:`interop.fastplan` does for plans); a larger one
(a model's weights) runs a loop: straight-line code of a thousand children runs slower than
the loop and takes a quarter of a second to compile (measured; see the notes of issue 30). A
large node whose children are all array leaves of one plan hands them all to that plan's
``each`` (:mod:`interop.fastplan`: the guard read by one ``map`` per test, then the
framework's own call mapped over them; issue 49)."""

_MAKERS: dict[tuple, Callable[..., tuple[Check, Convert, Convert]]] = {}


def _straight(kind: str, shape: tuple[str, ...], strict: bool, narrows: bool,
              root: bool) -> Callable[..., tuple[Check, Convert, Convert]]:
    """The maker of a node's check, run and both in one (``whole``) for ``kind`` and
    ``shape`` (per child ``"L"``: an array leaf, ``"K"``: a leaf kept, ``"N"``: a nested
    node); ``strict``: keys are matched by :func:`same` too, and the result holds the
    value's own keys; ``narrows``: the narrowing reasons a leaf adds to the list gathered
    (:data:`interop.narrowing.STATE`) are labelled with its path, and a ``root`` gathers
    them itself (as :func:`_gathering` does for a loop), emptying the list after each child
    that added to it (``if got``: no call per leaf). For a dict of an array leaf and a
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
            out = {k0: r0, k1: r1} if rebuild is None else rebuild(x, ((k0, r0), (k1, r1),))
            return out

    ``check`` is its lines up to ``c1(v1)``; ``run`` unpacks the values and converts.
    """
    n = len(shape)
    names = lambda p: ", ".join(f"{p}{i}" for i in range(n)) + "," if n else ""  # noqa: E731
    values = f"{names('v')} = {'x.values()' if kind == DICT else 'x'}"
    keyed = ""
    if kind == DICT:
        keyed = " or tuple(x) != keys or tuple(map(type, x)) != ktypes" + (
            " or not same(tuple(x), keys)" if strict else "")
    check = [f"if type(x) is not T or len(x) != N{keyed}:", "    raise Mismatch"]
    convert = [f"{names('k')} = x"] if strict and n else []  # the value's own keys
    if n:
        check += [values, "if " + " or ".join(f"type(v{i}) is not t{i}" for i in range(n))
                  + ":", "    raise Mismatch"]
        check += [f"c{i}(v{i})" for i, c in enumerate(shape) if c == "N"]
    gathers = narrows and root  # the call's gathering: got is emptied after each child
    labels = narrows and not root and "L" in shape  # got holds the reasons from n on
    if labels:
        convert += ["got = state.got", "n = len(got)"]
    for i, c in enumerate(shape):
        if c == "L":
            convert += ["try:", f"    r{i} = f{i}(v{i})", "except InteropError as e:",
                        f"    raise at_path(e, p{i}) from e"]
            convert += ["if len(got) != n:", f"    n = label(got, n, p{i})"] if labels else []
            convert += ["if got:", f"    done = moved(done, got, p{i})"] if gathers else []
        else:
            convert.append(f"r{i} = {'v' if c == 'K' else 'f'}{i}"
                           + ("" if c == "K" else f"(v{i})"))
            convert += ["n = len(got)"] if labels and c == "N" else []  # labelled there
            convert += ["if got:", "    done = moved(done, got, None)"] if (
                gathers and c == "N") else []
    items = ", ".join(f"k{i}: r{i}" for i in range(n)) if kind == DICT else names("r")
    built = {DICT: f"{{{items}}}", LIST: f"[{items}]", TUPLE: f"({items})",
             NAMEDTUPLE: f"T({names('r')[:-1]})"}[kind]
    pairs = "(" + "".join(f"(k{i}, r{i}), " for i in range(n)) + ")"
    convert.append(f"out = {built}" if kind != DICT else
                   f"out = {built} if rebuild is None else rebuild(x, {pairs})")
    if gathers:  # one warning names every narrowed leaf
        convert = ["outer = state.got", "got = state.got = []", "done = None", "try:",
                   *(f"    {line}" for line in convert), "finally:", "    state.got = outer",
                   "if done:", "    warn(T.__name__ + ': ' + '; '.join(done))"]
    convert.append("return out")
    whole = check + convert
    unpack = [f"{names(p)} = {whole}" for p, whole in (("t", "types"), ("f", "fns"),
                                                       ("c", "checks"), ("p", "paths"),
                                                       ("k", "keys"))] if n else []
    bodies = (("check", check), ("run", ([values] if n else []) + convert),
              ("whole", whole))
    source = ("def make(T, N, keys, ktypes, same, types, fns, checks, paths, rebuild):\n"
              + "".join(f"    {line}\n" for line in unpack)
              + "".join(f"    def {name}(x):\n" + "".join(f"        {line}\n" for line in body)
                        for name, body in bodies)
              + "    return check, run, whole\n")
    namespace: dict[str, Any] = {"__name__": __name__, "Mismatch": Mismatch,
                                 "InteropError": InteropError, "at_path": at_path,
                                 "state": narrowing.STATE, "label": _label,
                                 "moved": _moved, "warn": narrowing.warn}
    exec(compile(source, f"<interop structure {kind} {''.join(shape)}>", "exec"), namespace)
    return namespace["make"]


def _label(got: list[str], n: int, path: str) -> int:
    """Label the reasons a leaf added to ``got`` (from ``n`` on) with its ``path``; the new
    length."""
    got[n:] = [f"leaf {path}: {why}" for why in got[n:]]
    return len(got)


def _moved(done: list[str] | None, got: list[str], path: str | None) -> list[str]:
    """``done`` (a new list for ``None``) with the reasons of ``got`` appended, labelled with
    the leaf's ``path`` (``None``: a nested node's, labelled there); ``got`` emptied."""
    done = [] if done is None else done
    done += got if path is None else [f"leaf {path}: {why}" for why in got]
    got.clear()
    return done


def _gathering(run: Convert, label: str) -> Convert:
    """``run`` within a gathering of narrowing reasons (:data:`interop.narrowing.STATE`),
    emitting one :class:`~interop.errors.NarrowingWarning` naming every narrowed leaf."""
    state = narrowing.STATE

    def narrowing_run(x: Any) -> Any:
        outer = state.got
        got: list[str] = []
        state.got = got
        try:
            out = run(x)
        finally:
            state.got = outer
        if got:
            narrowing.warn(f"{label}: " + "; ".join(got))
        return out

    return narrowing_run


def rebuilder(tp: type) -> Callable[[Any, Iterable[tuple[Any, Any]]], Any] | None:
    """How a converted dict node of type ``tp`` is put back from its items (pairs): ``None``
    for a ``dict``; for a subclass (a torch ``state_dict``'s ``OrderedDict``, ``Columns``) a
    new ``tp`` made as ``copy.copy`` makes one (no ``__init__`` of a subclass runs, nor its
    ``__setitem__``), holding the converted items and the source's instance attributes (a
    ``state_dict``'s ``_metadata``, which ``load_state_dict`` hands to the modules), the same
    objects, as torch's own copies of a state dict keep it."""
    if tp is dict:
        return None
    if tp is OrderedDict:  # its own constructor: what __new__ and its __setitem__ make

        def make(items: Iterable[tuple[Any, Any]]) -> Any:
            return OrderedDict(items)
    elif issubclass(tp, OrderedDict):
        put = OrderedDict.__setitem__

        def make(items: Iterable[tuple[Any, Any]]) -> Any:
            out = tp.__new__(tp)
            for k, v in items:
                put(out, k, v)
            return out
    else:  # dict.update sets items as dict.__setitem__ does, whatever the subclass's is

        def make(items: Iterable[tuple[Any, Any]]) -> Any:
            out = tp.__new__(tp)
            dict.update(out, items)
            return out

    def rebuild(x: Any, items: Iterable[tuple[Any, Any]]) -> Any:
        out = make(items)
        attrs = getattr(x, "__dict__", None)
        if attrs:
            out.__dict__.update(attrs)
        return out

    return rebuild


def _values_check(types: tuple, checks: tuple) -> Callable[[Sequence[Any]], None]:
    """The check of a node's children (a sequence): each of its type (one ``map``), then the
    nested nodes' own checks."""
    nested = tuple((i, c) for i, c in enumerate(checks) if c is not None)

    def check(values: Sequence[Any]) -> None:
        if len(values) != len(types) or not all(map(is_, map(type, values), types)):
            raise Mismatch
        for i, c in nested:
            c(values[i])

    return check


ConvertAll = Callable[[Sequence[Any]], list]


def _converting(fns: tuple, paths: tuple) -> ConvertAll:
    """The children of a node (a sequence of values) converted, in a list: together, by
    their plan's ``each``, when all are array leaves of one plan (a model's weights), else one
    by one. An :class:`InteropError` names the leaf it came from (the list holds the children
    converted before it)."""
    one = fns[0] if fns else None
    if one is not None and all(f is one for f in fns) and None not in paths:
        each = getattr(one, "each", None)
        if each is None:
            def each(xs: Sequence[Any], out: list) -> list:
                out.extend(map(one, xs))
                return out

        def together(values: Sequence[Any]) -> list:
            out: list = []
            try:
                return each(values, out)
            except InteropError as e:
                raise at_path(e, paths[len(out)]) from e

        return together

    def convert(values: Sequence[Any]) -> list:
        out: list = []
        try:
            for v, f in zip(values, fns):
                out.append(v if f is None else f(v))
        except InteropError as e:
            if paths[len(out)] is None:  # a nested node named its leaf already
                raise
            raise at_path(e, paths[len(out)]) from e
        return out

    return convert


def _labelling(fns: tuple, paths: tuple) -> ConvertAll:
    """:func:`_converting` one by one, each leaf's narrowing reasons labelled with its path."""
    state = narrowing.STATE

    def convert(values: Sequence[Any]) -> list:
        out: list = []
        got = state.got
        n = len(got)
        try:
            for v, f, p in zip(values, fns, paths):
                out.append(v if f is None else f(v))
                if len(got) != n:  # a nested node labelled its leaves' already
                    n = len(got) if p is None else _label(got, n, p)
        except InteropError as e:
            if paths[len(out)] is None:
                raise
            raise at_path(e, paths[len(out)]) from e
        return out

    return convert


def _dict(tp: type, keys: tuple, ktypes: tuple, strict: bool,
          values_check: Callable[[Sequence[Any]], None],
          convert: ConvertAll) -> tuple[Check, Convert, Convert]:
    """A dict node's check, run and both in one: its keys read once, its values once."""
    n = len(keys)
    rebuild = rebuilder(tp)

    def facts(x: Any) -> tuple[tuple, tuple]:
        if type(x) is not tp or len(x) != n:
            raise Mismatch
        ks = tuple(x)
        if (ks != keys or not all(map(is_, map(type, ks), ktypes))
                or (strict and not same(ks, keys))):
            raise Mismatch
        values = tuple(x.values())
        values_check(values)
        return ks, values

    def check(x: Any) -> None:
        facts(x)

    def build(x: Any, ks: tuple, values: tuple) -> Any:
        items = zip(ks, convert(values))  # the value's own keys
        return dict(items) if rebuild is None else rebuild(x, items)

    def run(x: Any) -> Any:
        return build(x, tuple(x), tuple(x.values()))

    def whole(x: Any) -> Any:
        return build(x, *facts(x))

    return check, run, whole


def _sequence(kind: str, tp: type, n: int, values_check: Callable[[Sequence[Any]], None],
              convert: ConvertAll) -> tuple[Check, Convert, Convert]:
    """A list's, tuple's or named tuple's check, run and both in one."""
    assert kind in (LIST, TUPLE, NAMEDTUPLE)

    def check(x: Any) -> None:
        if type(x) is not tp or len(x) != n:
            raise Mismatch
        values_check(x)

    def run(x: Any) -> Any:
        out = convert(x)
        return out if kind == LIST else tuple(out) if kind == TUPLE else tp(*out)

    def whole(x: Any) -> Any:
        check(x)
        return run(x)

    return check, run, whole


def _generic(tp: type, n: int, meta: Any, flatten: Callable, unflatten: Callable,
             values_check: Callable[[Sequence[Any]], None],
             convert: ConvertAll) -> tuple[Check, Convert, Convert]:
    """A node of a pytree registry: taken apart by its ``flatten``, its metadata matched by
    :func:`same`, put back by its ``unflatten``."""
    def facts(x: Any) -> tuple[Any, Any]:
        if type(x) is not tp:
            raise Mismatch
        values, m = flatten(x)
        if len(values) != n or not same(m, meta):
            raise Mismatch
        values_check(values)
        return values, m

    def check(x: Any) -> None:
        facts(x)

    def run(x: Any) -> Any:
        values, m = flatten(x)
        return unflatten(m, convert(values))

    def whole(x: Any) -> Any:
        values, m = facts(x)
        return unflatten(m, convert(values))

    return check, run, whole
