"""The samples the table converts: one per framework, and the layouts and dtypes that are
not plain aligned float32 vectors. Every sample is fresh (a probe may write into it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..buffers import N, aligned, misaligned

SAMPLE = f"float32, {N} elements (0, 1, 2, ...), 64-byte aligned, C-contiguous"

Maker = Callable[[], "tuple[Any, Any]"]
"""Builds a fresh sample: ``(value, origin)``; ``origin`` is what the result is compared
with (the value itself, or the NumPy array behind a raw DLPack capsule)."""


def _same(x: Any) -> tuple[Any, Any]:
    return x, x


def make_sample(name: str) -> tuple[Any, Any]:
    """The probe sample of table name ``name`` (CPU frameworks and, with a GPU, GPU ones)."""
    b = aligned()
    if name == "numpy":
        return _same(b)
    if name == "torch":
        import torch

        return _same(torch.from_numpy(b))
    if name == "jax":  # on the CPU: on a GPU host JAX's default device is the GPU (jax-gpu)
        import jax
        import jax.numpy as jnp

        return _same(jnp.arange(N, dtype=jnp.float32, device=jax.devices("cpu")[0]))
    if name == "tensorflow":
        import tensorflow as tf

        with tf.device("/CPU:0"):
            return _same(tf.range(N, dtype=tf.float32))
    if name == "paddle":
        import paddle

        return _same(paddle.arange(N, dtype="float32").cpu())
    if name == "pyarrow":
        import pyarrow as pa

        return _same(pa.array(b))
    if name == "pandas":
        import pandas as pd

        return _same(pd.Series(b, copy=False))
    if name == "polars":
        import polars as pl
        import pyarrow as pa

        return _same(pl.Series("x", pa.array(b)))
    if name == "dlpack":
        return b.__dlpack__(), b
    if name == "cupy":
        import cupy

        return _same(cupy.arange(N, dtype=cupy.float32))
    if name == "numba":
        from numba import cuda

        return _same(cuda.to_device(b))
    if name == "cudf":
        import cudf

        return _same(cudf.Series(b))
    if name == "torch-cuda":
        import torch

        return _same(torch.arange(N, dtype=torch.float32, device="cuda"))
    if name == "jax-gpu":
        import jax

        return _same(jax.device_put(b, jax.devices("gpu")[0]))
    if name == "tensorflow-gpu":
        import tensorflow as tf

        with tf.device("/GPU:0"):
            return _same(tf.range(N, dtype=tf.float32))
    if name == "paddle-gpu":
        import paddle

        return _same(paddle.arange(N, dtype="float32").cuda(0))
    raise ValueError(f"no sample for {name!r}")


def _readonly() -> tuple[Any, Any]:
    b = aligned()
    b.flags.writeable = False
    return _same(b)


def _arrow(variant: str) -> Maker:
    """A pyarrow sample ``variant``: ``"nulls"``, ``"chunked"`` (two chunks) or ``"string"``."""
    def make() -> tuple[Any, Any]:
        import pyarrow as pa

        if variant == "nulls":
            return _same(pa.array([1.0, None] * (N // 2), type=pa.float32()))
        if variant == "chunked":
            return _same(pa.chunked_array([pa.array(aligned(N // 2)),
                                           pa.array(aligned(N // 2))]))
        return _same(pa.array(["a", "b"] * (N // 2)))

    return make


def _nested(variant: str) -> Maker:
    """An Arrow list or tensor sample over the table's aligned sample (the origin, a NumPy
    array over the same buffer): ``"fixed"`` (``fixed_size_list<float>[32]``, 32 rows),
    ``"tensor"`` (``arrow.fixed_shape_tensor`` [4, 8], 32 rows) or ``"list"`` (``list<float>``,
    32 rows of 32)."""
    def make() -> tuple[Any, Any]:
        import numpy as np
        import pyarrow as pa

        b = aligned()
        values = pa.array(b)
        rows = pa.FixedSizeListArray.from_arrays(values, 32)
        if variant == "fixed":
            return rows, b
        if variant == "tensor":
            return pa.ExtensionArray.from_storage(
                pa.fixed_shape_tensor(pa.float32(), [4, 8]), rows), b
        from ...host import fresh_copy  # 64-byte aligned, as every probe sample

        offsets = pa.array(fresh_copy(np.arange(0, N + 1, 32, dtype=np.int32)))
        return pa.ListArray.from_arrays(offsets, values), b

    return make


def _np(fn: Callable[[], Any]) -> Maker:
    return lambda: _same(fn())


def _fortran() -> Any:
    import numpy as np

    return np.asfortranarray(aligned().reshape(32, 32))


def _paddle_reversed() -> tuple[Any, Any]:
    import paddle

    return _same(paddle.arange(N, dtype="float32").cpu()[::-1])


def _bool() -> Any:
    import numpy as np

    from ...host import fresh_copy

    return fresh_copy(np.arange(N) % 3 == 0)


def _dali(sample: bool) -> Maker:
    """A DALI CPU pipeline's output holding the table's sample: the ``TensorListCPU`` of 1024
    scalars (a dense batch), or ``sample``: the one ``TensorCPU`` of a batch of one. The
    origin is DALI's memory as NumPy reads it through DALI's own buffer protocol."""
    def make() -> tuple[Any, Any]:
        import numpy as np
        from nvidia.dali import fn, pipeline_def

        values = aligned()
        batch = [values] if sample else list(values)

        @pipeline_def(batch_size=len(batch), num_threads=1, device_id=None)
        def pipe() -> Any:
            return fn.external_source(source=lambda: batch, batch=True)

        p = pipe()
        p.build()
        (tl,) = p.run()
        value = tl[0] if sample else tl
        return value, np.asarray(tl.as_tensor()).reshape(N)

    return make


LAYOUTS: list[tuple[str, str, Maker]] = [
    ("numpy strided [::2]", "numpy", _np(lambda: aligned(2 * N)[::2])),
    ("numpy negative strides [::-1]", "numpy", _np(lambda: aligned()[::-1])),
    ("numpy misaligned (+4 bytes)", "numpy", _np(misaligned)),
    ("numpy read-only", "numpy", _readonly),
    ("numpy Fortran-order 32x32", "numpy", _np(_fortran)),
    ("numpy bool", "numpy", _np(_bool)),
    ("numpy float64", "numpy", _np(lambda: aligned(dtype="float64"))),
    ("numpy complex64", "numpy", _np(lambda: aligned(dtype="complex64"))),
    ("numpy uint16", "numpy", _np(lambda: aligned(dtype="uint16"))),
    ("paddle negative strides [::-1]", "paddle", _paddle_reversed),
    ("pyarrow with nulls", "pyarrow", _arrow("nulls")),
    ("pyarrow ChunkedArray, 2 chunks", "pyarrow", _arrow("chunked")),
    ("pyarrow string", "pyarrow", _arrow("string")),
    ("pyarrow fixed_size_list<float>[32], 32 rows", "pyarrow", _nested("fixed")),
    ("pyarrow fixed_shape_tensor [4, 8], 32 rows", "pyarrow", _nested("tensor")),
    ("pyarrow list<float>, 32 rows of 32", "pyarrow", _nested("list")),
    ("dali TensorListCPU, 1024 scalars (dense)", "dali", _dali(sample=False)),
    ("dali TensorCPU, one sample of 1024", "dali", _dali(sample=True)),
]
"""``(label, source framework, maker)`` of each layout or dtype probed against every CPU
target."""
