"""Sparse values between SciPy, torch, JAX, pyarrow and pydata ``sparse``: every pair both
ways, buffer by buffer. Truth comes from outside interop: each framework's own accessors for
the buffers' addresses (``m.data.ctypes.data``, ``t.values().data_ptr()``,
``BCOO.data.unsafe_buffer_pointer()`` ...) and its own densifying call for the values."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import interop
from interop.errors import (
    InteropError,
    MalformedError,
    UnsupportedConversionError,
    ZeroCopyError,
)
from sparse_samples import (
    BUILDS,
    CASES,
    SOURCES,
    TARGETS,
    TORCH_NOTICES,
    assert_a_write_shows,
    copied_roles,
    densified,
    framework_of,
    jax_maker,
    js,
    layout_of,
    pointers,
    quiet,
    raw,
    scipy_maker,
    writable,
)

pytestmark = TORCH_NOTICES
# ---- every pair, both ways ------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", SOURCES)
def test_every_pair_keeps_values_and_format_and_shares_every_buffer_not_named_copied(
        source, target, case, jax_cpu):
    layout, make = SOURCES[source]
    r = raw(**CASES[case])
    x = make(r)
    plan = interop.explain(x, target)
    assert interop.can_convert(x, target) == plan.supported
    if layout not in BUILDS[target]:
        assert not plan.supported and "format=" in plan.reasons[0], plan
        with pytest.raises(UnsupportedConversionError, match="format="):
            interop.to_framework(x, target)
        return
    if target == "pyarrow" and layout == "coo" and not r.vals.size:
        assert not plan.supported and "no coo value without stored entries" in plan.reasons[0]
        with pytest.raises(InteropError, match="format='dense'"):
            interop.to_framework(x, target)
        return
    assert plan.supported, plan
    src_ptrs = pointers(x)
    y = quiet(interop.to_framework, x, target)
    assert framework_of(y) == target and layout_of(y) == layout
    np.testing.assert_allclose(densified(y), r.dense(), rtol=1e-6, atol=1e-6)
    if not r.vals.size:
        return
    shared = {role for role, p in pointers(y).items() if p == src_ptrs[role]}
    not_copied = set(src_ptrs) - copied_roles(plan)
    assert not_copied <= shared, (plan, shared)
    assert plan.zero_copy == (shared == set(src_ptrs)), (plan, shared)
    assert interop.shares_memory(x, y) == bool(shared)
    if "data" in shared:  # and a write through one side is read back on the other
        immutable = framework_of(x) in ("jax", "pyarrow")
        if target in ("scipy", "sparse"):  # memory its source treats as read-only stays so
            assert writable(y) != immutable, (framework_of(x), target)
        assert assert_a_write_shows(x, y) == (not immutable or target == "torch")
    # copy=False: the result shares every buffer, or the refusal names what would copy
    if plan.zero_copy:
        again = quiet(interop.to_framework, x, target, copy=False)
        assert pointers(again) == pointers(y)
    else:
        with pytest.raises(ZeroCopyError):
            quiet(interop.to_framework, x, target, copy=False)
        assert interop.explain(x, target, copy=False).error == "zero-copy"
        assert not interop.can_convert(x, target, copy=False)


# ---- what a framework cannot build is refused by all three calls, in interop's words --------
def _coo16(fw):
    coords, vals = np.array([[0, 1], [1, 0]]), np.array([1.0, 2.0], np.float16)
    if fw == "torch":
        return torch.sparse_coo_tensor(torch.from_numpy(coords), torch.from_numpy(vals), (2, 2))
    return js.BCOO((vals, coords.T.astype(np.int32)), shape=(2, 2))


REFUSED = {  # found by a random search: each raised the framework's own error before
    "float16 torch -> scipy": (lambda: _coo16("torch"), "scipy", {}, "scipy holds sparse"),
    "float16 jax -> scipy": (lambda: _coo16("jax"), "scipy", {}, "scipy holds sparse"),
    "float16 torch -> sparse csr": (lambda: _coo16("torch"), "sparse", {"format": "csr"},
                                    "sparse holds sparse"),
    "1-D jax BCOO to csr": (
        lambda: js.BCOO((np.ones(2, np.float32), np.array([[0], [2]], np.int32)), shape=(4,)),
        "jax", {"format": "csr"}, "format='csr': jax.sparse cannot turn this coo value"),
    "1-D torch COO to csr": (
        lambda: torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.ones(2), (4,)),
        "torch", {"format": "csr"}, "format='csr': torch.sparse cannot turn this coo value"),
    "torch BSR to csr": (
        lambda: torch.eye(3).to_sparse_bsr((1, 1)), "torch", {"format": "csr"},
        "format='csr': torch.sparse cannot turn this bsr value"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_what_a_framework_cannot_build_is_refused_by_explain_can_convert_and_the_conversion(
        case, jax_cpu):
    make, target, opts, words = REFUSED[case]
    plan = quiet(interop.explain, make(), target, **opts)
    assert not plan.supported and words in plan.reasons[-1], plan
    assert not quiet(interop.can_convert, make(), target, **opts)
    with pytest.raises(InteropError, match=re.escape(words)):
        quiet(interop.to_framework, make(), target, **opts)


# ---- zero-copy shown by a write, and the pairs the issue names ----------------------------
@pytest.mark.parametrize("source", ["jax BCOO", "jax BCSR", "pyarrow csr", "pyarrow csc",
                                    "pyarrow coo"])
def test_values_of_an_immutable_source_stay_read_only_or_carry_the_hazard(source, jax_cpu):
    """JAX's and Arrow's buffers are immutable (pyarrow's ``to_numpy`` of a sparse tensor
    hands them out writable all the same): SciPy and pydata results view them read-only;
    torch, which has no read-only tensor, gets them with the hazard in the plan, also where
    another buffer (JAX's int32 coordinates) is copied."""
    x = SOURCES[source][1](raw(8, shape=(20, 30), density=0.2))
    for target in ("scipy", "sparse"):
        y = quiet(interop.to_framework, x, target)
        assert pointers(y)["data"] == pointers(x)["data"] and not writable(y), target
    plan = interop.explain(x, "torch")
    t = quiet(interop.to_framework, x, "torch")
    assert pointers(t)["data"] == pointers(x)["data"] and assert_a_write_shows(x, t)
    assert any("cannot be read-only" in h for h in plan.hazards), plan


def test_scipy_csr_to_torch_csr_shares_all_three_buffers_int32_kept_and_a_write_shows():
    m = scipy_maker("csr")(raw(11, shape=(50, 40), density=0.1))
    t = quiet(interop.to_framework, m, "torch", copy=False)
    assert t.layout == torch.sparse_csr and t.col_indices().dtype == torch.int32
    assert t.values().data_ptr() == m.data.ctypes.data
    assert t.crow_indices().data_ptr() == m.indptr.ctypes.data
    assert t.col_indices().data_ptr() == m.indices.ctypes.data
    m.data[0] = 123.0  # one buffer: the write through SciPy is seen by the tensor
    assert t.values()[0].item() == 123.0
    back = interop.to_framework(t, "scipy", copy=False)
    assert back.data.ctypes.data == m.data.ctypes.data and back.has_canonical_format
    assert interop.shares_memory(m, t) and interop.shares_memory(t, back)


def test_torch_coo_to_scipy_shares_values_and_coordinates_and_carries_the_coalesced_flag():
    i = torch.tensor([[0, 1, 1], [2, 0, 2]])
    t = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0, 3.0]), (2, 3)).coalesce()
    m = interop.to_framework(t, "scipy", copy=False)
    assert m.format == "coo" and m.has_canonical_format
    assert m.data.ctypes.data == t._values().data_ptr()
    assert m.coords[0].ctypes.data == t._indices().data_ptr()
    t._values()[1] = 20.0
    assert m.toarray()[1, 0] == 20.0
    u = torch.sparse_coo_tensor(i[:, [2, 0, 1]], torch.tensor([3.0, 1.0, 2.0]), (2, 3))
    assert not interop.to_framework(u, "scipy").has_canonical_format  # checked, not trusted
    assert interop.to_framework(interop.to_framework(t, "scipy"), "torch").is_coalesced()


