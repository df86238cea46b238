"""Tables -> per-column arrays: zero-copy rules, nulls, chunks, booleans, temporals, errors."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

import interop
import oracles
from interop.errors import InteropError, NullsError, UnsupportedConversionError, ZeroCopyError
from interop.tables import Columns, TablePlan


def _table():
    return pa.table({
        "f": pa.array(np.arange(6, dtype=np.float32)),
        "i": pa.array(np.arange(6, dtype=np.int64) * 10),
        "b": pa.array([True, False, True, True, False, True]),
        "ts": pa.array(np.arange(6), pa.timestamp("ns", "UTC")),
        "d": pa.array(np.arange(6, dtype=np.int32), pa.date32()),
    })


def test_table_to_torch_zero_copy_per_fixed_width_column():
    t = _table()
    cols = interop.to_framework(t, "torch")
    assert isinstance(cols, Columns) and list(cols) == ["f", "i", "b", "ts", "d"]
    for name in ("f", "i", "ts", "d"):
        assert cols[name].data_ptr() == t.column(name).chunk(0).buffers()[1].address
    assert oracles.shares(cols["f"], t.column("f"))
    assert not oracles.shares(cols["b"], t.column("i"))
    assert cols["b"].dtype == torch.bool and cols["b"].tolist() == [1, 0, 1, 1, 0, 1]
    np.testing.assert_array_equal(cols["i"].numpy(), np.arange(6) * 10)
    cols["i"][2] = -7  # a write through the tensor is seen by the Arrow column
    assert t.column("i")[2].as_py() == -7


def test_zero_copy_proved_by_pointer_and_write_through():
    arr = pa.array(np.arange(4, dtype=np.float64))
    t = pa.table({"x": arr})
    cols = interop.to_framework(t, "torch")
    ptr = arr.buffers()[1].address
    assert cols["x"].data_ptr() == ptr
    cols["x"][0] = 42.0  # Arrow treats its buffers as immutable; torch cannot tell
    assert t.column("x")[0].as_py() == 42.0


def test_temporal_int_view_unit_in_meta():
    t = _table()
    cols = interop.to_framework(t, "numpy", columns=["ts", "d"])
    assert cols["ts"].dtype == np.int64 and cols["d"].dtype == np.int32
    assert cols.meta["ts"] == {"type": "timestamp[ns, tz=UTC]", "unit": "ns", "tz": "UTC"}
    assert cols.meta["d"] == {"type": "date32[day]", "unit": "D"}
    np.testing.assert_array_equal(cols["ts"], np.arange(6))


def test_duration_and_time_columns():
    t = pa.table({"dur": pa.array([1, 2], pa.duration("ms")),
                  "tm": pa.array([3, 4], pa.time32("s")),
                  "d64": pa.array([5, 6], pa.date64())})
    cols = interop.to_framework(t, "numpy")
    assert cols.meta["dur"]["unit"] == "ms" and cols.meta["tm"]["unit"] == "s"
    assert cols.meta["d64"]["unit"] == "ms"
    assert cols["tm"].dtype == np.int32 and cols["dur"].tolist() == [1, 2]


def test_plan_per_column_and_zero_copy_only_if_all():
    t = _table()
    plan = interop.explain(t, "torch")
    assert isinstance(plan, TablePlan) and set(plan.columns) == set(t.column_names)
    assert plan.columns["f"].zero_copy and plan.columns["ts"].zero_copy
    assert not plan.columns["b"].zero_copy
    assert any("booleans" in r for r in plan.columns["b"].reasons)
    assert not plan.zero_copy
    assert interop.explain(t, "torch", columns=["f", "i"]).zero_copy
    assert "column 'b'" in str(plan)


def test_nulls_default_raise_names_columns():
    t = pa.table({"a": pa.array([1, None, 3]), "b": pa.array([1.0, 2.0, None]),
                  "c": pa.array([1, 2, 3])})
    with pytest.raises(NullsError) as e:
        interop.to_framework(t, "numpy")
    msg = str(e.value)
    assert "column 'a' (int64) holds 1 nulls" in msg and "column 'b'" in msg
    assert "'c'" not in msg and "nulls='mask'" in msg and "nulls='fill'" in msg
    plan = interop.explain(t, "numpy")
    assert not plan.supported and plan.error == "nulls"


def test_nulls_mask_values_zero_copy_mask_is_the_copy():
    a = pa.array([1, None, 3, 4], pa.int32())
    t = pa.table({"a": a, "c": pa.array([1.0, 2.0, 3.0, 4.0])})
    cols = interop.to_framework(t, "torch", nulls="mask")
    values, mask = cols["a"]
    assert mask.dtype == torch.bool and mask.tolist() == [True, False, True, True]
    assert values[[0, 2, 3]].tolist() == [1, 3, 4]
    assert values.data_ptr() == a.buffers()[1].address  # values: the Arrow buffer itself
    values[3] = 40  # a write through the tensor, read through Arrow
    assert a[3].as_py() == 40
    assert torch.is_tensor(cols["c"])  # a column without nulls stays a plain tensor
    plan = interop.explain(t, "torch", nulls="mask")
    pa_ = plan.columns["a"]
    assert not pa_.zero_copy and any("mask" in r and "copy" in r for r in pa_.reasons)
    assert any(s.copies and "validity" in s.via for s in pa_.steps)
    assert plan.columns["c"].zero_copy and not plan.zero_copy


def test_nulls_mask_with_offset_slice():
    a = pa.array([None, 1, None, 3, 4, None, 6, 7, 8, None], pa.int64()).slice(3, 6)
    cols = interop.to_framework(pa.table({"a": a}), "numpy", nulls="mask")
    values, mask = cols["a"]
    assert mask.tolist() == [v is not None for v in a.to_pylist()]
    assert values[mask].tolist() == [v for v in a.to_pylist() if v is not None]


def test_nulls_mask_several_chunks_joins_once_or_raises():
    c = pa.chunked_array([pa.array([1, None]), pa.array([3])])
    t = pa.table({"a": c})
    values, mask = interop.to_framework(t, "numpy", nulls="mask")["a"]
    assert mask.tolist() == [True, False, True] and values[mask].tolist() == [1, 3]
    with pytest.raises(ZeroCopyError, match="2 chunks; joining them copies"):
        interop.to_framework(t, "numpy", nulls="mask", copy=False)


def test_nulls_fill():
    t = pa.table({"a": pa.array([1, None, 3]), "f": pa.array([None, 2.5, None])})
    cols = interop.to_framework(t, "numpy", nulls="fill", fill_value=-1)
    assert cols["a"].tolist() == [1, -1, 3] and cols["f"].tolist() == [-1.0, 2.5, -1.0]
    plan = interop.explain(t, "numpy", nulls="fill", fill_value=-1)
    assert plan.supported and not plan.columns["a"].zero_copy
    assert any("filled" in r for r in plan.columns["a"].reasons)
    with pytest.raises(ZeroCopyError, match="filling 1 nulls writes a new buffer"):
        interop.to_framework(t, "numpy", nulls="fill", fill_value=0, copy=False)


def test_several_chunks_copy_or_zero_copy_error():
    t = pa.table({"a": pa.chunked_array([np.arange(3.0), np.arange(3.0, 5.0)])})
    cols = interop.to_framework(t, "torch")
    assert cols["a"].tolist() == [0, 1, 2, 3, 4]
    assert not interop.explain(t, "torch").columns["a"].zero_copy
    with pytest.raises(ZeroCopyError, match="column 'a'.*2 chunks"):
        interop.to_framework(t, "torch", copy=False)
    plan = interop.explain(t, "torch", copy=False)
    assert not plan.supported and plan.error == "zero-copy"


def test_boolean_copy_recorded_and_refused_with_copy_false():
    t = pa.table({"b": pa.array([True, False])})
    with pytest.raises(ZeroCopyError, match="column 'b'.*booleans"):
        interop.to_framework(t, "numpy", copy=False)


def test_unsupported_types_named_with_columns_offer():
    t = pa.table({
        "x": pa.array([1, 2]),
        "s": pa.array(["a", "b"]),
        "l": pa.array([["a"], ["b", "c"]]),
        "st": pa.array([{"p": 1}, {"p": 2}]),
        "dec": pa.array([1, 2], pa.decimal128(5, 2)),
    })
    with pytest.raises(UnsupportedConversionError) as e:
        interop.to_framework(t, "torch")
    msg = str(e.value)
    for part in ("column 's' has type string", "column 'l' has type list<item: string>",
                 "column 'st' has type struct<p: int64>", "column 'dec' has type decimal128(5, 2)",
                 "columns=['x']"):
        assert part in msg
    plan = interop.explain(t, "torch")
    assert not plan.supported and plan.error == "unsupported"
    assert interop.to_framework(t, "torch", columns=["x"])["x"].tolist() == [1, 2]


def test_option_errors():
    t = pa.table({"x": [1, 2]})
    with pytest.raises(InteropError, match="nulls must be one of"):
        interop.to_framework(t, "numpy", nulls="drop")
    with pytest.raises(InteropError, match="needs a fill_value"):
        interop.to_framework(t, "numpy", nulls="fill")
    with pytest.raises(InteropError, match="only with nulls='fill'"):
        interop.to_framework(t, "numpy", fill_value=0)
    with pytest.raises(InteropError, match=r"columns \['nope'\] are not in the table"):
        interop.to_framework(t, "numpy", columns=["nope"])
    with pytest.raises(InteropError, match="unknown table option 'chunks'; tables take"):
        interop.to_framework(t, "numpy", chunks=1)


def test_copy_true_gives_fresh_buffers():
    t = pa.table({"x": np.arange(4.0)})
    cols = interop.to_framework(t, "numpy", copy=True)
    assert not oracles.shares(cols["x"], t.column("x"))
    assert cols["x"].tolist() == [0, 1, 2, 3]


def test_record_batch_and_jax():
    jnp = pytest.importorskip("jax.numpy")
    rb = pa.record_batch({"x": np.arange(4, dtype=np.float32)})
    cols = interop.to_framework(rb, "jax")
    assert isinstance(cols["x"], jnp.ndarray) and cols["x"].tolist() == [0, 1, 2, 3]


def test_table_to_table_targets():
    t = pa.table({"x": np.arange(3.0), "y": np.arange(3)})
    assert interop.to_framework(t, "pyarrow").equals(t)
    df = interop.to_framework(t, "pandas")
    assert list(df.columns) == ["x", "y"] and df["x"].tolist() == [0, 1, 2]
    pdf = interop.to_framework(t, "polars")
    assert pdf.columns == ["x", "y"] and pdf["y"].to_list() == [0, 1, 2]
    with pytest.raises(InteropError, match="applies to array targets"):
        interop.to_framework(t, "pyarrow", nulls="mask")


def test_duplicate_column_names_refused():
    t = pa.table([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(InteropError, match="duplicate column names 'a'"):
        interop.to_framework(t, "numpy")


def test_options_on_plain_arrays_still_refused():
    with pytest.raises(InteropError, match="apply to tables"):
        interop.to_framework(np.arange(3), "torch", nulls="mask")
