"""The random search of sparse values (issue 45), shared by the core suite
(tests/tables/test_sparse_properties.py) and the TensorFlow and paddle suites: raw entries
drawn by Hypothesis, each framework's value built from them by its own calls, and one oracle
for every conversion (:func:`check`), whose judgements come from the frameworks' own
accessors: their entries, their buffers' addresses, a write read back on the other side.

Profiles: ``sparse-ci`` (the default: well under a minute) and ``sparse-slow`` (thousands of
cases, fresh seeds: ``INTEROP_SPARSE_SEARCH=slow pytest tests/tables/test_sparse_properties.py
--hypothesis-seed=N``), run by hand."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

import interop
from interop.errors import InteropError, MalformedError, ZeroCopyError
from sparse_samples import framework_of, js, pointers, pydata

settings.register_profile("sparse-ci", max_examples=int(os.environ.get(
    "INTEROP_SPARSE_CASES", "120")), deadline=None, derandomize=False, database=None,
    suppress_health_check=list(HealthCheck))
settings.register_profile("sparse-slow", max_examples=int(os.environ.get(
    "INTEROP_SPARSE_CASES", "3000")), deadline=None, database=None,
    suppress_health_check=list(HealthCheck))
settings.register_profile("sparse-debug", max_examples=int(os.environ.get(
    "INTEROP_SPARSE_CASES", "100")), deadline=None, database=None, phases=[Phase.generate],
    report_multiple_bugs=False, suppress_health_check=list(HealthCheck))
PROFILE = settings.get_profile(os.environ["INTEROP_SPARSE_PROFILE"]) if os.environ.get(
    "INTEROP_SPARSE_PROFILE") else settings.get_profile(
    "sparse-slow" if os.environ.get("INTEROP_SPARSE_SEARCH") == "slow" else "sparse-ci")

DTYPES = ("float16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool",
          "complex64")
FORMATS = (None, None, None, "csr", "csc", "coo", "dense")
HUGE = (2**34, 2**40)  # (past int32; a compressed form of either would not fit the memory)


class Raw:
    """Entries drawn: ``coords`` (ndim, nnz) int64, ``vals``, and how the value is built."""

    def __init__(self, shape, coords, vals, index_dtype, order, malformed, lie, view):
        self.shape, self.coords, self.vals = shape, coords, vals
        self.index_dtype, self.order, self.malformed = index_dtype, order, malformed
        self.lie, self.view = lie, view

    def __repr__(self) -> str:  # what a failing case reports: the whole value
        return (f"Raw(shape={self.shape}, coords={np.asarray(self.coords).tolist()}, "
                f"vals={np.asarray(self.vals).tolist()} ({np.asarray(self.vals).dtype}), "
                f"index_dtype={self.index_dtype}, order={self.order!r}, "
                f"malformed={self.malformed!r}, lie={self.lie!r}, view={self.view!r})")

    @property
    def canonical(self) -> bool:
        lin = [tuple(c) for c in self.coords.T]
        return lin == sorted(set(lin))

    def small(self) -> bool:
        return int(np.prod(self.shape)) <= 10**6

    def want(self) -> dict:
        """Each stored position's sum (in the values' dtype: bool by or), zeros left out."""
        return _summed(self.coords, self.vals)


def _summed(coords, vals) -> dict:
    out: dict = {}
    for c, v in zip(map(tuple, np.asarray(coords).T.tolist()), np.asarray(vals).tolist()):
        out[c] = (out[c] or v) if isinstance(v, bool) and c in out else out.get(c, 0) + v
    return {c: v for c, v in out.items() if v != 0}


@st.composite
def raws(draw, ndims=(2,), huge=True):
    """Raw entries of a 2-D (or n-D) value: small or huge shapes with few entries, int32/int64
    indices, duplicates, unsorted, every value dtype, views and malformations."""
    nd = draw(st.sampled_from(ndims))
    shape = list(draw(st.lists(st.integers(1, 6), min_size=nd, max_size=nd)))
    if huge and draw(st.integers(0, 5)) == 0:
        shape[draw(st.integers(0, nd - 1))] = draw(st.sampled_from(HUGE))
    nnz = draw(st.integers(0, 7))
    coords = np.array([[draw(st.integers(0, n - 1)) for _ in range(nnz)] for n in shape],
                      np.int64).reshape(nd, nnz)
    order = draw(st.sampled_from(["sorted", "sorted", "unsorted", "duplicates"]))
    lin = sorted(set(map(tuple, coords.T.tolist())))
    if order != "unsorted" and lin:
        coords = np.array(lin, np.int64).T
        if order == "duplicates":
            coords = np.concatenate([coords, coords[:, :1]], axis=1)
    dtype = draw(st.sampled_from(DTYPES))
    n = coords.shape[1]
    if dtype == "bool":
        vals = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    else:
        low = 0 if np.dtype(dtype).kind == "u" else -3
        vals = np.array(draw(st.lists(st.integers(low, 3), min_size=n, max_size=n)), dtype)
    fits = all(s < 2**31 for s in shape)
    index_dtype = draw(st.sampled_from(["int32", "int64"])) if fits else "int64"
    malformed = draw(st.sampled_from([None] * 8 + ["out of range", "negative"])) if n else None
    lie = draw(st.booleans())  # flags claiming sorted, distinct indices
    view = draw(st.sampled_from([None, None, "strided", "read-only"]))
    return Raw(tuple(shape), coords, vals, index_dtype, order, malformed, lie, view)


# ---- each framework's value, built by its own calls -----------------------------------------
def _np_view(a, view):
    if view == "strided":
        out = np.zeros(2 * a.size, a.dtype)
        out[::2] = a
        return out[::2]
    if view == "read-only":
        a = a.copy()
        a.flags.writeable = False
    return a


def _compressed(r, axis):
    """(data, indices, indptr) of a 2-D value grouped by ``axis`` (order kept in groups)."""
    major, minor = r.coords[axis], r.coords[1 - axis]
    order = np.argsort(major, kind="stable")
    ptr = np.zeros(r.shape[axis] + 1, np.int64)
    np.cumsum(np.bincount(major, minlength=r.shape[axis]), out=ptr[1:])
    return r.vals[order], minor[order], ptr


def _break(r, coords, bound):
    """The drawn malformation applied to a copy of ``coords`` (``(k, nnz)``) at its first
    entry, whose first row runs in ``[0, bound)``."""
    coords = coords.copy()
    coords[0, 0] = bound if r.malformed == "out of range" else -1
    return coords


def build(source: str, r: Raw):
    """The value of ``source`` (``"scipy csr"`` ...) of the raw entries, or ``None`` where that
    framework cannot hold them (its own rule, not interop's)."""
    fw, layout = source.split()
    compressed = layout in ("csr", "csc")
    axis = 0 if layout == "csr" else 1
    if compressed and (len(r.shape) != 2 or r.shape[axis] > 10**6):
        return None
    idx = np.dtype(r.index_dtype)
    if fw == "scipy":
        if r.vals.dtype == np.float16:
            return None
        if layout == "coo":
            m = sp.coo_array((_np_view(r.vals, r.view), tuple(c.astype(idx) for c in r.coords)),
                             shape=r.shape)
            if r.malformed:  # SciPy checks nothing when attributes are set
                m.coords = tuple(c.astype(idx) for c in _break(r, r.coords, r.shape[0]))
        else:
            data, indices, indptr = _compressed(r, axis)
            m = (sp.csr_array if layout == "csr" else sp.csc_array)(r.shape)
            m.indices = (_break(r, indices[None], r.shape[1 - axis])[0] if r.malformed
                         else indices).astype(idx)
            m.indptr, m.data = indptr.astype(idx), _np_view(data, r.view)
        if r.lie:
            m.has_canonical_format = True
        return m
    if fw == "torch":
        if layout == "coo":
            coords = _break(r, r.coords, r.shape[0]) if r.malformed else r.coords
            return torch.sparse_coo_tensor(torch.from_numpy(coords), torch.from_numpy(r.vals),
                                           r.shape, check_invariants=False,
                                           is_coalesced=bool(r.lie and r.canonical))
        if not r.canonical:
            return None
        data, indices, indptr = _compressed(r, axis)
        if r.malformed:
            indices = _break(r, indices[None], r.shape[1 - axis])[0]
        build = torch.sparse_csr_tensor if layout == "csr" else torch.sparse_csc_tensor
        return build(torch.from_numpy(indptr.astype(idx)), torch.from_numpy(indices.astype(idx)),
                     torch.from_numpy(r.vals[np.argsort(r.coords[axis], kind="stable")]),
                     r.shape, check_invariants=False)
    if fw == "jax":
        if r.malformed:
            return None  # JAX reads an out-of-range index as padding, by its own rule
        flags = dict(indices_sorted=r.lie or r.canonical, unique_indices=r.lie or r.canonical)
        if layout == "coo":
            return js.BCOO((r.vals, np.ascontiguousarray(r.coords.T).astype(idx)),
                           shape=r.shape, **flags)
        if layout == "csc":
            return None
        data, indices, indptr = _compressed(r, 0)
        return js.BCSR((data, indices.astype(idx), indptr.astype(idx)), shape=r.shape, **flags)
    if fw == "pyarrow":
        if r.vals.dtype.kind in "bc" or r.malformed:
            return None  # Arrow holds neither; its from_numpy checks indices itself
        if layout == "coo":
            if not r.vals.size:
                return None
            return pa.SparseCOOTensor.from_numpy(r.vals, np.ascontiguousarray(r.coords.T),
                                                 shape=list(r.shape))
        data, indices, indptr = _compressed(r, axis)
        build = pa.SparseCSRMatrix if layout == "csr" else pa.SparseCSCMatrix
        return build.from_numpy(data, indptr, indices, shape=list(r.shape))
    if fw == "tensorflow":
        import tensorflow as tf

        if layout != "coo":
            return None
        coords = _break(r, r.coords, r.shape[0]) if r.malformed else r.coords
        return tf.sparse.SparseTensor(np.ascontiguousarray(coords.T), r.vals,
                                      list(r.shape))  # TF checks nothing here
    if fw == "paddle":
        import paddle

        if r.malformed or not r.vals.size or not r.small() or r.vals.dtype.name in (
                "bool", "int8"):
            return None  # paddle builds no empty COO tensor, no bool or int8 values
        if layout == "coo":
            return paddle.sparse.sparse_coo_tensor(paddle.to_tensor(r.coords),
                                                   paddle.to_tensor(r.vals), list(r.shape))
        if layout != "csr" or not r.canonical or len(r.shape) != 2:
            return None
        data, indices, indptr = _compressed(r, 0)
        return paddle.sparse.sparse_csr_tensor(paddle.to_tensor(indptr),
                                               paddle.to_tensor(indices),
                                               paddle.to_tensor(data), list(r.shape))
    assert fw == "sparse", fw
    if r.malformed or r.vals.dtype == np.float16:
        return None  # pydata's constructors check indices themselves
    if layout == "coo":
        return pydata.COO(r.coords.astype(idx), _np_view(r.vals, r.view), shape=r.shape,
                          has_duplicates=not (r.lie or r.canonical),
                          sorted=r.lie or r.canonical)
    if not r.canonical:
        return None
    data, indices, indptr = _compressed(r, axis)
    return pydata.GCXS((_np_view(data, r.view), indices.astype(idx), indptr.astype(idx)),
                       shape=r.shape, compressed_axes=(axis,))


SOURCES = ("scipy csr", "scipy csc", "scipy coo", "torch coo", "torch csr", "torch csc",
           "jax coo", "jax csr", "pyarrow coo", "pyarrow csr", "pyarrow csc", "sparse coo",
           "sparse csr", "sparse csc")
TARGETS = ("scipy", "torch", "jax", "pyarrow", "sparse", "numpy")


# ---- what a framework says a value holds -----------------------------------------------------
def _expand(indptr, minor, axis):
    major = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return np.stack([major, minor] if axis == 0 else [minor, major])


def entries(y) -> tuple[dict, np.dtype]:
    """The stored positions of ``y`` and their sums, and its values' dtype, each read by
    its own framework (a dense array: its non-zero positions)."""
    fw = framework_of(y)
    if fw == "scipy":
        c = y.tocoo()
        return _summed(np.stack(c.coords), c.data), c.data.dtype
    if fw == "torch":
        if y.layout == torch.strided:
            return _dense(y.numpy())
        c = y if y.layout == torch.sparse_coo else y.to_sparse_coo()
        v = c._values()
        return _summed(c._indices().numpy(), v.numpy()), np.dtype(str(v.dtype)[6:])
    if fw == "jax":
        if not isinstance(y, (js.BCOO, js.BCSR)):
            return _dense(np.asarray(y))
        c = y if isinstance(y, js.BCOO) else y.to_bcoo()
        idx, data = np.asarray(c.indices).T, np.asarray(c.data)
        inside = np.all(idx < np.array(c.shape)[:, None], axis=0)  # JAX's padding is outside
        return _summed(idx[:, inside], data[inside]), data.dtype
    if fw == "pyarrow":
        if isinstance(y, pa.FixedShapeTensorArray):  # a dense result: Arrow's own reading
            return _dense(y.to_numpy_ndarray())
        if isinstance(y, (pa.Array, pa.ChunkedArray)):
            return _dense(y.to_numpy(zero_copy_only=False))
        if isinstance(y, pa.SparseCOOTensor):
            data, coords = y.to_numpy()
            return _summed(coords.T, data.reshape(-1)), data.dtype
        data, indptr, indices = y.to_numpy()
        axis = 0 if isinstance(y, pa.SparseCSRMatrix) else 1
        return _summed(_expand(indptr, indices, axis), data.reshape(-1)), data.dtype
    if fw == "sparse":
        c = y if isinstance(y, pydata.COO) else y.tocoo()
        return _summed(c.coords, c.data), c.data.dtype
    if fw == "tensorflow":
        if not hasattr(y, "indices"):  # a dense tensor
            return _dense(y.numpy())
        return _summed(y.indices.numpy().T, y.values.numpy()), np.dtype(y.values.dtype.name)
    if fw == "paddle":
        if not y.is_sparse():
            return _dense(y.numpy())
        if y.is_sparse_coo():
            v = y.values().numpy()
            return _summed(y.indices().numpy(), v), v.dtype
        v = y.values().numpy()
        return _summed(_expand(y.crows().numpy(), y.cols().numpy(), 0), v), v.dtype
    assert isinstance(y, np.ndarray), type(y)
    return _dense(y)


def _dense(a):
    a = np.asarray(a)
    return _summed(np.stack(np.nonzero(a)), a[np.nonzero(a)]), a.dtype


def _same(got: dict, want: dict, dtype) -> bool:
    if got.keys() != want.keys():
        return False
    tol = 1e-2 if np.dtype(dtype) == np.float16 else 1e-6
    return all(np.isclose(complex(got[k]), complex(want[k]), rtol=tol, atol=tol) for k in got)


def _kept_dtype(src, got, target, fmt) -> bool:
    """The result's values keep the source's dtype, but where JAX narrows it (64-bit types
    off), as its dense rule says and warns."""
    src, got = np.dtype(src), np.dtype(got)
    if src == got:
        return True
    import jax

    narrowed = {"float64": "float32", "int64": "int32", "uint64": "uint32",
                "complex128": "complex64"}
    return (target == "jax" and not jax.config.jax_enable_x64
            and narrowed.get(src.name) == got.name)


def _immutable(x) -> bool:
    fw = framework_of(x)
    if fw in ("jax", "pyarrow", "tensorflow"):
        return True
    return fw in ("scipy", "sparse") and not x.data.flags.writeable


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", interop.NarrowingWarning)  # JAX's narrowing, named
        return fn(*a, **k)


# ---- the oracle -----------------------------------------------------------------------------
def check(x, r: Raw, target: str, fmt, wrap: bool) -> str:
    """``x`` (the value of ``r``) to ``target`` (``format=fmt``; inside a dict when ``wrap``):
    ``explain``, ``can_convert`` and the conversion agree; a refusal is an InteropError of the
    builtin that fits; a result holds the entries ``r`` holds, of its dtype; the buffers the
    plan does not name as copied are shared, ``copy=False`` refuses exactly when the plan
    copies; immutable memory stays read-only or the plan names the hazard; a write through a
    writable side shows on the other. Returns what happened (for the statistics)."""
    opts = {} if fmt is None else {"format": fmt}
    if os.environ.get("INTEROP_SPARSE_LOG"):  # each case before it runs (a crash's last line)
        with open(os.environ["INTEROP_SPARSE_LOG"], "a") as log:
            log.write(f"{framework_of(x)} {type(x).__name__} {getattr(x, 'layout', '')} -> "
                      f"{target} {fmt} wrap={wrap} shape={r.shape} {r.vals.dtype} "
                      f"{r.index_dtype} {r.order} {r.malformed} lie={r.lie} {r.view} "
                      f"coords={r.coords.tolist()} vals={r.vals.tolist()}\n")
    wrap = wrap and target in ("torch", "jax", "numpy")  # (targets of a dense leaf too)
    value = {"m": x, "y": np.arange(3)} if wrap else x
    plan = interop.explain(x, target, **opts)
    assert interop.explain(value, target, **opts).supported == plan.supported, plan
    assert interop.can_convert(value, target, **opts) == plan.supported, plan
    try:
        y = _quiet(interop.to_framework, value, target, **opts)
    except InteropError as e:
        assert isinstance(e, (TypeError, ValueError, BufferError, ImportError, MemoryError)), e
        assert not plan.supported, (plan, e)
        if r.malformed:
            assert isinstance(e, MalformedError) and plan.error == "malformed", (plan, e)
        return f"refused: {type(e).__name__}"
    assert plan.supported and not r.malformed, plan
    if wrap:
        y = y["m"]
    got, dtype = entries(y)
    want, src = entries(x)  # what the source holds, read by its framework (JAX, x64 off,
    assert want == r.want() or framework_of(x) == "jax"  # narrows what it is built of)
    assert _same(got, want, dtype), (got, want, plan)
    assert _kept_dtype(src, dtype, target, fmt), (src, dtype, plan)
    if not r.vals.size or wrap or fmt == "dense":
        return "densified" if fmt == "dense" else "converted"
    before, after = pointers(x), _pointers(y)
    if fmt is not None and fmt != _layout(x):
        assert not set(before.values()) & set(after.values()), (before, after, plan)
        return "reformatted"
    copied = _copied(plan)
    shared = {k for k, p in before.items() if after.get(k) == p}
    assert set(before) - copied <= shared, (plan, before, after)
    again = _quiet(interop.to_framework, x, target, **opts)  # the kept plan's fast form
    assert _same(entries(again)[0], want, dtype), (again, plan)
    assert shared == {k for k, p in before.items() if _pointers(again).get(k) == p}, plan
    assert plan.zero_copy == (shared == set(before)), (plan, shared)
    if plan.zero_copy:
        _quiet(interop.to_framework, x, target, copy=False, **opts)
    else:
        with pytest.raises(ZeroCopyError):
            _quiet(interop.to_framework, x, target, copy=False, **opts)
    if "data" in shared:
        if _immutable(x):
            assert _immutable(y) or (framework_of(y) in ("torch", "paddle") and plan.hazards), (
                plan)
        _write_shows(x, y)
    return "zero-copy" if plan.zero_copy else "copied"


def _write_shows(x, y) -> None:
    """A write into the first stored value of whichever side its framework lets write, read
    back on the other by its own API (a marker its dtype holds)."""
    from sparse_samples import _write_first, stored_values, writable

    for writer, reader in ((x, y), (y, x)):
        if writable(writer):
            old = stored_values(reader)[0]
            marker = (not old) if old.dtype == bool else old + 1
            _write_first(writer, marker.item() if hasattr(marker, "item") else marker)
            assert stored_values(reader)[0] == marker, (framework_of(writer),
                                                        framework_of(reader))
            return


def _pointers(y) -> dict:
    try:
        return pointers(y)
    except (AttributeError, AssertionError):  # a dense array: no sparse buffers
        return {}


def _layout(x) -> str:
    from sparse_samples import layout_of

    return layout_of(x)


def _copied(plan) -> set:
    from sparse_samples import copied_roles

    return copied_roles(plan)
