"""Property tests: every CPU pair x dtype x shape x layout x read-only x lazy bits keeps the
contract, checked by oracles outside interop.

For each generated source and target, and for each of ``copy=None``, ``False`` and ``True``:

- ``explain(...).supported`` and ``can_convert`` agree with the conversion itself: it gives
  the source's values (same shape, same dtype, compared through NumPy copies made with each
  framework's own calls), or raises an ``InteropError`` subclass; any other exception fails;
- a zero-copy plan (and every ``copy=False`` success) shares memory by the frameworks' own
  pointers (``ndarray.__array_interface__``/``byte_bounds``, ``Tensor.data_ptr()``, JAX's
  ``unsafe_buffer_pointer()``, Arrow buffer addresses, the capsule read by
  ``tests/oracles.py``), and a write through one side is read back on the other; a
  copy plan (and every ``copy=True`` result) shares none;
- ``copy=False`` fails exactly when ``explain(copy=None).zero_copy`` is false;
- a zero-copy result of a read-only or immutable source says so: a read-only NumPy array, a
  capsule flagged read-only, or a hazard in the plan (torch cannot be read-only).

Two profiles. The fast one (CI, every run) is derandomized: ``RELIABILITY_EXAMPLES`` examples
per pair (12). The slow one (``-m slow``, CI too) runs the same property in a child pytest with
a fresh seed (``RELIABILITY_SEED`` to replay one), ``RELIABILITY_SLOW_EXAMPLES`` per pair, and
prints the seed and the case counts; a crash in the child fails the test with the seed
instead of killing pytest. TensorFlow and PaddlePaddle pairs run the same way in their own
processes (``-m tensorflow``, ``-m paddle``).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import interop
import interop.api
import oracles
import truth_samples
from helpers import DLPackOnly, Noisy, NoisyLeaf, register_nodes
from interop.adapters.base import CompositeAdapter
from interop.errors import InteropError, NullsError, UnsupportedConversionError, ZeroCopyError
from interop.host import fresh_copy
from interop.protocols import dlpack
from matrix_samples import NARROWED

SOURCES = ("numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack")
TARGETS = SOURCES
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
MAX_EXAMPLES = int(os.environ.get("RELIABILITY_EXAMPLES", "12"))
"""Examples per (source, target) pair in this process: 49 pairs x 12 = 588 by default."""
SEED = os.environ.get("RELIABILITY_SEED")
"""Set (by the slow profile, or by hand to replay): random examples from this seed instead
of the derandomized ones."""
SLOW_EXAMPLES = int(os.environ.get("RELIABILITY_SLOW_EXAMPLES", "200"))
STATS = os.environ.get("RELIABILITY_STATS")
"""A file the child appends one JSON line per case to (the slow profile counts them)."""
COPY_MODES = (None, False, True)


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
    misalign: int = 0        # bytes off a 64-byte boundary: < component size breaks NumPy's
    # aligned flag; the component size (8 for complex128) is "aligned" yet off the itemsize
    readonly: bool = False
    lazy: str = ""           # torch sources: "conj", "neg" or "conj+neg" (lazy bits)

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
        if self.lazy:
            bits.append(f"lazy={self.lazy}")
        return " ".join(bits)


def fill_values(dtype: np.dtype, n: int) -> np.ndarray:
    """Small exact values (no NaN), distinct enough that a wrong element shows."""
    i = np.arange(n)
    if dtype.kind == "b":
        return (i % 3) == 0
    if dtype.kind == "u":
        return (i % 97 + 1).astype(dtype)
    if dtype.kind == "c":
        return ((i % 17) - 8 + 1j * ((i % 5) + 1)).astype(dtype)
    return ((i % 17) - 8).astype(np.float32).astype(dtype)


def build_numpy(lay: Layout) -> np.ndarray:
    """The NumPy view ``lay`` describes, over a buffer ``misalign`` bytes off 64."""
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
def layouts(draw, dtypes=DTYPES, max_ndim: int = 6, one_d: bool = False,
            lazy: bool = False) -> Layout:
    dtype = draw(st.sampled_from(dtypes))
    focus = lazy and draw(st.integers(0, 3)) == 0   # torch's crash class: complex, off its
    if focus:                                       # itemsize, with lazy bits
        dtype = draw(st.sampled_from(["complex64", "complex128"]))
    if one_d:
        ndim = 1
    else:
        ndim = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4, 5, 6][: max_ndim + 3]))
    shape = list(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    if ndim and draw(st.integers(0, 4)) == 0:      # one large dim
        k = draw(st.integers(0, ndim - 1))
        rest = int(np.prod([max(n, 1) for i, n in enumerate(shape) if i != k]))
        shape[k] = draw(st.integers(300, max(301, 6000 // rest)))
    elif ndim and draw(st.integers(0, 9)) == 0:    # empty (about 1 case in 10)
        shape[draw(st.integers(0, ndim - 1))] = 0
    kind = "misaligned" if focus else draw(st.sampled_from(
        ["C", "C", "F", "steps", "negative", "broadcast", "offset", "misaligned", "mixed"]))
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
    size = np_dtype(dtype).itemsize
    if size > 1 and (kind == "misaligned" or (kind == "mixed" and draw(st.booleans()))):
        # half the time the component size (complex: NumPy's "aligned", not the itemsize)
        misalign = draw(st.one_of(st.just(size // 2), st.integers(1, size - 1)))
    readonly = draw(st.booleans())
    bits = ""
    if lazy and np_dtype(dtype).kind in "cf" and (focus or draw(st.integers(0, 2)) == 0):
        bits = draw(st.sampled_from(["conj", "neg", "conj+neg"] if np_dtype(dtype).kind == "c"
                                    else ["neg"]))
    return Layout(dtype, tuple(shape), order, tuple(steps), tuple(neg), tuple(bc), offset,
                  misalign, readonly, bits)


# ---- sources per framework ------------------------------------------------------------------

@dataclass
class Source:
    """A source value, the memory it owns (for pointers and writes) and its expected values."""

    framework: str
    value: Any
    backing: Any            # an object over the source's memory, for pointers and writes
    expected: np.ndarray    # a private copy of the values the source holds
    writable: bool
    readonly: bool = False  # memory its owner treats as read-only or immutable
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


def _with_lazy_bits(t, arr: np.ndarray, lazy: str):
    """``t`` with torch's lazy conjugate/negative bits, and the values it then stands for."""
    import torch

    want = np.array(arr)
    if "conj" in lazy:
        t, want = t.conj(), np.conj(want)
    if "neg" in lazy:
        t = torch._neg_view(t)
        want = (-want.astype(np.float32)).astype(want.dtype) if want.dtype.kind == "V" else -want
    return t, want


