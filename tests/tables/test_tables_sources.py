"""Table sources (pandas, polars, DuckDB, streams, PyCapsule objects) and tables built from
columns of tensors over their own buffers."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

import interop
import oracles
from interop import to_record_batch
from interop.errors import InteropError, NullsError, UnsupportedConversionError, ZeroCopyError

try:
    import polars as pl
except ImportError:  # not on every machine (the first GPU host had none)
    pl = None
needs_polars = pytest.mark.skipif(pl is None, reason="polars is not installed")


# ---- pandas -------------------------------------------------------------------------------
def test_pandas_dataframe_numpy_backed_zero_copy():
    x, y = np.arange(5.0), np.arange(5, dtype=np.int32)
    df = pd.DataFrame({"x": x, "y": y}, copy=False)
    cols = interop.to_framework(df, "torch")
    assert oracles.shares(cols["x"], x) and oracles.shares(cols["y"], y)
    assert interop.explain(df, "torch").zero_copy
    cols["y"][1] = 40  # a write through the tensor is seen by the source array
    assert y[1] == 40


def test_pandas_datetime_and_strings():
    df = pd.DataFrame({"t": pd.to_datetime(["2024-01-01", "2024-01-02"]).as_unit("ns"),
                       "s": ["a", "b"]})
    with pytest.raises(UnsupportedConversionError, match="column 's' has type"):
        interop.to_framework(df, "numpy")
    cols = interop.to_framework(df, "numpy", columns=["t"])
    assert cols["t"].dtype == np.int64 and cols.meta["t"]["unit"] == "ns"
    assert cols["t"][0] == pd.Timestamp("2024-01-01").value


def test_pandas_nullable_dtypes_mask_and_raise():
    df = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"),
                       "f": pd.array([1.5, 2.5, None], dtype="Float64")})
    with pytest.raises(NullsError, match="column 'a'.*column 'f'"):
        interop.to_framework(df, "numpy")
    cols = interop.to_framework(df, "numpy", nulls="mask")
    v, m = cols["a"]
    assert m.tolist() == [True, False, True] and v[m].tolist() == [1, 3]
    filled = interop.to_framework(df, "numpy", nulls="fill", fill_value=0)
    assert filled["f"].tolist() == [1.5, 2.5, 0.0]


def test_pandas_float_nan_is_a_value_not_a_null():
    df = pd.DataFrame({"f": [1.0, np.nan]})
    out = interop.to_framework(df, "numpy")["f"]
    assert np.isnan(out[1])


# ---- polars -------------------------------------------------------------------------------
@needs_polars
def test_polars_dataframe_zero_copy_and_chunks():
    df = pl.DataFrame({"x": np.arange(4.0), "y": np.arange(4, dtype=np.int16)})
    cols = interop.to_framework(df, "torch")
    assert oracles.shares(cols["x"], df["x"]) and oracles.shares(cols["y"], df["y"])
    cols["y"][1] = 9  # a write through the tensor, read through polars
    assert df["y"][1] == 9
    assert interop.explain(df, "torch").zero_copy
    two = pl.concat([df, df], rechunk=False)
    assert two["x"].n_chunks() == 2
    assert interop.to_framework(two, "numpy")["x"].tolist() == [0, 1, 2, 3] * 2
    with pytest.raises(ZeroCopyError, match="2 chunks"):
        interop.to_framework(two, "numpy", copy=False)


@needs_polars
def test_polars_nulls_temporal_and_strings():
    df = pl.DataFrame({"a": [1, None, 3], "s": ["p", "q", "r"],
                       "d": pl.Series([0, 1, 2]).cast(pl.Datetime("us"))})
    with pytest.raises(UnsupportedConversionError, match="column 's' has type String"):
        interop.to_framework(df, "numpy")
    with pytest.raises(NullsError, match="column 'a'"):
        interop.to_framework(df, "numpy", columns=["a"])
    cols = interop.to_framework(df, "numpy", columns=["a", "d"], nulls="mask")
    v, m = cols["a"]
    assert m.tolist() == [True, False, True] and v[m].tolist() == [1, 3]
    assert cols["d"].tolist() == [0, 1, 2] and cols.meta["d"]["unit"] == "us"


# ---- streams and PyCapsule objects ------------------------------------------------------------
def test_record_batch_reader_stream():
    schema = pa.schema([("x", pa.float64()), ("y", pa.int32())])
    batches = [pa.record_batch([pa.array([1.0, 2.0]), pa.array([1, 2], pa.int32())],
                               schema=schema),
               pa.record_batch([pa.array([3.0]), pa.array([3], pa.int32())], schema=schema)]
    plan = interop.explain(pa.RecordBatchReader.from_batches(schema, batches), "torch")
    assert plan.supported and not plan.zero_copy and "stream" in plan.reasons[0]
    reader = pa.RecordBatchReader.from_batches(schema, batches)
    cols = interop.to_framework(reader, "torch")
    assert cols["x"].tolist() == [1, 2, 3] and cols["y"].tolist() == [1, 2, 3]
    one = pa.RecordBatchReader.from_batches(schema, batches[:1])
    with pytest.raises(ZeroCopyError):  # two batches are two chunks; one batch is zero-copy
        interop.to_framework(pa.RecordBatchReader.from_batches(schema, batches), "numpy",
                             copy=False)
    assert interop.to_framework(one, "numpy", copy=False)["x"].tolist() == [1, 2]


def test_duckdb_query_result():
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql("select range::DOUBLE as x, range::INTEGER as y from range(5)")
    cols = interop.to_framework(rel, "numpy")
    assert cols["x"].tolist() == [0, 1, 2, 3, 4] and cols["y"].dtype == np.int32
    rel = duckdb.sql("select 'a' as s, 1 as k")
    with pytest.raises(UnsupportedConversionError, match="column 's'.*columns=\\['k'\\]"):
        interop.to_framework(rel, "numpy")
    assert interop.to_framework(rel, "numpy", columns=["k"])["k"].tolist() == [1]


def test_nanoarrow_array_and_stream():
    na = pytest.importorskip("nanoarrow")
    t = pa.table({"x": np.arange(3.0)})
    buf = t.column("x").chunk(0).buffers()[1].address
    cols = interop.to_framework(na.Array(t.to_batches()[0]), "torch")
    assert cols["x"].tolist() == [0, 1, 2] and cols["x"].data_ptr() == buf  # zero-copy import
    assert interop.explain(na.Array(t.to_batches()[0]), "torch").zero_copy
    single = interop.to_framework(na.Array(pa.array([1, 2, 3])), "numpy")
    assert single.tolist() == [1, 2, 3]  # a plain array is not a table
    stream = na.ArrayStream(t)
    assert interop.to_framework(stream, "numpy")["x"].tolist() == [0, 1, 2]


def test_arro3_table():
    a3 = pytest.importorskip("arro3.core")
    t = pa.table({"x": np.arange(3, dtype=np.int64)})
    cols = interop.to_framework(a3.Table.from_arrow(t), "numpy")
    assert cols["x"].tolist() == [0, 1, 2]
    assert interop.explain(a3.Table.from_arrow(t), "numpy").supported


def test_arrow_c_device_array_cpu():
    rb = pa.record_batch({"x": np.arange(3.0)})

    class DeviceOnly:
        def __arrow_c_device_array__(self, requested_schema=None, **kw):
            return rb.__arrow_c_device_array__(requested_schema, **kw)

    cols = interop.to_framework(DeviceOnly(), "numpy")
    assert cols["x"].tolist() == [0, 1, 2]


# ---- dict of arrays -> tables -------------------------------------------------------------------
def test_dict_of_torch_to_arrow_shares_buffers_and_keeps_tensor_alive():
    a = np.arange(1000, dtype=np.float32)
    t1 = torch.from_numpy(a)  # its storage holds ``a``: ``a`` lives exactly as long as it does
    t2 = torch.arange(1000, dtype=torch.int64) * 3
    ptrs = (t1.data_ptr(), t2.data_ptr())
    owner = weakref.ref(a)
    tab = interop.to_framework({"x": t1, "y": t2}, "pyarrow")
    assert isinstance(tab, pa.Table)
    assert tab.column("x").chunk(0).buffers()[1].address == ptrs[0]
    assert tab.column("y").chunk(0).buffers()[1].address == ptrs[1]
    assert interop.explain({"x": t1, "y": t2}, "pyarrow").zero_copy
    t1[0] = -5.0  # one buffer: a write through the tensor is read back through Arrow
    assert tab.column("x")[0].as_py() == -5.0
    t1[0] = 0.0
    del t1, t2, a
    gc.collect()
    assert owner() is not None  # the table holds the tensor's storage, and so its memory
    junk = [torch.full((1000,), -1.0) for _ in range(50)]  # reuse freed memory if any
    assert tab.column("x").to_pylist() == list(range(1000))
    assert tab.column("y").to_pylist() == [3 * i for i in range(1000)]
    del junk, tab
    gc.collect()
    assert owner() is None  # and lets it go with itself


def test_dict_non_contiguous_column_copied_and_said_so():
    base = torch.arange(10.0)
    cols = {"x": base[::2], "y": torch.arange(5.0)}
    plan = interop.explain(cols, "pyarrow")
    assert plan.columns["y"].zero_copy and not plan.columns["x"].zero_copy
    assert any("contiguous" in r for r in plan.columns["x"].reasons)
    tab = interop.to_framework(cols, "pyarrow")
    assert tab.column("x").to_pylist() == [0, 2, 4, 6, 8]
    with pytest.raises(ZeroCopyError, match="column 'x'"):
        interop.to_framework(cols, "pyarrow", copy=False)


@needs_polars
def test_dict_to_pandas_polars_and_batch():
    x, y = np.arange(4.0), np.arange(4, dtype=np.int32)
    df = interop.to_framework({"x": x, "y": y}, "pandas")
    assert oracles.shares(df["x"], x) and oracles.shares(df["y"], y)
    pdf = interop.to_framework({"x": x, "y": y}, "polars")
    assert oracles.shares(pdf["x"], x) and pdf["y"].to_list() == [0, 1, 2, 3]
    rb = to_record_batch({"x": torch.from_numpy(x)})
    assert rb.column(0).buffers()[1].address == x.ctypes.data
    x[2] = -2.0  # one buffer: a write through the source is read by pandas, polars and Arrow
    assert df["x"].iloc[2] == pdf["x"][2] == rb.column(0)[2].as_py() == -2.0


def test_dict_columns_to_framework_and_roundtrip_with_masks():
    t = pa.table({"a": pa.array([1, None, 3]), "f": pa.array([0.5, 1.5, 2.5])})
    cols = interop.to_framework(t, "torch", nulls="mask")
    back = interop.to_framework(dict(cols), "pyarrow")
    assert back.column("a").to_pylist() == [1, None, 3]
    assert back.column("f").to_pylist() == [0.5, 1.5, 2.5]
    same = interop.to_framework({"a": np.arange(3)}, "torch")
    assert same["a"].tolist() == [0, 1, 2]


def test_dict_build_errors():
    with pytest.raises(InteropError, match="one length"):
        interop.to_framework({"x": np.arange(3), "y": np.arange(4)}, "pyarrow")
    with pytest.raises(InteropError, match="must be strings"):
        interop.to_framework({1: np.arange(3)}, "pyarrow")
    with pytest.raises(UnsupportedConversionError, match="column 'm'.*rows of no elements"):
        interop.to_framework({"m": np.zeros((3, 0))}, "pyarrow")  # (3, 2): a tensor column


@pytest.mark.parametrize("target", ["pyarrow", "pandas", "polars"])
@pytest.mark.parametrize("second", [
    pytest.param(lambda: torch.arange(4.0), id="tensor"),
    pytest.param(lambda: pa.array([1.0, 2.0, 3.0, 4.0]), id="arrow"),
    pytest.param(lambda: (np.arange(4.0), np.ones(4, bool)), id="masked")])
def test_columns_of_unequal_lengths_are_refused_by_all_three_calls(target, second):
    """explain and can_convert see what the conversion refuses: columns whose own lengths
    (len(), the framework's answer) differ make no table."""
    if target == "polars":
        pytest.importorskip("polars")
    cols = {"a": np.arange(3.0), "b": second()}
    plan = interop.explain(cols, target)
    assert not plan.supported and "one length; got {'a': 3, 'b': 4}" in plan.reasons[0], plan
    assert not interop.can_convert(cols, target)
    with pytest.raises(interop.errors.MalformedError, match="one length"):
        interop.to_framework(cols, target)
    cols["b"] = np.arange(3.0)  # one length: all three agree it converts
    assert interop.explain(cols, target).supported and interop.can_convert(cols, target)
    interop.to_framework(cols, target)


def test_masked_pairs_convert_between_frameworks_and_columns_of():
    from interop import columns_of

    t = pa.table({"a": pa.array([1, None, 3]), "f": pa.array([0.5, 1.5, 2.5])})
    cols = interop.to_framework(t, "numpy", nulls="mask")
    as_torch = interop.to_framework(dict(cols), "torch")
    v, m = as_torch["a"]
    assert m.tolist() == [True, False, True] and v[m].tolist() == [1, 3]
    arrays = columns_of(t, "pyarrow", columns=["f"])
    assert isinstance(arrays["f"], pa.ChunkedArray) and arrays["f"].to_pylist() == [0.5, 1.5, 2.5]


@needs_polars
def test_a_table_to_its_own_framework_is_the_same_object():
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    import interop

    df = pd.DataFrame({"a": [1.0, 2.0]}, index=pd.Index([10, 20], name="k"))
    assert interop.to_framework(df, "pandas") is df  # index and names kept
    assert interop.explain(df, "pandas").zero_copy
    back = interop.to_framework(df, "pandas", copy=True)
    assert back is not df and back["a"].tolist() == [1.0, 2.0]
    assert not oracles.shares(back["a"], df["a"])  # copy=True: a fresh buffer
    pdf, tab = pl.DataFrame({"a": [1]}), pa.table({"a": [1]})
    assert interop.to_framework(pdf, "polars") is pdf
    assert interop.to_framework(tab, "pyarrow") is tab
