"""Nested structures (dicts, lists, tuples, named tuples, OrderedDict, pytrees) in one call:
each array leaf converted by its own plan, every other leaf kept, one plan per structure.

Zero-copy is proved per leaf by the frameworks' own pointers (``oracles.pointer``) and by a
write through the source read back through the result."""

from __future__ import annotations

import collections
import gc
import warnings

import numpy as np
import pytest

import interop
from helpers import aligned
from interop.errors import (
    InteropError,
    NarrowingWarning,
    UnsupportedConversionError,
    ZeroCopyError,
)
from oracles import pointer

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

Point = collections.namedtuple("Point", "x y")


def _writes_through(src, out):
    """A write through ``src`` (torch or NumPy) is read back through ``out``."""
    before = np.array(interop.to_framework(out, "numpy", copy=True)).ravel()[0].item()
    if isinstance(src, np.ndarray):
        src.ravel()[0] = before + 17
    else:
        src.view(-1)[0] = before + 17
    after = np.asarray(interop.to_framework(out, "numpy", copy=True)).ravel()[0].item()
    return after == before + 17


def test_nested_dict_list_to_jax_same_structure_zero_copy_per_leaf():
    w, b0 = torch.arange(6.0).reshape(2, 3), torch.ones(3)
    a1 = aligned(np.arange(4, dtype=np.float32))
    tree = {"w": w, "b": [b0, a1, None, 3, "s"]}
    out = interop.to_framework(tree, "jax")
    assert set(out) == {"w", "b"} and isinstance(out["b"], list) and len(out["b"]) == 5
    assert out["b"][2:] == [None, 3, "s"]  # other leaves are kept as they are
    for src, dst in ((w, out["w"]), (b0, out["b"][0]), (a1, out["b"][1])):
        assert isinstance(dst, jax.Array)
        assert pointer(dst) == pointer(src)
        assert _writes_through(src, dst)


def test_tuple_to_numpy_and_named_tuple_and_ordered_dict_keep_their_types():
    t1, t2 = torch.arange(3.0), torch.arange(4)
    out = interop.to_framework((t1, t2), "numpy")
    assert type(out) is tuple and [pointer(o) for o in out] == [t1.data_ptr(), t2.data_ptr()]
    p = interop.to_framework(Point(t1, [t2]), "numpy")
    assert type(p) is Point and isinstance(p.x, np.ndarray) and p.y[0].ctypes.data == \
        t2.data_ptr()
    od = collections.OrderedDict([("b", t1), ("a", t2)])
    o = interop.to_framework(od, "numpy")
    assert type(o) is collections.OrderedDict and list(o) == ["b", "a"]
    assert o["b"].ctypes.data == t1.data_ptr()
    assert _writes_through(t1, o["b"])


def test_state_dict_to_jax_and_back_zero_copy():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    sd = model.state_dict()
    params = interop.to_framework(sd, "jax", copy=False)
    assert list(params) == list(sd)
    assert all(pointer(params[k]) == sd[k].data_ptr() for k in sd)
    back = interop.to_framework(params, "torch", copy=False)
    assert all(back[k].data_ptr() == sd[k].data_ptr() for k in sd)
    model.load_state_dict(back)
    with torch.no_grad():
        sd["0.bias"][0] = 42.0
    assert float(params["0.bias"][0]) == 42.0 and back["0.bias"][0].item() == 42.0


def test_optree_registered_and_defaultdict_and_deque_nodes():
    dd = collections.defaultdict(list, {"b": torch.ones(2), "a": torch.zeros(2)})
    out = interop.to_framework(dd, "numpy")
    assert type(out) is collections.defaultdict and out.default_factory is list
    assert out["b"].ctypes.data == dd["b"].data_ptr()
    dq = interop.to_framework(collections.deque([torch.ones(2)], maxlen=3), "numpy")
    assert isinstance(dq, collections.deque) and dq.maxlen == 3
    assert isinstance(dq[0], np.ndarray)


