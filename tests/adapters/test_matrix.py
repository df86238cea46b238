"""The conversion matrix: every CPU source x target x dtype x layout the source can express.

For each cell: the values survive; every zero-copy claim of the plan is proved by data
pointers and extents read with the frameworks' own accessors (``oracles``, never interop's
view), and by a write through one side read back through the *other* side; ``copy=False``
raises exactly when the plan needs a copy; ``copy=True`` and every copy the plan admits never
overlap the source's bytes; unsupported cells raise ``UnsupportedConversionError`` naming the
dtype or shape. A ``dlpack`` result is consumed by NumPy (torch for bfloat16) and compared.

The last part of a test id names the write proof of a zero-copy cell:
``write-source`` (the source is written with its own API, the result read with its own),
``write-result`` (the source is immutable: the result is written with its own API and the
source's bytes read back), ``unwritable`` (neither side may be written: pointers plus the
extent, and a raw write at the source's own address read back through the result's API).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import interop
import oracles
from helpers import assert_same_array
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
)

pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("polars")


def proof(src: str, lay: str, tgt: str) -> str:
    """How a zero-copy cell of this source and target proves the sharing by a write."""
    if src == "torch" or (src in ("numpy", "dlpack") and lay not in ("read-only", "broadcast")):
        return "write-source"
    if tgt == "torch":
        return "write-result"
    return "unwritable"


CASES = [
    pytest.param(src, dt, lay, tgt, id=f"{src}-{dt}-{lay}-{tgt}-{proof(src, lay, tgt)}")
    for src in SOURCE_LAYOUTS
    for dt in SOURCE_DTYPES[src]
    for lay in SOURCE_LAYOUTS[src]
    for tgt in TARGETS
]


def _expected_unsupported(src: str, dt: str, lay: str, tgt: str, shape: tuple) -> bool:
    if dt not in TARGET_DTYPES[tgt]:
        return True
    if tgt == "pyarrow" and len(shape) >= 2:  # the rows as an arrow.fixed_shape_tensor
        return DTYPES[dt].kind not in "iuf"
    return tgt in ONE_D and len(shape) != 1


def _norm(msg: str) -> str:
    """A message with its addresses blanked (each sample lives at a new address)."""
    return re.sub(r"0x[0-9a-f]+|\d{6,}", "N", msg)


def _fresh(src, dt, lay, tgt):
    return build(src, dt, lay, one_d=tgt in ONE_D)


def _result(x, tgt):
    """A capsule result consumed by a framework (NumPy, or torch for bfloat16); else ``x``."""
    return oracles.consume_capsule(x) if tgt == "dlpack" else x


def _origin(s):
    """What holds the source's memory once a capsule source is consumed: its NumPy array."""
    return s.backing if s.backing is not None else s.value


def _disjoint(result, s, src_extent) -> None:
    """A copy: the result's bytes (framework accessor) do not overlap the source's."""
    lo, hi = oracles.extent(result)
    assert not (lo < hi and src_extent[0] < src_extent[1]
                and lo < src_extent[1] and src_extent[0] < hi), (lo, hi, src_extent)


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
    src_extent = oracles.extent(_origin(s))
    result = _result(interop.to_framework(s.value, tgt), tgt)
    _check_default(s, result, plan, src, dt, lay, tgt, src_extent)

    # copy=False: zero-copy exactly when the plan says so, ZeroCopyError otherwise
    s = _fresh(src, dt, lay, tgt)
    strict = interop.explain(s.value, tgt, copy=False)
    assert strict.supported == plan.zero_copy, (plan, strict)
    s = _fresh(src, dt, lay, tgt)
    if plan.zero_copy:
        src_extent = oracles.extent(_origin(s))
        result = _result(interop.to_framework(s.value, tgt, copy=False), tgt)
        if s.expected.size:
            assert raw_pointer(result) == s.ptr
            lo, hi = oracles.extent(result)
            assert src_extent[0] <= lo < hi <= src_extent[1], ((lo, hi), src_extent)
        assert_same_array(np.asarray(as_numpy(result)), s.expected)
    else:
        assert strict.error == "zero-copy", strict
        with pytest.raises(ZeroCopyError) as ei:
            interop.to_framework(s.value, tgt, copy=False)
        assert _norm(plan.reasons[0]) in _norm(str(ei.value)), (plan, ei.value)

    # copy=True: a fresh buffer with the same values, never the source's memory
    s = _fresh(src, dt, lay, tgt)
    src_extent = oracles.extent(_origin(s))
    fresh = _result(interop.to_framework(s.value, tgt, copy=True), tgt)
    if s.expected.size:
        assert raw_pointer(fresh) != s.ptr
        _disjoint(fresh, s, src_extent)
    assert_same_array(np.asarray(as_numpy(fresh)), s.expected)