def make_source(framework: str, lay: Layout) -> Source | None:
    """The source of ``framework`` for layout ``lay``, or None when it cannot hold it (a
    dtype or a dimension the framework lacks); any other construction error propagates."""
    arr = build_numpy(lay)
    if framework == "numpy":
        return Source("numpy", arr, arr, arr.copy(), arr.flags.writeable, lay.readonly)
    if framework == "torch":
        t = _torch_of(arr)
        if t is None:
            t = _torch_of(fresh_copy(np.array(arr, order="C")))  # aligned: deterministic
        t, want = _with_lazy_bits(t, arr, lay.lazy)
        return Source("torch", t, t, want, True, False, [arr])
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        with jax.default_device(jax.devices("cpu")[0]):  # a host pair, on a GPU host too
            j = jnp.asarray(np.array(arr, order="C"))
        return Source("jax", j, j, np.array(j), False, True)
    if framework == "dlpack":
        if arr.dtype.kind == "V":
            return None                      # NumPy exports no bfloat16 capsule
        cap = arr.__dlpack__(max_version=(1, 1))
        return Source("dlpack", cap, arr, arr.copy(), arr.flags.writeable, lay.readonly, [arr])
    if framework == "tensorflow":
        import tensorflow as tf

        t = tf.constant(np.array(arr, order="C"))
        return Source("tensorflow", t, t, arr.copy(), False, True)
    if framework == "paddle":
        import paddle

        if arr.dtype.kind == "V" or arr.dtype.name in ("uint16", "uint32", "uint64"):
            return None                      # paddle has no such dtype (uint16 is bf16 bits)
        p = paddle.to_tensor(np.array(arr, order="C"))
        return Source("paddle", p, p, arr.copy(), True)
    if arr.ndim != 1:
        return None
    if framework == "pyarrow":
        import pyarrow as pa

        if arr.dtype.kind in "cV":
            return None
        pad = lay.offset
        big = pa.array(fresh_copy(np.concatenate([np.zeros(pad, arr.dtype), arr])))
        a = big.slice(pad, len(arr)) if pad else big
        return Source("pyarrow", a, a, arr.copy(), False, True)
    if framework == "pandas":
        import pandas as pd

        if arr.dtype.kind == "V":
            return None
        s = pd.Series(arr, copy=False)
        return Source("pandas", s, s, arr.copy(), False, False, [arr])
    if framework == "polars":
        import polars as pl

        if arr.dtype.kind in "cV":
            return None                      # polars has no complex or bfloat16
        s = pl.Series(values=arr)
        return Source("polars", s, s, arr.copy(), False, True)
    raise AssertionError(framework)


# ---- the oracles: each framework's own pointers and reads -------------------------------------

def _torch_raw(x):
    """The tensor's stored memory as a NumPy view and the lazy bits to apply (no torch kernel:
    torch's complex kernels crash on buffers off the itemsize)."""
    import torch

    t = x.detach()
    conj, neg = t.is_conj(), t.is_neg()
    if conj:
        t = t.conj()                          # toggles the bit back: a view, no kernel
    if neg:
        t = torch._neg_view(t)
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16), conj, neg
    return t.numpy(), conj, neg


def to_host(x: Any) -> np.ndarray:
    """A private NumPy copy of any result, read with the framework's own calls."""
    mod = type(x).__module__.partition(".")[0]
    if isinstance(x, np.ndarray):
        return np.array(x)
    if mod == "torch":
        raw, conj, neg = _torch_raw(x)
        out = np.array(raw)
        if conj:
            out = np.conj(out)
        if neg:
            out = (-out.astype(np.float32)).astype(out.dtype) if out.dtype.kind == "V" else -out
        return out
    if mod in ("jax", "jaxlib"):
        # JAX's own DLPack export, read by the test's reader (np.asarray(x) caches its first
        # read, so a later write through another side would not be seen)
        return np.array(oracles.array(x.__dlpack__()))
    if mod == "pyarrow" and type(x).__name__ == "FixedShapeTensorArray":
        return np.array(x.to_numpy_ndarray())  # an N-D array's rows, as Arrow reads them
    if mod == "pyarrow":
        return np.array(x.to_numpy(zero_copy_only=False))
    if mod in ("pandas", "polars"):
        return np.array(x.to_numpy())
    if mod == "tensorflow":
        return np.array(x.numpy())
    if mod == "paddle":
        out = np.array(x.numpy())            # paddle gives bfloat16 as its uint16 bits
        return out.view(ml_dtypes.bfloat16) if "bfloat16" in str(x.dtype) else out
    if dlpack.is_capsule(x):
        return np.array(oracles.array(x))
    raise AssertionError(f"unexpected result type {type(x)}")


def span(x: Any) -> tuple[int, int] | None:
    """The byte range ``[lo, hi)`` of ``x``'s elements by its framework's own accessors
    (``None``: empty, or no single host buffer to point at, such as bit-packed booleans)."""
    mod = type(x).__module__.partition(".")[0]
    if isinstance(x, np.ndarray):
        return tuple(np.lib.array_utils.byte_bounds(x)) if x.size else None
    if mod == "torch":
        if not x.numel():
            return None
        size = x.element_size()
        lo = x.data_ptr() + sum((n - 1) * s for n, s in zip(x.shape, x.stride()) if s < 0) * size
        hi = x.data_ptr() + (sum((n - 1) * s for n, s in zip(x.shape, x.stride()) if s > 0)
                             + 1) * size
        return lo, hi
    if mod in ("jax", "jaxlib"):
        return (x.unsafe_buffer_pointer(), x.unsafe_buffer_pointer() + x.nbytes) if x.size \
            else None
    if mod == "pyarrow":
        import pyarrow as pa

        if not len(x) or pa.types.is_boolean(x.type):
            return None
        if isinstance(x, pa.FixedShapeTensorArray):  # its rows, in the storage's values
            rows, x = x.storage, x.storage.values
            width = x.type.bit_width // 8
            lo = x.buffers()[1].address + (x.offset + rows.offset * rows.type.list_size) * width
            return lo, lo + len(rows) * rows.type.list_size * width
        width = x.type.bit_width // 8
        lo = x.buffers()[1].address + x.offset * width
        return lo, lo + len(x) * width
    if mod == "pandas":
        return span(x.to_numpy()) if len(x) and isinstance(x.dtype, np.dtype) else None
    if mod == "polars":
        try:
            return span(x.to_numpy(allow_copy=False)) if len(x) else None
        except Exception:                     # booleans, chunks: no view of its buffer
            return None
    if mod == "tensorflow":
        import tensorflow as tf

        return _capsule_span(tf.experimental.dlpack.to_dlpack(x))
    if mod == "paddle":
        if not x.size:
            return None
        return x.data_ptr(), x.data_ptr() + x.size * x.element_size()
    if dlpack.is_capsule(x):
        return _capsule_span(x)
    raise AssertionError(f"unexpected type {type(x)}")


