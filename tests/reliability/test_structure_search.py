"""The property search over the structures issue 41 found wrong: dicts whose keys are equal
but of other types (``True``/``1``/``1.0``, ``0.0``/``-0.0``, ``(1,)``/``(True,)``) one after
another (so each runs the plan kept for the one before), empty and non-empty JAX-registered
nodes, DLPack capsule and DLPack-only producer leaves (a capsule is used up by its
conversion), non-numeric NumPy scalars (``str_``, ``bytes_``, ``datetime64``), and flat dicts
of capsules and producers read as tables. Issue 51's: the same keys in generic nodes
(``defaultdict``, a node registered with optree that keeps its keys in its metadata, a JAX
node registered with keys), and nodes and kept leaves whose ``repr`` warns (planning must
format neither: every call runs with warnings recorded, and any but a
``NarrowingWarning`` fails); each leaf an error or a ``NarrowingWarning`` names is a leaf of
the caller's value, by its own keys.

For each sequence of structures and each ``copy=``: ``explain``, ``can_convert`` and
``to_framework`` agree; the result has the caller's node types and keys (same type and
``repr``), each array leaf the source's values and, exactly where its leaf plan says
zero-copy, the source's memory (by NumPy's ``byte_bounds`` of the source and the result's
own accessors: ``data_ptr()``, ``unsafe_buffer_pointer()``, Arrow buffer addresses); every
other leaf comes back as it is. The fast profile is derandomized; the slow one
(``-m slow``) runs it in a child pytest with a fresh seed (``RELIABILITY_SEED`` replays).
"""

from __future__ import annotations

import re
import warnings
from collections import OrderedDict, defaultdict
from typing import Any

import jax
import numpy as np
import pyarrow as pa
import pytest
import test_reliability_properties as rp
from hypothesis import given, seed
from hypothesis import strategies as st

import interop
from helpers import (
    DLPackOnly,
    JaxKeyed,
    KeyedNode,
    Noisy,
    NoisyLeaf,
    outcome,
    register_nodes,
    torch_leaf,
)
from interop.errors import InteropError, NarrowingWarning


class Box:
    """A node registered with JAX's pytree registry, of any number of children."""

    def __init__(self, *children: Any) -> None:
        self.children = children


jax.tree_util.register_pytree_node(Box, lambda b: (list(b.children), None),
                                   lambda _, ch: Box(*ch))
register_nodes()

KEYS = (True, 1, 1.0, False, 0, 0.0, -0.0, (1,), (True,), "k", "j")
"""Dict keys, several equal to each other but of other types (or another ``repr``)."""
SCALARS = (np.str_("abc"), np.bytes_(b"ab"), np.datetime64("2021-03-04"),
           np.timedelta64(5, "s"))
KEPT = (None, 3, "s", 2.5, NoisyLeaf)
"""Leaves kept as they are (``NoisyLeaf``: a fresh one, whose ``repr`` warns)."""
KEYED = {"dict": dict, "defaultdict": lambda items: defaultdict(list, items),
         "keyed": KeyedNode, "jkeyed": JaxKeyed}
"""The node kinds of keys, by what makes one from its items."""
TARGETS = ("numpy", "torch", "jax", "pyarrow")
TABLE_TARGETS = ("pyarrow", "pandas", "polars")


@st.composite
def odd_leaf(draw) -> tuple:
    """``("array" | "capsule" | "producer", dtype, n)``, ``("scalar", i)`` or
    ``("kept", value)``."""
    kind = draw(st.sampled_from(["array", "capsule", "producer", "scalar", "kept"]))
    if kind == "scalar":
        return ("scalar", draw(st.integers(0, len(SCALARS) - 1)))
    if kind == "kept":
        return ("kept", draw(st.sampled_from(KEPT)))
    return (kind, draw(st.sampled_from(["float32", "float64", "int16", "bool"])),
            draw(st.integers(0, 4)))


@st.composite
def odd_keys(draw, n: int) -> list:
    """``n`` keys no two of which are equal (a dict holds one of each)."""
    out: list = []
    for k in draw(st.permutations(KEYS)):
        if len(out) == n:
            break
        if all(k != o for o in out):
            out.append(k)
    return out


