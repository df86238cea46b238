"""Random schemas (hypothesis): fixed-width columns with and without nulls, one or several
chunks. Values survive the round trip; zero-copy is claimed exactly where it holds, and every
claim is proved by pointers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import interop
import oracles

torch = pytest.importorskip("torch")

TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64(),
         pa.float32(), pa.float64(), pa.bool_(), pa.timestamp("us"), pa.date32(),
         pa.duration("ns")]


@st.composite
def columns(draw):
    n = draw(st.integers(0, 40))
    ncols = draw(st.integers(1, 4))
    out = {}
    for i in range(ncols):
        t = draw(st.sampled_from(TYPES))
        nulls = draw(st.booleans())
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=2)))
        chunks = [(a, b) for a, b in zip([0, *cuts], [*cuts, n])]
        if draw(st.booleans()):
            chunks = [(0, n)]
        values = draw(st.lists(st.integers(0, 100), min_size=n, max_size=n))
        valid = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if nulls else [True] * n
        py = [v if ok else None for v, ok in zip(values, valid)]
        if pa.types.is_boolean(t):
            py = [None if v is None else bool(v % 2) for v in py]
        storage = pa.int32() if t in (pa.date32(),) else pa.int64() \
            if pa.types.is_temporal(t) else t
        arrs = [pa.array(py[a:b], storage).view(t) if storage != t else pa.array(py[a:b], t)
                for a, b in chunks]
        out[f"c{i}"] = pa.chunked_array(arrs, type=t)
    return pa.table(out)


def _expect_zero_copy(col: pa.ChunkedArray) -> bool:
    return (col.num_chunks == 1 and not col.null_count and not pa.types.is_boolean(col.type)
            and len(col) > 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns(), st.sampled_from(["numpy", "torch"]))
def test_random_schema_roundtrip_and_zero_copy_claims(table, target):
    cols = interop.to_framework(table, target, nulls="mask")
    plan = interop.explain(table, target, nulls="mask")
    assert plan.supported
    for name in table.column_names:
        src = table.column(name)
        got = cols[name]
        expected = [None if v is None else v for v in
                    (src.cast(pa.int64()) if pa.types.is_temporal(src.type)
                     and src.type.bit_width == 64 else
                     src.cast(pa.int32()) if pa.types.is_temporal(src.type) else src
                     ).to_pylist()]
        if src.null_count:
            values, mask = (_own(x) for x in got)
            assert mask.tolist() == [v is not None for v in expected]
            assert values[mask].tolist() == [v for v in expected if v is not None]
        else:
            values = _own(got)
            assert values.tolist() == expected
        if pa.types.is_temporal(src.type):
            assert cols.meta[name]["type"] == str(src.type)
        # zero-copy: claimed exactly where it holds, proved by pointers
        claim = plan.columns[name].zero_copy
        if len(src):
            assert claim == _expect_zero_copy(src), (name, src.type, plan.columns[name])
        if claim and len(src):
            chunk = src.chunk(0)
            addr = chunk.buffers()[1].address + chunk.offset * chunk.type.bit_width // 8
            assert oracles.shares(got, np.frombuffer(
                chunk.buffers()[1], dtype=np.uint8)) and _ptr(got) == addr
            if target == "torch":  # a write through the tensor, read back through Arrow
                before = chunk[0].as_py()
                got.view(-1).view(torch.uint8)[0] ^= 1  # flip a bit of the first element
                assert chunk[0].as_py() != before, (name, src.type)
        elif len(src) and src.null_count == 0:
            assert not any(oracles.shares(got, np.frombuffer(c.buffers()[1], np.uint8))
                           for c in src.chunks if c.buffers()[1] is not None)
    assert plan.zero_copy == all(plan.columns[n].zero_copy for n in table.column_names)


def _own(x) -> np.ndarray:
    """A result's values read with its own framework (torch ``numpy()``, NumPy itself)."""
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _ptr(x):
    if hasattr(x, "data_ptr"):
        return x.data_ptr()
    return x.__array_interface__["data"][0]


@settings(max_examples=40, deadline=None)
@given(columns())
def test_random_schema_back_to_arrow(table):
    cols = interop.to_framework(table, "numpy", nulls="mask")
    back = interop.to_framework(dict(cols), "pyarrow")
    for name in table.column_names:
        src = table.column(name)
        if pa.types.is_temporal(src.type):
            src = src.cast(pa.int32() if src.type.bit_width == 32 else pa.int64())
        assert back.column(name).to_pylist() == src.to_pylist()


@settings(max_examples=30, deadline=None)
@given(columns())
def test_random_schema_copy_false_raises_exactly_when_a_copy_is_needed(table):
    plain = table.select([n for n in table.column_names if not table.column(n).null_count])
    if not plain.num_columns:
        return
    needs_copy = any(not _expect_zero_copy(plain.column(n)) and len(plain) > 0
                     for n in plain.column_names)
    try:
        interop.to_framework(plain, "numpy", copy=False)
        raised = False
    except interop.ZeroCopyError:
        raised = True
    if len(plain):
        assert raised == needs_copy


def _answer(convert, table, target):
    """``convert(table, target)`` as comparable data: per column its dtype and values, or the
    error's type and message."""
    try:
        out = convert(table, target)
    except Exception as e:  # noqa: BLE001 - compared with a fresh registry's answer
        return (type(e).__name__, str(e))
    return {k: (str(getattr(v, "dtype", "")), np.asarray(v).tolist()) for k, v in out.items()}


_KEPT = settings(max_examples=int(__import__("os").environ.get("TABLES_KEPT_EXAMPLES", "40")),
                 deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_KEPT
@given(columns(), st.sampled_from(["numpy", "torch", "jax"]))
def test_a_kept_table_plan_answers_as_a_fresh_registry(table, target):
    """The plans kept across examples (the default registry, its tables' fast forms made
    from earlier tables and from this one's first call) give each table, three times over,
    the answer a registry that never converted anything gives: the same columns, dtypes and
    values, or the same error (TABLES_KEPT_EXAMPLES=N for a longer search)."""
    import warnings

    from interop.default import build

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a narrowing's warning: the values are compared)
        want = _answer(build().convert, table, target)
        for _ in range(3):
            assert _answer(interop.to_framework, table, target) == want
