"""Issue 45: sparse values you can trust. One test per defect a random search of sparse
values found (each failed before the fix): no crash on any path, no silently wrong matrix,
no unnamed alias, dtypes kept, errors by the contract. The oracles are the frameworks' own:
densification, buffer addresses, a write read back."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
import torch

import interop
from helpers import run_child
from interop.errors import (
    InteropError,
    MalformedError,
    TooLargeError,
    UnsupportedConversionError,
    ZeroCopyError,
)
from sparse_samples import (
    TORCH_NOTICES,
    densified,
    js,
    pointers,
    pydata,
    refused_by_all_three,
    stored_values,
)

pytestmark = TORCH_NOTICES


def _decreasing_torch_csr():
    return torch.sparse_csr_tensor(torch.tensor([0, 2, 1, 3]), torch.tensor([0, 1, 2]),
                                   torch.tensor([1.0, 2.0, 3.0]), (3, 3),
                                   check_invariants=False)


# ---- item 1: checked before any framework call, on every path ------------------------------
@pytest.mark.parametrize("fmt", ["csc", "coo", "dense"])
def test_format_on_a_malformed_torch_csr_is_refused_before_torch_changes_its_layout(fmt):
    """torch's own to_sparse_csc() of decreasing crow_indices segfaulted (run in a child)."""
    done = run_child(f"""
        import torch, interop
        from interop.errors import MalformedError
        t = torch.sparse_csr_tensor(torch.tensor([0, 2, 1, 3]), torch.tensor([0, 1, 2]),
                                    torch.tensor([1.0, 2.0, 3.0]), (3, 3),
                                    check_invariants=False)
        plan = interop.explain(t, "scipy", format={fmt!r})
        assert not plan.supported and plan.error == "malformed", plan
        assert not interop.can_convert(t, "scipy", format={fmt!r})
        for target in ("scipy", "torch", "jax"):
            try:
                interop.to_framework(t, target, format={fmt!r})
            except MalformedError as e:
                assert "decreasing" in str(e), e
            else:
                raise SystemExit("no error")
        try:
            interop.to_framework([t], "scipy", format={fmt!r})
        except MalformedError as e:
            assert "decreasing" in str(e), e
        else:
            raise SystemExit("no error in a structure")
        print("ok")
        """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


def test_arrow_densifies_no_out_of_range_entry():
    """Arrow's to_tensor of an index past the shape wrote past its buffer (format='dense')."""
    done = run_child("""
        import numpy as np, pyarrow as pa, interop
        from interop.errors import MalformedError
        m = pa.SparseCSRMatrix.from_numpy(np.ones(2), np.array([0, 1, 2]),
                                          np.array([0, 900]), shape=[2, 2])
        for target in ("numpy", "torch", "scipy"):
            try:
                interop.to_framework(m, target, format="dense")
            except MalformedError as e:
                assert "indices from" in str(e), e
            else:
                raise SystemExit("no error")
        print("ok")
        """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


# ---- item 2: no silently wrong values -----------------------------------------------------
def test_int64_indices_past_int32_are_refused_by_jax_without_x64_never_wrapped(jax_cpu):
    import jax

    if jax.config.jax_enable_x64:
        pytest.skip("JAX's 64-bit types are on here")
    m = sp.coo_array((np.array([1.0, 2.0]), (np.array([0, 2**33 + 7]), np.array([0, 1]))),
                     shape=(2**34, 2))
    plan = interop.explain(m, "jax")
    assert not plan.supported and "jax_enable_x64" in plan.reasons[0], plan
    assert not interop.can_convert(m, "jax")
    with pytest.raises(UnsupportedConversionError, match="8589934599"):
        interop.to_framework(m, "jax")
    # indices that fit are kept as JAX holds them: the same matrix
    small = sp.coo_array((np.array([1.0, 2.0]), (np.array([0, 2**20]), np.array([0, 1]))),
                         shape=(2**34, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", interop.NarrowingWarning)
        b = interop.to_framework(small, "jax")
    assert np.asarray(b.indices).tolist() == [[0, 0], [2**20, 1]]


def _strided(a):
    out = np.zeros(2 * a.size, a.dtype)
    out[::2] = a
    return out[::2]


@pytest.mark.parametrize("role", ["data", "indices", "indptr"])
def test_strided_buffers_reach_arrow_compact_not_misread(role):
    m = sp.random_array((6, 5), density=0.5, format="csr", dtype=np.float64, rng=3)
    m.sort_indices()
    m.indices, m.indptr = m.indices.astype(np.int64), m.indptr.astype(np.int64)
    want = m.toarray()
    setattr(m, role, _strided(getattr(m, role)))
    assert not getattr(m, role).flags.c_contiguous
    plan = interop.explain(m, "pyarrow")
    assert any(r.startswith(f"csr {role}: copied") for r in plan.reasons), plan
    np.testing.assert_array_equal(densified(interop.to_framework(m, "pyarrow")), want)
    with pytest.raises(ZeroCopyError, match=role):
        interop.to_framework(m, "pyarrow", copy=False)


def test_a_strided_pydata_coo_reaches_arrow_compact():
    c = pydata.COO(np.array([[0, 1, 2], [2, 0, 1]]), _strided(np.array([1.0, 2.0, 3.0])),
                   shape=(3, 3))
    np.testing.assert_array_equal(densified(interop.to_framework(c, "pyarrow")), c.todense())


def test_a_gcxs_with_a_fill_value_is_refused_as_its_coo_form_is():
    c = pydata.COO(np.array([[0, 1], [1, 0]]), np.array([1.0, 2.0]), shape=(2, 2),
                   fill_value=5.0)
    for x in (c, pydata.GCXS(c)):
        plan = interop.explain(x, "scipy")
        assert not plan.supported and "fill value 5.0" in plan.reasons[0], plan
        assert not interop.can_convert(x, "scipy")
        with pytest.raises(UnsupportedConversionError, match="fill value"):
            interop.to_framework(x, "scipy")


# ---- item 3: aliases judged by addresses after the framework's call ----------------------------
def _bcsr():
    d = np.zeros((4, 5), np.float32)
    d[0, 1], d[2, 3], d[3, 0] = 1.0, 2.0, 3.0
    return js.BCSR.fromdense(d)


FORMATS = {
    "jax BCSR -> coo": (_bcsr, "coo"),
    "torch coo -> csr": (lambda: torch.eye(4).to_sparse_coo(), "csr"),
    "torch csr -> coo": (lambda: torch.eye(4).to_sparse_csr(), "coo"),
    "pydata COO -> csr": (lambda: pydata.COO.from_numpy(np.eye(4)), "csr"),
    "pydata GCXS -> coo": (lambda: pydata.GCXS.from_numpy(np.eye(4)), "coo"),
    "arrow coo -> csr": (lambda: pa.SparseCOOTensor.from_numpy(
        np.array([1.0, 2.0]), np.array([[0, 1], [1, 0]]), shape=[2, 2]), "csr"),
    "arrow csr -> coo": (lambda: pa.SparseCSRMatrix.from_numpy(
        np.array([1.0, 2.0]), np.array([0, 1, 2]), np.array([1, 0]), shape=[2, 2]), "coo"),
    "scipy csr -> coo": (lambda: sp.csr_array(np.eye(4)), "coo"),
}


@pytest.mark.parametrize("case", FORMATS)
@pytest.mark.parametrize("target", ["scipy", "torch", "sparse"])
def test_format_gives_buffers_of_its_own_as_its_plan_says(case, target, jax_cpu):
    make, fmt = FORMATS[case]
    x = make()
    plan = interop.explain(x, target, format=fmt)
    assert plan.supported and not plan.zero_copy and "every buffer of the result is new" in (
        plan.reasons[0]), plan
    y = interop.to_framework(x, target, format=fmt)
    mine = set(pointers(x).values())
    assert not mine & set(pointers(y).values()), (pointers(x), pointers(y))
    np.testing.assert_array_equal(densified(y), densified(x))


# ---- item 4: dtypes kept ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "bool", "float16"])
@pytest.mark.parametrize("target", ["torch", "sparse", "pyarrow"])
def test_summing_duplicates_keeps_the_values_dtype(dtype, target):
    if (target, dtype) in (("pyarrow", "bool"), ("sparse", "float16")):
        pytest.skip("a dtype the target refuses (test_pyarrow_refuses_what_it_cannot_hold...)")
    vals = np.array([1, 1, 1, 0], dtype)
    m = sp.csr_array((np.ones(4), np.array([2, 0, 2, 1]), np.array([0, 4])), shape=(1, 3))
    m.data = vals  # SciPy does not hold float16 itself: its buffers only
    y = interop.to_framework(m, target)
    got = stored_values(y)
    assert got.dtype == np.dtype(dtype), got.dtype
    want = np.zeros(3, dtype)
    np.add.at(want, [2, 0, 2, 1], vals)  # in the values' dtype (bool: or)
    np.testing.assert_array_equal(densified(y).reshape(-1), want)


def test_pyarrow_refuses_what_it_cannot_hold_by_all_three_calls():
    refused_by_all_three(lambda dtype: sp.csr_array(np.eye(3, dtype=dtype)), "pyarrow",
                         ("bool", "complex64"))


def test_format_on_arrow_never_turns_float16_into_float32():
    m = pa.SparseCSRMatrix.from_numpy(np.ones(2, np.float16), np.array([0, 1, 2]),
                                      np.array([1, 0]), shape=[2, 2])
    with pytest.raises(UnsupportedConversionError, match="float16"):
        interop.to_framework(m, "torch", format="coo")
    d = interop.to_framework(m, "numpy", format="dense")
    assert d.dtype == np.float16 and d.tolist() == [[0, 1], [1, 0]]


def test_n_dimensional_int32_coo_to_scipy_is_a_named_copy_of_the_coordinates():
    t = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0], [2, 1]]), torch.ones(2),
                                (2, 2, 3)).coalesce()
    b = js.BCOO((np.ones(2, np.float32), np.array([[0, 1, 2], [1, 0, 1]], np.int32)),
                shape=(2, 2, 3))
    for x in (t, b):
        plan = interop.explain(x, "scipy")
        if x is b:
            assert "coords" in " ".join(plan.reasons) and not plan.zero_copy, plan
            with pytest.raises(ZeroCopyError, match="coords"):
                interop.to_framework(x, "scipy", copy=False)
        s = interop.to_framework(x, "scipy")
        assert s.coords[0].dtype == np.int64
        np.testing.assert_array_equal(s.toarray(), densified(x))