def _capsule_span(cap: Any) -> tuple[int, int] | None:
    f = oracles.facts(cap)
    if not int(np.prod(f.shape)):
        return None
    lo = f.data + sum((n - 1) * s for n, s in zip(f.shape, f.strides) if s < 0)
    hi = f.data + sum((n - 1) * s for n, s in zip(f.shape, f.strides) if s > 0) + f.dtype.itemsize
    return lo, hi


def overlaps(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def source_span(src: Source) -> tuple[int, int] | None:
    return span(src.keep[0] if src.framework == "dlpack" else src.backing)


def same_values(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape:
        return False
    if want.dtype.kind == "V" or got.dtype.kind == "V":
        return np.array_equal(got.astype(np.float32), want.astype(np.float32))
    return np.array_equal(got, want)


def first_index(x: Any) -> tuple[int, ...]:
    return (0,) * len(x.shape)


def _writable_np(x: Any) -> np.ndarray | None:
    """A writable NumPy array over ``x``'s memory, or None (read-only/immutable sides)."""
    if isinstance(x, np.ndarray):
        return x if x.flags.writeable else None
    mod = type(x).__module__.partition(".")[0]
    if mod == "torch":
        raw, conj, neg = _torch_raw(x)
        return None if conj or neg else raw
    if dlpack.is_capsule(x):
        arr = oracles.array(x)
        return arr if arr.flags.writeable else None
    return None


def bump(a: np.ndarray, idx: tuple[int, ...]) -> Any:
    """Write a new value at ``idx`` of ``a`` (a NumPy view) and return the value read back."""
    if a.dtype.kind == "V":
        a = a.view(np.uint16)
    old = a[idx]
    if a.dtype.kind == "b":
        a[idx] = not old
    elif a.dtype.kind == "u":
        a[idx] = (int(old) + 1) % 100 + 1
    else:
        a[idx] = old + 5
    return a[idx]


def first_address(x: Any) -> int | None:
    """The address of the first element of a non-empty value, by its framework's accessors."""
    mod = type(x).__module__.partition(".")[0]
    if isinstance(x, np.ndarray):
        return x.__array_interface__["data"][0]
    if mod == "torch":
        return x.data_ptr()
    if mod in ("jax", "jaxlib"):
        return x.unsafe_buffer_pointer()
    if mod == "pyarrow" and type(x).__name__ == "FixedShapeTensorArray":
        rows, leaf = x.storage, x.storage.values  # its rows, in the storage's values
        return leaf.buffers()[1].address + (leaf.offset + rows.offset * rows.type.list_size) \
            * (leaf.type.bit_width // 8)
    if mod == "pyarrow":
        return x.buffers()[1].address + x.offset * (x.type.bit_width // 8)
    if mod == "pandas" and isinstance(x.dtype, np.dtype):
        return x.to_numpy().__array_interface__["data"][0]
    if mod == "polars":
        try:
            return x.to_numpy(allow_copy=False).__array_interface__["data"][0]
        except Exception:                     # booleans, chunks: no view of its buffer
            return None
    if dlpack.is_capsule(x):
        return oracles.facts(x).data
    return None


def _raw_element(address: int, dtype: np.dtype) -> np.ndarray:
    """A writable one-element NumPy view at ``address`` (memory its owner may call
    immutable: the test writes there only to prove that two sides share it)."""
    carrier = np.dtype("<u2") if dtype.kind == "V" else dtype

    class _At:
        __array_interface__ = {"version": 3, "shape": (1,), "typestr": carrier.str,
                               "data": (address, False)}

    return np.asarray(_At())


def write_through(src: Source, res: Any, tgt: str) -> bool:
    """Write through the writable side; the other side must see it. Where neither side is
    writable, write through a raw view of the result's first element and read the source
    back with its framework's own calls. False when no address is known."""
    idx = first_index(src.expected)
    w_res = _writable_np(res)
    if w_res is not None:
        new = bump(w_res, idx if w_res.ndim else ())
        seen = to_host(src.backing if src.framework != "dlpack" else src.keep[0])
        seen = seen.view(np.uint16) if seen.dtype.kind == "V" else seen
        assert seen[idx] == new, f"write through the {tgt} result not seen by the source"
        return True
    w_src = _writable_np(src.backing if src.framework != "dlpack" else src.keep[0])
    if w_src is not None:
        new = bump(w_src, idx if w_src.ndim else ())
        seen = to_host(res)
        seen = seen.view(np.uint16) if seen.dtype.kind == "V" else seen
        if seen.dtype != new.dtype:
            seen = seen.astype(new.dtype)
        assert seen.reshape(src.expected.shape)[idx] == new, (
            f"write through the {src.framework} source not seen by the {tgt} result")
        return True
    address = first_address(res)
    if address is None or src.expected.dtype.kind == "b" and tgt in ("pyarrow", "polars"):
        return False                          # bit-packed booleans have no element address
    new = bump(_raw_element(address, src.expected.dtype), (0,))
    seen = to_host(src.backing if src.framework != "dlpack" else src.keep[0])
    seen = seen.view(np.uint16) if seen.dtype.kind == "V" else seen
    assert seen.reshape(src.expected.shape)[idx] == new, (
        f"a raw write at the {tgt} result's first element not seen by the {src.framework} source")
    return True


# ---- the property -------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one case did; the slow profile counts these."""

    empty: bool = False
    supported: bool = False
    zero_copy: bool = False
    wrote_through: bool = False


def _convert(src_fw: str, tgt: str, lay: Layout, copy: bool | None):
    """(plan, can_convert, the copy=None plan, result or None, InteropError or None, source),
    all of one fresh source (two equal sources may differ in alignment; explain and
    can_convert leave a capsule unused)."""
    src = make_source(src_fw, lay)
    plan = interop.explain(src.value, tgt, copy=copy)
    can = interop.can_convert(src.value, tgt, copy=copy)
    default = interop.explain(src.value, tgt) if copy is False else None
    try:
        return plan, can, default, interop.to_framework(src.value, tgt, copy=copy), None, src
    except InteropError as e:
        return plan, can, default, None, e, src


def check_case(src_fw: str, tgt: str, lay: Layout) -> Outcome | None:
    """Run every assertion of the contract for one generated case, for every ``copy=``."""
    if make_source(src_fw, lay) is None:
        return None
    where = f"{src_fw} -> {tgt}, {lay.describe()}"
    out = Outcome()
    for copy in COPY_MODES:
        plan, can, default, res, err, src = _convert(src_fw, tgt, lay, copy)
        here = f"{where}, copy={copy}:\n{plan}"
        assert plan.supported == can == (err is None), (
            f"{here}\ncan_convert={can}, but the conversion gave {err!r}")
        out.empty = not src.expected.size
        if default is not None and default.supported:
            assert plan.supported == default.zero_copy, f"{here}\ncopy=None said\n{default}"
            if err is not None:
                assert isinstance(err, ZeroCopyError), f"{here}\n{err!r}"
        if err is not None:
            continue
        if copy is None:
            out.supported = True
        src_span = source_span(src)
        res_span = None if res is src.value else span(res)
        capsule_ro = oracles.facts(res).read_only if dlpack.is_capsule(res) else None
        if type(res).__module__.startswith("torch") and res is not src.value:
            torch_kernels_safe(res, here)
        narrow = NARROWED.get((tgt, src.expected.dtype.name))  # JAX, 64-bit types off
        want = src.expected if narrow is None else src.expected.astype(narrow)
        if narrow is not None:
            assert not plan.zero_copy and any("jax_enable_x64" in r for r in plan.reasons), (
                f"{here}\na narrowed conversion must be planned as a copy, saying why")
        got = to_host(res)
        assert same_values(got, want), f"{here}\nwrong values\n{got!r}\n!=\n{want!r}"
        assert got.dtype == want.dtype, f"{here}\n{want.dtype} -> {got.dtype}"
        if not src.expected.size:
            continue
        shared = res is src.value or overlaps(src_span, res_span)
        if copy is True or not plan.zero_copy:
            assert not shared, f"{here}\nthe result shares the source's memory"
            continue
        assert shared, f"{here}\nplanned zero-copy, but the pointers do not overlap"
        if src.readonly and res is not src.value:
            if isinstance(res, np.ndarray):
                assert not res.flags.writeable, f"{here}\nread-only source, writable result"
            elif capsule_ro is not None:
                assert capsule_ro, f"{here}\nread-only source, capsule not flagged read-only"
            elif type(res).__module__.startswith(("torch", "paddle")):
                assert plan.hazards, f"{here}\nread-only source, writable tensor, no hazard"
        if copy is None:
            out.zero_copy = True
            out.wrote_through = res is not src.value and write_through(src, res, tgt)
    _record(src_fw, tgt, out)
    return out


def torch_kernels_safe(t: Any, here: str) -> None:
    """A torch result is one torch's kernels can run on: complex elements at multiples of the
    itemsize (by ``data_ptr()`` and ``stride()``). In the slow profile's child process a
    kernel also runs on it: a crash there fails the search with its seed."""
    if t.is_complex() and t.numel():
        size = t.element_size()
        assert t.data_ptr() % size == 0 and all(
            s * size % size == 0 for s in t.stride()), f"{here}\ncomplex tensor off its itemsize"
    if SEED is not None:
        t.detach().clone()


def _record(src_fw: str, tgt: str, out: Outcome) -> None:
    if STATS:
        with open(STATS, "a") as f:
            f.write(json.dumps({"pair": f"{src_fw}->{tgt}", "empty": out.empty,
                                "supported": out.supported, "zero_copy": out.zero_copy,
                                "wrote": out.wrote_through}) + "\n")


def _settings():
    if SEED is None:
        return settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
                        database=None, suppress_health_check=[HealthCheck.too_slow])
    return settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


def run_pair(src_fw: str, tgt: str) -> None:
    one_d = src_fw in ("pyarrow", "pandas", "polars")

    @_settings()
    @given(layouts(one_d=one_d, lazy=src_fw == "torch"))
    def prop(lay: Layout) -> None:
        check_case(src_fw, tgt, lay)

    if SEED is not None:
        prop = seed(int(SEED))(prop)
    prop()


PAIRS = [(s, t) for s in SOURCES for t in TARGETS]


@pytest.mark.parametrize(("src_fw", "tgt"), PAIRS, ids=[f"{s}->{t}" for s, t in PAIRS])
def test_pair_keeps_the_contract(src_fw: str, tgt: str) -> None:
    run_pair(src_fw, tgt)


def _side_pairs(other: str) -> list[tuple[str, str]]:
    near = ("numpy", "torch", "jax", "dlpack")
    return ([(s, other) for s in near] + [(other, t) for t in TARGETS] + [(other, other)])


TF_PAIRS = _side_pairs("tensorflow")
PADDLE_PAIRS = _side_pairs("paddle")


@pytest.mark.tensorflow
@pytest.mark.parametrize(("src_fw", "tgt"), TF_PAIRS, ids=[f"{s}->{t}" for s, t in TF_PAIRS])
def test_tensorflow_pair_keeps_the_contract(src_fw: str, tgt: str) -> None:
    run_pair(src_fw, tgt)


@pytest.mark.paddle
@pytest.mark.parametrize(("src_fw", "tgt"), PADDLE_PAIRS,
                         ids=[f"{s}->{t}" for s, t in PADDLE_PAIRS])
def test_paddle_pair_keeps_the_contract(src_fw: str, tgt: str) -> None:
    run_pair(src_fw, tgt)


# ---- values that hold nulls, generic producers, scalars, odd strides (issue 25) -------------
# For each: explain, can_convert and the conversion agree (NullsError exactly where the plan
# says "nulls"), a zero-copy plan shares memory and a copy plan shares none, and
# interop.shares_memory answers what every buffer's pointers say (tests/oracles.regions).

NULL_TARGETS = ("numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack")


@st.composite
def null_specs(draw, kind: str | None = None, name: str | None = None) -> list:
    """A spec of ``truth_samples``: an Arrow-backed value, nulls in about half of them."""
    kind = kind or draw(st.sampled_from(truth_samples.KINDS))
    name = name or draw(st.sampled_from(truth_samples.ARROW_TYPES))
    n = draw(st.sampled_from([0, 1, 3, 8, 33]))
    nulls = sorted(draw(st.sets(st.integers(0, n - 1), max_size=3))) if n and draw(
        st.booleans()) else []
    return [kind, name, n, nulls, draw(st.sampled_from([0, 0, 1, 5]))]


def _result_regions_check(x: Any, res: Any, plan: Any, here: str) -> None:
    """shares_memory against the pointers of every buffer, and the plan's zero-copy claim."""
    try:
        truth = oracles.shares_any(x, res)
    except TypeError:  # no pointer oracle for this value (a polars Decimal)
        return
    assert interop.shares_memory(x, res) == truth, (
        f"{here}\nshares_memory says {not truth}, the pointers say {truth}")
    if res is x or not oracles.regions(x):
        return
    reg = interop.api.REGISTRY
    kind = reg.composite(x) or reg.adapters[reg.owner(x)]  # (a kind within a framework's type too)
    if isinstance(kind, CompositeAdapter) and not plan.zero_copy:
        return  # a composite's copy may copy one part only (rebased offsets): the others share
    assert truth == plan.zero_copy, f"{here}\nzero-copy={plan.zero_copy}, shares={truth}"


def check_truth_case(x: Any, tgt: str, here: str, make: Any) -> None:
    """The contract for one value, every ``copy=``: plan, can_convert and outcome agree;
    zero-copy claims and shares_memory match the pointers. ``make`` gives a fresh value."""
    try:
        alone = oracles.shares_any(x, x)
    except TypeError:  # no pointer oracle for this value (a polars Decimal)
        alone = None
    assert alone is None or interop.shares_memory(x, x) == alone, f"{here}\nwith itself"
    out = Outcome(empty=not alone)
    for copy in COPY_MODES:
        v = make()
        at = f"{here}, copy={copy}"
        plan = interop.explain(v, tgt, copy=copy)
        can = interop.can_convert(v, tgt, copy=copy)
        try:
            res, err = interop.to_framework(v, tgt, copy=copy), None
        except InteropError as e:
            res, err = None, e
        assert plan.supported == can == (err is None), f"{at}:\n{plan}\ngave {err!r}"
        if err is not None:
            want = {"nulls": NullsError, "zero-copy": ZeroCopyError,
                    "unsupported": UnsupportedConversionError}.get(plan.error, InteropError)
            assert isinstance(err, want), f"{at}:\n{plan}\ngave {err!r}"
            continue
        _result_regions_check(v, res, plan, f"{at}:\n{plan}")
        if copy is None:
            out.supported, out.zero_copy = True, plan.zero_copy
    _record(type(x).__name__, tgt, out)


def _seeded(prop: Any) -> None:
    """Run a property: derandomized, or from ``RELIABILITY_SEED`` (the slow profile)."""
    (seed(int(SEED))(prop) if SEED is not None else prop)()


@pytest.mark.parametrize("tgt", NULL_TARGETS)
def test_values_with_nulls_keep_the_contract(tgt: str) -> None:
    @_settings()
    @given(spec=null_specs())
    def prop(spec: list) -> None:
        x = truth_samples.build(spec)
        if x is not None:
            check_truth_case(x, tgt, f"{spec} -> {tgt}", lambda: truth_samples.build(spec))

    _seeded(prop)


def _checked_outcome(x: Any, tgt: str) -> str:
    """The outcome of the checked plan alone (no kept plan, no fast form); a composite value
    (an Arrow list column) has no fast form: its plan is the checked one."""
    reg = interop.api.REGISTRY
    adapter = reg.composite(x) or reg.adapters[reg.owner(x)]  # a kind within a type too
    if isinstance(adapter, CompositeAdapter):
        from interop import composite

        run = composite.plan(reg, adapter, reg.target(tgt), None, None, None, None)
        return truth_samples.outcome(lambda: run(x))
    run = reg.runner.compile(reg.owner(x), reg.target(tgt), None).run
    return truth_samples.outcome(lambda: run(x))


SEQUENCES: list[tuple[list, list[str]]] = []
"""Every sequence this process converted, with its outcomes: the child replays them."""


@st.composite
def same_type_groups(draw) -> list[list]:
    """Two or three specs of one kind (one Python type, except pyarrow's Array classes)."""
    kind = draw(st.sampled_from(truth_samples.KINDS))
    names = draw(st.lists(st.sampled_from(truth_samples.ARROW_TYPES), min_size=2, max_size=3,
                          unique=True))
    return [draw(null_specs(kind, name)) for name in names]


@pytest.mark.parametrize("tgt", NULL_TARGETS)
def test_kept_plans_never_change_an_outcome(tgt: str) -> None:
    """Values of one Python type converted in sequence, in both orders, each twice (the first
    call of a pair plans, the second makes its fast form): every outcome is the checked
    plan's, whatever was converted before."""
    @_settings()
    @given(group=same_type_groups())
    def prop(group: list) -> None:
        _sequences(group, tgt)

    _seeded(prop)


def _sequences(group: list, tgt: str) -> None:
    reg = interop.api.REGISTRY
    group = [spec for spec in group if truth_samples.build(spec) is not None]
    for order in (group, group[::-1]):
        reg.clear_plans()
        cases = [[spec, tgt] for spec in order]
        got = truth_samples.run_in_order(cases)
        want = [_checked_outcome(truth_samples.build(spec), tgt) for spec in order]
        for spec, outs, w in zip(order, got, want):
            assert outs == [w, w], f"{order} -> {tgt}: {spec} gave {outs}, checked plan {w}"
            _record(f"sequence {spec[0]}", tgt, Outcome(empty=not spec[2],
                                                        supported=w.startswith("ok")))
        SEQUENCES.append((cases, want))


def test_first_calls_in_a_fresh_process_match() -> None:
    """The sequences converted here, replayed in reverse in a fresh process (its first
    calls: no plan, no memoised verdict yet), give the same outcomes."""
    if not SEQUENCES:  # run alone, or before the sequences
        test_kept_plans_never_change_an_outcome("numpy")
    cases = [c for seq, _ in SEQUENCES for c in seq][::-1]
    want = [[w, w] for _, ws in SEQUENCES for w in ws][::-1]
    helpers = Path(__file__).resolve().parents[1]  # tests/: truth_samples.py and its helpers
    r = subprocess.run([sys.executable, str(helpers / "truth_samples.py")],
                       input=json.dumps(cases), capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                           [str(Path(interop.__file__).parents[1]), str(helpers)])))
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    for case, g, w in zip(cases, got, want):
        assert g == w, f"{case}: a fresh process gave {g}, this one {w}"


class ArrayInterfaceOnly:
    """A NumPy-like object with only ``__array_interface__`` (it keeps its array alive)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.__array_interface__ = a.__array_interface__



@st.composite
def generic_values(draw) -> tuple[str, Any]:
    """A value that is no framework's array, a NumPy scalar, or a NumPy array whose byte
    strides are off its itemsize (on a dimension of extent 1, or of more)."""
    import array

    kind = draw(st.sampled_from(["scalar", "odd-strides", "bytearray", "memoryview",
                                 "bytes-view", "array.array", "array-interface",
                                 "dlpack-producer"]))
    dtype = np_dtype(draw(st.sampled_from([d for d in DTYPES if d != "bfloat16"])))
    n = draw(st.integers(0, 6))
    if kind == "scalar":
        return kind, dtype.type(fill_values(dtype, 1)[0])
    if kind == "odd-strides":
        shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
        base = np.zeros(dtype.itemsize * 64 + 8, np.uint8)
        odd = [draw(st.integers(1, 2 * dtype.itemsize + 1)) for _ in shape]
        need = sum((k - 1) * s for k, s in zip(shape, odd)) + dtype.itemsize
        a = np.ndarray(shape, dtype, buffer=base, offset=draw(st.integers(0, 7)),
                       strides=tuple(odd)) if need <= base.size - 8 else np.zeros(shape, dtype)
        a[...] = fill_values(dtype, a.size).reshape(shape)
        return kind, a
    if kind == "bytearray":
        return kind, bytearray(bytes(range(n)))
    if kind == "memoryview":
        return kind, memoryview(bytearray(bytes(range(n * 8)))).cast("d")
    if kind == "bytes-view":
        return kind, memoryview(bytes(range(n)))
    if kind == "array.array":
        code = draw(st.sampled_from("bhilqfd"))
        return kind, array.array(code, range(n))
    a = fill_values(dtype, n * 2)[::draw(st.sampled_from([1, 2]))]
    if kind == "dlpack-producer":
        return kind, DLPackOnly(np.asarray(a))
    return kind, ArrayInterfaceOnly(np.asarray(a))


@pytest.mark.parametrize("tgt", NULL_TARGETS)
def test_generic_values_keep_the_contract(tgt: str) -> None:
    @_settings()
    @given(value=generic_values())
    def prop(value: tuple[str, Any]) -> None:
        _generic_case(*value, tgt)

    _seeded(prop)


def _generic_case(kind: str, x: Any, tgt: str) -> None:
    here = f"{kind} {getattr(x, 'dtype', type(x).__name__)} -> {tgt}"
    check_truth_case(x, tgt, here, lambda: x)
    try:
        res = interop.to_framework(x, tgt)
    except InteropError:
        return
    want = np.asarray(x.a if isinstance(x, (ArrayInterfaceOnly, DLPackOnly)) else x)
    narrow = NARROWED.get((tgt, want.dtype.name))  # JAX, 64-bit types off
    want = want if narrow is None else want.astype(narrow)
    got = to_host(res)
    assert np.array_equal(got.reshape(want.shape).astype(want.dtype) if got.size == want.size
                          else got, want), f"{here}: wrong values {got!r} != {want!r}"


WRONG_COPIES = (np.array([1, 2, 3]), np.array(True), "yes", 1, 0, 1.0, np.bool_(True), [True])
WRONG_DEVICES = ([1], 3.5, np.array([1]), object(), b"cpu")


def test_wrong_copy_and_device_types_are_refused() -> None:
    """``copy=`` and ``device=`` of the wrong type: a clear InteropError (a TypeError or
    ValueError) from to_framework and explain, can_convert False, whatever plan was kept
    before (``copy=1`` must not find the plan kept for ``copy=True``)."""
    @_settings()
    @given(lay=layouts(max_ndim=2), tgt=st.sampled_from(NULL_TARGETS),
           copy=st.sampled_from(WRONG_COPIES), device=st.sampled_from(WRONG_DEVICES),
           kept=st.sampled_from([None, True, False]))
    def prop(lay: Layout, tgt: str, copy: Any, device: Any, kept: Any) -> None:
        _wrong_case(build_numpy(lay), tgt, copy, device, kept)

    _seeded(prop)


def _wrong_case(x: np.ndarray, tgt: str, copy: Any, device: Any, kept: Any) -> None:
    try:
        interop.to_framework(x, tgt, copy=kept)
    except InteropError:
        pass
    for kw in ({"copy": copy}, {"device": device}, {"copy": copy, "device": "cpu"}):
        with pytest.raises(InteropError) as info:
            interop.to_framework(x, tgt, **kw)
        assert isinstance(info.value, (TypeError, ValueError)), repr(info.value)
        if "copy" in kw:
            assert "None, True or False" in str(info.value)
        with pytest.raises(InteropError):
            interop.explain(x, tgt, **kw)
        assert not interop.can_convert(x, tgt, **kw)
    _record("wrong copy=/device=", tgt, Outcome(empty=not x.size))


# ---- the slow profile: a fresh seed, in a child process ---------------------------------------

def search(test: str, marker: str, examples: int = SLOW_EXAMPLES,
           non_empty: float = 0.8, path: str = __file__) -> dict:
    """Run ``test`` (every pair) of the test file ``path`` in a child pytest with a fresh
    seed; fail with the seed."""
    chosen = int(os.environ.get("RELIABILITY_SEED") or random.SystemRandom().randrange(2**32))
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.jsonl"
        env = dict(os.environ, RELIABILITY_SEED=str(chosen), RELIABILITY_EXAMPLES=str(examples),
                   RELIABILITY_STATS=str(stats))
        r = subprocess.run(
            [sys.executable, "-m", "pytest", path, "-q", "-x", "-p", "no:cacheprovider",
             "-W", "ignore::UserWarning", "-m", marker, "-k", test],
            capture_output=True, text=True, env=env, timeout=1800,
            cwd=Path(__file__).resolve().parents[2])
        rows = [json.loads(line) for line in stats.read_text().splitlines()] \
            if stats.exists() else []
    counts = {"seed": chosen, "examples_per_pair": examples, "cases": len(rows),
              "non_empty": sum(not r["empty"] for r in rows),
              "supported": sum(r["supported"] for r in rows),
              "zero_copy": sum(r["zero_copy"] for r in rows),
              "wrote_through": sum(r["wrote"] for r in rows)}
    print(f"random search {test}: {counts}")
    assert r.returncode == 0, (
        f"the random search failed (seed {chosen}; replay with RELIABILITY_SEED={chosen} "
        f"RELIABILITY_EXAMPLES={examples} pytest {path} -m '{marker}' -k {test}); "
        f"exit {r.returncode}:\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}")
    assert counts["cases"] and counts["non_empty"] >= non_empty * counts["cases"], counts
    return counts


@pytest.mark.slow
def test_random_search_with_a_fresh_seed() -> None:
    counts = search("test_pair_keeps_the_contract", "not tensorflow and not paddle")
    assert counts["zero_copy"] and counts["wrote_through"], counts


@pytest.mark.slow
def test_random_search_of_nulls_producers_and_kept_plans_with_a_fresh_seed() -> None:
    """Issue 25's classes (values with nulls of every Arrow-backed kind, generic producers,
    scalars, odd strides, sequences of one Python type against a fresh process, copy= and
    device= of wrong types) at the slow profile's size, with a fresh seed."""
    search("test_values_with_nulls or test_kept_plans or test_first_calls or "
           "test_generic_values or test_wrong_copy", "not tensorflow and not paddle",
           non_empty=0.6)  # empty values (a fifth of the Arrow ones) are cases here too