@st.composite
def odd_specs(draw, depth: int = 0, root: str | None = None) -> Any:
    """A tree of leaves (:func:`odd_leaf`) and ``(kind, keys, children)`` nodes: nodes of odd
    keys (:data:`KEYED`), lists, tuples, ``Box`` and ``Noisy`` nodes (empty ones too)."""
    if root is None and (depth >= 3 or (depth and draw(st.integers(0, 2)) == 0)):
        return ("leaf", draw(odd_leaf()))
    kind = root or draw(st.sampled_from([*KEYED, "list", "tuple", "box", "noisy"]))
    n = draw(st.integers(0, 3))
    keys = draw(odd_keys(n)) if kind in KEYED else list(range(n))
    return (kind, keys, [draw(odd_specs(depth + 1)) for _ in keys])


EQUAL = ((True, 1, 1.0), (False, 0, 0.0, -0.0), ((1,), (True,)))
"""Keys equal to each other (``==``, one hash) but of other types or another ``repr``."""


def _twins(k: Any) -> list:
    """The keys equal to ``k`` but not the same key (or ``[k]`` where there is none)."""
    for group in EQUAL:
        if any(type(k) is type(m) and repr(k) == repr(m) for m in group):
            return [m for m in group if not (type(k) is type(m) and repr(k) == repr(m))]
    return [k]


@st.composite
def twin(draw, spec: Any) -> Any:
    """``spec`` with each node's keys swapped for equal keys of other types where there are
    some: the same structure to ``==``, another one to interop."""
    if spec[0] == "leaf":
        return spec
    kind, keys, children = spec
    if kind in KEYED:
        keys = [draw(st.sampled_from(_twins(k))) for k in keys]
    return (kind, keys, [draw(twin(c)) for c in children])


def build(spec: Any, sources: dict) -> Any:
    """The value of ``spec``, fresh (a capsule is used once); ``sources`` gets the NumPy
    array behind each array leaf, by path."""
    return _build(spec, sources, "")


def _build(spec: Any, sources: dict, path: str) -> Any:
    if spec[0] == "leaf":
        leaf = spec[1]
        if leaf[0] == "scalar":
            return SCALARS[leaf[1]]
        if leaf[0] == "kept":
            return NoisyLeaf() if leaf[1] is NoisyLeaf else leaf[1]
        kind, dtype, n = leaf
        a = rp.build_numpy(rp.Layout(dtype, (n,)))
        sources[path] = a
        return a if kind == "array" else a.__dlpack__() if kind == "capsule" else DLPackOnly(a)
    kind, keys, children = spec
    label = (lambda k: f"[{k!r}]") if kind in KEYED else (lambda i: f"[{i}]")
    built = [_build(c, sources, path + label(k)) for k, c in zip(keys, children)]
    if kind in KEYED:
        return KEYED[kind](dict(zip(keys, built)))
    if kind == "noisy":
        return Noisy(*built)
    return built if kind == "list" else tuple(built) if kind == "tuple" else Box(*built)


def leaf_paths(spec: Any, path: str = "") -> set[str]:
    """The path of every leaf of ``spec``, spelled as interop names them."""
    if spec[0] == "leaf":
        return {path}
    kind, keys, children = spec
    label = (lambda k: f"[{k!r}]") if kind in KEYED else (lambda i: f"[{i}]")
    return {p for k, c in zip(keys, children) for p in leaf_paths(c, path + label(k))}


def quietly(call: Any, here: str) -> Any:
    """``call()``, failing on any warning but a ``NarrowingWarning`` (a ``repr`` run while
    planning warns); returns its result and the narrowing reasons."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = call()
    others = [w for w in got if not issubclass(w.category, NarrowingWarning)]
    assert not others, f"{here}\n{[str(w.message) for w in others]}"
    return out, " ".join(str(w.message) for w in got)


def named_leaves(text: str) -> set[str]:
    """The leaf paths a message names (``leaf ['k'][0]: ...``)."""
    return set(re.findall(r"leaf (\S+): ", text))


def _leaves(x: Any, out: Any, path: str, found: dict, here: str) -> None:
    """Check ``out`` has ``x``'s node types and keys; gather ``{path: result leaf}``."""
    if isinstance(x, (dict, KeyedNode, JaxKeyed)):
        assert type(out) is type(x), f"{here}\n{path}: {type(out)}"
        xd, od = (x, out) if isinstance(x, dict) else (x.items, out.items)
        assert [(type(k), repr(k)) for k in od] == [(type(k), repr(k)) for k in xd], (
            f"{here}\n{path}: keys {list(od)} for {list(xd)}")
        for (k, v), r in zip(xd.items(), od.values()):
            _leaves(v, r, f"{path}[{k!r}]", found, here)
    elif isinstance(x, (list, tuple, Box)) or type(x) is Noisy:
        assert type(out) is type(x), f"{here}\n{path}: {type(out)} for {type(x)}"
        xs, rs = (x.children, out.children) if isinstance(x, (Box, Noisy)) else (x, out)
        assert len(xs) == len(rs), f"{here}\n{path}"
        for i, (v, r) in enumerate(zip(xs, rs)):
            _leaves(v, r, f"{path}[{i}]", found, here)
    else:
        found[path] = (x, out)