def _write(x, idx, m) -> None:
    """``x[idx] = m`` with ``x``'s own API (NumPy or torch)."""
    if isinstance(x, np.ndarray):
        x[idx] = m
        return
    import torch

    x[idx] = torch.from_numpy(np.array([m]).view(np.int16)).view(x.dtype)[0] \
        if x.dtype == torch.bfloat16 else m.item() if hasattr(m, "item") else m


def _read_source(s, src: str) -> np.ndarray:
    """The source's values now: with its own API where it has a live one (NumPy, torch, the
    capsule's NumPy array), else through a raw view of its own bytes (JAX caches what it
    reads, pyarrow/pandas/polars may convert)."""
    if src in ("numpy", "torch", "dlpack"):
        return np.array(as_numpy(_origin(s)))
    return np.array(oracles.raw(s.value, s.expected.dtype))


def _check_narrowed(src: str, dt: str, lay: str, tgt: str, plan, narrow: np.dtype) -> None:
    """A cell the target narrows (JAX, 64-bit types off): one copy, cast as the target would,
    one NarrowingWarning for copy=None and copy=True, ZeroCopyError for copy=False."""
    assert not plan.zero_copy and any("jax_enable_x64" in r for r in plan.reasons), plan
    assert any(st.copies and f"cast to {narrow.name}" in st.via for st in plan.steps), plan
    for copy in (None, True):
        s = _fresh(src, dt, lay, tgt)
        src_extent = oracles.extent(_origin(s))
        with pytest.warns(NarrowingWarning) as got:
            result = interop.to_framework(s.value, tgt, copy=copy)
        assert len(got) == 1 and DTYPES[dt].name in str(got[0].message)
        _disjoint(result, s, src_extent)
        assert_same_array(np.asarray(as_numpy(result)), s.expected.astype(narrow))
    s = _fresh(src, dt, lay, tgt)
    with pytest.raises(ZeroCopyError) as ei:
        interop.to_framework(s.value, tgt, copy=False)
    assert _norm(plan.reasons[0]) in _norm(str(ei.value)), (plan, ei.value)


def _check_default(s, result, plan, src: str, dt: str, lay: str, tgt: str, src_extent) -> None:
    size = s.expected.size
    packed = dt == "bool" and src in ("pyarrow", "polars") and tgt in ("pyarrow", "polars")
    if not (plan.zero_copy and size):
        assert_same_array(np.asarray(as_numpy(result)), s.expected)
        if size:
            _disjoint(result, s, src_extent)  # a copy the plan admits: its own bytes
        return
    if packed:  # bit-packed booleans: only the identity is free, with the same bit buffer
        assert result is s.value or raw_pointer(result) == s.ptr, plan
        assert oracles.extent(result) == src_extent, plan
        assert_same_array(np.asarray(as_numpy(result)), s.expected)
        return
    assert_same_array(np.asarray(as_numpy(result)), s.expected)
    # pointer proof: the first element, and every byte of the result inside the source's
    assert raw_pointer(result) == s.ptr, plan
    lo, hi = oracles.extent(result)
    assert src_extent[0] <= lo < hi <= src_extent[1], ((lo, hi), src_extent)
    # write proof: through one side with its own API, read back on the other
    idx = (0,) * s.expected.ndim
    m = marker(s.expected.dtype, s.expected[idx])
    how = proof(src, lay, tgt)
    if how == "write-source":
        _write(_origin(s), idx, m)
        seen = as_numpy(result)
    elif how == "write-result":
        _write(result, idx, m)
        seen = _read_source(s, src)
    else:  # neither side may be written: a raw write at the source's own address
        poke(s.ptr, s.expected.dtype, m)
        seen = as_numpy(result)
    expected = s.expected.copy()
    if lay == "broadcast":  # one element in memory stands for a whole axis
        expected[(slice(None),) + idx[1:]] = m
    else:
        expected[idx] = m
    assert_same_array(np.asarray(seen), expected)
