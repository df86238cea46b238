"""The library bugs an independent random search found (issue 18), one test per root cause.

Every oracle is outside interop: pointers from the frameworks' own accessors
(``ndarray.ctypes.data``, ``Tensor.data_ptr()``, ``jax.Array.unsafe_buffer_pointer()``, Arrow
buffer addresses), capsules read by the small ctypes reader below and consumed by NumPy's own
``np.from_dlpack``, values compared through NumPy copies, and the conversion's own outcome as
the truth a plan must match. Crash cases run in a child process, so a segfault fails the test
instead of killing pytest.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import ml_dtypes
import numpy as np
import pytest

import interop
import oracles
from helpers import run_child
from interop.errors import InteropError, UnsupportedConversionError, ZeroCopyError
from machine import jax_on_cpu
from oracles import Hand

CPU_TARGETS = ("numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack")
COPY_MODES = (None, True, False)


def capsule_facts(cap) -> dict:
    f = oracles.facts(cap)
    return {"name": f.name, "read_only": f.read_only, "data": f.data}


def consume(cap) -> np.ndarray:
    """The capsule's values as NumPy reads them itself (``np.from_dlpack``)."""
    return np.from_dlpack(Hand(cap))



def _misaligned_c128() -> np.ndarray:
    """complex128 data 8 mod 16: NumPy calls it aligned (it asks for 8, a component's)."""
    raw = np.empty(40, np.float64)
    start = 1 if raw.ctypes.data % 16 == 0 else 0
    a = raw[start:start + 12].view(np.complex128)
    a[...] = np.arange(6) + 1j * np.arange(6, 12)
    assert a.ctypes.data % 16 == 8 and a.flags.aligned
    return a


# ---- 1. complex buffers not aligned to the itemsize crash torch's kernels -------------------

def test_misaligned_complex128_never_reaches_torch_kernels_in_a_child_process():
    """The search's crash, every route it took: a misaligned complex128 array into torch, a
    user's own misaligned tensor with lazy bits through interop's copy routes, and explain."""
    r = run_child("""
        import numpy as np, torch, interop

        class Hand:
            def __init__(self, cap):
                self.cap = cap
            def __dlpack__(self, **kw):
                return self.cap
            def __dlpack_device__(self):
                return (1, 0)

        raw = np.empty(40, np.float64)
        start = 1 if raw.ctypes.data % 16 == 0 else 0
        a = raw[start:start + 12].view(np.complex128)
        a[...] = np.arange(6) + 1j * np.arange(6, 12)
        assert a.ctypes.data % 16 == 8
        want = a.copy()
        t = interop.to_framework(a, "torch")
        assert t.data_ptr() % 16 == 0, "handed over at 8 mod 16"
        assert np.array_equal((t * 2).numpy(), want * 2) and np.array_equal(t.clone().numpy(), want)
        user = torch.from_numpy(a)                      # the user's own misaligned tensor
        negated = torch._neg_view(user.conj())           # lazy conjugate and negative bits
        for lazy, expect in ((user.conj(), np.conj(want)), (negated, -np.conj(want)),
                             (user, want)):
            for tgt in ("numpy", "pandas", "dlpack", "jax", "pyarrow", "polars", "torch"):
                for copy in (None, True, False):
                    interop.explain(lazy, tgt, copy=copy)
                    interop.can_convert(lazy, tgt, copy=copy)
            got = interop.to_framework(lazy, "numpy")
            assert np.array_equal(np.array(got), expect), (got, expect)
            got = interop.to_framework(lazy, "numpy", copy=True)
            assert np.array_equal(got, expect)
            got = interop.to_framework(lazy, "pandas", copy=True).to_numpy()
            assert np.array_equal(got, expect)
            cap = interop.to_framework(lazy, "dlpack", copy=True)
            assert np.array_equal(np.from_dlpack(Hand(cap)), expect)
        print("survived")
    """, timeout=600)
    assert r.returncode == 0 and "survived" in r.stdout, (r.returncode, r.stderr[-3000:])


@pytest.mark.parametrize("case", ["c128_8mod16", "c64_4mod8", "c128_stride_24"])
def test_complex_off_its_itemsize_is_copied_into_torch(case):
    if case == "c128_8mod16":
        a = _misaligned_c128()
    elif case == "c64_4mod8":
        raw = np.empty(40, np.float32)
        start = 1 if raw.ctypes.data % 8 == 0 else 0
        a = raw[start:start + 12].view(np.complex64)
        a[...] = np.arange(6) - 2j
        assert a.ctypes.data % 8 == 4
    else:
        base = np.empty(20, np.complex128)
        start = 0 if base.ctypes.data % 16 == 0 else 1
        a = np.lib.stride_tricks.as_strided(base[start:], (5,), (24,))
        assert a.ctypes.data % 16 == 0 and a.flags.aligned
    want = a.copy()
    plan = interop.explain(a, "torch")
    assert plan.supported and not plan.zero_copy
    assert any("itemsize" in r for r in plan.reasons), plan
    with pytest.raises(ZeroCopyError):
        interop.to_framework(a, "torch", copy=False)
    t = interop.to_framework(a, "torch")
    assert t.data_ptr() % a.itemsize == 0
    assert all(s * a.itemsize % a.itemsize == 0 for s in t.stride())
    assert np.array_equal(t.clone().numpy(), want)     # torch's own kernel, now safe
    assert not np.shares_memory(t.numpy(), a)


