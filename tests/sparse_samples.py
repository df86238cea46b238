"""Sparse values of every framework built from raw entries by the framework's own calls, and
what each framework says about a sparse value (its buffers' addresses, its layout, its dense
values): the oracles of the sparse tests (tests/tables/test_sparse.py and
tests/optional/test_sparse_*.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
import torch

import oracles

js = pytest.importorskip("jax.experimental.sparse")
pydata = pytest.importorskip("sparse")

TARGETS = ("scipy", "torch", "jax", "pyarrow", "sparse")
BUILDS = {"scipy": {"csr", "csc", "coo", "bsr"}, "torch": {"csr", "csc", "coo", "bsr"},
          "jax": {"csr", "coo"}, "pyarrow": {"csr", "csc", "coo"},
          "sparse": {"csr", "csc", "coo"}}
"""The layouts each framework has (what the test expects a conversion to keep)."""
TORCH_NOTICES = [pytest.mark.filterwarnings("ignore:Sparse (CSR|CSC|BSR|BSC) tensor support"),
                 pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly")]
"""torch's notices when a test itself builds a sparse tensor (interop's own calls give none:
test_no_torch_notice_reaches_the_user_through_a_conversion): each sparse suite's marks."""


# ---- raw entries, and each framework's value built from them by its own calls -------------
class Raw:
    """Entries of a 2-D (or n-D) sparse value: ``coords`` (ndim, nnz), ``vals``."""

    def __init__(self, shape, coords, vals, index_dtype, canonical):
        self.shape, self.coords, self.vals = shape, coords, vals
        self.index_dtype, self.canonical = index_dtype, canonical

    def dense(self):
        out = np.zeros(self.shape, self.vals.dtype)
        np.add.at(out, tuple(self.coords), self.vals)
        return out

    def compressed(self, axis=0):
        """(data, indices, indptr) grouped by ``axis`` (row order kept within groups)."""
        major, minor = self.coords[axis], self.coords[1 - axis]
        order = np.argsort(major, kind="stable")
        ptr = np.zeros(self.shape[axis] + 1, self.index_dtype)
        np.cumsum(np.bincount(major, minlength=self.shape[axis]), out=ptr[1:])
        return (self.vals[order].copy(), minor[order].astype(self.index_dtype), ptr)


