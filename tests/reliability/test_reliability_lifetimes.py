"""Lifetimes: results outlive their sources, across chains of conversions; capsules die used."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest
from test_reliability_properties import first_address

import interop
import oracles
from interop.errors import CapsuleConsumedError
from interop.host import fresh_copy
from interop.protocols import dlpack

CHAINS = [
    ("torch", "jax", "numpy", "pyarrow", "polars"),
    ("torch", "numpy", "pandas", "numpy", "jax"),
    ("dlpack", "torch", "dlpack", "numpy", "pyarrow"),
    ("jax", "dlpack", "numpy", "torch", "pandas"),
    ("pyarrow", "torch", "jax", "dlpack", "numpy"),
    ("polars", "numpy", "torch", "dlpack", "jax"),
]


def _host(x) -> np.ndarray:
    if dlpack.is_capsule(x):
        return np.array(oracles.array(x))
    mod = type(x).__module__.partition(".")[0]
    if mod == "torch":
        return x.numpy().copy()
    if mod in ("pyarrow",):
        return np.array(x.to_numpy(zero_copy_only=False))
    if mod in ("pandas", "polars"):
        return np.array(x.to_numpy())
    return np.array(x)


def _churn() -> None:
    """Collect, then allocate and scribble so freed memory would be reused and show."""
    gc.collect()
    junk = [np.full(n, -1.0) for n in (4, 64, 1000, 4096, 100_000)]
    del junk


@pytest.mark.parametrize("chain", CHAINS, ids=["->".join(c) for c in CHAINS])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_result_outlives_every_source_of_a_chain(chain, dtype):
    """Every step is zero-copy (the result's first element, by its framework's own accessor,
    is the origin's), so the last result lives on the origin's buffer alone."""
    saved = (np.arange(1, 4097) % 113).astype(dtype)
    x = fresh_copy(saved)                    # the numpy origin, 64-byte aligned (for JAX)
    origin = x.ctypes.data
    for tgt in chain:
        if tgt == "jax" and saved.dtype.itemsize == 8:
            tgt = "torch"                    # JAX without x64 narrows 64-bit: stay zero-copy
        y = interop.to_framework(x, tgt)
        assert first_address(y) == origin, f"{chain}: the step to {tgt} copied"
        del x                                # drop the previous step (its capsule is used up)
        x = y
    _churn()                                 # every source of the chain is gone now
    assert np.array_equal(_host(x), saved), f"{chain}: values changed once sources were freed"


def test_source_deleted_before_result_is_read():
    import torch

    src = np.arange(10_000, dtype=np.float64)
    t = interop.to_framework(src, "torch")
    j = interop.to_framework(interop.to_framework(src, "dlpack"), "numpy")
    del src
    _churn()
    assert float(t.sum()) == float(np.arange(10_000).sum())
    assert float(j.sum()) == float(np.arange(10_000).sum())
    del torch


@pytest.mark.parametrize("target", ["numpy", "torch", "jax", "pyarrow"])
def test_no_capsule_left_reusable(target):
    cap = np.arange(8, dtype=np.float32).__dlpack__(max_version=(1, 1))
    res = interop.to_framework(cap, target)
    assert dlpack._capsule_name(cap).startswith(b"used_"), "a consumed capsule keeps its name"
    with pytest.raises(CapsuleConsumedError):
        interop.to_framework(cap, target)
    del cap
    _churn()
    assert np.array_equal(_host(res), np.arange(8, dtype=np.float32))


def test_dlpack_result_is_consumed_once():
    cap = interop.to_framework(np.arange(5.0), "dlpack")
    a = interop.to_framework(cap, "numpy")
    with pytest.raises(CapsuleConsumedError):
        interop.to_framework(cap, "torch")
    assert np.array_equal(a, np.arange(5.0))


def test_unconsumed_capsule_frees_its_producer():
    import weakref

    class Holder(np.ndarray):
        pass

    base = np.arange(1000.0).view(Holder)
    ref = weakref.ref(base)
    cap = base.__dlpack__(max_version=(1, 1))
    del base
    gc.collect()
    assert ref() is not None                 # the capsule keeps its producer alive
    del cap
    gc.collect()
    assert ref() is None                     # and lets it go when dropped unused


def test_a_result_freed_at_interpreter_exit_prints_nothing():
    """The owner of a DLPack-only source's memory calls the producer's deleter when the last
    array over it goes, which at interpreter exit can be after the module's globals were set
    to ``None`` (the interpreter clears a module that is still alive, underscore names first).
    A child process does that to ``interop.protocols.dlpack`` (as ``_PyModule_ClearDict``
    does) and then lets the results go: the deleter still runs (the producer is freed, a
    weakref says) and nothing is printed ("Exception ignored in: <function _Owner.__del__>
    ... TypeError: 'NoneType' object is not callable" before)."""
    from helpers import run_child

    r = run_child("""
        import gc, sys, weakref
        sys.path.insert(0, TESTS)
        import numpy as np, torch
        import interop
        from interop.protocols import dlpack
        from helpers import DLPackOnly

        for _ in range(2):  # plan both pairs first (a pair's first source is kept until its
            for target in ("numpy", "torch"):  # second call makes the fast form)
                interop.to_framework(DLPackOnly(np.zeros(4)), target)
        src = np.arange(4.0)
        alive = weakref.ref(src)
        x = DLPackOnly(src)
        results = [interop.to_framework(x, "numpy"), interop.to_framework(x, "torch")]
        del x, src
        gc.collect()
        assert alive() is not None  # the results hold the producer's memory
        module = vars(dlpack)
        for name in [n for n in module if n.startswith("_") and not n.startswith("__")]:
            module[name] = None  # what the interpreter does to a module still alive at exit
        del results
        gc.collect()
        assert alive() is None, "the deleter did not run"
        print("freed")
    """.replace("TESTS", repr(str(Path(__file__).resolve().parents[1]))))
    assert r.returncode == 0 and "freed" in r.stdout, r.stdout + r.stderr
    assert "Exception ignored" not in r.stderr and r.stderr == "", r.stderr