def test_jax_registered_pytree_node():
    @jax.tree_util.register_pytree_node_class
    class Params:
        def __init__(self, w, b):
            self.w, self.b = w, b

        def tree_flatten(self):
            return (self.w, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    t = torch.arange(4.0)
    out = interop.to_framework(Params(t, {"k": t}), "numpy")
    assert isinstance(out, Params) and out.w.ctypes.data == t.data_ptr()
    assert out.b["k"].ctypes.data == t.data_ptr()
    plan = interop.explain(Params(t, None), "numpy")
    assert plan.zero_copy and list(plan.leaves) == ["[0]"] and plan.kept == ("[1]",)


def test_leaf_errors_name_the_path_and_nothing_is_returned():
    ok = torch.arange(4.0)
    tree = {"params": {"layers": [{"w": ok}, {"w": ok}, {"w": ok},
                                  {"w": torch.arange(8.0)[::2]}]}}
    with pytest.raises(ZeroCopyError, match=r"leaf \['params'\]\['layers'\]\[3\]\['w'\]"):
        interop.to_framework(tree, "jax", copy=False)
    bad = {"image": ok, "names": np.array(["a", "b"])}
    with pytest.raises(UnsupportedConversionError, match=r"leaf \['names'\]"):
        interop.to_framework(bad, "torch")


def test_error_after_the_plan_is_cached_names_the_path_too():
    a = aligned(np.arange(4, dtype=np.float32))
    interop.to_framework({"x": [a, a]}, "jax", copy=False)  # this structure's plan is kept
    bad = {"x": [a, aligned(np.arange(8, dtype=np.float32))[::2]]}  # same structure
    for _ in range(2):
        with pytest.raises(ZeroCopyError, match=r"leaf \['x'\]\[1\]"):
            interop.to_framework(bad, "jax", copy=False)


def test_a_cached_plan_is_not_reused_for_another_structure_of_the_same_type():
    t = torch.arange(3.0)
    first = interop.to_framework({"a": t, "b": [t]}, "numpy")
    assert set(first) == {"a", "b"}
    other = interop.to_framework({"a": [t, t], "b": t}, "numpy")  # same keys, other nodes
    assert isinstance(other["a"], list) and len(other["a"]) == 2
    assert isinstance(other["b"], np.ndarray)
    keys = interop.to_framework({"c": t, "b": [t]}, "numpy")  # other keys
    assert list(keys) == ["c", "b"]
    kinds = interop.to_framework({"a": t.numpy(), "b": [None]}, "torch")  # other leaf types
    assert isinstance(kinds["a"], torch.Tensor) and kinds["b"] == [None]
    order = interop.to_framework({"b": [t], "a": t}, "numpy")  # other key order
    assert list(order) == ["b", "a"]
    longer = interop.to_framework([t, t, t], "numpy")
    shorter = interop.to_framework([t], "numpy")
    assert len(longer) == 3 and len(shorter) == 1


def test_narrowing_warns_once_naming_the_leaves():
    tree = {"f": np.arange(3.0), "inner": [np.arange(3, dtype=np.float32), np.arange(3)]}
    for _ in range(2):  # the first call and the cached plan warn alike
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            out = interop.to_framework(tree, "jax")
        msgs = [str(w.message) for w in got if issubclass(w.category, NarrowingWarning)]
        assert len(msgs) == 1, msgs
        assert "['f']" in msgs[0] and "['inner'][1]" in msgs[0] and "['inner'][0]" not in \
            msgs[0]
        assert out["f"].dtype == np.float32 and out["inner"][1].dtype == np.int32


def test_device_and_copy_apply_to_every_leaf():
    t = torch.arange(4.0)
    out = interop.to_framework({"a": t, "b": (t,)}, "numpy", copy=True)
    assert out["a"].ctypes.data != t.data_ptr() and out["b"][0].ctypes.data != t.data_ptr()
    assert out["a"].tolist() == t.tolist()
    host = interop.to_framework([t], "numpy", device="cpu")
    assert host[0].ctypes.data == t.data_ptr()


def test_explain_can_convert_shares_memory_take_structures():
    t = torch.arange(6.0)
    tree = {"w": t, "b": [t[::2], None]}
    plan = interop.explain(tree, "jax")
    assert list(plan.leaves) == ["['w']", "['b'][0]"] and plan.kept == ("['b'][1]",)
    assert plan.leaves["['w']"].zero_copy and not plan.leaves["['b'][0]"].zero_copy
    assert plan.supported and not plan.zero_copy
    assert "leaf ['b'][0]" in str(plan)
    assert interop.explain({"w": t}, "jax").zero_copy
    assert interop.can_convert(tree, "jax") and not interop.can_convert(tree, "jax", copy=False)
    assert not interop.can_convert({"s": np.array(["a"])}, "torch")
    out = interop.to_framework(tree, "numpy")
    assert interop.shares_memory(out, t) and interop.shares_memory(t, out["b"])
    assert not interop.shares_memory(out, torch.zeros(3))


def test_a_structure_of_no_arrays_comes_back_as_it_is_and_empty_ones_convert():
    assert interop.to_framework([1, 2, 3], "torch") == [1, 2, 3]
    assert interop.can_convert([1, 2, 3], "torch")
    assert interop.to_framework([], "torch") == []
    assert interop.to_framework({"a": [], "b": ()}, "torch") == {"a": [], "b": ()}


def test_a_flat_dict_is_a_table_where_the_target_expects_one():
    import pyarrow as pa

    x, y = aligned(np.arange(4.0)), aligned(np.arange(4.0))
    tab = interop.to_framework({"x": x, "y": y}, "pyarrow")
    assert isinstance(tab, pa.Table) and tab.column("x").chunk(0).buffers()[1].address == \
        x.ctypes.data
    per_leaf = interop.to_framework({"x": x, "y": y}, "pyarrow", structure="tree")
    assert isinstance(per_leaf, dict) and isinstance(per_leaf["x"], pa.Array)
    from interop.tables import Columns

    cols = interop.to_framework({"x": x, "y": y}, "torch", structure="table")
    assert isinstance(cols, Columns) and cols["x"].data_ptr() == x.ctypes.data
    arrow = interop.to_framework({"ts": pa.array([1, 2], pa.timestamp("ms"))}, "numpy")
    assert isinstance(arrow, Columns) and arrow.meta["ts"]["unit"] == "ms"  # the table rules
    plain = interop.to_framework({"x": x, "y": y}, "torch")
    assert plain["x"].data_ptr() == x.ctypes.data
    with pytest.raises(InteropError, match="structure must be"):
        interop.to_framework({"x": x}, "torch", structure="rows")
    with pytest.raises(InteropError, match="apply to tables"):
        interop.to_framework({"x": [x]}, "torch", nulls="mask")
    assert not interop.can_convert({"x": [x]}, "torch", nulls="mask")


def test_options_reach_the_leaves_that_take_them():
    """Table options on a tuple reach its table leaf (nulls filled, read back from Arrow's own
    values) while the array leaf stays zero-copy; a flat dict whose table leaf takes them is a
    structure, not a table; an option no leaf takes, or no source takes, is named."""
    pa = pytest.importorskip("pyarrow")
    from interop.tables import Columns

    t = pa.table({"a": pa.array([1.0, None, 3.0])})
    x = np.arange(3.0)
    table, (arr,) = interop.to_framework((t, [x]), "numpy", nulls="fill", fill_value=-1.0)
    assert isinstance(table, Columns) and table["a"].tolist() == [1.0, -1.0, 3.0]
    assert t.column("a").null_count == 1 and arr.ctypes.data == x.ctypes.data
    arr[1] = 42.0  # the array leaf is the caller's buffer: a write through it is read back
    assert x[1] == 42.0
    plan = interop.explain((t, [x]), "numpy", nulls="fill", fill_value=-1.0)
    assert plan.supported and not plan.leaves["[0]"].zero_copy and plan.leaves["[1][0]"].zero_copy
    assert interop.can_convert((t, [x]), "numpy", nulls="fill", fill_value=-1.0)
    assert not interop.can_convert((t, [x]), "numpy")
    got = interop.to_framework({"t": t, "x": x}, "numpy", nulls="fill", fill_value=0.0)
    assert type(got) is dict and got["t"]["a"].tolist() == [1.0, 0.0, 3.0]
    with pytest.raises(InteropError, match=r"\['nulls'\] apply to .*none of its leaves"):
        interop.to_framework((x, [x]), "numpy", nulls="mask")
    with pytest.raises(InteropError, match=r"unknown option 'nuls' \(did you mean 'nulls'"):
        interop.to_framework((t, [x]), "numpy", nuls="mask")


def test_leaves_of_a_registered_framework_are_leaves_by_ownership():
    from interop.adapters.base import ArrayAdapter, Edge, fixed
    from interop.default import build

    class Box:
        def __init__(self, a):
            self.a = a

    reg = build()
    reg.add(ArrayAdapter(name="box", is_value=lambda v: isinstance(v, Box | tuple),
                         to_numpy=lambda b: b.a,
                         edges=lambda: [Edge("box", "numpy", "Box.a", fixed(lambda b: b.a))]))
    a = aligned(np.arange(3.0))
    out = reg.convert([Box(a), [Box(a)]], "torch")
    assert out[0].data_ptr() == a.ctypes.data and out[1][0].data_ptr() == a.ctypes.data
    assert reg.owner((a,)) == "box"  # registered after the structures, detected before them


def test_results_keep_sources_alive():
    import weakref

    a = aligned(np.arange(1000.0))
    ref = weakref.ref(a)
    out = interop.to_framework({"a": [torch.from_numpy(a)]}, "numpy")
    del a
    gc.collect()
    assert ref() is not None and out["a"][0][999] == 999.0


def test_import_and_a_first_array_call_load_no_pytree_library():
    """``import interop`` and an array's first conversion import neither optree nor JAX's or
    torch's pytree modules; the first structure loads optree (and only optree)."""
    from helpers import run_child

    libs = ("optree", "jax", "torch", "torch.utils._pytree", "jax.tree_util")
    code = ("import sys, numpy as np, interop; "
            f"print([m for m in {libs!r} if m in sys.modules]); "
            "interop.to_framework(np.arange(3.0), 'numpy'); "
            f"print([m for m in {libs!r} if m in sys.modules]); "
            "out = interop.to_framework({'a': [np.arange(3.0)]}, 'numpy'); "
            f"print([m for m in {libs!r} if m in sys.modules])")
    out = run_child(code, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "[]", "['optree']"], out.stdout


def test_stream_applies_to_every_leaf_and_its_error_names_the_leaf():
    t = torch.arange(3.0)
    with pytest.raises(InteropError, match=r"leaf \['a'\]\[0\].*stream"):
        interop.to_framework({"a": [t]}, "torch", stream=1)


@pytest.mark.gpu
def test_a_tuple_of_device_arrays_to_torch_zero_copy_per_leaf():
    cupy = pytest.importorskip("cupy")
    a, b = cupy.arange(4, dtype=cupy.float32), cupy.ones((2, 3), dtype=cupy.float32)
    out = interop.to_framework((a, {"b": b}), "torch")
    assert out[0].is_cuda and out[0].data_ptr() == a.data.ptr
    assert out[1]["b"].data_ptr() == b.data.ptr
    a[0] = 9.0  # one buffer: torch reads the write
    assert out[0][0].item() == 9.0