def raw(seed, shape=(7, 9), density=0.3, index_dtype=np.int32, sorted_=True, dups=False,
        dtype=np.float32):
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    nnz = int(size * density)
    lin = rng.choice(size, nnz, replace=False)
    if dups and nnz:
        lin = np.concatenate([lin, lin[: max(1, nnz // 3)]])
    lin = np.sort(lin) if sorted_ and not dups else rng.permutation(lin)
    coords = np.stack(np.unravel_index(lin, shape)).astype(index_dtype)
    vals = rng.standard_normal(lin.size).astype(dtype)
    return Raw(shape, coords, vals, index_dtype, sorted_ and not dups)


def scipy_maker(layout, matrix=False):
    def make(r):
        if layout == "coo":
            build = sp.coo_matrix if matrix else sp.coo_array
            return build((r.vals, tuple(r.coords)), shape=r.shape)
        if layout == "bsr":
            m = sp.csr_array((r.vals, tuple(r.coords)), shape=r.shape)
            m.sum_duplicates()
            return (sp.bsr_matrix if matrix else sp.bsr_array)(m.tobsr(blocksize=(1, 3)))
        build = {("csr", False): sp.csr_array, ("csr", True): sp.csr_matrix,
                 ("csc", False): sp.csc_array, ("csc", True): sp.csc_matrix}[layout, matrix]
        return build(r.compressed(0 if layout == "csr" else 1), shape=r.shape)
    return make


def torch_maker(layout):
    def make(r):
        if layout == "coo":
            return torch.sparse_coo_tensor(torch.from_numpy(r.coords.astype(np.int64)),
                                           torch.from_numpy(r.vals), r.shape)
        if not r.canonical:
            pytest.skip("torch builds compressed tensors of sorted, distinct indices only")
        data, indices, indptr = r.compressed(0)
        t = torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices),
                                    torch.from_numpy(data), r.shape)
        return {"csr": t, "csc": t.to_sparse_csc() if layout == "csc" else t,
                "bsr": t.to_sparse_bsr((1, 3)) if layout == "bsr" else t}[layout]
    return make


def jax_maker(layout):
    def make(r):
        if layout == "coo":
            return js.BCOO((np.asarray(r.vals), np.ascontiguousarray(r.coords.T)),
                           shape=r.shape, indices_sorted=r.canonical,
                           unique_indices=r.canonical)
        data, indices, indptr = r.compressed(0)
        return js.BCSR((data, indices, indptr), shape=r.shape,
                       indices_sorted=r.canonical, unique_indices=r.canonical)
    return make


def arrow_maker(layout):
    def make(r):
        if layout == "coo":
            if not r.vals.size:
                pytest.skip("Arrow builds no COO tensor without entries")
            return pa.SparseCOOTensor.from_numpy(r.vals, np.ascontiguousarray(
                r.coords.T.astype(np.int64)), shape=list(r.shape))
        data, indices, indptr = r.compressed(0 if layout == "csr" else 1)
        build = pa.SparseCSRMatrix if layout == "csr" else pa.SparseCSCMatrix
        return build.from_numpy(data, indptr.astype(np.int64), indices.astype(np.int64),
                                shape=list(r.shape))
    return make


def pydata_maker(layout):
    def make(r):
        if layout == "coo":
            return pydata.COO(r.coords, r.vals, shape=r.shape, has_duplicates=not r.canonical,
                              sorted=r.canonical)
        if not r.canonical:
            pytest.skip("GCXS is built of sorted, distinct indices here")
        axis = 0 if layout == "csr" else 1
        return pydata.GCXS(r.compressed(axis), shape=r.shape, compressed_axes=(axis,))
    return make


SOURCES = {
    "scipy csr_array": ("csr", scipy_maker("csr")),
    "scipy csr_matrix": ("csr", scipy_maker("csr", True)),
    "scipy csc_array": ("csc", scipy_maker("csc")), "scipy coo_array": ("coo", scipy_maker("coo")),
    "scipy coo_matrix": ("coo", scipy_maker("coo", True)),
    "scipy bsr_array": ("bsr", scipy_maker("bsr")),
    "torch coo": ("coo", torch_maker("coo")), "torch csr": ("csr", torch_maker("csr")),
    "torch csc": ("csc", torch_maker("csc")), "torch bsr": ("bsr", torch_maker("bsr")),
    "jax BCOO": ("coo", jax_maker("coo")), "jax BCSR": ("csr", jax_maker("csr")),
    "pyarrow csr": ("csr", arrow_maker("csr")), "pyarrow csc": ("csc", arrow_maker("csc")),
    "pyarrow coo": ("coo", arrow_maker("coo")),
    "sparse COO": ("coo", pydata_maker("coo")), "sparse GCXS csr": ("csr", pydata_maker("csr")),
    "sparse GCXS csc": ("csc", pydata_maker("csc")),
}
CASES = {
    "int32 sorted": dict(seed=1),
    "int64 sorted": dict(seed=2, index_dtype=np.int64, dtype=np.float64),
    "unsorted": dict(seed=3, sorted_=False),
    "duplicates": dict(seed=4, dups=True),
    "empty": dict(seed=5, density=0.0),
    "one row": dict(seed=6, shape=(1, 12), density=0.5),
    "dense-ish": dict(seed=7, shape=(6, 6), density=0.9, index_dtype=np.int64),
}


# ---- what each framework says about a value: its buffers and its dense values --------------
def framework_of(x):
    return type(x).__module__.partition(".")[0].replace("jaxlib", "jax")


def _paddle_sparse(x):
    import paddle

    return isinstance(x, paddle.Tensor) and x.is_sparse()


def pointers(x) -> dict[str, int]:
    """The address of each buffer of ``x``, read by its own framework."""
    fw = framework_of(x)
    if fw == "scipy":
        if x.format == "coo":
            return {"data": x.data.ctypes.data, "coords": x.coords[0].ctypes.data}
        return {"data": x.data.ctypes.data, "indices": x.indices.ctypes.data,
                "indptr": x.indptr.ctypes.data}
    if fw == "torch":
        if x.layout == torch.sparse_coo:
            return {"data": x._values().data_ptr(), "coords": x._indices().data_ptr()}
        if x.layout == torch.sparse_csc:
            return {"data": x.values().data_ptr(), "indices": x.row_indices().data_ptr(),
                    "indptr": x.ccol_indices().data_ptr()}
        return {"data": x.values().data_ptr(), "indices": x.col_indices().data_ptr(),
                "indptr": x.crow_indices().data_ptr()}
    if fw == "jax":
        if isinstance(x, js.BCOO):
            return {"data": x.data.unsafe_buffer_pointer(),
                    "coords": x.indices.unsafe_buffer_pointer()}
        return {"data": x.data.unsafe_buffer_pointer(),
                "indices": x.indices.unsafe_buffer_pointer(),
                "indptr": x.indptr.unsafe_buffer_pointer()}
    if fw == "pyarrow":
        if isinstance(x, pa.SparseCOOTensor):
            data, coords = x.to_numpy()
            return {"data": data.ctypes.data, "coords": coords.ctypes.data}
        data, indptr, indices = x.to_numpy()
        return {"data": data.ctypes.data, "indices": indices.ctypes.data,
                "indptr": indptr.ctypes.data}
    if fw == "tensorflow":
        return {"data": oracles.pointer(x.values), "coords": oracles.pointer(x.indices)}
    if fw == "paddle":
        if x.is_sparse_coo():
            return {"data": x.values().data_ptr(), "coords": x.indices().data_ptr()}
        return {"data": x.values().data_ptr(), "indices": x.cols().data_ptr(),
                "indptr": x.crows().data_ptr()}
    assert fw == "sparse", fw
    if isinstance(x, pydata.COO):
        return {"data": x.data.ctypes.data, "coords": x.coords.ctypes.data}
    return {"data": x.data.ctypes.data, "indices": x.indices.ctypes.data,
            "indptr": x.indptr.ctypes.data}


def writable(x) -> bool:
    """Whether a test may write ``x``'s stored values through its own framework: torch's
    always (a tensor cannot be read-only), SciPy's and pydata's where their NumPy array is
    writable (not where they view memory of an immutable source); JAX, Arrow and TensorFlow
    values are immutable, paddle's are only read here."""
    fw = framework_of(x)
    return fw == "torch" or (fw in ("scipy", "sparse") and x.data.flags.writeable)


def _values(x):
    """The stored values of ``x``: its framework's own array of them."""
    fw = framework_of(x)
    if fw == "torch":
        return x._values() if x.layout == torch.sparse_coo else x.values()
    if fw == "pyarrow":
        return x.to_numpy()[0]
    if fw == "tensorflow":
        return x.values
    if fw == "paddle":
        return x.values()
    return x.data  # SciPy, pydata sparse, JAX


def stored_values(x) -> np.ndarray:
    """The stored values of ``x``, flat, as its own framework reads them now."""
    return np.asarray(_values(x)).reshape(-1)


def _write_first(x, value) -> None:
    """``value`` into the first stored value of ``x``, through its own framework."""
    _values(x).reshape(-1)[0] = value


def assert_a_write_shows(x, y) -> bool:
    """A write into the first stored value of whichever of ``x`` and ``y`` lets its framework
    write, read back on the other by its own API (they share the values buffer). Whether
    either side could be written."""
    for writer, reader in ((x, y), (y, x)):
        if writable(writer):
            marker = float(stored_values(reader)[0]) + 1000.5
            _write_first(writer, marker)
            assert stored_values(reader)[0] == marker, (framework_of(writer),
                                                        framework_of(reader))
            return True
    return False


def layout_of(x) -> str:
    fw = framework_of(x)
    if fw == "scipy":
        return x.format
    if fw == "torch":
        return str(x.layout).rpartition("_")[2]
    if fw == "jax":
        return "coo" if isinstance(x, js.BCOO) else "csr"
    if fw == "pyarrow":
        return {pa.SparseCOOTensor: "coo", pa.SparseCSRMatrix: "csr",
                pa.SparseCSCMatrix: "csc"}[type(x)]
    if fw == "tensorflow":
        return "coo"
    if fw == "paddle":
        return "coo" if x.is_sparse_coo() else "csr"
    if isinstance(x, pydata.COO):
        return "coo"
    return "csr" if tuple(x.compressed_axes) == (0,) else "csc"


def densified(x) -> np.ndarray:
    """The dense values of ``x``, by its own framework."""
    fw = framework_of(x)
    if fw == "scipy":
        return x.toarray()
    if fw == "torch":
        return x.to_dense().numpy()
    if fw == "jax":
        return np.asarray(x.todense())
    if fw == "pyarrow":
        return x.to_tensor().to_numpy()
    if fw == "tensorflow":
        import tensorflow as tf

        return tf.sparse.to_dense(x).numpy()
    if fw == "paddle":
        return x.to_dense().numpy()
    return x.todense()


def copied_roles(plan) -> set[str]:
    """The buffers the plan names as copied (its reasons read ``"<layout> <roles>: ..."``)."""
    roles = set()
    for r in plan.reasons:
        head = r.partition(":")[0].split(" ", 1)
        if len(head) == 2 and head[0] in ("csr", "csc", "coo", "bsr"):
            roles |= {s.strip() for s in head[1].split(",")}
    return roles


def quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's beta notice, JAX narrowing
        return fn(*a, **k)




def check_pair(x, target, r, layout):
    """``x`` (the sample of raw entries ``r``) converted to ``target`` keeps its values and
    ``layout``, shares every buffer the plan does not name as copied (zero-copy exactly when
    it shares them all), and ``copy=False`` agrees with the plan. Returns the result and
    the plan."""
    import interop
    from interop.errors import ZeroCopyError

    plan = interop.explain(x, target)
    assert plan.supported, plan
    before = pointers(x)
    y = quiet(interop.to_framework, x, target)
    assert framework_of(y) == target and layout_of(y) == layout
    np.testing.assert_allclose(densified(y), r.dense(), rtol=1e-6)
    if r.vals.size:
        shared = {k for k, p in pointers(y).items() if p == before[k]}
        assert set(before) - copied_roles(plan) <= shared, (plan, shared)
        assert plan.zero_copy == (shared == set(before)), (plan, shared)
        if "data" in shared:
            assert_a_write_shows(x, y)
    if not plan.zero_copy:
        with pytest.raises(ZeroCopyError):
            quiet(interop.to_framework, x, target, copy=False)
    return y, plan


def refused_by_all_three(make, target: str, dtypes) -> None:
    """``make(dtype)`` of each of ``dtypes`` is refused by explain, can_convert and the
    conversion to ``target`` alike, each naming the dtype."""
    import interop
    from interop.errors import UnsupportedConversionError

    for dtype in dtypes:
        m = make(dtype)
        plan = interop.explain(m, target)
        assert not plan.supported and dtype in plan.reasons[0], plan
        assert not interop.can_convert(m, target)
        with pytest.raises(UnsupportedConversionError, match=dtype):
            interop.to_framework(m, target)
