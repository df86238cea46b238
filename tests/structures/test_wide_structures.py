"""Wide structures (issue 49): a node of more than ``compile.SMALL`` children, all torch
tensors (a model's ``state_dict``), converts its leaves together through their plan's
``each`` (the guard read by one ``map`` per test, then ``Tensor.numpy`` mapped over them). A
leaf among a thousand that requires grad, carries a lazy conjugate or negative bit, lives on
the meta device, is sparse, strided, bfloat16 or float64 gets what its own conversion gives:
the same result (values, dtype, memory shared or not) or the same error, named by its key.

The structure runs the plan kept for the plain state dict of the same keys (so the odd leaf
meets the plan made for plain ones), and the frames it runs are counted to show which way of
``each`` took it."""

from __future__ import annotations

import collections
import sys
import warnings

import numpy as np
import pytest

import interop
from helpers import outcome, torch_leaf
from interop.errors import InteropError, NarrowingWarning, UnsupportedConversionError
from interop.structures.compile import SMALL
from oracles import pointer

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

N = 1000
AT = (0, 517, N - 1)


def _state() -> collections.OrderedDict:
    """A state dict of ``N`` small float32 CPU tensors, with torch's ``_metadata``."""
    out = collections.OrderedDict((f"{i // 2}.{'weight' if i % 2 == 0 else 'bias'}",
                                   torch.arange(6, dtype=torch.float32).reshape(2, 3) + i)
                                  for i in range(N))
    out._metadata = collections.OrderedDict({"": {"version": 1}})
    return out


KINDS = ("grad", "conj", "neg", "meta", "bfloat16", "strided", "sparse", "float64",
         "complex32", "empty")


def _outcome(call):
    """``(result, error, narrowing warnings' text)`` of ``call()``."""
    out, err, got = outcome(call)
    return out, err, " ".join(str(w.message) for w in got
                              if issubclass(w.category, NarrowingWarning))


def _dense(x) -> np.ndarray:
    """``x`` (NumPy, JAX, SciPy or JAX sparse) as host NumPy by its framework's own calls."""
    if hasattr(x, "todense") and not isinstance(x, np.ndarray):
        x = x.todense()
    return np.array(x)


def _same_leaf(src, got, want, where: str) -> None:
    """``got`` (the structure's leaf) is what ``want`` (the leaf's own call) is: type, dtype,
    values, and memory shared with ``src`` or not (by the frameworks' own pointers)."""
    assert type(got) is type(want), where
    assert getattr(got, "dtype", None) == getattr(want, "dtype", None), where
    np.testing.assert_array_equal(_dense(got), _dense(want), strict=True, err_msg=where)
    if src.layout == torch.strided and src.numel() and src.device.type == "cpu":
        assert (pointer(got) == src.data_ptr()) == (pointer(want) == src.data_ptr()), where


@pytest.mark.parametrize("target", ["numpy", "jax"])
@pytest.mark.parametrize("kind", KINDS)
def test_one_odd_leaf_among_a_thousand_gets_its_own_answer(kind, target):
    plain = _state()
    interop.to_framework(plain, target)  # the plan kept for the state dict's structure
    for at in AT:
        state = _state()
        key = list(state)[at]
        state[key] = torch_leaf(kind)
        got, err, why = _outcome(lambda s=state: interop.to_framework(s, target))
        leaves = {k: _outcome(lambda t=t: interop.to_framework(t, target))
                  for k, t in state.items()}
        failed = [(k, e) for k, (_, e, _) in leaves.items() if e is not None]
        where = f"{kind} at {at} -> {target}"
        if failed:  # the first leaf that fails, named by its key (an interop error)
            k, want = failed[0]
            assert k == key and type(err) is type(want), (where, err, want)
            named = f"leaf [{key!r}]: {want}" if isinstance(want, InteropError) else str(want)
            assert str(err) == named, where
            continue
        assert err is None, (where, err)
        assert type(got) is collections.OrderedDict and list(got) == list(state), where
        assert got._metadata is state._metadata, where
        for k, t in state.items():
            _same_leaf(t, got[k], leaves[k][0], f"{where}, leaf {k}")
        narrowed = {k for k, (_, _, w) in leaves.items() if w}
        assert why.count("leaf [") == len(narrowed), (where, why)
        assert all(f"leaf [{k!r}]" in why for k in narrowed), (where, why)