def check_odd(spec: Any, tgt: str, copy: bool | None) -> rp.Outcome:
    """The contract for one structure (see the module doc); what it did."""
    opts = {"structure": "tree"} if tgt == "pyarrow" else {}
    here = f"{spec!r} -> {tgt}, copy={copy}"
    plan, _ = quietly(lambda: interop.explain(build(spec, {}), tgt, copy=copy, **opts), here)
    can, _ = quietly(lambda: interop.can_convert(build(spec, {}), tgt, copy=copy, **opts), here)
    sources: dict = {}
    value = build(spec, sources)
    try:
        (out, why), err = quietly(lambda: interop.to_framework(value, tgt, copy=copy, **opts),
                                  here), None
    except InteropError as e:
        out, why, err = None, "", e
    assert plan.supported == can == (err is None), f"{here}\n{plan}\ncan={can} {err!r}"
    named = named_leaves(why) | named_leaves(str(err) if err is not None else "")
    assert named <= leaf_paths(spec), f"{here}\nnames {named}, not its leaves:\n{why}\n{err}"
    outcome = rp.Outcome(empty=not sources, supported=err is None)
    if err is not None:
        return outcome
    found: dict = {}
    _leaves(value, out, "", found, here)
    for path, (leaf, res) in found.items():
        if path in sources:
            a = sources[path]
            want = a.astype(rp.NARROWED.get((tgt, a.dtype.name), a.dtype))
            got = rp.to_host(res)
            assert rp.same_values(got, want), f"{here}\nleaf {path}: {got!r} != {want!r}"
            if a.size:
                shared = rp.overlaps(rp.span(a), rp.span(res))
                zero = copy is not True and plan.leaves[path].zero_copy
                assert shared == zero, f"{here}\nleaf {path}: shares {shared}, plan {zero}"
                outcome.zero_copy |= shared
        elif isinstance(leaf, np.generic):
            got = np.asarray(rp.to_host(res)) if tgt != "numpy" else res
            assert got.shape == () and got[()] == leaf, f"{here}\nleaf {path}: {got!r}"
        else:
            assert res is leaf, f"{here}\nkept leaf {path} changed: {res!r}"
    return outcome


@pytest.mark.parametrize("tgt", TARGETS)
def test_odd_structures_keep_the_contract(tgt: str) -> None:
    @rp._settings()
    @given(st.data(), st.sampled_from([None, False, True]))
    def prop(data: Any, copy: bool | None) -> None:
        root = data.draw(st.sampled_from(list(KEYED)))
        specs = data.draw(st.lists(odd_specs(root=root), min_size=2, max_size=3))
        specs += [data.draw(twin(specs[0])), specs[0]]  # equal keys of other types, and back
        for spec in specs:  # one root type: each may run the plan kept for another
            rp._record("structure", tgt, check_odd(spec, tgt, copy))

    if rp.SEED is not None:
        prop = seed(int(rp.SEED))(prop)
    prop()


@st.composite
def flat_tables(draw) -> tuple[list, int]:
    """Columns (``(name, kind, dtype)``, kind an array, a capsule or a producer) of one
    length."""
    n = draw(st.integers(0, 5))
    names = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=4, unique=True))
    return [(c, draw(st.sampled_from(["array", "capsule", "producer"])),
             draw(st.sampled_from(["float32", "float64", "int64", "uint8"]))) for c in names], n


