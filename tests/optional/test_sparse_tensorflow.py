"""tensorflow sparse tensors with SciPy, torch, JAX, pyarrow and pydata ``sparse``, both ways,
buffer by buffer. Runs in its own pytest process (``pytest -m tensorflow``), like the other
tensorflow suites; the oracles are tests/sparse_samples.py's (each framework's own accessors and
densifying call)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import interop
from interop.errors import UnsupportedConversionError
from sparse_samples import (
    BUILDS,
    CASES,
    SOURCES,
    TARGETS,
    TORCH_NOTICES,
    check_pair,
    copied_roles,
    densified,
    quiet,
    raw,
)
from sparse_search import PROFILE, build, check, raws
from sparse_search import SOURCES as SEARCH_SOURCES
from sparse_search import TARGETS as SEARCH_TARGETS

pytestmark = [pytest.mark.tensorflow, *TORCH_NOTICES]


@pytest.fixture(scope="module")
def tf():
    import tensorflow as tf

    return tf


def _st(tf, r):
    return tf.sparse.SparseTensor(np.ascontiguousarray(r.coords.T.astype(np.int64)),
                                  r.vals, list(r.shape))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("target", TARGETS)
def test_sparse_tensor_to_every_framework(tf, target, case, jax_cpu):
    r = raw(**CASES[case])
    if not r.canonical:
        pytest.skip("a SparseTensor is kept in canonical order (tf.sparse.reorder)")
    st = _st(tf, r)
    if "coo" not in BUILDS[target]:
        pytest.skip(f"{target} has no COO values")
    if target == "pyarrow" and not r.vals.size:
        assert not interop.can_convert(st, target)
        return
    check_pair(st, target, r, "coo")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("source", SOURCES)
def test_every_framework_to_a_sparse_tensor(tf, source, case, jax_cpu):
    layout, make = SOURCES[source]
    r = raw(**CASES[case])
    x = make(r)
    if layout != "coo":
        with pytest.raises(UnsupportedConversionError, match="format="):
            interop.to_framework(x, "tensorflow")
        st = quiet(interop.to_framework, x, "tensorflow", format="coo")
        np.testing.assert_allclose(densified(st), r.dense(), rtol=1e-6)
        return
    st, plan = check_pair(x, "tensorflow", r, "coo")
    order = tf.sparse.reorder(st)  # TensorFlow agrees the result is in canonical order
    assert np.array_equal(order.indices.numpy(), st.indices.numpy())
    if not r.canonical and not source.startswith("sparse"):  # pydata sorts them itself
        assert any("sorted, distinct" in why for why in plan.reasons), plan


def test_int32_coordinates_widen_for_tensorflow_the_values_shared(tf, jax_cpu):
    r = raw(21, shape=(40, 30), density=0.2)
    b = SOURCES["jax BCOO"][1](r)
    plan = interop.explain(b, "tensorflow")
    assert copied_roles(plan) == {"coords"}, plan
    st = interop.to_framework(b, "tensorflow")
    assert st.indices.dtype == tf.int64
    np.testing.assert_allclose(tf.sparse.to_dense(st).numpy(), r.dense())


def test_a_malformed_sparse_tensor_from_tensorflow_is_refused(tf):
    st = tf.sparse.SparseTensor(np.array([[0, 0], [5, 1]], np.int64),
                                np.ones(2, np.float32), [2, 2])  # TF checks nothing here
    with pytest.raises(interop.errors.InteropError, match="along dimension 0"):
        interop.to_framework(st, "torch")
    assert not interop.can_convert(st, "scipy")


# ---- the random search of sparse values (issue 45), with TensorFlow on one side ------------
@PROFILE
@given(raws(ndims=(1, 2, 3)), st.sampled_from(SEARCH_SOURCES), st.sampled_from(SEARCH_TARGETS),
       st.sampled_from((None, None, "coo", "dense")), st.booleans())
def test_random_sparse_values_to_and_from_tensorflow(r, other, target, fmt, outward):
    """tests/sparse_search.py's oracle, TensorFlow the source (``outward``) or the target."""
    source, target = ("tensorflow coo", target) if outward else (other, "tensorflow")
    x = build(source, r)
    if x is None or (fmt == "dense" and not r.small()):
        event("not built")
        return
    event(check(x, r, target, fmt, False))


def test_an_unordered_sparse_tensor_densifies_with_duplicates_summed(tf):
    """TensorFlow's constructor takes indices out of order and repeated; its own to_dense
    raised InvalidArgumentError on them (found by the random search)."""
    st_ = tf.sparse.SparseTensor(np.array([[1, 0], [0, 2], [1, 0]], np.int64),
                                 np.array([1.0, 2.0, 3.0], np.float32), [2, 3])
    d = interop.to_framework(st_, "numpy", format="dense")
    assert d.tolist() == [[0, 0, 2.0], [4.0, 0, 0]]


def test_a_bool_sparse_tensor_densifies_with_duplicates_as_their_logical_or(tf):
    """Duplicate bool entries densify as SciPy sums them (a logical or), whatever their
    order: to_dense kept the last of them (found by the random search at 4,000 cases,
    seed 81126)."""
    import scipy.sparse as sp

    rows, cols = np.array([0, 0, 0, 1, 1]), np.array([0, 0, 0, 2, 2])
    vals = np.array([False, True, False, False, False])
    st_ = tf.sparse.SparseTensor(np.stack([rows, cols], 1).astype(np.int64), vals, [2, 3])
    want = sp.coo_array((vals, (rows, cols)), shape=(2, 3)).toarray()
    assert want.tolist() == [[True, False, False], [False, False, False]]
    d = interop.to_framework(st_, "numpy", format="dense")
    assert d.dtype == np.bool_ and d.tolist() == want.tolist()