def test_int32_coo_indices_into_torch_widen_the_indices_only(jax_cpu):
    b = jax_maker("coo")(raw(12, shape=(30, 20), density=0.2))
    assert b.indices.dtype == np.int32
    plan = interop.explain(b, "torch")
    assert not plan.zero_copy and copied_roles(plan) == {"coords"}, plan
    assert any("widened to int64" in r for r in plan.reasons), plan
    t = interop.to_framework(b, "torch")
    assert t._values().data_ptr() == b.data.unsafe_buffer_pointer()  # values not copied
    assert t._indices().dtype == torch.int64
    with pytest.raises(ZeroCopyError, match="coords"):
        interop.to_framework(b, "torch", copy=False)


def test_coo_coordinates_cross_layouts_as_a_view_where_the_target_takes_one_else_compact():
    t = torch.sparse_coo_tensor(torch.tensor([[0, 2, 3], [1, 0, 2]]), torch.ones(3), (4, 3))
    s = interop.to_framework(t, "sparse", copy=False)  # (ndim, nnz) both sides
    assert s.coords.ctypes.data == t._indices().data_ptr()
    a = interop.to_framework(t, "pyarrow")  # Arrow: compact (nnz, ndim): the coords copy
    plan = interop.explain(t, "pyarrow")
    assert copied_roles(plan) == {"coords"}, plan
    assert a.to_numpy()[0].ctypes.data == t._values().data_ptr()
    back = interop.to_framework(a, "torch")  # (nnz, ndim) -> torch: compact, a named copy
    assert copied_roles(interop.explain(a, "torch")) == {"coords"}
    assert back._indices().data_ptr() != a.to_numpy()[1].ctypes.data
    assert back._indices().is_contiguous() and back._values().data_ptr() == (
        a.to_numpy()[0].ctypes.data)
    assert torch.equal(back.to_dense(), t.to_dense())
    # torch's own layout change of the result is the same matrix (a transposed view of the
    # coordinates made it another one, issue 45 item 3)
    assert torch.equal(back.coalesce().to_sparse_csr().to_dense(), t.to_dense())