def check_table(columns: list, n: int, tgt: str, copy: bool | None) -> rp.Outcome:
    def make() -> tuple[dict, dict]:
        arrays = {c: rp.build_numpy(rp.Layout(dt, (n,))) for c, _, dt in columns}
        value = {c: arrays[c] if kind == "array" else arrays[c].__dlpack__()
                 if kind == "capsule" else DLPackOnly(arrays[c]) for c, kind, _ in columns}
        return value, arrays

    here = f"{columns} n={n} -> {tgt}, copy={copy}"
    plan = interop.explain(make()[0], tgt, copy=copy)
    can = interop.can_convert(make()[0], tgt, copy=copy)
    value, arrays = make()
    try:
        out, err = interop.to_framework(value, tgt, copy=copy), None
    except InteropError as e:
        out, err = None, e
    assert plan.supported == can == (err is None), f"{here}\n{plan}\n{err!r}"
    outcome = rp.Outcome(empty=not n, supported=err is None)
    if err is not None:
        return outcome
    table = out if tgt == "pyarrow" else pa.table(out) if tgt == "polars" else \
        pa.Table.from_pandas(out, preserve_index=False)
    assert table.column_names == list(arrays), here
    for c, a in arrays.items():
        col = table.column(c)
        np.testing.assert_array_equal(col.to_numpy(), a, err_msg=here)
        if tgt == "pyarrow" and n and col.num_chunks == 1:
            shared = col.chunk(0).buffers()[1].address == a.ctypes.data
            assert shared == (copy is not True and plan.columns[c].zero_copy), f"{here} {c}"
            outcome.zero_copy |= shared
    return outcome


@pytest.mark.parametrize("tgt", TABLE_TARGETS)
def test_flat_dicts_of_dlpack_leaves_as_tables_keep_the_contract(tgt: str) -> None:
    @rp._settings()
    @given(flat_tables(), st.sampled_from([None, False, True]))
    def prop(table: tuple, copy: bool | None) -> None:
        rp._record("table", tgt, check_table(*table, tgt, copy))

    if rp.SEED is not None:
        prop = seed(int(rp.SEED))(prop)
    prop()


