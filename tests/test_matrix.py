"""The conversion matrix: every CPU source x target x dtype x layout the source can express.

For each cell: the values survive; every zero-copy claim of the plan is proved by data
pointers and by a write through one side seen on the other; ``copy=False`` raises exactly
when the plan needs a copy; ``copy=True`` never shares memory; unsupported cells raise
``UnsupportedConversionError`` naming the dtype or shape.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import interop
from interop.errors import NarrowingWarning, UnsupportedConversionError, ZeroCopyError
from matrix_samples import (
    DTYPES,
    NARROWED,
    ONE_D,
    SOURCE_DTYPES,
    SOURCE_LAYOUTS,
    TARGET_DTYPES,
    TARGETS,
    as_numpy,
    build,
    marker,
    poke,
    raw_pointer,
    writable,
)

pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("polars")

CASES = [
    pytest.param(src, dt, lay, tgt, id=f"{src}-{dt}-{lay}-{tgt}")
    for src in SOURCE_LAYOUTS
    for dt in SOURCE_DTYPES[src]
    for lay in SOURCE_LAYOUTS[src]
    for tgt in TARGETS
    # pyarrow/polars samples of booleans are bit-packed: no "offset" pointer to prove.
]


def _expected_unsupported(src: str, dt: str, lay: str, tgt: str, shape: tuple) -> bool:
    if dt not in TARGET_DTYPES[tgt]:
        return True
    return tgt in ONE_D and len(shape) != 1


def _same_values(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def _norm(msg: str) -> str:
    """A message with its addresses blanked (each sample lives at a new address)."""
    return re.sub(r"0x[0-9a-f]+|\d{6,}", "N", msg)


def _fresh(src, dt, lay, tgt):
    return build(src, dt, lay, one_d=tgt in ONE_D)


@pytest.mark.parametrize(("src", "dt", "lay", "tgt"), CASES)
def test_cell(src: str, dt: str, lay: str, tgt: str) -> None:
    s = _fresh(src, dt, lay, tgt)
    plan = interop.explain(s.value, tgt)
    if _expected_unsupported(src, dt, lay, tgt, s.expected.shape):
        assert not plan.supported and plan.error == "unsupported", plan
        s = _fresh(src, dt, lay, tgt)
        with pytest.raises(UnsupportedConversionError) as ei:
            interop.to_framework(s.value, tgt)
        msg = str(ei.value)
        named = [str(s.expected.shape)] if tgt in ONE_D and s.expected.ndim != 1 else []
        if dt not in TARGET_DTYPES[tgt]:
            named += [dt, str(DTYPES[dt])]
        assert any(n in msg for n in named), (named, msg)
        return
    assert plan.supported, plan
    if (tgt, dt) in NARROWED:
        _check_narrowed(src, dt, lay, tgt, plan, NARROWED[tgt, dt])
        return
    assert plan.zero_copy == (not plan.reasons), plan
    assert plan.zero_copy == all(not st.copies for st in plan.steps), plan

    # copy=None: the values, and every zero-copy claim proved
    s = _fresh(src, dt, lay, tgt)
    result = interop.to_framework(s.value, tgt)
    _check_default(s, result, plan, src, dt, lay, tgt)

    # copy=False: zero-copy exactly when the plan says so, ZeroCopyError otherwise
    s = _fresh(src, dt, lay, tgt)
    strict = interop.explain(s.value, tgt, copy=False)
    assert strict.supported == plan.zero_copy, (plan, strict)
    s = _fresh(src, dt, lay, tgt)
    if plan.zero_copy:
        result = interop.to_framework(s.value, tgt, copy=False)
        if s.expected.size:
            assert raw_pointer(result) == s.ptr
        _same_values(np.asarray(as_numpy(result)), s.expected)
    else:
        assert strict.error == "zero-copy", strict
        with pytest.raises(ZeroCopyError) as ei:
            interop.to_framework(s.value, tgt, copy=False)
        assert _norm(plan.reasons[0]) in _norm(str(ei.value)), (plan, ei.value)

    # copy=True: a fresh buffer with the same values, never the source's memory
    s = _fresh(src, dt, lay, tgt)
    fresh = interop.to_framework(s.value, tgt, copy=True)
    if s.expected.size:
        assert raw_pointer(fresh) != s.ptr
        if src != "dlpack":
            assert not interop.shares_memory(fresh, s.value)
    _same_values(np.asarray(as_numpy(fresh)), s.expected)


def _check_narrowed(src: str, dt: str, lay: str, tgt: str, plan, narrow: np.dtype) -> None:
    """A cell the target narrows (JAX, 64-bit types off): one copy, cast as the target would,
    one NarrowingWarning for copy=None and copy=True, ZeroCopyError for copy=False."""
    assert not plan.zero_copy and any("jax_enable_x64" in r for r in plan.reasons), plan
    assert any(st.copies and f"cast to {narrow.name}" in st.via for st in plan.steps), plan
    for copy in (None, True):
        s = _fresh(src, dt, lay, tgt)
        with pytest.warns(NarrowingWarning) as got:
            result = interop.to_framework(s.value, tgt, copy=copy)
        assert len(got) == 1 and DTYPES[dt].name in str(got[0].message)
        if s.expected.size:
            assert raw_pointer(result) != s.ptr
        _same_values(np.asarray(as_numpy(result)), s.expected.astype(narrow))
    s = _fresh(src, dt, lay, tgt)
    with pytest.raises(ZeroCopyError) as ei:
        interop.to_framework(s.value, tgt, copy=False)
    assert _norm(plan.reasons[0]) in _norm(str(ei.value)), (plan, ei.value)


def _check_default(s, result, plan, src: str, dt: str, lay: str, tgt: str) -> None:
    size = s.expected.size
    packed = dt == "bool" and src in ("pyarrow", "polars") and tgt in ("pyarrow", "polars")
    if not (plan.zero_copy and size):
        _same_values(np.asarray(as_numpy(result)), s.expected)
        return
    if packed:  # bit-packed booleans: only the identity is free, with the same bit buffer
        assert result is s.value or raw_pointer(result) == s.ptr, plan
        _same_values(np.asarray(as_numpy(result)), s.expected)
        return
    _same_values(np.asarray(as_numpy(result)) if tgt != "dlpack" else s.expected, s.expected)
    # pointer proof
    assert raw_pointer(result) == s.ptr, plan
    # write proof: through the mutable side, read on the other with its own API
    idx = (0,) * s.expected.ndim
    m = marker(s.expected.dtype, s.expected[idx])
    if s.mutable:
        if isinstance(s.value, np.ndarray):
            s.value[idx] = m
        else:
            poke(s.ptr, s.expected.dtype, m)
        seen = as_numpy(result)
    elif writable(result):
        if isinstance(result, np.ndarray):
            result[idx] = m
        else:
            poke(s.ptr, s.expected.dtype, m)
        # a capsule source is consumed: the result is what reads its memory
        seen = as_numpy(s.value) if src != "dlpack" else as_numpy(result)
    else:  # both sides immutable (jax, pyarrow, polars, capsules): write under both
        poke(s.ptr, s.expected.dtype, m)
        seen = as_numpy(result)
    expected = s.expected.copy()
    if lay == "broadcast":  # one element in memory stands for a whole axis
        expected[(slice(None),) + idx[1:]] = m
    else:
        expected[idx] = m
    _same_values(np.asarray(seen), expected)