def test_unsorted_csr_into_torch_is_sorted_with_duplicates_summed_a_named_copy():
    m = sp.csr_array((np.array([1.0, 2.0, 5.0], np.float32), np.array([2, 0, 2], np.int32),
                      np.array([0, 3], np.int32)), shape=(1, 4))
    plan = interop.explain(m, "torch")
    assert copied_roles(plan) == {"data", "indices", "indptr"}
    assert any("sorted, distinct" in r for r in plan.reasons), plan
    t = interop.to_framework(m, "torch")
    assert t.col_indices().tolist() == [0, 2] and t.values().tolist() == [2.0, 6.0]
    # torch's own invariant check agrees the result is valid
    torch.sparse.check_sparse_tensor_invariants.enable()
    try:
        torch._validate_sparse_csr_tensor_args(t.crow_indices(), t.col_indices(), t.values(),
                                               t.shape)
    finally:
        torch.sparse.check_sparse_tensor_invariants.disable()
    with pytest.raises(ZeroCopyError, match="sorted"):
        interop.to_framework(m, "torch", copy=False)
    # SciPy takes it as it is, its flag saying so
    s = interop.to_framework(m, "scipy", copy=False)
    assert not s.has_canonical_format and s.data.ctypes.data == m.data.ctypes.data


# ---- format= ------------------------------------------------------------------------------
def test_format_changes_the_layout_only_when_asked_and_dense_is_the_only_way_to_densify(
        jax_cpu):
    m = scipy_maker("csc")(raw(13))
    with pytest.raises(UnsupportedConversionError, match="format="):
        interop.to_framework(m, "jax")
    b = interop.to_framework(m, "jax", format="csr")
    assert isinstance(b, js.BCSR)
    np.testing.assert_array_equal(np.asarray(b.todense()), m.toarray())
    d = interop.to_framework(m, "torch", format="dense")
    assert d.layout == torch.strided and np.array_equal(d.numpy(), m.toarray())
    with pytest.raises(ZeroCopyError, match="format="):
        interop.to_framework(m, "torch", format="csr", copy=False)
    plan = interop.explain(m, "torch", format="coo")
    assert plan.supported and not plan.zero_copy and "format='coo'" in plan.reasons[0]
    same = interop.to_framework(m, "torch", format="csc", copy=False)  # the same layout
    assert same.values().data_ptr() == m.data.ctypes.data
    with pytest.raises(InteropError, match="format"):
        interop.to_framework(np.ones(3), "torch", format="csr")  # a dense value has no format
    t = torch.eye(3).to_sparse_csr()
    assert interop.to_framework(t, "numpy", format="dense").tolist() == np.eye(3).tolist()
    s = interop.to_framework(t, "numpy")  # a sparse value to numpy: SciPy's sparse array
    assert s.format == "csr" and s.data.ctypes.data == t.values().data_ptr()


