"""Property tests: every CPU pair x dtype x shape x layout x read-only keeps the contract.

For each generated source and target:

- the conversion either succeeds with the source's values (same shape, same dtype), or raises
  an ``InteropError`` subclass, and ``explain`` said beforehand that it would fail;
- a zero-copy claim in the plan holds: ``interop.shares_memory`` and a write through the
  writable side that the other side sees;
- ``copy=False`` raises ``ZeroCopyError`` exactly when ``explain(copy=None).zero_copy`` is false
  (for supported conversions), and ``copy=True`` never shares memory with the source.

Sources are built natively per framework (a strided NumPy view, ``Tensor.as_strided``, a
JAX array, a sliced pyarrow array, pandas/polars Series, a fresh DLPack capsule) over one
generated layout. The builders are reused by the lifetime, load and report modules.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import interop
from interop.errors import InteropError, ZeroCopyError
from interop.host import fresh_copy
from interop.protocols import dlpack
from matrix_samples import NARROWED

SOURCES = ("numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack")
TARGETS = SOURCES
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
MAX_EXAMPLES = int(os.environ.get("RELIABILITY_EXAMPLES", "12"))
"""Examples per (source, target) pair: 49 pairs x 12 = 588 generated cases by default."""


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


# ---- layouts ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """A strided view over a fresh buffer: what hypothesis generates."""

    dtype: str
    shape: tuple[int, ...]
    order: str = "C"
    steps: tuple[int, ...] = ()
    negative: tuple[bool, ...] = ()
    broadcast: tuple[bool, ...] = ()
    offset: int = 0          # elements before the first one (offset views, misaligned for XLA)
    misalign: int = 0        # bytes: 1 gives an array not aligned to its itemsize
    readonly: bool = False

    def describe(self) -> str:
        bits = [self.dtype, str(self.shape), self.order]
        if any(s != 1 for s in self.steps):
            bits.append(f"steps={self.steps}")
        if any(self.negative):
            bits.append(f"neg={self.negative}")
        if any(self.broadcast):
            bits.append(f"bcast={self.broadcast}")
        if self.offset:
            bits.append(f"offset={self.offset}")
        if self.misalign:
            bits.append(f"misalign={self.misalign}")
        if self.readonly:
            bits.append("readonly")
        return " ".join(bits)


def fill_values(dtype: np.dtype, n: int) -> np.ndarray:
    """Small exact values (no NaN), distinct enough that a wrong element shows."""
    i = np.arange(n)
    if dtype.kind == "b":
        return (i % 3) == 0
    if dtype.kind == "u":
        return (i % 97 + 1).astype(dtype)
    if dtype.kind == "c":
        return ((i % 17) - 8 + 1j * (i % 5)).astype(dtype)
    return ((i % 17) - 8).astype(np.float32).astype(dtype)


def build_numpy(lay: Layout) -> np.ndarray:
    """The NumPy view ``lay`` describes, over a 64-byte aligned buffer filled with values."""
    dt = np_dtype(lay.dtype)
    shape = lay.shape
    nd = len(shape)
    steps = lay.steps or (1,) * nd
    neg = lay.negative or (False,) * nd
    bc = lay.broadcast or (False,) * nd
    # compact element strides of the un-broadcast shape, in the chosen order
    dims = [1 if b else n for n, b in zip(shape, bc)]
    padded = [max(d, 1) * s for d, s in zip(dims, steps)]
    strides = [0] * nd
    acc = 1
    order = range(nd - 1, -1, -1) if lay.order == "C" else range(nd)
    for k in order:
        strides[k] = acc
        acc *= padded[k]
    el = [0 if b else s * st_ * (-1 if g else 1)
          for s, st_, g, b in zip(strides, steps, neg, bc)]
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, el) if n > 0)
    count = lay.offset + span
    raw_bytes = np.empty(count * dt.itemsize + lay.misalign + 64, np.uint8)
    start = (-raw_bytes.ctypes.data) % 64 + lay.misalign
    raw = raw_bytes[start:start + count * dt.itemsize].view(dt)
    raw[...] = fill_values(dt, count)
    first = lay.offset + sum((n - 1) * -s for n, s in zip(shape, el) if s < 0 and n > 0)
    out = np.lib.stride_tricks.as_strided(raw[first:], shape, [s * dt.itemsize for s in el],
                                          writeable=True)
    if lay.readonly:
        out.flags.writeable = False
    return out


@st.composite
def layouts(draw, dtypes=DTYPES, max_ndim: int = 6, one_d: bool = False) -> Layout:
    dtype = draw(st.sampled_from(dtypes))
    if one_d:
        ndim = 1
    else:
        ndim = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4, 5, 6][: max_ndim + 3]))
    shape = list(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    if ndim and draw(st.integers(0, 4)) == 0:      # one large dim
        k = draw(st.integers(0, ndim - 1))
        rest = int(np.prod([max(n, 1) for i, n in enumerate(shape) if i != k]))
        shape[k] = draw(st.integers(300, max(301, 6000 // rest)))
    elif ndim and draw(st.integers(0, 5)) == 0:    # empty
        shape[draw(st.integers(0, ndim - 1))] = 0
    kind = draw(st.sampled_from(["C", "C", "F", "steps", "negative", "broadcast", "offset",
                                 "mixed"]))
    steps = [1] * ndim
    neg = [False] * ndim
    bc = [False] * ndim
    order = "F" if kind == "F" else "C"
    offset = misalign = 0
    if kind in ("steps", "mixed") and ndim:
        steps = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    if kind in ("negative", "mixed") and ndim:
        neg = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
    if kind in ("broadcast", "mixed") and ndim:
        bc = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
    if kind in ("offset", "mixed"):
        offset = draw(st.integers(1, 3))
        if np_dtype(dtype).itemsize > 1 and draw(st.integers(0, 3)) == 0:
            misalign = draw(st.integers(1, np_dtype(dtype).itemsize - 1))
    readonly = draw(st.booleans())
    return Layout(dtype, tuple(shape), order, tuple(steps), tuple(neg), tuple(bc), offset,
                  misalign, readonly)


# ---- sources per framework ------------------------------------------------------------------

@dataclass
class Source:
    """A source value, the NumPy view over the same memory (if any) and its expected values."""

    framework: str
    value: Any
    backing: Any            # an object over the source's memory, for shares_memory/writes
    expected: np.ndarray    # a private copy of the values the source holds
    writable: bool
    keep: list = field(default_factory=list)


def _torch_dtype(dt: np.dtype):
    import torch

    if dt == np.dtype(ml_dtypes.bfloat16):
        return torch.bfloat16
    return torch.from_numpy(np.empty(0, dt)).dtype


def _torch_of(arr: np.ndarray):
    """A tensor over ``arr``'s memory with the same strides, or None when torch has none."""
    import torch

    if any(s < 0 for s in arr.strides) or not arr.flags.aligned:
        return None
    dt = arr.dtype
    lo, hi = np.lib.array_utils.byte_bounds(arr) if arr.size else (0, 0)
    if not arr.size:
        return torch.empty(arr.shape, dtype=_torch_dtype(dt))
    n = (hi - lo) // dt.itemsize
    flat = np.lib.stride_tricks.as_strided(arr, (n,), (dt.itemsize,), writeable=True)
    bits = flat.view(f"u{dt.itemsize}") if dt.kind == "V" else flat
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = torch.from_numpy(bits)
    if dt.kind == "V":
        base = base.view(torch.bfloat16)
    return base.as_strided(arr.shape, [s // dt.itemsize for s in arr.strides])


def make_source(framework: str, lay: Layout) -> Source | None:
    """The source of ``framework`` for layout ``lay``, or None when it cannot hold it."""
    arr = build_numpy(lay)
    if framework == "numpy":
        return Source("numpy", arr, arr, arr.copy(), arr.flags.writeable)
    if framework == "torch":
        t = _torch_of(arr)
        if t is None:
            t = _torch_of(fresh_copy(np.ascontiguousarray(arr)))  # aligned: deterministic
        return Source("torch", t, t, np.array(arr), True, [arr])
    if framework == "jax":
        import jax.numpy as jnp

        j = jnp.asarray(np.ascontiguousarray(arr))
        return Source("jax", j, j, np.array(j), False)
    if framework == "dlpack":
        try:
            cap = arr.__dlpack__(max_version=(1, 1))
        except (BufferError, TypeError, ValueError):
            return None
        return Source("dlpack", cap, arr, arr.copy(), arr.flags.writeable, [arr])
    if arr.ndim != 1:
        return None
    if framework == "pyarrow":
        import pyarrow as pa

        if arr.dtype.kind in "cV":
            return None
        pad = lay.offset
        big = pa.array(fresh_copy(np.concatenate([np.zeros(pad, arr.dtype), arr])))
        a = big.slice(pad, len(arr)) if pad else big
        return Source("pyarrow", a, a, arr.copy(), False)
    if framework == "pandas":
        import pandas as pd

        if arr.dtype.kind == "V":
            return None
        s = pd.Series(arr, copy=False)
        return Source("pandas", s, s, arr.copy(), False, [arr])
    if framework == "polars":
        import polars as pl

        if arr.dtype.kind in "cV":
            return None
        try:
            s = pl.Series(values=arr)
        except Exception:
            return None
        return Source("polars", s, s, arr.copy(), False)
    raise AssertionError(framework)


# ---- reading any result back ----------------------------------------------------------------

def to_host(x: Any) -> np.ndarray:
    """A private NumPy copy of any result, read with the framework's own calls."""
    mod = type(x).__module__.partition(".")[0]
    if isinstance(x, np.ndarray):
        return np.array(x)
    if mod == "torch":
        import torch

        t = x.detach().resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
        return t.numpy().copy()
    if mod in ("jax", "jaxlib"):
        if x.dtype.kind == "V":
            return np.array(x)
        return np.array(np.from_dlpack(x))  # np.asarray(x) caches: a later write is not seen
    if mod == "pyarrow":
        return np.array(x.to_numpy(zero_copy_only=False))
    if mod == "pandas":
        return np.array(x.to_numpy())
    if mod == "polars":
        return np.array(x.to_numpy())
    if dlpack.is_capsule(x):
        return np.array(dlpack.to_numpy(x))
    raise AssertionError(f"unexpected result type {type(x)}")


def same_values(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape:
        return False
    if want.dtype.kind == "V" or got.dtype.kind == "V":
        return np.array_equal(got.astype(np.float32), want.astype(np.float32))
    return np.array_equal(got, want)


def same_dtype(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype


def first_index(x: Any) -> tuple[int, ...]:
    return (0,) * len(x.shape)


def _writable_np(x: Any) -> np.ndarray | None:
    """A writable NumPy array over ``x``'s memory, or None (read-only/immutable sides)."""
    if isinstance(x, np.ndarray):
        return x if x.flags.writeable else None
    if type(x).__module__.startswith("torch"):
        import torch

        t = x.detach()
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        if t.is_conj() or t.is_neg():
            return None
        return t.numpy()
    return None


def bump(a: np.ndarray, idx: tuple[int, ...]) -> Any:
    """Write a new value at ``idx`` of ``a`` (a NumPy view) and return the value read back."""
    old = a[idx]
    if a.dtype.kind == "b":
        a[idx] = not old
    elif a.dtype.kind == "u":
        a[idx] = (int(old) + 1) % 100 + 1
    else:
        a[idx] = old + 5
    return a[idx]


# ---- the property -------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one case did; the report counts these."""

    supported: bool = False
    zero_copy: bool = False
    wrote_through: bool = False


def check_case(src_fw: str, tgt: str, lay: Layout) -> Outcome | None:
    """Run every assertion of the contract for one generated case."""
    if make_source(src_fw, lay) is None:
        return None
    out = Outcome()
    # 1. the plan, for this very value (alignment differs between two equal sources)
    src = make_source(src_fw, lay)
    try:
        plan = interop.explain(src.value, tgt)
    except InteropError:
        with pytest.raises(InteropError):
            interop.to_framework(make_source(src_fw, lay).value, tgt)
        return out
    # 2. the conversion: values, or an InteropError that the plan predicted
    try:
        res = interop.to_framework(src.value, tgt)
    except InteropError as e:
        assert not plan.supported, (f"{lay.describe()}: plan said supported\n{plan}\n"
                                    f"but {type(e).__name__}: {e}")
        with pytest.raises(InteropError):
            interop.to_framework(make_source(src_fw, lay).value, tgt, copy=False)
        return out
    assert plan.supported, f"{lay.describe()}: converted although the plan said\n{plan}"
    out.supported = True
    narrow = NARROWED.get((tgt, src.expected.dtype.name))  # JAX, 64-bit types off: one copy
    want = src.expected if narrow is None else src.expected.astype(narrow)
    if narrow is not None:
        assert not plan.zero_copy and any("jax_enable_x64" in r for r in plan.reasons), plan
    if dlpack.is_capsule(res):
        # read the capsule once: check what it shares first, then consume it into NumPy
        if plan.zero_copy and src.expected.size:
            assert interop.shares_memory(src.backing, res), (
                f"{lay.describe()}: zero-copy capsule shares no memory\n{plan}")
        ro = dlpack.inspect_capsule(res).view.readonly
        res = dlpack.to_numpy(res)
        assert res.flags.writeable == (not ro)
    got = to_host(res)
    assert same_values(got, want), (
        f"{lay.describe()}: wrong values {src_fw}->{tgt}\n{plan}\n{got!r}\n!=\n{want!r}")
    assert same_dtype(got, want), (
        f"{lay.describe()}: dtype {want.dtype} became {got.dtype}\n{plan}")
    # 3. a zero-copy claim holds: pointers and a write through one side
    if plan.zero_copy and src.expected.size:
        out.zero_copy = True
        assert res is src.value or interop.shares_memory(src.backing, res), (
            f"{lay.describe()}: plan claims zero-copy {src_fw}->{tgt} but no memory is "
            f"shared\n{plan}")
        if not src.writable and src_fw in ("numpy", "dlpack") and isinstance(res, np.ndarray):
            assert not res.flags.writeable, f"{lay.describe()}: read-only came back writable"
        out.wrote_through = write_through(src, res, tgt)
    # 4. copy=False raises exactly when the plan (of that value) says a copy is needed
    src = make_source(src_fw, lay)
    zero_copy = interop.explain(src.value, tgt).zero_copy
    assert interop.explain(src.value, tgt, copy=False).supported == zero_copy
    if zero_copy:
        interop.to_framework(src.value, tgt, copy=False)
    else:
        with pytest.raises(ZeroCopyError):
            interop.to_framework(src.value, tgt, copy=False)
    # 5. copy=True never shares memory, and keeps the values
    src = make_source(src_fw, lay)
    fresh = interop.to_framework(src.value, tgt, copy=True)
    if src.expected.size:
        assert not interop.shares_memory(src.backing, fresh), f"{lay.describe()}: copy=True"
    want = src.expected if narrow is None else src.expected.astype(narrow)
    assert same_values(to_host(fresh), want), f"{lay.describe()}: copy=True values"
    return out


def write_through(src: Source, res: Any, tgt: str) -> bool:
    """Write through the writable side; the other side must see it. False if none writable."""
    res_np = None
    idx = first_index(src.expected)
    w_src = _writable_np(src.backing)
    w_res = _writable_np(res_np if res_np is not None else res)
    if w_res is not None:
        new = bump(w_res, idx if w_res.ndim else ())
        seen = to_host(src.backing if src.framework != "dlpack" else src.keep[0])
        seen = seen.view(w_res.dtype) if seen.dtype.kind == "V" else seen
        assert seen[idx] == new, f"write through the {tgt} result not seen by the source"
        return True
    if w_src is not None:
        new = bump(w_src, idx if w_src.ndim else ())
        seen = to_host(res_np if res_np is not None else res)
        seen = seen.view(w_src.dtype) if seen.dtype.kind == "V" else seen
        if seen.dtype != w_src.dtype:
            seen = seen.astype(w_src.dtype)
        assert seen.reshape(src.expected.shape)[idx] == new, (
            f"write through the {src.framework} source not seen by the {tgt} result")
        return True
    return False


PAIRS = [(s, t) for s in SOURCES for t in TARGETS]
CASE_SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
                         suppress_health_check=list(HealthCheck), database=None)


@pytest.mark.parametrize(("src_fw", "tgt"), PAIRS, ids=[f"{s}->{t}" for s, t in PAIRS])
def test_pair_keeps_the_contract(src_fw: str, tgt: str) -> None:
    one_d = src_fw in ("pyarrow", "pandas", "polars")

    @CASE_SETTINGS
    @given(layouts(one_d=one_d))
    def prop(lay: Layout) -> None:
        check_case(src_fw, tgt, lay)

    prop()