@pytest.mark.slow
def test_random_search_of_odd_structures_with_a_fresh_seed() -> None:
    counts = rp.search("test_odd_structures or test_flat_dicts_of_dlpack_leaves",
                       "not tensorflow and not paddle and not dali and not multidevice",
                       examples=max(rp.SLOW_EXAMPLES // 2, 20), path=__file__, non_empty=0.35)
    # (a floor, not the mean: over 6 seeds the share with an array ran 0.59 to 0.79)
    assert counts["supported"] and counts["zero_copy"], counts


# ---- issue 49: wide nodes (more than compile.SMALL children) of torch leaves ----------------

WIDE_NODES = ("dict", "ordered", "list", "tuple", "box")
ODD_TORCH = ("grad", "conj", "neg", "meta", "bfloat16", "strided", "sparse", "float64",
             "int64", "complex32", "empty", "parameter", "numpy", "none")
"""Leaves a wide node of plain float32 tensors may hold a few of: each its own answer (the
first eleven: a ``torch.Tensor`` its plan's ``each`` meets; the last three: another type, so
the node converts one by one)."""




@st.composite
def wide_specs(draw) -> tuple[str, int, dict]:
    """``(node, n, {index: odd kind})``: a wide node of ``n`` plain leaves but a few."""
    from interop.structures.compile import SMALL

    n = draw(st.integers(SMALL + 1, SMALL + 24))
    odd = draw(st.dictionaries(st.integers(0, n - 1), st.sampled_from(ODD_TORCH), max_size=3))
    return draw(st.sampled_from(WIDE_NODES)), n, odd


def _wide(node: str, leaves: list) -> tuple[Any, list[str]]:
    """The node of ``leaves`` and each leaf's path."""
    keys = [f"{i // 2}.{'weight' if i % 2 == 0 else 'bias'}" for i in range(len(leaves))]
    if node in ("dict", "ordered"):
        value = (dict if node == "dict" else OrderedDict)(zip(keys, leaves))
        if node == "ordered":
            value._metadata = {"": {"version": 1}}  # as a state_dict's
        return value, [f"[{k!r}]" for k in keys]
    value = leaves if node == "list" else tuple(leaves) if node == "tuple" else Box(*leaves)
    return value, [f"[{i}]" for i in range(len(leaves))]


def _outcome(call: Any) -> tuple[Any, Any, str]:
    """``(result, error, the narrowing warnings' text)``; any other warning fails."""
    out, err, got = outcome(call)
    others = [str(w.message) for w in got if not issubclass(w.category, NarrowingWarning)]
    assert not others, others
    return out, err, " ".join(str(w.message) for w in got)


def _host(x: Any) -> np.ndarray:
    """A result (dense or sparse, of any framework here) as host NumPy, by its own calls."""
    if hasattr(x, "to_dense") and getattr(x, "is_sparse", False):
        x = x.to_dense()
    elif hasattr(x, "todense") and not isinstance(x, np.ndarray):
        x = x.todense()
    return rp.to_host(x)


def check_wide(spec: tuple, tgt: str) -> rp.Outcome:
    """A wide node with a few odd leaves, after the plan kept for its plain twin: each leaf
    what its own call gives (result, or the first failing leaf's error named by its path),
    memory shared exactly where its own call shares it, one narrowing warning naming the
    leaves whose own calls narrowed."""
    node, n, odd = spec
    here = f"{spec} -> {tgt}"
    plain, _ = _wide(node, [torch_leaf("plain", i) for i in range(n)])
    _outcome(lambda: interop.to_framework(plain, tgt))  # the plan kept for the plain one
    leaves = [torch_leaf(odd.get(i, "plain"), i) for i in range(n)]
    value, paths = _wide(node, leaves)
    out, err, why = _outcome(lambda: interop.to_framework(value, tgt))
    own = [(v, None, "") if v is None else _outcome(lambda v=v: interop.to_framework(v, tgt))
           for v in leaves]  # (None: a leaf kept as it is)
    outcome = rp.Outcome(supported=err is None)
    failed = [(p, e) for p, (_, e, _) in zip(paths, own) if e is not None]
    if failed:
        path, want = failed[0]
        assert type(err) is type(want), f"{here}\n{err!r} for {want!r}"
        named = f"leaf {path}: {want}" if isinstance(want, InteropError) else str(want)
        assert str(err) == named, f"{here}\n{err} for {named}"
        return outcome
    assert err is None, f"{here}\n{err!r}"
    assert type(out) is type(value), here
    results = list(out.values()) if isinstance(out, dict) else \
        list(out.children) if isinstance(out, Box) else list(out)
    if isinstance(out, dict):
        assert list(out) == list(value), here
        assert getattr(out, "__dict__", {}) == getattr(value, "__dict__", {}), here
    narrowed = set()
    for path, leaf, got, (want, _, w) in zip(paths, leaves, results, own):
        at = f"{here}\nleaf {path}"
        if w:
            narrowed.add(path)
        if want is leaf:  # kept as it is (None; a tensor to torch)
            assert got is leaf, at
            continue
        assert type(got) is type(want) and getattr(got, "dtype", 0) == getattr(want, "dtype", 0), (
            f"{at}: {type(got)} {getattr(got, 'dtype', '')} for {type(want)}")
        assert rp.same_values(_host(got), _host(want)), at
        if getattr(leaf, "layout", None) is not None and leaf.is_sparse:
            continue  # several buffers: the sparse suites judge their sharing
        shared = rp.overlaps(rp.span(leaf), rp.span(got))
        assert shared == rp.overlaps(rp.span(leaf), rp.span(want)), f"{at}: shares {shared}"
        outcome.zero_copy |= shared
    assert named_leaves(why) == narrowed and why.count("NarrowingWarning") <= 1, (
        f"{here}\n{why!r} for {narrowed}")
    return outcome


@pytest.mark.parametrize("tgt", ("numpy", "jax", "torch"))
def test_wide_nodes_keep_the_contract(tgt: str) -> None:
    @rp._settings()
    @given(wide_specs())
    def prop(spec: tuple) -> None:
        rp._record("wide structure", tgt, check_wide(spec, tgt))

    if rp.SEED is not None:
        prop = seed(int(rp.SEED))(prop)
    prop()


@pytest.mark.slow
def test_random_search_of_wide_nodes_with_a_fresh_seed() -> None:
    counts = rp.search("test_wide_nodes", "not tensorflow and not paddle and not dali and "
                       "not multidevice", examples=max(rp.SLOW_EXAMPLES // 2, 20),
                       path=__file__, non_empty=1.0)
    assert counts["supported"] < counts["cases"] and counts["zero_copy"], counts