# ---- item 5: no raw error after a yes ---------------------------------------------------
def test_a_padded_batched_jax_bcsr_is_valid_and_torch_says_why_it_refuses(jax_cpu):
    d = np.zeros((2, 3, 4), np.float32)
    d[0, 0, 1], d[0, 2, 3], d[1, 1, 1] = 1, 2, 3
    b = js.BCSR.fromdense(d, n_batch=1)  # matrix 1 holds 1 entry of the batch's 2: padded
    plan = interop.explain(b, "torch")
    assert not plan.supported and "same number of entries" in plan.reasons[0], plan
    with pytest.raises(UnsupportedConversionError, match="same number of entries"):
        interop.to_framework(b, "torch")
    again = interop.to_framework(b, "jax", copy=True)
    np.testing.assert_array_equal(np.asarray(again.todense()), d)


def test_a_one_dimensional_cupyx_coo_array_is_read_standin():
    """cupyx keeps a 1-D coo_array as an all-zeros ``row`` and its coordinate in ``col``, with
    ``shape == (N,)`` (cupy v14 ``cupyx/scipy/sparse/_coo.py``: ``coo_matrix.__init__``, its
    ``is_1d`` branch, and the ``coords`` property returning ``(col,)``). A stand-in of that
    class with host buffers (no device here); it was refused as malformed."""
    cs = pytest.importorskip("cupyx.scipy.sparse")
    m = cs.coo_array.__new__(cs.coo_array)
    for k, v in dict(data=np.array([1.0, 2.0], np.float32), row=np.zeros(2, np.int32),
                     col=np.array([4, 1], np.int32), _shape=(6,)).items():
        object.__setattr__(m, k, v)
    plan = interop.explain(m, "scipy")
    assert plan.supported, plan
    s = interop.to_framework(m, "scipy")
    assert s.shape == (6,) and s.toarray().tolist() == [0, 2, 0, 0, 1, 0]
    assert s.data.ctypes.data == m.data.ctypes.data