def _frames(call) -> collections.Counter:
    """The Python frames ``call()`` enters, by code object."""
    seen: collections.Counter = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            seen[frame.f_code] += 1

    sys.setprofile(profile)
    try:
        call()
    except Exception:  # noqa: BLE001, S110 - the answer is the other test's; the frames here
        pass
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.cpu_only
@pytest.mark.parametrize("kind", ["plain", *KINDS])
def test_a_thousand_leaves_of_one_type_take_their_plans_each(kind):
    """The leaves go to their plan's ``each``: where every one passes the plan's guard, none
    through the fast plan's frame (the odd one the framework's call refuses goes to the
    checked plan, as its own call goes); where one does not (it requires grad, a dtype
    ``Tensor.numpy()`` has not), each through the fast plan, up to a leaf that fails. (On a
    host with a CUDA device torch's plan reads each value's device, a dispatch of no
    ``each``: the leaves go through it one by one, as the other tests here see.)"""
    interop.to_framework(_state(), "numpy")
    plan = interop.api.REGISTRY.cache.get(torch.Tensor, "numpy", None, None)
    assert plan.__code__.co_filename.startswith("<interop fast plan")  # the kept fast plan
    each = getattr(plan, "each", None)
    assert each is not None
    state = _state()
    inner = 0  # the fast plan's frames (its code, shared by plans of its shape) the odd
    if kind != "plain":  # leaf's own call enters below its own (a sparse tensor's parts)
        odd = state[list(state)[517]] = torch_leaf(kind)
        inner = _frames(lambda: interop.to_framework(odd, "numpy"))[plan.__code__] - 1
    fails = _outcome(lambda: interop.to_framework(state, "numpy"))[1] is not None
    seen = _frames(lambda: interop.to_framework(state, "numpy"))
    assert seen[each.__code__] == 1, kind
    per_value = kind in ("grad", "bfloat16", "complex32")  # the guard fails: dtype, grad
    entered = (518 if fails else N) if per_value else 0  # leaves entering the fast plan
    assert seen[plan.__code__] == entered + inner, (kind, inner)
    assert N > SMALL


def test_a_wide_list_and_a_wide_dict_subclass_take_each_too():
    ts = [torch.arange(3.0) + i for i in range(40)]

    class Weights(dict):
        def __setitem__(self, k, v):  # never called by the rebuild (as copy.copy does)
            raise AssertionError("__setitem__")

    w = Weights((str(i), t) for i, t in enumerate(ts))
    w.note = "kept"
    for value in (ts, tuple(ts), w):
        out = interop.to_framework(value, "numpy")
        assert type(out) is type(value)
        got = out.values() if isinstance(out, dict) else out
        assert [pointer(o) for o in got] == [t.data_ptr() for t in ts]
    assert out.note == "kept" and list(out) == list(w)


def _narrowed(call) -> list[str]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in got if issubclass(w.category, NarrowingWarning)]


def test_narrowing_names_each_leaf_once_through_wide_and_nested_nodes():
    """The reasons of leaves in a wide list, a small dict and the root, each labelled once
    with its own path, in one warning, whatever node (straight code or a loop) holds them."""
    f32, f64 = np.arange(3, dtype=np.float32), np.arange(3.0)
    wide = [f32] * 20
    wide[3] = wide[17] = f64
    tree = {"a": f32, "wide": wide, "small": {"x": f64, "y": f32}, "z": f64}
    for _ in range(2):  # the first call and the kept plan
        msgs = _narrowed(lambda: interop.to_framework(tree, "jax"))
        assert len(msgs) == 1, msgs
        named = msgs[0].count("leaf [")
        assert named == 4, msgs
        for path in ("['wide'][3]", "['wide'][17]", "['small']['x']", "['z']"):
            assert msgs[0].count(f"leaf {path}: ") == 1, (path, msgs)