# ---- batched and n-D ------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_three_dimensional_coo_goes_to_every_framework(target, jax_cpu):
    r = raw(14, shape=(3, 4, 5), density=0.2, index_dtype=np.int64)
    t = torch.sparse_coo_tensor(torch.from_numpy(r.coords), torch.from_numpy(r.vals), r.shape)
    y = quiet(interop.to_framework, t, target)
    assert layout_of(y) == "coo" and tuple(y.shape) == (3, 4, 5)
    np.testing.assert_allclose(densified(y), r.dense())
    back = quiet(interop.to_framework, y, "torch")
    assert torch.equal(back.to_dense(), t.to_dense())


def test_batched_csr_between_torch_and_jax_bcsr_and_refused_by_scipy(jax_cpu):
    dense = torch.zeros(2, 3, 4)
    dense[0, 1, 2], dense[0, 2, 0], dense[1, 0, 3], dense[1, 2, 1] = 1.0, 2.0, 3.0, 4.0
    t = dense.to_sparse_csr()  # a batch of two 3 x 4 matrices, two entries each
    b = quiet(interop.to_framework, t, "jax")
    assert isinstance(b, js.BCSR) and b.n_batch == 1
    np.testing.assert_array_equal(np.asarray(b.todense()), dense.numpy())
    back = quiet(interop.to_framework, b, "torch")
    assert torch.equal(back.to_dense(), dense)
    with pytest.raises(InteropError, match="dimensions"):
        interop.to_framework(t, "scipy")


# ---- malformed values: refused with a clear error, never handed to a framework ------------
BAD = {
    "index out of range": ((np.ones(2), np.array([5, 0]), np.array([0, 2])), "indices from"),
    "negative index": ((np.ones(2), np.array([-1, 0]), np.array([0, 2])), "indices from"),
    "decreasing indptr": ((np.ones(2), np.array([0, 1]), np.array([0, 2, 1, 2])),
                          "decreasing"),
    "indptr past nnz": ((np.ones(2), np.array([0, 1]), np.array([0, 3])), "running from 0 to 3"),
}


@pytest.mark.parametrize("case", BAD)
@pytest.mark.parametrize("target", TARGETS)
def test_a_malformed_csr_is_refused_clearly_by_convert_explain_and_can_convert(case, target):
    (data, indices, indptr), message = BAD[case]
    m = sp.csr_matrix((3, 3))  # SciPy checks none of this when attributes are set
    m.data, m.indices, m.indptr = data, indices.astype(np.int32), indptr.astype(np.int32)
    m._shape = (len(indptr) - 1, 3)
    with pytest.raises(MalformedError, match=message):
        interop.to_framework(m, target)
    plan = interop.explain(m, target)
    assert not plan.supported and message in plan.reasons[0]
    assert not interop.can_convert(m, target)


def test_a_malformed_coo_from_torch_is_refused_before_torch_or_scipy_sees_it():
    # torch builds it without checking (its invariant checks are off by default)
    t = torch.sparse_coo_tensor(torch.tensor([[0, 7], [1, 0]]), torch.ones(2), (2, 2),
                                check_invariants=False)
    for target in ("scipy", "jax", "sparse", "pyarrow"):
        with pytest.raises(MalformedError, match="along dimension 0"):
            interop.to_framework(t, target)