def test_misaligned_complex_capsule_into_torch_is_copied():
    a = _misaligned_c128()
    want = a.copy()
    plan = interop.explain(a.__dlpack__(max_version=(1, 1)), "torch")
    assert plan.supported and not plan.zero_copy, plan
    t = interop.to_framework(a.__dlpack__(max_version=(1, 1)), "torch")
    assert t.data_ptr() % 16 == 0 and np.array_equal(t.clone().numpy(), want)


# ---- 2. lazy conjugate / negative bits into a DLPack capsule ---------------------------------

def test_negative_bit_to_dlpack_keeps_the_sign():
    import torch

    t = torch.tensor([1 + 2j, 3 - 4j]).conj().imag       # lazy negative bit
    assert t.is_neg()
    want = -np.array([2.0, -4.0], np.float32)
    plan = interop.explain(t, "dlpack")
    assert plan.supported and not plan.zero_copy, plan
    with pytest.raises(ZeroCopyError):
        interop.to_framework(t, "dlpack", copy=False)
    cap = interop.to_framework(t, "dlpack")
    assert capsule_facts(cap)["data"] != t.data_ptr()
    assert np.array_equal(consume(cap), want)


def test_conjugate_bit_to_dlpack_is_resolved_as_planned():
    import torch

    t = torch.tensor([1 + 2j, 3 - 4j]).conj()
    assert t.is_conj()
    for copy in COPY_MODES:
        plan = interop.explain(t, "dlpack", copy=copy)
        try:
            cap = interop.to_framework(t, "dlpack", copy=copy)
        except InteropError as e:
            assert not plan.supported, f"copy={copy}: plan {plan} but {e!r}"
            assert copy is False and isinstance(e, ZeroCopyError)
            continue
        assert plan.supported and not plan.zero_copy, plan
        assert np.array_equal(consume(cap), np.array([1 - 2j, 3 + 4j], np.complex64))


# ---- 3. JAX's immutable buffer handed out as a capsule --------------------------------------

def test_jax_to_dlpack_is_a_read_only_capsule_over_jax_memory():
    import jax.numpy as jnp

    with jax_on_cpu():  # a host capsule, on a GPU host too
        j = jnp.arange(6.0, dtype=jnp.float32)
    cap = interop.to_framework(j, "dlpack")
    facts = capsule_facts(cap)
    assert facts["name"] == b"dltensor_versioned" and facts["read_only"], facts
    assert facts["data"] == j.unsafe_buffer_pointer()              # zero-copy, by JAX's accessor
    passed_on = interop.explain(cap, "torch")                      # the capsule carries the fact
    assert any("read-only" in h for h in passed_on.hazards), passed_on
    got = consume(cap)
    assert not got.flags.writeable                                 # NumPy honours the flag
    with pytest.raises(ValueError):
        got[0] = 5
    assert np.array_equal(np.asarray(j), np.arange(6.0, dtype=np.float32))


# ---- 4. raw framework errors -------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 3), (0, 3), (1, 0)])
def test_bfloat16_negative_stride_on_an_extent_one_axis_into_torch(shape):
    import torch

    base = (np.arange(int(np.prod(shape))) - 1).astype(ml_dtypes.bfloat16).reshape(shape)
    a = base[::-1]
    assert a.strides[0] <= 0 or a.size == 0
    t = interop.to_framework(a, "torch")
    assert t.dtype == torch.bfloat16 and tuple(t.shape) == shape
    assert np.array_equal(t.view(torch.int16).numpy(), a.view(np.int16))
    if a.size:
        assert t.data_ptr() == a.ctypes.data                        # zero-copy by both accessors
        t[0, 0] = 7
        assert float(a[0, 0]) == 7.0