def test_a_gathering_around_a_structure_gets_its_one_reason_and_is_restored():
    """A structure converted within a gathering (a table's, a dask collection's) hands its
    one reason to it, and the gathering holds after the structure's call, failed or not."""
    from interop import narrowing

    tree = {"z": np.arange(3.0), "t": torch.ones(2)}
    with narrowing.gather() as got:
        interop.to_framework(tree, "jax")
        assert len(got) == 1 and got[0].startswith("dict: leaf ['z']: "), got
        tree["t"] = torch.empty(2, device="meta")  # the kept plan: 'z' narrows, then 't' fails
        with pytest.raises(UnsupportedConversionError, match="meta device"):
            interop.to_framework(tree, "jax")
        narrowing.warn("after")
    assert len(got) == 2 and got[-1] == "after", got
    assert _narrowed(lambda: narrowing.warn("outside")) == ["outside"]


def test_a_gathering_in_one_thread_takes_no_reason_of_another():
    import threading

    from interop import narrowing

    inside, done = threading.Event(), threading.Event()
    seen: list = []

    def other():
        inside.wait(10)
        with narrowing.gather() as mine:
            narrowing.warn("other thread")
        seen.append(mine)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with narrowing.gather() as got:
        inside.set()
        done.wait(10)
    t.join(10)
    assert got == [] and seen == [["other thread"]]


@pytest.mark.parametrize("kind", ["plain", "conj", "grad", "meta", "sparse"])
def test_where_plans_read_each_values_device_the_leaves_go_through_its_each(kind):
    """On a host with a CUDA device torch's plan reads each value's device (a dispatch: its
    plan for host values, others planned per device); seen here on a registry whose torch
    says a device is present. The dispatch's ``each`` hands leaves all on the host to the host
    plan's ``each``, and any other to the dispatch one by one: the answers are the leaves'
    own."""
    from dataclasses import replace

    from interop.adapters import torch_
    from interop.default import build

    reg = build()
    reg.add(replace(torch_.ADAPTER, gpu_present=lambda: True))
    reg.convert(_state(), "numpy")
    plan = reg.cache.get(torch.Tensor, "numpy", None, None)
    assert not plan.__code__.co_filename.startswith("<interop fast plan")  # the dispatch
    state = _state()
    key = list(state)[517]
    if kind != "plain":
        state[key] = torch_leaf(kind)
    got, err, _ = _outcome(lambda: reg.convert(state, "numpy"))
    leaves = {k: _outcome(lambda t=t: reg.convert(t, "numpy")) for k, t in state.items()}
    failed = [(k, e) for k, (_, e, _) in leaves.items() if e is not None]
    if failed:
        k, want = failed[0]
        named = f"leaf [{k!r}]: {want}" if isinstance(want, InteropError) else str(want)
        assert type(err) is type(want) and str(err) == named, (err, want)
    else:
        assert err is None and list(got) == list(state), err
        for k, t in state.items():
            _same_leaf(t, got[k], leaves[k][0], f"{kind}, leaf {k}")
    inner = 0  # the dispatch's frames the odd leaf's own call enters below its own (parts)
    if kind != "plain":
        inner = _frames(lambda: reg.convert(state[key], "numpy"))[plan.__code__] - 1
    seen = _frames(lambda: reg.convert(state, "numpy"))
    assert seen[plan.each.__code__] == 1
    one_by_one = kind == "meta"  # not on the host: each leaf through the dispatch
    entered = (518 if failed else N) if one_by_one else 0
    assert seen[plan.__code__] == entered + inner, (kind, inner)