# ---- item 6: torch's notice never reaches the user ---------------------------------------
def test_no_torch_notice_on_format_or_with_warn_always():
    done = run_child("""
        import warnings, numpy as np, scipy.sparse as sp, torch, interop
        coo = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.ones(2), (2, 2),
                                      check_invariants=False)
        warnings.simplefilter("error")  # (after the test's own torch call)
        for _ in range(2):
            for fmt in ("csr", "csc"):
                assert interop.to_framework(coo, "torch", format=fmt).layout != torch.strided
        torch.set_warn_always(True)
        for _ in range(3):
            interop.to_framework(sp.csr_array(np.eye(3)), "torch")
            interop.to_framework(coo, "torch", format="csr")
        print("ok")
        """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


# ---- item 7: errors by the contract ---------------------------------------------------------
def test_sparse_refusals_carry_the_builtin_that_fits(jax_cpu):
    batched = torch.zeros(2, 2, 2).to_sparse_csr()
    empty = sp.coo_array((2, 2))
    half = sp.csr_array(np.eye(2, dtype=np.float32))
    half.data = half.data.astype(np.float16)
    for x, target, text in ((batched, "scipy", "dimensions"),
                            (empty, "pyarrow", "without stored entries"),
                            (half, "scipy", "float16")):
        with pytest.raises(UnsupportedConversionError, match=text) as e:
            interop.to_framework(x, target)
        assert isinstance(e.value, TypeError)


def test_format_reaches_a_torch_sparse_leaf_in_a_structure():
    t = torch.eye(3).to_sparse_csr()
    out = interop.to_framework({"a": t, "b": [sp.csr_array(np.eye(2))]}, "scipy",
                               format="coo")
    assert out["a"].format == "coo" and out["b"][0].format == "coo"
    assert interop.explain([t], "scipy", format="coo").supported


# ---- item 8: a sparse value to numpy is SciPy's sparse value ------------------------------------
def test_a_sparse_value_to_numpy_is_scipy_sparse_and_dense_only_when_asked():
    m = sp.csr_array(np.eye(3, dtype=np.float32))
    t = torch.eye(3).to_sparse_coo().coalesce()
    for x in (m, t):
        assert interop.can_convert(x, "numpy") and interop.explain(x, "numpy").supported
        s = interop.to_framework(x, "numpy")
        assert isinstance(s, sp.sparray) and s.toarray().tolist() == np.eye(3).tolist()
        assert s.data.ctypes.data == pointers(x)["data"]
        d = interop.to_framework(x, "numpy", format="dense")
        assert isinstance(d, np.ndarray) and d.tolist() == np.eye(3).tolist()
    feats, labels = interop.to_framework((m, torch.arange(3)), "numpy")
    assert feats.format == "csr" and labels.tolist() == [0, 1, 2]


# ---- item 9: explain names what it shares -------------------------------------------------
def test_a_zero_copy_plan_names_the_buffers_it_shares():
    m = sp.csr_array(np.eye(3, dtype=np.float32))
    plan = interop.explain(m, "torch")
    assert plan.zero_copy and "shared with the source (no copy): csr data, indices, indptr" in (
        plan.reasons), plan
    c = sp.coo_array(np.eye(3, dtype=np.float32))
    plan = interop.explain(c, "torch")
    assert "shared with the source (no copy): coo data" in plan.reasons, plan


def test_a_malformed_value_is_an_unsupported_plan_from_explain_and_raises_elsewhere():
    t = _decreasing_torch_csr()
    plan = interop.explain(t, "scipy")
    assert not plan.supported and plan.error == "malformed"
    assert not interop.can_convert(t, "scipy")
    with pytest.raises(MalformedError) as e:
        interop.to_framework(t, "scipy")
    assert isinstance(e.value, ValueError) and isinstance(e.value, InteropError)


# ---- found by the random search (tests/tables/test_sparse_properties.py) -------------------
def test_a_huge_format_is_refused_before_the_framework_allocates():
    m = sp.coo_array((np.ones(1), (np.array([5]), np.array([0]))), shape=(2**40, 3))
    plan = interop.explain(m, "torch", format="csr")
    assert not plan.supported and plan.error == "memory", plan
    with pytest.raises(TooLargeError) as e:
        interop.to_framework(m, "numpy", format="csr")
    assert isinstance(e.value, MemoryError)
    t = interop.to_framework(m, "torch", format="csc")
    assert t.ccol_indices().tolist() == [0, 1, 1, 1]


def test_scipy_keeps_coordinates_of_a_dimension_past_int32(jax_cpu):
    b = js.BCOO((np.ones(2, np.float32), np.array([[481, 2], [42, 0]], np.int32)),
                shape=(2**34, 4))
    plan = interop.explain(b, "scipy")
    s = interop.to_framework(b, "scipy")
    assert plan.zero_copy and s.coords[0].dtype == np.int32
    assert s.coords[0].ctypes.data == b.indices.unsafe_buffer_pointer()


def test_arrows_dense_form_sums_duplicates_as_its_sparse_forms_do():
    a = pa.SparseCOOTensor.from_numpy(np.array([1.0, -3.0]), np.array([[2], [2]]), shape=[4])
    d = interop.to_framework(a, "numpy", format="dense")
    assert d.tolist() == [0, 0, -2.0, 0]
    assert densified(interop.to_framework(a, "scipy")).tolist() == d.tolist()


def test_format_trusts_no_flag_the_user_set(jax_cpu):
    coords = np.array([[2, 0], [0, 1]], np.int32)  # unsorted, claimed sorted
    b = js.BCOO((np.array([1.0, 2.0], np.float32), coords), shape=(3, 3),
                indices_sorted=True, unique_indices=True)
    want = np.zeros((3, 3), np.float32)
    want[2, 0], want[0, 1] = 1.0, 2.0
    np.testing.assert_array_equal(densified(interop.to_framework(b, "torch", format="csr")),
                                  want)
    c = pydata.COO(np.array([[1, 1]]), np.array([1.0, -3.0]), shape=(3,),
                   has_duplicates=False, sorted=True)  # a duplicate, claimed none
    assert interop.to_framework(c, "numpy", format="dense").tolist() == [0, -2.0, 0]


def _torch_coo_over_a_transposed_view(coords, vals, shape, coalesced):
    """A torch COO tensor over a column-major index array (``torch.from_numpy`` of
    ``np.array(pairs).T``: strides (1, 2)), flagged coalesced as the user says."""
    pairs = np.array(coords, np.int64).T.tolist()
    view = np.array(pairs, np.int64).T
    assert not view.flags.c_contiguous
    return torch.sparse_coo_tensor(torch.from_numpy(view), torch.tensor(vals), shape,
                                   check_invariants=False, is_coalesced=coalesced)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize(("coords", "coalesced"), [
    ([[0, 1], [0, 0]], True),  # canonical, flagged so (found by the search, seed 20261129)
    ([[1, 0, 1], [0, 0, 0]], True),  # unsorted with a duplicate, flagged coalesced: a lie
])
def test_format_on_a_torch_coo_reads_its_indices_as_they_lie(coords, coalesced, fmt):
    """torch's to_sparse_csr() of a COO tensor flagged coalesced read a transposed index view
    as compact, and trusted the flag: {(0, 0): 1} came back for {(1, 0): 1}."""
    vals = [float(i + 1) for i in range(len(coords[0]))]
    t = _torch_coo_over_a_transposed_view(coords, vals, (2, 1), coalesced)
    want = np.zeros((2, 1))
    np.add.at(want, tuple(np.array(coords)), vals)
    for target in ("torch", "scipy"):
        y = interop.to_framework(t, target, format=fmt)
        np.testing.assert_array_equal(densified(y), want)


def test_format_on_a_torch_coo_over_a_transposed_view_corrupts_no_memory():
    """The same misreading wrote past torch's buffer: the search (seed 4511) died with
    'Fatal Python error: Aborted' (malloc_consolidate(): invalid chunk size) cases later;
    run in a child, glibc checks the heap at once."""
    done = run_child("""
        import ctypes, warnings
        import numpy as np, torch, interop
        warnings.simplefilter("ignore")
        n = 1000
        pairs = [(r, c) for r in range(2) for c in range(n)]  # canonical, flagged so
        view = np.array(pairs, np.int64).T
        t = torch.sparse_coo_tensor(torch.from_numpy(view), torch.ones(2 * n), (2, n),
                                    check_invariants=False, is_coalesced=True)
        for target in ("torch", "scipy", "jax"):
            y = interop.to_framework(t, target, format="csr")
            ctypes.CDLL("libc.so.6").malloc_trim(0)  # glibc walks its heap: corruption aborts
        assert interop.to_framework(t, "scipy", format="csr").toarray().sum() == 2 * n
        print("ok")
        """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.parametrize("target", ["torch", "scipy", "pyarrow", "jax"])
def test_a_one_dimensional_scipy_csr_is_refused_by_all_three_calls(target):
    """SciPy 1.15+ builds 1-D csr_arrays (sparse vectors): a raw IndexError from all three
    calls before (found by the paddle sparse search, seed 11); now a clear refusal whose
    advice (tocoo) converts."""
    m = sp.csr_array(np.array([0.0, 1.0, 0.0, 2.0], np.float32))
    if m.ndim != 1:
        pytest.skip("this SciPy builds no 1-D csr_array")
    assert not interop.explain(m, target).supported
    assert not interop.can_convert(m, target)
    with pytest.raises(UnsupportedConversionError, match="tocoo"):
        interop.to_framework(m, target)
    back = interop.to_framework(interop.to_framework(m.tocoo(), target), "scipy")
    assert back.toarray().ravel().tolist() == [0.0, 1.0, 0.0, 2.0]


@pytest.mark.parametrize("shape", [(4,), (2, 2, 2)])
def test_format_on_an_arrow_coo_of_other_than_two_dimensions_is_refused(shape):
    """Arrow changes a layout through SciPy's matrices (to_scipy): of a 1-D or 3-D COO tensor
    a raw IndexError before (found by the paddle sparse search, seed 23); now a refusal by
    all three calls, and the value as it is and its dense form still convert."""
    coords = np.zeros((1, len(shape)), np.int64)
    x = pa.SparseCOOTensor.from_numpy(np.array([[3.0]], np.float32), coords, shape=shape)
    assert not interop.explain(x, "torch", format="csr").supported
    assert not interop.can_convert(x, "torch", format="csr")
    with pytest.raises(UnsupportedConversionError, match="2 dimensions"):
        interop.to_framework(x, "torch", format="csr")
    dense = interop.to_framework(x, "torch", format="dense")
    assert dense.flatten().tolist() == [3.0] + [0.0] * (dense.numel() - 1)
    assert interop.to_framework(x, "torch").to_dense().equal(dense)
