"""Sparse values: a SciPy CSR matrix handed to torch and to JAX, against the hand-written routes.

A 100,000 x 100,000 float32 CSR matrix with 10M stored entries (100 per row, sorted and
distinct, int32 indices; every buffer 64-byte aligned, as XLA wants to import it in place)
to torch (``interop.to_framework(m, "torch")`` against ``torch.sparse_csr_tensor`` over
``torch.from_numpy`` of the three buffers, torch's own invariant checks off as by default)
and to JAX (against ``BCSR.from_scipy_sparse``), timed in interleaved rounds; for each, the
bytes the result does not share with the matrix (read from the frameworks' own pointers).
interop checks the invariants of every value it hands over (index bounds, monotone index
pointers, sorted and distinct indices: one read of the index arrays), which a hand-written
route skips: ``check_ms`` is that check alone, and the same conversions at a tenth of the
entries show how each cost grows with them. Densifying (``torch.from_numpy(m.toarray())``)
needs 40 GB at this shape: it is timed on a 10,000 x 10,000 matrix of 1M entries instead.
"""

from __future__ import annotations

import warnings
from typing import Any

from . import aligned_empty, interleaved, summary, timer


def _csr(n: int, per_row: int, seed: int = 0) -> Any:
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    band = n // per_row
    nnz = n * per_row
    indices = aligned_empty(nnz * 4, "int32")
    indices[:] = (rng.integers(0, band, (n, per_row), dtype=np.int32)
                  + np.arange(per_row, dtype=np.int32) * band).ravel()
    indptr = aligned_empty((n + 1) * 4, "int32")
    indptr[:] = np.arange(0, nnz + 1, per_row, dtype=np.int32)
    data = aligned_empty(nnz * 4, "float32")
    data[:] = rng.random(nnz, dtype=np.float32)
    m = sp.csr_array((data[:0], indices[:0], np.zeros_like(indptr)), shape=(n, n))
    m.data, m.indices, m.indptr = data, indices, indptr  # SciPy's constructor copies views
    return m


def _copied(m: Any, buffers: dict[str, int]) -> int:
    """The bytes of ``m``'s buffers whose pointer the result does not share."""
    own = {"data": m.data, "indices": m.indices, "indptr": m.indptr}
    return sum(a.nbytes for k, a in own.items() if buffers[k] != a.ctypes.data)


def _torch_buffers(t: Any) -> dict[str, int]:
    return {"data": t.values().data_ptr(), "indices": t.col_indices().data_ptr(),
            "indptr": t.crow_indices().data_ptr()}


def _jax_buffers(b: Any) -> dict[str, int]:
    return {"data": b.data.unsafe_buffer_pointer(), "indices": b.indices.unsafe_buffer_pointer(),
            "indptr": b.indptr.unsafe_buffer_pointer()}


def _case(m: Any, repeat: int) -> dict[str, Any]:
    import torch
    from jax.experimental.sparse import BCSR

    import interop
    from interop.adapters.sparse_parts import prepare
    from interop.default import REGISTRY

    def hand_torch() -> Any:
        return torch.sparse_csr_tensor(torch.from_numpy(m.indptr), torch.from_numpy(m.indices),
                                       torch.from_numpy(m.data), size=m.shape,
                                       check_invariants=False)  # torch's default, said

    parts = REGISTRY.adapters["scipy"].parts(m)
    builder = REGISTRY.builder("torch", "csr")
    env = {"m": m, "to": interop.to_framework, "hand_torch": hand_torch, "BCSR": BCSR,
           "prepare": prepare, "reg": REGISTRY, "parts": parts, "builder": builder}
    timers = {"interop_torch": timer("to(m, 'torch')", env),
              "hand_torch": timer("hand_torch()", env),
              "interop_jax": timer("to(m, 'jax')", env),
              "hand_jax": timer("BCSR.from_scipy_sparse(m)", env),
              "check": timer("prepare(reg, parts, builder)", env)}
    samples = interleaved(timers, 1, repeat, warmup=1)
    ms = {k: summary(v, 1e3) for k, v in samples.items()}
    return {
        "shape": list(m.shape), "nnz": int(m.nnz),
        "index_bytes": int(m.indices.nbytes + m.indptr.nbytes),
        "ms": ms,
        "copied_bytes": {
            "interop_torch": _copied(m, _torch_buffers(interop.to_framework(m, "torch"))),
            "hand_torch": _copied(m, _torch_buffers(hand_torch())),
            "interop_jax": _copied(m, _jax_buffers(interop.to_framework(m, "jax"))),
            "hand_jax": _copied(m, _jax_buffers(BCSR.from_scipy_sparse(m))),
        },
        "zero_copy": {"torch": interop.explain(m, "torch").zero_copy,
                      "jax": interop.explain(m, "jax").zero_copy},
    }


def _dense(n: int, per_row: int, repeat: int) -> dict[str, Any]:
    import torch

    import interop

    m = _csr(n, per_row, seed=1)
    env = {"m": m, "to": interop.to_framework, "torch": torch}
    samples = interleaved({"interop_dense": timer("to(m, 'torch', format='dense')", env),
                           "hand_dense": timer("torch.from_numpy(m.toarray())", env),
                           "interop_csr": timer("to(m, 'torch')", env)}, 1, repeat, warmup=1)
    return {"shape": [n, n], "nnz": int(m.nnz), "dense_bytes": n * n * 4,
            "ms": {k: summary(v, 1e3) for k, v in samples.items()}}


def run(quick: bool = False) -> dict[str, Any]:
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    n, per_row, repeat = (10_000, 10, 3) if quick else (100_000, 100, 7)
    big = _case(_csr(n, per_row), repeat)
    tenth = _case(_csr(n, per_row // 10, seed=2), repeat)
    dense = _dense(n // 10 if not quick else 1_000, per_row, repeat)
    return {"big": big, "tenth": tenth, "dense": dense}