# ---- structures ---------------------------------------------------------------------------
def test_a_sparse_leaf_in_a_structure_takes_the_same_way():
    m = scipy_maker("csr")(raw(15))
    batch = {"adjacency": m, "features": np.ones((7, 2), np.float32), "n": 3}
    out = quiet(interop.to_framework, batch, "torch")
    assert out["adjacency"].layout == torch.sparse_csr
    assert out["adjacency"].values().data_ptr() == m.data.ctypes.data
    assert out["features"].layout == torch.strided and out["n"] == 3
    again = quiet(interop.to_framework, {"a": out["adjacency"]}, "scipy")
    assert again["a"].data.ctypes.data == m.data.ctypes.data


def test_dense_torch_plans_still_serve_dense_tensors_after_sparse_ones_and_back():
    dense, sparse_t = torch.arange(4.0), torch.eye(3).to_sparse()
    for x in (dense, sparse_t, dense, sparse_t, dense):  # the plan kept for torch.Tensor
        y = interop.to_framework(x, "scipy" if x.layout != torch.strided else "numpy")
        if x.layout == torch.strided:
            assert y.ctypes.data == x.data_ptr()
        else:
            assert y.format == "coo" and y.data.ctypes.data == x._values().data_ptr()


def test_scipy_is_handed_views_of_larger_buffers_without_its_constructor_copying_them():
    # SciPy's constructor copies a view of a base more than twice its size (_prune_array):
    # an aligned view, or a slice of a bigger buffer, as another framework's buffers can be
    from sparse_samples import pydata

    big = np.arange(100, dtype=np.float32)
    g = pydata.GCXS((big[10:13], np.array([0, 2, 1]), np.array([0, 2, 3])), shape=(2, 3),
                    compressed_axes=(0,))
    assert g.data.ctypes.data == big[10:].ctypes.data
    m = interop.to_framework(g, "scipy", copy=False)
    assert m.data.ctypes.data == g.data.ctypes.data
    np.testing.assert_array_equal(m.toarray(), g.todense())


# ---- CuPy sparse: read from cupyx's source, exercised on stand-ins (no GPU here) ----------
def _cupyx_standin(cls, **attrs):
    """A value of cupyx's own class ``cls`` whose buffers are host arrays (a stand-in: on a
    GPU they are CuPy arrays), made without cupyx's constructor (which needs a device)."""
    value = cls.__new__(cls)
    for k, v in attrs.items():
        object.__setattr__(value, k, v)
    return value


def test_cupyx_sparse_values_are_read_buffer_by_buffer_standin():
    """On a stand-in of a cupyx matrix (host buffers)."""
    cs = pytest.importorskip("cupyx.scipy.sparse")
    from interop.adapters import cupy_
    from interop.api import REGISTRY

    data, indices, indptr = (np.ones(3, np.float32), np.array([0, 2, 1], np.int32),
                             np.array([0, 2, 3], np.int32))
    m = _cupyx_standin(cs.csr_array, data=data, indices=indices, indptr=indptr,
                       _shape=(2, 3))
    assert REGISTRY.composite(m) is cupy_.SPARSE  # recognised by cupyx's own classes
    parts = cupy_.SPARSE.parts(m)
    assert parts.layout == "csr" and parts.get("shape") == (2, 3)
    assert [(r, a is b) for (r, a), b in zip(parts.arrays, (data, indices, indptr))] == [
        ("data", True), ("indices", True), ("indptr", True)]
    assert REGISTRY.builder("cupy", "csr") is cupy_.SPARSE
    assert set(REGISTRY.layouts("cupy")) == {"csr", "csc", "coo"}


def test_cupyx_sparse_is_rebuilt_as_an_array_class_keeping_the_index_dtype_standin(
        monkeypatch):
    from interop.adapters import cupy_
    from interop.adapters.base import Parts
    from interop.api import REGISTRY

    calls = []

    class CsrArrayStandIn:  # cupyx.scipy.sparse.csr_array keeps the index dtype it is given
        def __init__(self, arg, shape):
            calls.append((arg, shape))

    standin = type(sys)("cupyx.scipy.sparse")
    standin.csr_array = CsrArrayStandIn
    monkeypatch.setitem(sys.modules, "cupyx.scipy.sparse", standin)
    arrays = (("data", np.ones(2)), ("indices", np.array([0, 1], np.int64)),
              ("indptr", np.array([0, 1, 2], np.int64)))
    cupy_.SPARSE.rebuild(REGISTRY, Parts("csr", arrays, (("shape", (2, 2)),
                                                         ("canonical", True))), "cupy")
    (arg, shape), = calls
    assert shape == (2, 2) and all(a is b for a, (_, b) in zip(arg, arrays))


