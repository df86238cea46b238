"""What training code hands interop: states holding typed JAX PRNG keys, optimizer states before
their first step (no array at all), a torch ``state_dict`` with its ``_metadata``, ``bytes``
leaves, and a structure that contains itself. ``to_framework``, ``explain`` and
``can_convert`` agree on each."""

from __future__ import annotations

from collections import OrderedDict
from contextlib import nullcontext

import numpy as np
import pytest

import interop
from interop.errors import InteropError, NarrowingWarning, UnsupportedConversionError

torch = pytest.importorskip("torch")
TARGETS = ("numpy", "torch", "jax", "dlpack")


def _agree(x, target, **kw):
    """``to_framework``'s error (``None``: it converted), checked against ``explain`` and
    ``can_convert``."""
    try:
        interop.to_framework(x, target, **kw)
        err = None
    except InteropError as e:
        err = e
    try:
        supported = interop.explain(x, target, **kw).supported
    except InteropError:
        supported = False
    assert supported == interop.can_convert(x, target, **kw) == (err is None), (target, err)
    return err


# ---- typed JAX PRNG keys ----------------------------------------------------------------


@pytest.mark.parametrize("target", ["numpy", "torch", "dlpack", "pyarrow"])
def test_a_typed_jax_key_is_refused_naming_its_path_and_key_data(jax_cpu, target):
    """A state holding ``jax.random.key(0)`` is refused by every target that is not JAX, with
    an interop error naming the leaf's path and ``jax.random.key_data`` (JAX's own
    ``TypeError`` before); ``can_convert`` says False and ``explain`` says why."""
    import jax

    state = {"key": jax.random.key(0), "w": jax.numpy.ones(3)}
    opts = {"structure": "tree"} if target == "pyarrow" else {}
    err = _agree(state, target, **opts)
    assert isinstance(err, UnsupportedConversionError), err
    assert "leaf ['key']" in str(err) and "jax.random.key_data" in str(err), err
    plan = interop.explain(state, target, **opts)
    assert "jax.random.key_data" in " ".join(plan.reasons), plan
    keys = jax.random.split(jax.random.key(1), 4)  # a batch of keys, bare
    err = _agree(keys, target)
    assert isinstance(err, UnsupportedConversionError) and "key<" in str(err), err
    for copy in (True, False):
        assert not interop.can_convert(state, target, copy=copy, **opts)
    raw = jax.random.key_data(state["key"])  # the way out the message names
    out = interop.to_framework({"key": raw, "w": state["w"]}, target, **opts)
    assert out is not None


def test_a_typed_jax_key_stays_a_key_into_jax_unless_a_copy_is_asked_for(jax_cpu):
    import jax

    state = {"key": jax.random.key(0)}
    for kw in ({}, {"copy": False}, {"device": "cpu"}):
        out = interop.to_framework(state, "jax", **kw)
        assert out["key"] is state["key"]
        assert interop.can_convert(state, "jax", **kw)
    assert interop.explain(state, "jax").zero_copy
    err = _agree(state, "jax", copy=True)  # interop copies numbers only
    assert isinstance(err, UnsupportedConversionError) and "key_data" in str(err), err


# ---- structures of no array -------------------------------------------------------------


def _optimizer_states():
    model = torch.nn.Linear(3, 2)
    adamw = torch.optim.AdamW(model.parameters())  # before its first step: no tensor
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)  # no momentum: no tensor, ever
    sgd.step()
    return {"adamw": adamw.state_dict(), "sgd": sgd.state_dict(),
            "scalars": {"step": 3, "lr": 1e-3, "name": "run-1", "done": None, "id": b"\x01"}}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("which", ["adamw", "sgd", "scalars"])
def test_a_structure_without_arrays_comes_back_as_it_is(which, target):
    """An optimizer's state before its first step (and SGD's without momentum) or a dict of
    scalars and strings: nothing to convert, returned equal, as ``jax.tree_util`` and torch's
    pytree utilities do; ``explain`` says so and ``can_convert`` agrees, for every ``copy=``."""
    state = _optimizer_states()[which]
    for copy in (None, True, False):
        out = interop.to_framework(state, target, copy=copy)
        assert out == state and type(out) is type(state)
        plan = interop.explain(state, target, copy=copy)
        assert plan.supported and interop.can_convert(state, target, copy=copy)
        assert "it holds no array" in " ".join(plan.reasons), plan


