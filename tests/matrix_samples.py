"""Sample builders for the conversion matrix: each framework x dtype x layout it can express.

A sample is built fresh per test (conversions may consume or alias it) and comes with the
values it holds as a NumPy array computed independently of interop.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from helpers import aligned
from oracles import consume_capsule, pointer

DTYPES = {
    "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32), "int64": np.dtype(np.int64), "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64), "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16), "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64), "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}
WIDE = {"int64", "uint64", "float64", "complex128"}
TARGETS = ["numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack"]
ONE_D = {"pyarrow", "pandas", "polars"}

# What each target can hold at all (outside these, the conversion is unsupported).
TARGET_DTYPES = {
    "numpy": set(DTYPES), "torch": set(DTYPES), "dlpack": set(DTYPES),
    "jax": set(DTYPES),
    "pyarrow": set(DTYPES) - {"bfloat16", "complex64", "complex128"},
    "pandas": set(DTYPES) - {"bfloat16"},
    "polars": set(DTYPES) - {"bfloat16", "complex64", "complex128"},
}


def values(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Deterministic values of ``dtype``, small enough for every type (exact in bfloat16)."""
    n = int(np.prod(shape)) if shape else 1
    base = (np.arange(n) % 7 + 1).reshape(shape)
    if dtype.kind == "b":
        return aligned(base % 2 == 0)
    if dtype.kind == "c":
        return aligned(base + 1j * (base % 3), dtype)
    return aligned(base.astype(np.float32).astype(dtype))


# ---- NumPy layouts ------------------------------------------------------------------------

def np_layout(dtype: np.dtype, layout: str, one_d: bool) -> np.ndarray:
    """A NumPy array of ``dtype`` in ``layout``; 1-D where the target is one-dimensional."""
    if layout == "C":
        return values(dtype, (8,) if one_d else (3, 4))
    if layout == "F":
        return np.asfortranarray(values(dtype, (3, 4)))
    if layout == "strided":
        return values(dtype, (16,))[::3] if one_d else values(dtype, (6, 8))[::2, ::3]
    if layout == "negative":
        return values(dtype, (8,))[::-1] if one_d else values(dtype, (3, 4))[::-1, ::-1]
    if layout == "broadcast":
        return np.broadcast_to(values(dtype, (1,)), (5,)) if one_d else \
            np.broadcast_to(values(dtype, (4,)), (3, 4))
    if layout == "0-d":
        return values(dtype, ())
    if layout == "empty":
        return values(dtype, (0,) if one_d else (0, 3))
    if layout == "read-only":
        a = values(dtype, (8,) if one_d else (3, 4))
        a.flags.writeable = False
        return a
    raise AssertionError(layout)


NP_LAYOUTS = ["C", "F", "strided", "negative", "broadcast", "0-d", "empty", "read-only"]
TORCH_LAYOUTS = ["C", "F", "strided", "broadcast", "0-d", "empty"]
JAX_LAYOUTS = ["C", "0-d", "empty"]
ARROW_LAYOUTS = ["C", "offset", "one-chunk", "empty"]
PANDAS_LAYOUTS = ["C", "strided", "empty"]
POLARS_LAYOUTS = ["C", "offset", "empty"]
CAPSULE_LAYOUTS = ["C", "F", "strided", "negative", "0-d", "empty", "read-only", "legacy"]

# What a target narrows a dtype to, with a copy and a NarrowingWarning (JAX with 64-bit types
# off, its default; the tests run with it off).
NARROWED = {("jax", "int64"): np.dtype(np.int32), ("jax", "uint64"): np.dtype(np.uint32),
            ("jax", "float64"): np.dtype(np.float32),
            ("jax", "complex128"): np.dtype(np.complex64)}

SOURCE_DTYPES = {
    "numpy": list(DTYPES),
    "torch": list(DTYPES),
    "jax": [d for d in DTYPES if d not in WIDE],
    "pyarrow": [d for d in DTYPES if d not in ("bfloat16", "complex64", "complex128")],
    "pandas": [d for d in DTYPES if d != "bfloat16"],
    "polars": [d for d in DTYPES if d not in ("bfloat16", "complex64", "complex128")],
    "dlpack": [d for d in DTYPES if d != "bfloat16"],
}
SOURCE_LAYOUTS = {
    "numpy": NP_LAYOUTS, "torch": TORCH_LAYOUTS, "jax": JAX_LAYOUTS,
    "pyarrow": ARROW_LAYOUTS, "pandas": PANDAS_LAYOUTS, "polars": POLARS_LAYOUTS,
    "dlpack": CAPSULE_LAYOUTS,
}


@dataclass
class Sample:
    value: Any
    expected: np.ndarray
    """The values as NumPy (same dtype), computed without interop."""
    ptr: int
    """The address of the first element (0 when empty), read before any conversion."""
    mutable: bool
    """Whether the framework lets us write through ``value`` (NumPy writable, torch)."""
    backing: Any = None
    """For a capsule: the NumPy array it was exported from (its memory, read and written
    with NumPy's own API once the capsule is consumed)."""