class _CupyxCompressedStandIn:
    """cupyx 14.2's compressed arrays (``cupyx/scipy/sparse/_compressed.py``): without a
    value set, ``has_canonical_format`` runs a kernel and synchronises (recorded here); its
    setter caches the flag (and sorted indices with it)."""

    def __init__(self, arg, shape):
        self.kernels = 0

    @property
    def has_canonical_format(self):
        if not hasattr(self, "_has_canonical_format"):
            self.kernels += 1  # _has_canonical_format_kern(...).all(): synchronize!
            self._has_canonical_format = True
        return self._has_canonical_format

    @has_canonical_format.setter
    def has_canonical_format(self, val):
        self._has_canonical_format = bool(val)


class _CupyxCooStandIn:
    """cupyx 14.2's ``coo_array`` (``_coo.py``): ``has_canonical_format`` is a plain attribute,
    False from the tuple constructor, so ``sum_duplicates`` sorts again unless it is set."""

    def __init__(self, arg, shape):
        self.has_canonical_format = False


@pytest.mark.parametrize("layout", ["csr", "csc", "coo"])
@pytest.mark.parametrize("checked", [True, False])
def test_cupyx_is_told_the_indices_interop_checked_are_canonical_standin(monkeypatch, layout,
                                                                          checked):
    from interop.adapters import cupy_
    from interop.adapters.base import Parts
    from interop.api import REGISTRY

    standin = type(sys)("cupyx.scipy.sparse")
    standin.csr_array = standin.csc_array = _CupyxCompressedStandIn
    standin.coo_array = _CupyxCooStandIn
    monkeypatch.setitem(sys.modules, "cupyx.scipy.sparse", standin)
    if layout == "coo":
        arrays = (("data", np.ones(2)), ("coords", np.array([[0, 1], [1, 0]])))
    else:
        arrays = (("data", np.ones(2)), ("indices", np.array([0, 1])),
                  ("indptr", np.array([0, 1, 2])))
    m = cupy_.SPARSE.rebuild(REGISTRY, Parts(layout, arrays, (("shape", (2, 2)),
                                                              ("canonical", checked))), "cupy")
    if layout == "coo":
        assert m.has_canonical_format is checked  # else cupyx sorts again
    else:  # told when checked; left to cupyx's own kernel when not known
        assert m.has_canonical_format and m.kernels == (0 if checked else 1)


def test_a_value_dtype_cupyx_lacks_is_refused_before_any_copy_standin():
    """No device: the refusal comes first (its cupyx rule is read from source, a stand-in
    for a run)."""
    pytest.importorskip("cupyx.scipy.sparse")
    m = sp.csr_array((np.ones(2, np.int16), np.array([0, 1]), np.array([0, 1, 2])),
                     shape=(2, 2))
    plan = interop.explain(m, "cupy")
    assert not plan.supported and "int16" in plan.reasons[0], plan


# ---- on a GPU: written from the frameworks' sources, awaiting a device run ---------------
@pytest.mark.gpu
def test_a_torch_cuda_csr_tensor_goes_to_cupyx_and_back_sharing_its_buffers():
    cupy = pytest.importorskip("cupy")
    cs = pytest.importorskip("cupyx.scipy.sparse")
    dense = torch.zeros(4, 5, device="cuda")
    dense[0, 1], dense[2, 3], dense[3, 0] = 1.0, 2.0, 3.0
    t = dense.to_sparse_csr()  # int64 indices
    m = interop.to_framework(t, "cupy", copy=False)
    assert isinstance(m, cs.csr_array) and m.indices.dtype == cupy.int64
    assert m.data.data.ptr == t.values().data_ptr()
    assert m.indices.data.ptr == t.col_indices().data_ptr()
    assert m.indptr.data.ptr == t.crow_indices().data_ptr()
    np.testing.assert_array_equal(cupy.asnumpy(m.toarray()), dense.cpu().numpy())
    back = interop.to_framework(m, "torch", copy=False)
    assert back.layout == torch.sparse_csr and back.values().data_ptr() == m.data.data.ptr
    host = interop.to_framework(t, "scipy", device="cpu")  # device to host: explicit, a copy
    np.testing.assert_array_equal(host.toarray(), dense.cpu().numpy())