@pytest.mark.slow
def test_random_structures_search_with_a_fresh_seed() -> None:
    """Random structures (issue 36's training states among them: typed JAX keys, NumPy
    scalars, bytes, scalar-only and empty containers, dict subclasses with attributes,
    structures containing themselves) at the slow profile's size, with a fresh seed."""
    counts = search("test_random_structures_keep_the_contract", "not tensorflow and not paddle",
                    non_empty=0.2)  # scalar-only, empty and self-containing ones are cases
    # (a floor, not the mean: over 24 seeds at 200 examples the share with an array ran 0.36
    # to 0.61, mean 0.49; Hypothesis' streaks moved the old generator's share to 0.23)
    assert counts["supported"] < counts["cases"], counts  # refusals (keys, cycles) were met


@pytest.mark.slow
@pytest.mark.tensorflow
def test_tensorflow_random_search_with_a_fresh_seed() -> None:
    search("test_tensorflow_pair_keeps_the_contract", "tensorflow",
           examples=max(SLOW_EXAMPLES // 2, 20))


@pytest.mark.slow
@pytest.mark.paddle
def test_paddle_random_search_with_a_fresh_seed() -> None:
    search("test_paddle_pair_keeps_the_contract", "paddle", examples=max(SLOW_EXAMPLES // 2, 20),
           non_empty=0.7)  # (a floor, not the mean: seeds 1-6 gave 0.89-0.96, 1181842354 0.77)


# ---- structures: random trees of leaves of several frameworks ---------------------------------
# The same contract, leaf by leaf, for nested dicts, lists, tuples, named tuples and OrderedDicts
# (depth, leaf types, mixed frameworks, empty containers, None and other kept leaves, one leaf
# appearing twice), and what training states hold (issue 36): typed JAX PRNG keys, NumPy
# scalars, bytes, containers of scalars only, dict subclasses carrying attributes (a torch
# state_dict's ``_metadata``) and structures that contain themselves; issue 51's defaultdicts,
# JAX nodes whose ``repr`` warns and kept leaves whose ``repr`` warns (no call may format
# them: any warning but a NarrowingWarning fails). The structure is read by the test's own
# walk below, not interop's.

Pair = __import__("collections").namedtuple("Pair", "first second")
STRUCTURE_SOURCES = ("numpy", "torch", "jax")
STRUCTURE_TARGETS = ("numpy", "torch", "jax", "pyarrow")
KEPT = (None, 3, "s", 2.5, b"\x00\x01", NoisyLeaf)
"""Leaves kept as they are (``NoisyLeaf``: a fresh one, whose ``repr`` warns)."""
SCALARS = "bBhHiIlLqQefdFD"
"""The NumPy scalar types drawn as leaves (no bool: ``np.True_`` is a singleton the write
proof must not touch)."""


class Attributed(dict):
    """A dict subclass whose instances carry attributes (a config object, ``Columns``)."""


@st.composite
def tree_specs(draw, depth: int = 0) -> Any:
    """A tree of ``("leaf", framework, layout, slot)`` (one slot drawn twice: one object at two
    paths), ``("kept", value)``, ``("key", seed)`` (a typed JAX PRNG key), ``("scalar",
    char, slot)`` (a NumPy scalar) and ``(kind, children)`` nodes; a ``("cycle", children)``
    node holds itself besides its children."""
    if depth >= 3 or (depth and draw(st.integers(0, 2)) == 0):
        pick = draw(st.integers(0, 9))  # array leaves first: Hypothesis favours small draws
        if pick <= 4:
            return ("leaf", draw(st.sampled_from(STRUCTURE_SOURCES)),
                    draw(layouts(max_ndim=2)), draw(st.integers(0, 5)))
        if pick == 5:
            return ("key", draw(st.integers(0, 3)))
        if pick == 6:
            return ("scalar", draw(st.sampled_from(SCALARS)), draw(st.integers(6, 8)))
        return ("kept", draw(st.sampled_from(KEPT)))
    kind = draw(st.sampled_from(["dict", "list", "tuple", "pair", "ordered", "scalars",
                                 "metadata", "attributed", "cycle", "defaultdict", "noisy"]))
    if kind == "scalars":  # a container of kept leaves only (an optimizer's empty state)
        return ("dict", [("kept", v) for v in draw(st.lists(st.sampled_from(KEPT),
                                                            min_size=1, max_size=3))])
    # an empty container: one in ten at the top (an empty state), one in five below it
    empty = draw(st.integers(0, 9)) >= (9 if depth == 0 else 8)
    n = 2 if kind == "pair" else 0 if empty else draw(st.integers(1, 4))
    return (kind, [draw(tree_specs(depth + 1)) for _ in range(n)])


def build_tree(spec: Any, slots: dict) -> Any:
    """The value of ``spec``: fresh sources (one per slot), containers of them."""
    import collections

    tag = spec[0]
    if tag == "kept":
        return NoisyLeaf() if spec[1] is NoisyLeaf else spec[1]
    if tag == "key":
        import jax

        return jax.random.key(spec[1])
    if tag == "scalar":
        _, char, slot = spec
        if slot not in slots:  # the scalar's own memory, read by NumPy's buffer protocol
            s = np.dtype(char).type(7)
            slots[slot] = Source("scalar", s, np.asarray(memoryview(s)), np.array(s), False,
                                 readonly=True)
        return slots[slot].value
    if tag == "leaf":
        _, fw, lay, slot = spec
        if slot not in slots:
            slots[slot] = make_source(fw, lay)
        src = slots[slot]
        return None if src is None else src.value
    children = [build_tree(c, slots) for c in spec[1]]
    if tag == "list":
        return children
    if tag == "tuple":
        return tuple(children)
    if tag == "pair":
        return Pair(*children)
    if tag == "noisy":
        register_nodes()
        return Noisy(*children)
    items = [(f"k{i}", c) for i, c in enumerate(children)]
    if tag == "dict":
        return dict(items)
    if tag == "defaultdict":
        return collections.defaultdict(list, items)
    if tag == "cycle":
        out = dict(items)
        out["self"] = out
        return out
    if tag == "attributed":
        out = Attributed(items)
        out.tag = {"run": len(items)}
        return out
    out = collections.OrderedDict(items)
    if tag == "metadata":  # a torch state_dict: per-module versions for load_state_dict
        out._metadata = {"": {"version": 1}}
    return out


def has_cycle(spec: Any) -> bool:
    return spec[0] == "cycle" or (spec[0] not in ("kept", "key", "scalar", "leaf")
                                  and any(has_cycle(c) for c in spec[1]))


def is_key(x: Any) -> bool:
    """A typed JAX PRNG key array (its dtype is no NumPy dtype), by JAX's own test."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.Array) and jax.dtypes.issubdtype(
        x.dtype, jax.dtypes.prng_key)


def tree_leaves(x: Any, path: str = "") -> list[tuple[str, Any]]:
    """``(path, leaf)`` of every leaf, in order, with interop's path spelling."""
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in tree_leaves(v, f"{path}[{k!r}]")]
    if isinstance(x, Pair):
        return [p for f in Pair._fields for p in tree_leaves(getattr(x, f), f"{path}.{f}")]
    if isinstance(x, (list, tuple)) or type(x) is Noisy:
        xs = x.children if type(x) is Noisy else x
        return [p for i, v in enumerate(xs) for p in tree_leaves(v, f"{path}[{i}]")]
    return [(path, x)]


def same_shape(a: Any, b: Any) -> bool:
    """Same node types and keys all the way down (leaves are compared on their own)."""
    if type(a) is Noisy:
        return type(b) is Noisy and same_shape(a.children, b.children)
    if not isinstance(a, (dict, list, tuple)):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):  # a dict subclass's attributes too, the same objects
        attrs = getattr(a, "__dict__", {})
        if attrs.keys() != getattr(b, "__dict__", {}).keys() or any(
                getattr(b, k) is not v for k, v in attrs.items()):
            return False
        return list(a) == list(b) and all(same_shape(a[k], b[k]) for k in a)
    return len(a) == len(b) and all(same_shape(x, y) for x, y in zip(a, b))


def check_tree(spec: Any, tgt: str) -> None:
    """The contract for one random structure, every ``copy=``, the cached plan included; no
    call warns but to say it narrows (planning formats no ``repr``)."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        _check_tree(spec, tgt)
    others = [str(w.message) for w in got if not issubclass(w.category,
                                                            interop.NarrowingWarning)]
    assert not others, f"{spec!r} -> {tgt}: {others}"


def _check_tree(spec: Any, tgt: str) -> None:
    opts = {"structure": "tree"} if tgt == "pyarrow" else {}
    if has_cycle(spec):
        check_cycle(spec, tgt, opts)
        return
    for copy in COPY_MODES:  # fresh sources each time: a write through one changes it
        sources: dict = {}
        value = build_tree(spec, sources)
        # the copy=None plan of this very value (a scalar's address, so its alignment, is
        # the object's own: another build of the same spec may differ)
        default = interop.explain(value, tgt, **opts)
        paths = tree_leaves(value)
        keys = {p for p, v in paths if is_key(v)}
        arrays = {p: v for p, v in paths
                  if v is not None and type(v) not in (int, float, str, bytes, NoisyLeaf)
                  and p not in keys}  # (a NumPy float64 scalar is a float: an array leaf)
        by_id = {id(s.value): s for s in sources.values() if s is not None}
        plan = interop.explain(value, tgt, copy=copy, **opts)
        can = interop.can_convert(value, tgt, copy=copy, **opts)
        here = f"{spec!r} -> {tgt}, copy={copy}:\n{plan}"
        results = []
        for _ in range(2):  # the first call plans the structure, the second runs its kept plan
            try:
                results.append((interop.to_framework(value, tgt, copy=copy, **opts), None))
            except InteropError as e:
                results.append((None, e))
        (res, err), (res2, err2) = results
        assert type(err) is type(err2), f"{here}\nfirst {err!r}, cached {err2!r}"
        assert plan.supported == can == (err is None), f"{here}\ncan={can}, error {err!r}"
        _record("structure", tgt, Outcome(empty=not arrays, supported=err is None))
        if keys and (tgt != "jax" or copy is True):  # a key holds no numbers: refused,
            # naming key_data (kept as it is into JAX, where no copy is asked for)
            refused = [plan.leaves[p] for p in sorted(keys)]
            assert all(not p.supported and "jax.random.key_data" in " ".join(p.reasons)
                       for p in refused), f"{here}\n{refused}"
            assert isinstance(err, UnsupportedConversionError) or not default.supported, here
            continue
        if not arrays:  # nothing to convert: the structure comes back as it is
            assert err is None, f"{here}\n{err!r}"
            for out in (res, res2):  # (a registered node is rebuilt: its type, not itself)
                assert same_shape(value, out) and all(
                    a is b for (_, a), (_, b) in zip(paths, tree_leaves(out))), here
            assert plan.zero_copy, here
            continue
        if err is not None:
            assert "leaf [" in str(err) or "leaf ." in str(err), f"{here}\n{err}"
            if copy is False and default.supported:
                assert isinstance(err, ZeroCopyError) and not default.zero_copy, here
            continue
        if copy is False:
            assert default.zero_copy, f"{here}\ncopy=False converted, copy=None said\n{default}"
        assert plan.zero_copy == all(p.zero_copy for p in plan.leaves.values()), here
        for out in (res, res2):
            assert same_shape(value, out), f"{here}\n{value!r}\n{out!r}"
            got = dict(tree_leaves(out))
            for path, leaf in paths:
                if path not in arrays:  # kept, or a key into JAX: the same object
                    assert got[path] is leaf, f"{here}\nkept leaf {path} changed"
                    continue
                src = by_id[id(leaf)]
                narrow = NARROWED.get((tgt, src.expected.dtype.name))
                want = src.expected if narrow is None else src.expected.astype(narrow)
                assert same_values(to_host(got[path]), want), f"{here}\nleaf {path} values"
                if not src.expected.size:
                    continue
                shared = overlaps(source_span(src), span(got[path]))
                zero = copy is not True and plan.leaves[path].zero_copy
                assert shared == zero, f"{here}\nleaf {path}: shares {shared}, plan {zero}"
        if copy is None:
            for path in arrays:
                src = by_id[id(arrays[path])]
                if src.framework == "scalar":  # a scalar is immutable: pointers prove it
                    continue
                if src.expected.size and plan.leaves[path].zero_copy:
                    write_through(src, dict(tree_leaves(res))[path], tgt)
                    break


def check_cycle(spec: Any, tgt: str, opts: dict) -> None:
    """A structure that contains itself: a clear error naming where, from all three calls."""
    for copy in COPY_MODES:
        value = build_tree(spec, {})
        with pytest.raises(UnsupportedConversionError, match="contains itself"):
            interop.to_framework(value, tgt, copy=copy, **opts)
        with pytest.raises(UnsupportedConversionError, match="contains itself"):
            interop.explain(value, tgt, copy=copy, **opts)
        assert not interop.can_convert(value, tgt, copy=copy, **opts)
        _record("structure", tgt, Outcome(empty=True))


@pytest.mark.parametrize("tgt", STRUCTURE_TARGETS)
def test_random_structures_keep_the_contract(tgt: str) -> None:
    @_settings()
    @given(tree_specs())
    def prop(spec: Any) -> None:
        check_tree(spec, tgt)

    if SEED is not None:
        prop = seed(int(SEED))(prop)
    prop()
