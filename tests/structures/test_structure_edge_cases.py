"""What a random search of structures found (issue 41, items 2 and 6-9; the multi-device
items are in ``test_multidevice.py``): kept structure plans and the keys they rebuild, plans
that check before they convert, empty registered nodes, non-numeric NumPy scalars, and flat
dicts of DLPack leaves read as tables. Truth from the frameworks' own values and pointers."""

from __future__ import annotations

import re
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pytest

import interop
from helpers import DLPackOnly, JaxKeyed, KeyedNode, Noisy, NoisyLeaf, register_nodes
from interop.errors import InteropError

# ---- item 2: a kept plan runs only for the same keys ----------------------------------------

EQUAL_KEYS = [(True, 1), (1, True), (0, False), (False, 0.0), (0.0, -0.0), (1, 1.0),
              ((1,), (True,))]


@pytest.mark.parametrize(("first", "second"), EQUAL_KEYS)
@pytest.mark.parametrize("container", [dict, OrderedDict])
def test_a_kept_plan_gives_back_the_callers_keys(first, second, container):
    a = np.arange(3.0)
    for key in (first, second, first):  # each runs after the other's plan was kept
        out = interop.to_framework(container({key: a, "b": [a]}), "torch")
        (got, _), = [(k, v) for k, v in out.items() if k != "b"]
        assert type(got) is type(key) and repr(got) == repr(key)
        assert out[got].data_ptr() == a.ctypes.data


def test_an_error_names_the_leaf_by_the_callers_key():
    ok = {True: np.arange(3.0), "s": np.arange(2.0)}
    interop.to_framework(ok, "torch")
    bad = {1: np.array(["x"]), "s": np.arange(2.0)}  # strings: torch has no such dtype
    with pytest.raises(InteropError, match=r"leaf \[1\]"):
        interop.to_framework(bad, "torch")


# ---- item 7: a kept plan checks the whole structure before it uses any leaf -------------------

@pytest.mark.parametrize("tgt", ["torch", "numpy", "jax"])
def test_a_kept_plan_that_does_not_fit_leaves_capsules_unused(tgt):
    a = np.arange(4.0, dtype=np.float32)
    interop.to_framework({"a": a.__dlpack__(), "b": {"c": a}}, tgt)  # the plan kept
    src = np.arange(4.0, dtype=np.float32)
    value = {"a": src.__dlpack__(), "b": {"c": "not an array"}}  # differs deeper down
    assert interop.can_convert(value, tgt)
    out = interop.to_framework(value, tgt)
    assert out["b"] == {"c": "not an array"}
    np.testing.assert_array_equal(np.asarray(out["a"]), src)
    # a node of many children runs a loop: the last child differs
    interop.to_framework({"x": {f"k{i}": a.__dlpack__() for i in range(20)}}, tgt)
    value = {"x": {**{f"k{i}": src.__dlpack__() for i in range(19)}, "k19": 1.5}}
    assert interop.can_convert(value, tgt)
    assert interop.to_framework(value, tgt)["x"]["k19"] == 1.5


# ---- item 6: an empty registered node is an empty structure ---------------------------------

def _box_type():
    import jax

    class Box:
        def __init__(self, *children):
            self.children = children

    jax.tree_util.register_pytree_node(Box, lambda b: (list(b.children), None),
                                       lambda _, ch: Box(*ch))
    return Box


@pytest.mark.parametrize("seen_first", [False, True])
def test_an_empty_jax_registered_node_is_an_empty_structure(seen_first):
    Box = _box_type()
    if seen_first:  # its type known as a node with children
        a = np.arange(3.0)
        assert interop.to_framework(Box(a), "torch").children[0].data_ptr() == a.ctypes.data
    empty = Box()
    for tgt in ("torch", "numpy"):
        assert interop.explain(empty, tgt).supported
        assert interop.can_convert(empty, tgt)
        out = interop.to_framework(empty, tgt)
        assert type(out) is Box and out.children == ()
    a = np.arange(2.0)
    out = interop.to_framework({"w": a, "state": Box()}, "torch")
    assert out["w"].data_ptr() == a.ctypes.data and out["state"].children == ()


# ---- item 8: non-numeric NumPy scalars --------------------------------------------------------

NON_NUMERIC = [np.str_("abc"), np.bytes_(b"ab"), np.datetime64("2020-01-02"),
               np.timedelta64(3, "s")]


@pytest.mark.parametrize("scalar", NON_NUMERIC, ids=lambda s: type(s).__name__)
def test_non_numeric_numpy_scalars_to_numpy_are_numpy_arrays(scalar):
    plan = interop.explain(scalar, "numpy")
    assert plan.supported and not plan.zero_copy and interop.can_convert(scalar, "numpy")
    out = interop.to_framework(scalar, "numpy")
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == scalar.dtype
    assert out[()] == scalar
    batch = {"x": np.arange(2.0), "label": scalar}
    got = interop.to_framework(batch, "numpy", structure="tree")
    assert got["label"].dtype == scalar.dtype and got["label"][()] == scalar