def test_coordinates_past_int64_positions_are_checked_and_sorted_without_overflow():
    # a 3-D shape of 2**62 positions (past the linear check's bound): checked and sorted
    # dimension by dimension
    big = (2**20, 2**21, 2**21)
    coords = torch.tensor([[5, 1, 1], [0, 2, 2], [0, 3, 3]])  # unsorted, a duplicate
    t = torch.sparse_coo_tensor(coords, torch.tensor([1.0, 2.0, 3.0]), big)
    s = interop.to_framework(t, "sparse")  # pydata sparse takes sorted, distinct entries
    assert s.coords.tolist() == [[1, 5], [2, 0], [3, 0]] and s.data.tolist() == [5.0, 1.0]
    m = interop.to_framework(t.coalesce(), "scipy")
    assert m.has_canonical_format


def test_a_shape_of_more_positions_than_int64_holds_is_checked_without_overflow(jax_cpu):
    from sparse_samples import pydata

    coords = np.array([[5, 0, 0], [1, 2, 2], [1, 3, 3]])  # unsorted, a duplicate
    s = pydata.COO(coords, np.array([1.0, 2.0, 3.0]), shape=(2**31,) * 3, sorted=True,
                   has_duplicates=False)  # pydata trusts the flags it is given
    b = quiet(interop.to_framework, s, "jax")
    assert not b.indices_sorted and not b.unique_indices  # what the check found
    assert np.asarray(b.indices).tolist() == coords.T.tolist()


def test_no_torch_notice_reaches_the_user_through_a_conversion():
    # a fresh process (torch warns once per process), UserWarning as an error (issue 36)
    import subprocess
    import textwrap

    code = textwrap.dedent("""
        import threading, warnings
        import numpy as np, scipy.sparse as sp, torch
        import interop
        m = sp.random_array((5, 6), density=0.4, format="csr", dtype=np.float32, rng=1)
        filters = list(warnings.filters)  # (after torch's import, which adds its own)
        go = threading.Barrier(4)

        def build():  # four threads at the first compressed build: no filter left behind
            go.wait()
            for fmt in ("csr", "csc", "coo", "bsr"):
                interop.to_framework(m.asformat(fmt), "torch")

        threads = [threading.Thread(target=build) for _ in range(4)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert warnings.filters == filters, warnings.filters
        for fmt in ("csr", "csc", "coo", "bsr"):  # and later builds (torch warns once only)
            interop.to_framework(m.asformat(fmt), "torch")
        interop.to_framework(interop.to_framework(m, "torch"), "scipy")
    """)
    r = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]



def test_coordinates_that_merely_lie_evenly_spaced_are_stacked_not_viewed():
    """SciPy COO coordinate arrays of different owners that happen to lie evenly spaced in
    memory are not one buffer: a view over them through the first would keep only the first
    alive (a fresh-clone run segfaulted reading a freed row), so they are stacked (a copy);
    rows of one base array stay one view over it."""
    from interop.adapters.scipy_ import _coords

    big = np.array([0, 1, 2, 0, 1, 2], dtype=np.int32)
    row = big[:3]
    col = np.frombuffer(memoryview(big), dtype=np.int32)[3:]  # the same bytes, another owner
    assert col.ctypes.data == row.ctypes.data + row.nbytes and col.base is not row.base
    coords, copied = _coords((row, col))
    assert copied and coords.ctypes.data not in (row.ctypes.data, col.ctypes.data)
    assert coords.tolist() == [[0, 1, 2], [0, 1, 2]]
    coords, copied = _coords((big[:3], big[3:]))  # rows of one base array
    assert not copied and coords.ctypes.data == big.ctypes.data
