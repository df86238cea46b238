"""The compiled one-pass checks (``interop.adapters.index_kernel``) against oracles outside
interop: SciPy's own ``check_format(full_check=True)`` and ``has_canonical_format`` for
compressed indices, NumPy's reading of offsets; random values (hypothesis), valid and broken."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import interop
from interop.adapters import index_kernel
from interop.errors import MalformedError

SETTINGS = settings(max_examples=int(os.environ.get("INDEX_KERNEL_EXAMPLES", "100")),
                    deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""The CI size; ``INDEX_KERNEL_EXAMPLES=5000 pytest --hypothesis-seed=N`` is the slow run."""


@pytest.fixture(scope="module", autouse=True)
def kernel():
    """The kernel loaded (the first check of a process takes NumPy's passes)."""
    pytest.importorskip("llvmlite")
    index_kernel.functions()
    if index_kernel.functions() is None:
        pytest.fail("the index kernel did not load where llvmlite is installed")


@st.composite
def compressed(draw):
    rows, cols = draw(st.integers(0, 6)), draw(st.integers(1, 6))
    lengths = draw(st.lists(st.integers(0, 4), min_size=rows, max_size=rows))
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(draw(st.sampled_from(
        [np.int32, np.int64])))
    nnz = int(indptr[-1])
    indices = np.array(draw(st.lists(st.integers(-1, cols), min_size=nnz, max_size=nnz)),
                       dtype=draw(st.sampled_from([np.int32, np.int64])))
    if rows and draw(st.booleans()):  # a broken pointer now and then
        at = draw(st.integers(0, rows))
        indptr[at] += draw(st.sampled_from([-2, -1, 1, 2]))
    return indptr, indices, rows, cols


def scipy_verdict(indptr, indices, rows, cols):
    """``None`` where SciPy refuses the arrays, else (canonical, largest index or -1). SciPy
    lets storage run past the last pointer (its nnz); interop's kinds store exactly the
    entries the pointers reach, so a last pointer other than the indices' count is refused;
    SciPy's full check reads the pointers' order only for a value with entries, interop's
    for every value (NumPy's np.diff says it here)."""
    if indptr[-1] != len(indices) or (np.diff(indptr) < 0).any():
        return None
    try:
        m = sp.csr_array((np.ones(len(indices)), indices, indptr), shape=(rows, cols))
        m.check_format(full_check=True)
    except ValueError:
        return None
    return bool(m.has_canonical_format), int(indices.max()) if len(indices) else -1


@SETTINGS
@given(compressed())
def test_csr_kernel_agrees_with_scipy(case):
    indptr, indices, rows, cols = case
    assert index_kernel.check_csr(indptr, indices, cols) == scipy_verdict(
        indptr, indices, rows, cols)


@SETTINGS
@given(compressed())
def test_conversion_refuses_what_scipy_refuses(case):
    """Through the registry (the kernel inside the sparse check): a broken value is a
    MalformedError, a valid one densifies as SciPy densifies it."""
    indptr, indices, rows, cols = case
    verdict = scipy_verdict(indptr, indices, rows, cols)
    m = sp.csr_array((rows, cols))
    m.data, m.indices, m.indptr = np.arange(1.0, len(indices) + 1), indices, indptr
    if verdict is None:
        with pytest.raises(MalformedError):
            interop.to_framework(m, "torch")
        return
    t = interop.to_framework(m, "torch")
    np.testing.assert_array_equal(t.to_dense().numpy(), m.toarray())


@SETTINGS
@given(st.lists(st.integers(-2, 12), min_size=1, max_size=12), st.integers(0, 10),
       st.sampled_from([np.int32, np.int64]))
def test_offsets_kernel_agrees_with_numpy(offsets, items, dtype):
    o = np.array(offsets, dtype=dtype)
    valid = bool(o[0] >= 0 and o[-1] <= items and np.all(np.diff(o) >= 0))
    assert index_kernel.offsets_ok(o, items) is valid


def test_kernel_reads_only_what_it_can():
    """Strided, non-native and other dtypes go to NumPy's check (``None``)."""
    indptr, indices = np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32)
    assert index_kernel.check_csr(indptr, indices, 2) == (True, 1)
    assert index_kernel.check_csr(indptr, np.array([0, 9, 1, 9], np.int32)[::2], 2) is None
    assert index_kernel.check_csr(indptr.astype(">i4"), indices, 2) is None
    assert index_kernel.check_csr(indptr.astype(np.int16), indices, 2) is None
    assert index_kernel.offsets_ok(np.array([0, 1], np.uint64), 1) is None
