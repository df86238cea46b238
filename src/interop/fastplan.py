"""The fast form of a plan, made from its edges' :class:`~interop.adapters.edge.Accepts`
(by a pair's second ``copy=None`` conversion: the first runs the checked plan).

For ``copy=None`` a plan runs each step's conversion straight away on a value its edge
accepts, and hands any other value, or one whose conversion raises ``NeedsCopy``, to the
checked plan from that step on. The steps are written out as one function per shape of plan
(the guards inlined, no call per guard), compiled once per shape and process: for the
edges ``numpy -> torch`` it reads::

    def plan(x):
        if not (x.dtype in d0 and x.flags.c_contiguous):
            return k0(x)
        try:
            x = c0(x)
        except NeedsCopy:
            return k0(x)
        return x

where ``d0`` and the flag come from the edge's ``Accepts`` (one flag is read as its
attribute, which costs less than ``x.flags.num & f0 == f0``, the test of several), ``c0`` is
its conversion and ``k0`` the checked plan from step 0 on. (The plan is cached per source
type, so the first step's type test is left out when the edge accepts that type.) Where the
``Accepts`` names the framework's own call (``native``), ``c0`` is that call itself
(``torch.from_numpy``, no frame of ours around it) and ``except`` also takes what it raises
where it refuses (``e0``); its ``unset`` attributes are tested in the guard
(``not x.requires_grad``).

Each plan carries ``plan.each(xs, out)``: the plan over a sequence of values of its source
type (a structure's leaves of one type, :mod:`interop.structures.compile`). For a plan of one
guarded step it reads each guard test for all the values by one ``map`` and, when every value
passes, maps the step's conversion over them (``Tensor.numpy``: no frame of ours per value),
handing a value the conversion refuses to the checked plan as :func:`plan` does; any other
plan, or values one of which fails the guard, go through ``plan`` one by one. The guard's
tests, per value and for all values, are written from one list (:func:`_tests`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from operator import attrgetter, eq
from typing import Any

from .adapters.edge import FLAG_NAMES, Accepts
from .adapters.verdicts import NeedsCopy

Step = tuple["Accepts | None", bool, Callable[[Any], Any], Callable[[Any], Any]]
"""One step: its edge's accepts, whether the edge has no check (it takes every value), its
bound conversion, and the checked plan from this step on."""

_MAKERS: dict[tuple, Callable[..., Callable[[Any], Any]]] = {}


def fast_plan(steps: Sequence[Step], source_type: type,
              split: tuple[Callable[[Any], bool], Callable[[Any], Any]] | None = None
              ) -> Callable[[Any], Any] | None:
    """The fast form of a plan of ``steps`` for values of ``source_type``; ``None`` when its
    first step has none (the checked plan is then the plan). ``split``: ``(several,
    divert)``, tested first (a value of several buffers of the source's type, such as a torch
    sparse tensor, that a first step taking any value would otherwise be handed)."""
    shape: list[tuple] = []
    args: list[Any] = []
    if split is not None:
        shape.append(("split",))
        args += list(split)
    for i, (accepts, unchecked, call, checked) in enumerate(steps):
        if unchecked:
            shape.append(("always",))
            args += [call, checked]
            continue
        if accepts is None:
            if i == 0:
                return None
            shape.append(("stop",))
            args.append(checked)
            break
        types = tuple(accepts.types())
        dtypes = accepts.dtypes() if accepts.dtypes is not None else None
        type_test = "" if i == 0 and source_type in types else "is" if len(types) == 1 else "in"
        if accepts.native is not None:
            call, refusals = accepts.native()
            refusals = (NeedsCopy, *refusals)
        else:
            refusals = NeedsCopy
        flags = "" if not accepts.flags else FLAG_NAMES.get(accepts.flags, "num")
        shape.append(("guard", type_test, dtypes is not None, flags,
                      accepts.ndim is not None, accepts.unset))
        args += [types[0] if type_test == "is" else types, dtypes, accepts.flags,
                 accepts.ndim, call, refusals, checked]
    key = tuple(shape)
    make = _MAKERS.get(key)
    if make is None:
        make = _MAKERS[key] = _compile(key)
    return make(*args)


def _compile(shape: tuple) -> Callable[..., Callable[[Any], Any]]:
    params: list[str] = []
    body: list[str] = []
    for i, step in enumerate(shape):
        if step[0] == "split":
            params += ["g", "s"]
            body += ["if g(x):", "    return s(x)"]
            continue
        if step[0] == "stop":
            params.append(f"k{i}")
            body.append(f"return k{i}(x)")
            break
        if step[0] == "guard":
            params += [f"t{i}", f"d{i}", f"f{i}", f"n{i}"]
            tests = [one for one, _ in _tests(i, *step[1:])]
            if tests:
                body += [f"if not ({' and '.join(tests)}):", f"    return k{i}(x)"]
            params += [f"c{i}", f"e{i}", f"k{i}"]
            body += ["try:", f"    x = c{i}(x)", f"except e{i}:", f"    return k{i}(x)"]
            continue
        params += [f"c{i}", f"k{i}"]
        body += ["try:", f"    x = c{i}(x)", "except NeedsCopy:", f"    return k{i}(x)"]
    else:
        body.append("return x")
    each = _each(shape)
    source = (f"def make({', '.join(params)}):\n    def plan(x):\n"
              + "".join(f"        {line}\n" for line in body)
              + ("".join(f"    {line}\n" for line in each) + "    plan.each = each\n")
              + "    return plan\n")
    namespace: dict[str, Any] = {"__name__": __name__, "NeedsCopy": NeedsCopy,
                                 "attrgetter": attrgetter, "eq": eq, "repeat": repeat}
    exec(compile(source, f"<interop fast plan {len(shape)} steps>", "exec"), namespace)
    return namespace["make"]


def _tests(i: int, type_test: str, dtypes: bool, flags: str, ndim: bool,
           unset: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """The tests of step ``i``'s guard, each as read of one value ``x`` and as read of every
    value of a sequence ``xs`` at once, one ``map`` each (``None``: read per value only)."""
    tests: list[tuple[str, str | None]] = []
    if type_test:
        tests.append((f"type(x) {type_test} t{i}", None))
    if dtypes:
        tests.append((f"x.dtype in d{i}",
                      f"all(map(d{i}.__contains__, map(attrgetter('dtype'), xs)))"))
    if flags == "num":  # several flags: all of their bits
        tests.append((f"x.flags.num & f{i} == f{i}", None))
    elif flags:  # one flag: its attribute
        tests.append((f"x.flags.{flags}", f"all(map(attrgetter('flags.{flags}'), xs))"))
    if ndim:
        tests.append((f"x.ndim == n{i}",
                      f"all(map(eq, map(attrgetter('ndim'), xs), repeat(n{i})))"))
    tests += [(f"not x.{name}", f"not any(map(attrgetter({name!r}), xs))") for name in unset]
    return tests


def _each(shape: tuple) -> list[str]:
    """The lines of ``each(xs, out)``: ``out.extend(map(plan, xs))`` for a sequence ``xs`` of
    values of the plan's source type (a structure's leaves of one type), leaving in ``out``
    the values converted before one that raises, so the caller can name it. For a plan of
    one guarded step (``torch -> numpy``: ``Tensor.numpy``) the guard is read for every value
    first, each test by one ``map`` (no frame per value); when every value passes, the
    step's conversion is mapped over them, and a value it refuses goes to the checked plan,
    as :func:`plan` sends it. Otherwise each value takes :func:`plan`."""
    per_value = ["def each(xs, out):", "    out.extend(map(plan, xs))", "    return out"]
    if len(shape) != 1 or shape[0][0] != "guard":
        return per_value
    mapped = [every for _, every in _tests(0, *shape[0][1:])]
    if None in mapped:
        return per_value
    guard = ([f"    if not ({' and '.join(mapped)}):",  # type: ignore[arg-type]
              "        out.extend(map(plan, xs))", "        return out"] if mapped else [])
    return ["def each(xs, out):", *guard, "    base, rest = len(out), iter(xs)",
            "    while True:", "        try:", "            out.extend(map(c0, rest))",
            "            return out", "        except e0:",
            "            out.append(k0(xs[len(out) - base]))"]