@pytest.mark.parametrize("scalar", NON_NUMERIC, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("tgt", ["torch", "jax", "pyarrow", "dlpack"])
def test_non_numeric_numpy_scalars_elsewhere_agree(scalar, tgt):
    for value in (scalar, {"x": np.arange(2.0), "label": scalar}):
        for copy in (None, False, True):
            can = interop.can_convert(value, tgt, copy=copy, structure="tree") \
                if isinstance(value, dict) else interop.can_convert(value, tgt, copy=copy)
            try:
                if isinstance(value, dict):
                    interop.to_framework(value, tgt, copy=copy, structure="tree")
                else:
                    interop.to_framework(value, tgt, copy=copy)
            except InteropError:
                assert not can
            else:
                assert can


# ---- item 9: a flat dict of DLPack leaves read as a table ------------------------------------

@pytest.mark.parametrize("tgt", ["pyarrow", "pandas", "polars"])
@pytest.mark.parametrize("leaf", ["capsule", "producer"])
def test_a_dict_of_dlpack_leaves_is_a_table(tgt, leaf):
    a = np.arange(4.0)
    b = np.arange(4, dtype=np.int32)

    def make():
        return {"a": a.__dlpack__() if leaf == "capsule" else DLPackOnly(a), "b": b}

    assert interop.can_convert(make(), tgt)
    t = interop.to_framework(make(), tgt)
    table = t if tgt == "pyarrow" else pa.table(t) if tgt == "polars" else pa.Table.from_pandas(t)
    assert table.column_names == ["a", "b"]
    np.testing.assert_array_equal(table.column("a").to_numpy(), a)
    if tgt == "pyarrow":  # the column over the producer's own buffer
        assert table.column("a").chunk(0).buffers()[1].address == a.ctypes.data
    bad = {"a": DLPackOnly(np.arange(3.0)), "b": b}
    with pytest.raises(InteropError, match="one length"):
        interop.to_framework(bad, tgt)


# ---- device data to the host: device="cpu" for frameworks of one CPU device and of several ------

class OnDevice:
    """A stand-in for a device array (its values in ``a``, host memory here)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


def test_device_data_moved_to_the_host_lands_there():
    """A value on a CUDA device with device="cpu": copied to the host for torch (one CPU
    device) and onto JAX's CPU device 0 (JAX can have several)."""
    import jax

    from interop.adapters.base import ArrayAdapter
    from interop.default import build

    reg = build()
    reg.add(ArrayAdapter(name="ondevice", devices=("cpu", "cuda"), target=False,
                         is_value=lambda x: isinstance(x, OnDevice),
                         device=lambda x: ("cuda", 0), to_numpy=lambda x: np.array(x.a)))
    a = np.arange(4.0, dtype=np.float32)
    for tgt, copy in (("torch", None), ("torch", True), ("numpy", None), ("jax", None),
                      ("jax", True)):
        plan = reg.explain(OnDevice(a), tgt, "cpu", copy)
        assert plan.supported and not plan.zero_copy and plan.steps[0].via == "copy to cpu:0"
        out = reg.convert(OnDevice(a), tgt, device="cpu", copy=copy)
        np.testing.assert_array_equal(np.asarray(out), a)
        if tgt == "jax":
            assert out.devices() == {jax.devices("cpu")[0]}


# ---- issue 51 item 2: keys of another type are another structure, for every node kind --------

def _keyed(kind: str, items: dict) -> object:
    from collections import defaultdict

    if kind == "defaultdict":
        return defaultdict(list, items)
    register_nodes()
    return KeyedNode(items) if kind == "optree" else JaxKeyed(items)


def _keys_of(out: object) -> list:
    return list(out) if isinstance(out, dict) else list(out.items)


@pytest.mark.parametrize(("first", "second"), EQUAL_KEYS)
@pytest.mark.parametrize("kind", ["defaultdict", "optree", "jax"])
def test_a_kept_generic_node_plan_names_leaves_by_the_callers_keys(first, second, kind):
    import warnings

    from interop.errors import NarrowingWarning

    a = np.arange(3.0)  # float64: JAX narrows it, and the warning names the leaf
    for key in (first, second, first):  # each runs after the other's plan was kept
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            out = interop.to_framework(_keyed(kind, {key: a, "b": [a]}), "jax")
        (k,) = [k for k in _keys_of(out) if k != "b"]
        assert type(k) is type(key) and repr(k) == repr(key)
        why = [str(w.message) for w in got if issubclass(w.category, NarrowingWarning)]
        assert len(why) == 1 and f"leaf [{key!r}]:" in why[0], why
        bad = _keyed(kind, {key: np.array(["x"]), "b": [a]})  # strings: torch has no such dtype
        with pytest.raises(InteropError, match=rf"leaf \[{re.escape(repr(key))}\]"):
            interop.to_framework(bad, "torch")
        interop.to_framework(_keyed(kind, {key: a, "b": [a]}), "torch")


# ---- issue 51 item 3: planning runs no repr of a node or its leaves -----------------------------

@pytest.mark.parametrize("raises", [False, True])
@pytest.mark.parametrize("tgt", ["torch", "numpy", "jax"])
def test_planning_a_jax_node_runs_no_repr(raises, tgt):
    import warnings

    import pandas as pd

    register_nodes()
    leaf = NoisyLeaf(raises=raises)  # a leaf nobody reads, kept: its repr must not run either
    s = pd.Series(np.array([1.0, 2.0], np.float16))  # its repr overflows in a cast (a warning)
    before = Noisy.calls
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):  # planned, then the kept plan
            x = Noisy(np.arange(3, dtype=np.float32), s, leaf, raises=raises)
            plan = interop.explain(x, tgt)
            assert plan.supported and interop.can_convert(x, tgt)
            out = interop.to_framework(x, tgt)
            assert type(out) is Noisy and out.children[2] is leaf
            np.testing.assert_array_equal(np.asarray(out.children[1]), s.to_numpy())
    assert Noisy.calls == before