@pytest.mark.parametrize("value", [1.5, None, "text", 3])
def test_a_bare_value_that_is_no_array_is_still_refused(value):
    err = _agree(value, "torch")
    assert isinstance(err, UnsupportedConversionError) and "does not know how to read" in str(
        err)


# ---- what containers carry ---------------------------------------------------------------


@pytest.mark.parametrize("target", ["numpy", "jax"])
def test_a_state_dicts_metadata_survives_the_round_trip(target):
    """A torch ``state_dict`` (an ``OrderedDict`` whose ``_metadata`` holds each module's
    version, which ``load_state_dict`` passes to ``_load_from_state_dict``) keeps its type and
    ``_metadata`` there and back; the weights stay zero-copy."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))  # float32
    state = model.state_dict()
    assert state._metadata  # what torch writes
    narrows = pytest.warns(NarrowingWarning, match="num_batches_tracked")  # int64 into JAX
    with narrows if target == "jax" else nullcontext():
        there = interop.to_framework(state, target)
    back = interop.to_framework(there, "torch")
    for out in (there, back):
        assert type(out) is OrderedDict and list(out) == list(state)
        assert out._metadata == state._metadata
    assert back["0.weight"].data_ptr() == state["0.weight"].data_ptr()
    seen = []
    original = torch.nn.BatchNorm1d._load_from_state_dict

    def spy(self, state_dict, prefix, local_metadata, *args):
        seen.append(local_metadata.get("version"))
        return original(self, state_dict, prefix, local_metadata, *args)

    torch.nn.BatchNorm1d._load_from_state_dict = spy
    try:
        model.load_state_dict(back)
    finally:
        torch.nn.BatchNorm1d._load_from_state_dict = original
    assert seen == [state._metadata["1"]["version"]]  # the migration hook saw the version


def test_a_dict_subclass_keeps_its_type_and_attributes():
    class Config(dict):
        def __init__(self, *args, **kw):  # a constructor that is not dict's
            raise AssertionError("not called: the result is made as copy.copy makes one")

    cfg = Config.__new__(Config)
    dict.update(cfg, w=np.arange(3.0), n=2)
    cfg.tag = "run-1"
    for straight in (cfg, Config.__new__(Config)):  # a small dict, and a large one (a loop)
        if straight is not cfg:
            dict.update(straight, {f"w{i}": np.arange(3.0) for i in range(40)})
            straight.tag = "big"
        out = interop.to_framework(straight, "torch")
        assert type(out) is Config and out.tag == straight.tag and list(out) == list(straight)
        first = next(iter(straight))
        assert out[first].data_ptr() == straight[first].ctypes.data


@pytest.mark.parametrize("target", TARGETS)
def test_a_bytes_leaf_is_kept_like_a_str(target):
    state = {"w": np.arange(3.0, dtype=np.float32), "blob": b"\x00\x01", "name": "x"}
    out = interop.to_framework(state, target)
    assert out["blob"] is state["blob"] and out["name"] == "x"
    plan = interop.explain(state, target)
    assert "['blob']" in plan.kept and "['blob']" not in plan.leaves
    assert interop.to_framework(b"\x00\x01", "numpy").dtype == np.uint8  # a bare buffer: read


@pytest.mark.parametrize("target", TARGETS)
def test_a_structure_that_contains_itself_is_refused_naming_the_path(target):
    state = {"w": np.arange(3.0, dtype=np.float32), "inner": {"b": np.ones(2, np.float32)}}
    state["inner"]["parent"] = state
    err = _agree(state, target)
    assert isinstance(err, UnsupportedConversionError), err
    assert "contains itself" in str(err) and "['inner']['parent']" in str(err), err
    loop = [np.ones(2, np.float32)]
    loop.append(loop)
    err = _agree(loop, target)
    assert isinstance(err, UnsupportedConversionError) and "[1]" in str(err), err
    shared = np.ones(2, np.float32)
    twice = {"a": [shared], "b": [shared]}  # the same leaf twice is no cycle
    assert _agree(twice, target) is None