def _np_ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0] if a.size else 0


def torch_from_np(a: np.ndarray) -> Any:
    import torch

    if a.dtype == DTYPES["bfloat16"]:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def build(source: str, dtype_name: str, layout: str, one_d: bool) -> Sample:
    """A fresh sample of ``source`` for the matrix."""
    dt = DTYPES[dtype_name]
    if source == "numpy":
        a = np_layout(dt, layout, one_d)
        return Sample(a, np.array(a), _np_ptr(a), a.flags.writeable)
    if source == "torch":
        import torch

        if layout == "F":
            base = values(dt, (4, 3))
            t = torch_from_np(base).T
            return Sample(t, np.array(base.T), _np_ptr(base), True)
        if layout == "strided":
            base = values(dt, (16,) if one_d else (6, 8))
            t = torch_from_np(base)
            t = t[::3] if one_d else t[::2, ::3]
            exp = base[::3] if one_d else base[::2, ::3]
            return Sample(t, np.array(exp), _np_ptr(base), True)
        if layout == "broadcast":
            base = values(dt, (1,) if one_d else (4,))
            t = torch_from_np(base).expand(5) if one_d else torch_from_np(base).expand(3, 4)
            exp = np.broadcast_to(base, tuple(t.shape))
            return Sample(t, np.array(exp), _np_ptr(base), True)
        a = np_layout(dt, layout, one_d)
        t = torch_from_np(a)
        assert isinstance(t, torch.Tensor)
        return Sample(t, np.array(a), _np_ptr(a), True)
    if source == "jax":
        import jax

        a = np_layout(dt, layout, one_d)
        x = jax.device_put(a, jax.devices("cpu")[0])  # the CPU matrix, on a GPU host too
        assert x.dtype == a.dtype
        return Sample(x, np.array(a), x.unsafe_buffer_pointer() if a.size else 0, False)
    if source == "pyarrow":
        import pyarrow as pa

        a = values(dt, (0,) if layout == "empty" else (9,))
        arr = pa.array(a)
        if layout == "offset":
            arr = arr.slice(2)
            a = a[2:]
        if layout == "one-chunk":
            arr = pa.chunked_array([arr])
        return Sample(arr, np.array(a), pointer(arr) if len(a) else 0, False)
    if source == "pandas":
        import pandas as pd

        if layout == "strided":
            a = values(dt, (16,))[::3]
        else:
            a = values(dt, (0,) if layout == "empty" else (8,))
        s = pd.Series(a, copy=False)
        return Sample(s, np.array(a), _np_ptr(a), False)
    if source == "polars":
        import polars as pl

        a = values(dt, (0,) if layout == "empty" else (9,))
        s = pl.Series("s", a)
        if layout == "offset":
            s = s[2:]
            a = a[2:]
        ptr = raw_pointer(s) if len(a) else 0
        return Sample(s, np.array(a), ptr, False)
    if source == "dlpack":
        lay = "C" if layout == "legacy" else layout
        a = np_layout(dt, lay, one_d)
        cap = a.__dlpack__() if layout == "legacy" else a.__dlpack__(max_version=(1, 1))
        return Sample(cap, np.array(a), _np_ptr(a), False, a)
    raise AssertionError(source)


def raw_pointer(x: Any) -> int:
    """The data pointer of ``x`` by its own framework (``oracles.pointer``); for bit-packed
    Arrow/polars booleans, of the byte holding the first bit."""
    return pointer(x)


# ---- reading and writing any framework's value -------------------------------------------

def as_numpy(x: Any) -> np.ndarray:
    """The values of ``x`` as NumPy, read with each framework's own API (not interop)."""
    mod = type(x).__module__.partition(".")[0]
    if isinstance(x, np.ndarray):
        return x
    if mod == "torch":
        import torch

        if x.dtype == torch.bfloat16:
            return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return x.numpy()
    if mod in ("jax", "jaxlib"):
        return np.asarray(x)
    if mod == "pyarrow" and type(x).__name__ == "FixedShapeTensorArray":
        return x.to_numpy_ndarray()  # an N-D array's rows, as Arrow reads them
    if mod == "pyarrow":
        return x.to_numpy(zero_copy_only=False)
    if mod in ("pandas", "polars"):
        return x.to_numpy()
    if mod == "builtins":  # a DLPack capsule: consumed by NumPy (or torch, for bfloat16)
        return as_numpy(consume_capsule(x))
    raise AssertionError(type(x))


def marker(dtype: np.dtype, current: Any) -> Any:
    """A value of ``dtype`` different from ``current``."""
    if dtype.kind == "b":
        return not bool(current)
    m = 5 if current != 5 else 3
    return np.array(m).astype(dtype)[()]


def poke(ptr: int, dtype: np.dtype, value: Any) -> None:
    """Write ``value`` at address ``ptr`` (one element of ``dtype``)."""
    raw = np.array(value, dtype=dtype).tobytes()
    ctypes.memmove(ptr, raw, len(raw))
