"""The random search of sparse values (issue 45): every source framework and layout, every
target and ``format=``, index dtypes, huge shapes with few entries, duplicates, unsorted
entries, lying flags, strided and read-only buffers, malformations, every value dtype, and
leaves inside structures; the oracle is :func:`sparse_search.check` (the frameworks' own
accessors). Fast in CI; ``INTEROP_SPARSE_SEARCH=slow`` with ``--hypothesis-seed=N`` runs the
slow profile by hand (tests/sparse_search.py)."""

from __future__ import annotations

from hypothesis import event, given
from hypothesis import strategies as st

from sparse_samples import TORCH_NOTICES
from sparse_search import FORMATS, PROFILE, SOURCES, TARGETS, build, check, raws

pytestmark = TORCH_NOTICES


@PROFILE
@given(raws(), st.sampled_from(SOURCES), st.sampled_from(TARGETS), st.sampled_from(FORMATS),
       st.booleans())
def test_random_sparse_values_convert_as_their_frameworks_say(r, source, target, fmt, wrap):
    x = build(source, r)
    if x is None or (fmt == "dense" and not r.small()):
        event("not built")
        return
    event(check(x, r, target, fmt, wrap))


@PROFILE
@given(raws(ndims=(1, 3)), st.sampled_from(["scipy coo", "torch coo", "jax coo",
                                             "pyarrow coo", "sparse coo"]),
       st.sampled_from(TARGETS), st.sampled_from((None, "dense")))
def test_random_coo_values_of_other_dimensions(r, source, target, fmt):
    x = build(source, r)
    if x is None or (fmt == "dense" and not r.small()):
        event("not built")
        return
    event(check(x, r, target, fmt, False))
