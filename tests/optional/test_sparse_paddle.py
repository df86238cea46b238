"""paddle sparse tensors with SciPy, torch, JAX, pyarrow and pydata ``sparse``, both ways,
buffer by buffer. Runs in its own pytest process (``pytest -m paddle``), like the other
paddle suites; the oracles are tests/sparse_samples.py's (each framework's own accessors and
densifying call)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import interop
from interop.errors import UnsupportedConversionError, ZeroCopyError
from sparse_samples import (
    CASES,
    SOURCES,
    TARGETS,
    TORCH_NOTICES,
    check_pair,
    raw,
    refused_by_all_three,
)
from sparse_search import PROFILE, build, check, raws
from sparse_search import SOURCES as SEARCH_SOURCES
from sparse_search import TARGETS as SEARCH_TARGETS

pytestmark = [pytest.mark.paddle, *TORCH_NOTICES]


@pytest.fixture(scope="module")
def paddle():
    import paddle

    return paddle


def _coo(paddle, r):
    if not r.vals.size:
        pytest.skip("paddle builds no COO tensor without entries")
    return paddle.sparse.sparse_coo_tensor(paddle.to_tensor(r.coords.astype(np.int64)),
                                           paddle.to_tensor(r.vals), list(r.shape))


def _csr(paddle, r):
    data, indices, indptr = r.compressed(0)
    return paddle.sparse.sparse_csr_tensor(paddle.to_tensor(indptr), paddle.to_tensor(indices),
                                           paddle.to_tensor(data), list(r.shape))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("target", TARGETS)
def test_paddle_sparse_to_every_framework(paddle, target, layout, case, jax_cpu):
    r = raw(**CASES[case])
    if layout == "csr" and not r.canonical:
        pytest.skip("paddle CSR tensors are built of sorted, distinct indices here")
    x = _coo(paddle, r) if layout == "coo" else _csr(paddle, r)
    if target == "pyarrow" and layout == "coo" and not r.vals.size:
        assert not interop.can_convert(x, target)
        return
    check_pair(x, target, r, layout)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("source", SOURCES)
def test_every_framework_to_paddle_sparse(paddle, source, case, jax_cpu):
    layout, make = SOURCES[source]
    r = raw(**CASES[case])
    x = make(r)
    if layout not in ("coo", "csr"):
        with pytest.raises(UnsupportedConversionError, match="format="):
            interop.to_framework(x, "paddle")
        return
    if layout == "coo" and not r.vals.size:
        assert "without stored entries" in interop.explain(x, "paddle").reasons[0]
        with pytest.raises(interop.errors.InteropError, match="format='dense'"):
            interop.to_framework(x, "paddle")
        return
    check_pair(x, "paddle", r, layout)


@pytest.mark.parametrize("target", ["torch", "pyarrow"])
def test_a_dense_paddle_tensor_keeps_its_dense_plan_between_sparse_ones(paddle, target):
    # paddle -> pyarrow starts with a step that takes any paddle tensor: the plan kept for
    # paddle.Tensor (its fast form from the second dense value on) must still send a sparse
    # tensor its own way
    dense = paddle.to_tensor(np.arange(4.0, dtype=np.float32))
    s = _coo(paddle, raw(22))
    for x in (dense, dense, dense, s, dense, s):
        y = interop.to_framework(x, target)
        sparse_result = (type(y).__name__ == "SparseCOOTensor" if target == "pyarrow"
                         else y.is_sparse)
        assert sparse_result == x.is_sparse()


# ---- the random search of sparse values (issue 45), with paddle on one side ----------------
@PROFILE
@given(raws(ndims=(1, 2, 3)), st.sampled_from(SEARCH_SOURCES), st.sampled_from(SEARCH_TARGETS),
       st.sampled_from(("coo", "csr")), st.sampled_from((None, None, "coo", "csr", "dense")),
       st.booleans())
def test_random_sparse_values_to_and_from_paddle(r, other, target, layout, fmt, outward):
    """tests/sparse_search.py's oracle, paddle the source (``outward``) or the target."""
    source, target = (f"paddle {layout}", target) if outward else (other, "paddle")
    x = build(source, r)
    if x is None or (fmt == "dense" and not r.small()):
        event("not built")
        return
    event(check(x, r, target, fmt, False))


def test_values_paddle_cannot_hold_are_refused_by_all_three_calls(paddle):
    """paddle's sparse kernels have no bool or int8 (a raw RuntimeError after explain said
    yes; found by the random search)."""
    import scipy.sparse as sp

    refused_by_all_three(lambda dtype: sp.coo_array(np.eye(3, dtype=dtype)), "paddle",
                         ("bool", "int8"))


def test_a_paddle_coo_with_duplicates_densifies_them_summed(paddle):
    """paddle's to_dense keeps one of duplicate entries (found by the random search)."""
    x = paddle.sparse.sparse_coo_tensor(paddle.to_tensor(np.array([[0, 0, 0, 0]])),
                                        paddle.to_tensor(np.array([0, 0, 1, 0], np.float32)),
                                        [1])
    assert interop.to_framework(x, "torch", format="dense").tolist() == [1.0]


def test_a_shape_past_int32_is_refused_for_paddle(paddle):
    """paddle's shapes are int32 (a raw IndexError; found by the random search)."""
    import scipy.sparse as sp

    m = sp.coo_array((np.ones(1, np.float32), (np.array([5]), np.array([0]))),
                     shape=(2**34, 3))
    assert not interop.can_convert(m, "paddle")
    with pytest.raises(UnsupportedConversionError, match="dimensions up to"):
        interop.to_framework(m, "paddle")


def test_a_strided_buffer_into_a_paddle_csr_is_copied_and_said(paddle):
    """paddle's sparse_csr_tensor copies a strided values tensor: the plan said zero-copy and
    the values were not shared (found by the random search, seed 22). Now the plan names the
    copy, copy=False refuses it, and a compact buffer is still shared."""
    import scipy.sparse as sp

    data = np.arange(6, dtype=np.float32)[::2]
    m = sp.csr_array((data, np.array([0, 0, 1], np.int32), np.array([0, 1, 3], np.int32)),
                     shape=(2, 2))
    plan = interop.explain(m, "paddle")
    assert not plan.zero_copy and "copied compact" in " ".join(plan.reasons), plan
    with pytest.raises(ZeroCopyError):
        interop.to_framework(m, "paddle", copy=False)
    got = interop.to_framework(m, "paddle")
    assert got.to_dense().numpy().tolist() == m.toarray().tolist()
    compact = sp.csr_array((data.copy(), m.indices, m.indptr), shape=(2, 2))
    shared = interop.to_framework(compact, "paddle", copy=False)
    assert shared.values().data_ptr() == compact.data.ctypes.data
