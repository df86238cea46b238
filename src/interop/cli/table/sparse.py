"""The sparse section: each framework's sparse kinds converted to each framework that builds
sparse values, probed live like every other cell.

A sample is one small matrix (:data:`SPARSE_SAMPLE`) built by the framework's own calls. A
cell is zero-copy only when every buffer of the result (its values, indices, index pointers
or coordinates) overlaps the source's buffer of the same role by the frameworks' own
accessors (:func:`interop.cli.memory.overlap` on each buffer); otherwise the plan names the
buffers that copy and why, and an unsupported cell gives the error (a layout the target
lacks says which ``format=`` to ask for).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ...adapters.base import installed
from ...default import REGISTRY
from ...host import fresh_copy
from .. import memory
from .cells import COPY, NOT_PROBED, UNSUPPORTED, ZERO_COPY, cell, clean

SPARSE_SAMPLE = ("a 6 x 5 float32 matrix of 8 stored entries (sorted, distinct), int64 "
                 "indices, built by each framework's own calls")
ROWS = [0, 0, 1, 2, 3, 3, 4, 5]
COLS = [1, 4, 0, 2, 1, 3, 4, 0]
SHAPE = (6, 5)


def _parts(fmt: str = "csr") -> tuple[Any, Any, Any, Any]:
    """``(values, coords (2, nnz), indptr, indices)`` of the sample, its entries in ``fmt``'s
    order (``"csc"``: by column), as 64-byte aligned NumPy arrays (what interop allocates;
    an unaligned sample would make JAX's and TensorFlow's cells depend on where it landed)."""
    import numpy as np

    rows, cols = np.array(ROWS, np.int64), np.array(COLS, np.int64)
    values = np.arange(1, 9, dtype=np.float32)
    major, minor = (cols, rows) if fmt == "csc" else (rows, cols)
    order = np.lexsort((minor, major))
    n = SHAPE[1] if fmt == "csc" else SHAPE[0]
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(major, minlength=n), out=indptr[1:])
    return (fresh_copy(values[order]), fresh_copy(np.stack([rows, cols])[:, order]),
            fresh_copy(indptr), fresh_copy(minor[order]))


def _scipy(fmt: str) -> Any:
    """Built by handing SciPy the aligned buffers (its constructor copies a view of a larger
    buffer)."""
    import scipy.sparse as sp

    v, coords, indptr, indices = _parts(fmt)
    if fmt == "coo":
        return sp.coo_array((v, (coords[0], coords[1])), shape=SHAPE)
    if fmt == "bsr":
        return sp.csr_array((v, indices, indptr), shape=SHAPE).tobsr(blocksize=(1, 5))
    m = (sp.csc_array if fmt == "csc" else sp.csr_array)(SHAPE)
    m.data, m.indices, m.indptr = v, indices, indptr
    return m


def _torch(fmt: str) -> Any:
    import torch

    v, coords, indptr, indices = _parts()
    t = torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices),
                                torch.from_numpy(v), SHAPE, check_invariants=True)
    return {"coo": t.to_sparse_coo, "csr": lambda: t, "csc": t.to_sparse_csc,
            "bsr": lambda: t.to_sparse_bsr((1, 5))}[fmt]()


def _jax(fmt: str) -> Any:
    import jax
    from jax.experimental import sparse as js

    v, coords, indptr, indices = _parts()
    with jax.default_device(jax.devices("cpu")[0]):  # the GPU is JAX's default on a GPU host
        if fmt == "coo":
            return js.BCOO((v, coords.T.astype("int32")), shape=SHAPE, indices_sorted=True,
                           unique_indices=True)
        return js.BCSR((v, indices.astype("int32"), indptr.astype("int32")), shape=SHAPE)


def _tensorflow(fmt: str) -> Any:
    import tensorflow as tf

    v, coords, _, _ = _parts()
    with tf.device("/CPU:0"):
        return tf.sparse.SparseTensor(fresh_copy(coords.T), v, list(SHAPE))


def _paddle(fmt: str) -> Any:
    import paddle

    v, coords, indptr, indices = _parts()
    if fmt == "coo":
        return paddle.sparse.sparse_coo_tensor(paddle.to_tensor(coords), paddle.to_tensor(v),
                                               list(SHAPE))
    return paddle.sparse.sparse_csr_tensor(paddle.to_tensor(indptr), paddle.to_tensor(indices),
                                           paddle.to_tensor(v), list(SHAPE))


def _pyarrow(fmt: str) -> Any:
    import pyarrow as pa

    v, coords, indptr, indices = _parts()
    if fmt == "coo":
        return pa.SparseCOOTensor.from_numpy(v, fresh_copy(coords.T), shape=list(SHAPE))
    if fmt == "csc":
        v, _, indptr, indices = _parts("csc")
        return pa.SparseCSCMatrix.from_numpy(v, indptr, indices, shape=list(SHAPE))
    return pa.SparseCSRMatrix.from_numpy(v, indptr, indices, shape=list(SHAPE))


def _pydata(fmt: str) -> Any:
    import sparse

    v, coords, indptr, indices = _parts()
    if fmt == "coo":
        return sparse.COO(coords, v, shape=SHAPE, has_duplicates=False, sorted=True)
    return sparse.GCXS((v, indices, indptr), shape=SHAPE, compressed_axes=(0,))


SOURCES: list[tuple[str, str, Callable[[], Any]]] = [
    (f"{package} {label}", package, (lambda b, f: lambda: b(f))(build, fmt))
    for package, build, kinds in (
        ("scipy", _scipy, (("csr", "csr"), ("csc", "csc"), ("coo", "coo"), ("bsr", "bsr"))),
        ("torch", _torch, (("sparse_csr", "csr"), ("sparse_csc", "csc"), ("sparse_coo", "coo"),
                           ("sparse_bsr", "bsr"))),
        ("jax", _jax, (("BCSR", "csr"), ("BCOO", "coo"))),
        ("tensorflow", _tensorflow, (("SparseTensor", "coo"),)),
        ("paddle", _paddle, (("sparse csr", "csr"), ("sparse coo", "coo"))),
        ("pyarrow", _pyarrow, (("SparseCSRMatrix", "csr"), ("SparseCSCMatrix", "csc"),
                               ("SparseCOOTensor", "coo"))),
        ("sparse", _pydata, (("GCXS", "csr"), ("COO", "coo"))),
    )
    for label, fmt in kinds]
"""``(row label, package, maker)`` of each sparse sample."""


def targets() -> list[str]:
    """The frameworks that build sparse values (read from the registry)."""
    return list(dict.fromkeys(of for of, _ in REGISTRY.builders))


def _buffers(x: Any) -> dict[Any, Any]:
    """The dense buffers of a sparse value, by role (its framework's own accessors)."""
    kind = REGISTRY.composite(x)
    return dict(kind.parts(x).arrays) if kind is not None and kind.parts is not None else {}


def probe_sparse(label: str, target: str, make: Callable[[], Any]) -> dict[str, Any]:
    """Convert a fresh sample to ``target`` and classify what happened, buffer by buffer."""
    import interop
    from interop.errors import InteropError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = make()
            plan = interop.explain(value, target)
            result = interop.to_framework(value, target)
        except InteropError as e:
            return cell(label, target, UNSUPPORTED, clean(e))
        except Exception as e:  # a framework error interop did not turn into its own
            return cell(label, target, UNSUPPORTED,
                        clean(f"the framework raised {type(e).__name__}: {e}"), plan_agrees=False)
        src, out = _buffers(value), _buffers(result)
        shared = [role for role, a in src.items()
                  if role in out and memory.overlap(a, out[role])]
    steps = tuple(str(s) for s in plan.steps)
    if src and len(shared) == len(src):
        return cell(label, target, ZERO_COPY, None, plan.hazards, steps,
                    plan_agrees=plan.zero_copy,
                    proof=f"every buffer ({', '.join(map(str, src))}) overlaps by pointers")
    reason = "; ".join(clean(r) for r in plan.reasons) or "the result has its own buffers"
    return cell(label, target, COPY, reason, plan.hazards, steps, plan_agrees=not plan.zero_copy)


def sparse_cells(skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every sparse sample to every target that builds sparse values (a device-only target,
    CuPy, only on a machine with a CUDA device)."""
    from ...devices import cuda_devices

    out = []
    names = targets()
    no_gpu = not cuda_devices()[0]
    for label, package, make in SOURCES:
        for t in names:
            if no_gpu and REGISTRY.adapters[t].devices == ("cuda",):
                out.append(cell(label, t, NOT_PROBED, "not probed here (no CUDA device)"))
                continue
            missing = next((n for n in (package, t)
                            if n in skip or not installed(REGISTRY.adapters[n].package)), None)
            if missing is not None:
                why = f"not probed here (skipped: {missing})" if missing in skip else \
                    f"{missing} is not installed"
                out.append(cell(label, t, NOT_PROBED, why))
            else:
                out.append(probe_sparse(label, t, make))
    return out