@contextmanager
def _torch_calls_it_experimental():
    """Around the test's own making of a value torch calls experimental or deprecated
    (complex32, quantized, sparse CSR), which torch warns about: not interop's warning (the
    suite runs with UserWarning as an error; interop's calls stay outside this block)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "(ComplexHalf support is experimental|torch.quantize_"
                                          "per_tensor|Sparse CSR tensor support is in beta)",
                                UserWarning)
        yield


@pytest.mark.parametrize("make", ["complex32", "quint8"])
@pytest.mark.parametrize("target", CPU_TARGETS)
def test_torch_dtypes_numpy_lacks_with_copy_true_fail_clearly(make, target):
    import torch

    with _torch_calls_it_experimental():
        t = (torch.zeros(3, dtype=torch.complex32) if make == "complex32"
             else torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.quint8))
    assert not interop.can_convert(t, target, copy=True)
    with pytest.raises(UnsupportedConversionError, match=str(t.dtype)):
        interop.to_framework(t, target, copy=True)


SPARSE_TARGETS = {"jax": "BCOO BCSR", "pyarrow": "SparseCOOTensor SparseCSRMatrix",
                  "numpy": "coo_array csr_array"}
"""The CPU targets with sparse values of their own (issue 38), and their types (NumPy's are
SciPy's, issue 45)."""


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("target", [t for t in CPU_TARGETS if t != "torch"])
def test_torch_sparse_tensors_stay_sparse_or_are_refused_naming_format_dense(layout, target):
    """Once refused outright ("call .to_dense() first"); since issue 38 a sparse tensor
    becomes the target's sparse value, or, where the target has none, is refused naming
    format='dense', the one way to densify. A plan kept for dense tensors does not catch
    it."""
    import torch

    interop.to_framework(torch.arange(3.0), target)   # a cached plan (fast path) for Tensor
    with _torch_calls_it_experimental():
        sp = torch.eye(3).to_sparse() if layout == "coo" else torch.eye(3).to_sparse_csr()
    for copy in COPY_MODES:
        plan = interop.explain(sp, target, copy=copy)
        if target not in SPARSE_TARGETS:
            assert not plan.supported and "format='dense'" in " ".join(plan.reasons), plan
            with pytest.raises(UnsupportedConversionError, match="format='dense'"):
                interop.to_framework(sp, target, copy=copy)
        elif plan.supported:
            out = interop.to_framework(sp, target, copy=copy)
            assert type(out).__name__ in SPARSE_TARGETS[target].split()
        else:  # a buffer must copy (int64 narrowed for JAX, coordinates compacted for Arrow)
            assert copy is False and plan.error == "zero-copy", plan
            with pytest.raises(ZeroCopyError):
                interop.to_framework(sp, target, copy=copy)
    dense = interop.to_framework(sp, "numpy", format="dense")
    assert np.array_equal(dense, np.eye(3))


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_numpy_object_arrays_fail_clearly_with_copy_true(target):
    o = np.array([1, "a", None], dtype=object)
    assert not interop.can_convert(o, target, copy=True)
    with pytest.raises(UnsupportedConversionError, match="object"):
        interop.to_framework(o, target, copy=True)


# ---- 5. plans that must match the conversion, for every copy= mode --------------------------

def _values():
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    return {
        "pandas Int64 NA last": lambda: pd.Series([1, 2, None], dtype="Int64"),
        "pandas boolean NA last": lambda: pd.Series([True, False, None], dtype="boolean"),
        "pandas strings": lambda: pd.Series(["a", "b"]),
        "pandas categorical": lambda: pd.Series(["a", "b", "a"], dtype="category"),
        "pyarrow int null last": lambda: pa.array([1, 2, None]),
        "pyarrow bool null last": lambda: pa.array([True, False, None]),
        "pyarrow dictionary": lambda: pa.array(["a", "b"]).dictionary_encode(),
        "pyarrow decimal": lambda: pa.array([1, 2], pa.decimal128(5, 2)),
        "pyarrow strings": lambda: pa.array(["x", "y"]),
        "polars int null last": lambda: pl.Series([1, 2, None]),
        "polars strings": lambda: pl.Series(["x"]),
        "polars Array": lambda: pl.Series("a", [[1, 2], [3, 4]], dtype=pl.Array(pl.Int64, 2)),
        "polars Array inner null": lambda: pl.Series("a", [[1, None], [3, 4]],
                                                     dtype=pl.Array(pl.Int64, 2)),
        "numpy 0-d": lambda: np.array(3.0),
        "numpy 2-d": lambda: np.arange(6.0).reshape(2, 3),
        "numpy float 2-d capsule": lambda: np.arange(6.0).reshape(2, 3).__dlpack__(
            max_version=(1, 1)),
        "numpy 0-d capsule": lambda: np.array(2.0).__dlpack__(max_version=(1, 1)),
    }


@pytest.mark.parametrize("copy", COPY_MODES)
@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("name", list(_values()))
def test_plan_matches_the_conversion(name, target, copy):
    make = _values()[name]
    plan = interop.explain(make(), target, copy=copy)
    can = interop.can_convert(make(), target, copy=copy)
    try:
        interop.to_framework(make(), target, copy=copy)
        outcome = None
    except InteropError as e:
        outcome = e
    except Exception as e:  # a raw framework error is a bug in itself
        pytest.fail(f"{name} -> {target} copy={copy}: raw {type(e).__name__}: {e}")
    assert plan.supported == can == (outcome is None), (
        f"{name} -> {target} copy={copy}: plan {plan}\ncan_convert {can}; outcome {outcome!r}")


def test_polars_array_column_is_the_zero_copy_view_the_plan_says():
    import polars as pl

    s = pl.Series("a", [[1, 2], [3, 4], [5, 6]], dtype=pl.Array(pl.Int64, 2))
    values = s.to_arrow().values
    address = values.buffers()[1].address + values.offset * 8     # Arrow's own pointer
    plan = interop.explain(s, "torch")
    assert plan.supported and plan.zero_copy, plan
    t = interop.to_framework(s, "torch")
    assert t.data_ptr() == address and tuple(t.shape) == (3, 2)
    t[1, 0] = 30                                                  # a write the Series sees
    assert s.to_list()[1] == [30, 4]
