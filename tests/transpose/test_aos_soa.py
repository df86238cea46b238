"""AoS <-> SoA: structured arrays and (N, C) row-major arrays to Arrow columns and back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

import interop
from interop.errors import InteropError, NullsError, UnsupportedConversionError
from interop.transpose import cpu as transpose


def test_two_d_array_to_table_and_back():
    rows = np.arange(3 * 5000, dtype=np.float32).reshape(5000, 3)
    tab = interop.aos_to_soa(rows, names=["x", "y", "z"])
    assert isinstance(tab, pa.Table) and tab.column_names == ["x", "y", "z"]
    for j, n in enumerate("xyz"):
        np.testing.assert_array_equal(tab.column(n).to_numpy(), rows[:, j])
        assert tab.column(n).num_chunks == 1
        assert tab.column(n).chunk(0).buffers()[1].address % 64 == 0
    back = interop.soa_to_aos(tab, target="torch")
    assert isinstance(back, torch.Tensor) and back.shape == (5000, 3) and back.is_contiguous()
    np.testing.assert_array_equal(back.numpy(), rows)


def test_columns_are_zero_copy_over_the_transposed_buffer():
    rows = np.arange(40, dtype=np.int64).reshape(10, 4)
    cols = interop.aos_to_soa(rows, target="numpy")
    base = cols["c0"].__array_interface__["data"][0]
    for j in range(4):  # one (C, N) buffer, each row padded to 64 bytes: 10 int64 -> 128
        assert cols[f"c{j}"].__array_interface__["data"][0] == base + j * 128
        assert cols[f"c{j}"].flags.c_contiguous
    tab = interop.aos_to_soa(rows)
    assert tab.column_names == ["c0", "c1", "c2", "c3"]


def test_torch_rows_and_block_boundaries():
    n = transpose._block_rows(2 * 8) * 2 + 7  # several blocks plus a ragged tail
    rows = torch.arange(n * 2, dtype=torch.float64).reshape(n, 2)
    tab = interop.aos_to_soa(rows, names=["a", "b"])
    np.testing.assert_array_equal(tab.column("b").to_numpy(), rows[:, 1].numpy())
    np.testing.assert_array_equal(interop.soa_to_aos(tab, target="numpy"), rows.numpy())


def test_structured_array_homogeneous_and_mixed():
    homo = np.zeros(1000, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4")])
    homo["x"], homo["y"], homo["z"] = np.arange(1000), -np.arange(1000), 2
    tab = interop.aos_to_soa(homo)
    assert tab.column_names == ["x", "y", "z"]
    np.testing.assert_array_equal(tab.column("y").to_numpy(), homo["y"])
    mixed = np.zeros(100000, dtype=[("i", "<i8"), ("f", "<f4"), ("b", "?"), ("t", "M8[us]")])
    mixed["i"] = np.arange(100000)
    mixed["f"] = 0.5
    mixed["b"] = np.arange(100000) % 2 == 0
    mixed["t"] = np.arange(100000).astype("M8[us]")
    tab = interop.aos_to_soa(mixed, names=["I", "F", "B", "T"])
    assert tab.schema.types == [pa.int64(), pa.float32(), pa.bool_(), pa.timestamp("us")]
    np.testing.assert_array_equal(tab.column("I").to_numpy(), mixed["i"])
    np.testing.assert_array_equal(tab.column("B").to_numpy(), mixed["b"])


def test_structured_with_padding_and_strided_rows():
    dt = np.dtype({"names": ["a", "b"], "formats": ["<f4", "<f4"], "offsets": [0, 8],
                   "itemsize": 12})
    rows = np.zeros(50, dtype=dt)
    rows["a"], rows["b"] = np.arange(50), np.arange(50) * 2
    tab = interop.aos_to_soa(rows[::2])
    np.testing.assert_array_equal(tab.column("b").to_numpy(), rows["b"][::2])


def test_soa_to_aos_sources_and_dtype():
    x = np.arange(5, dtype=np.int32)
    y = np.arange(5, dtype=np.float64) / 2
    out = interop.soa_to_aos({"x": x, "y": y}, target="numpy")
    assert out.dtype == np.float64 and out.shape == (5, 2)
    np.testing.assert_array_equal(out[:, 1], y)
    out32 = interop.soa_to_aos(pa.table({"x": x, "y": y}), target="numpy", dtype="float32",
                               columns=["y"])
    assert out32.dtype == np.float32 and out32.shape == (5, 1)


def test_aos_soa_errors():
    with pytest.raises(InteropError, match="2 names for 3 columns"):
        interop.aos_to_soa(np.zeros((4, 3)), names=["a", "b"])
    with pytest.raises(InteropError, match="2-D"):
        interop.aos_to_soa(np.zeros((4, 3, 2)))
    with pytest.raises(InteropError, match="unique"):
        interop.aos_to_soa(np.zeros((4, 2)), names=["a", "a"])
    with pytest.raises(UnsupportedConversionError, match="cannot be columns"):
        interop.aos_to_soa(np.zeros(3, dtype=[("s", "U3"), ("x", "<f4")]))
    with pytest.raises(NullsError, match="column 'a'"):
        interop.soa_to_aos(pa.table({"a": [1, None]}))
    with pytest.raises(InteropError, match="no columns"):
        interop.soa_to_aos({})


def test_out_buffers_are_written_and_aliased():
    n = transpose._block_rows(3 * 4) + 5  # more than one block
    rows = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    buf = np.full((3, n), -1, dtype=np.float32)
    tab = interop.aos_to_soa(rows, names=["x", "y", "z"], out=buf)
    np.testing.assert_array_equal(buf, rows.T)
    for j, name in enumerate("xyz"):  # the table's columns are out's rows, not copies
        assert tab.column(name).chunk(0).buffers()[1].address == buf[j].ctypes.data
    buf[1, 0] = -5.0  # a write into out= is seen in the table
    assert tab.column("y")[0].as_py() == -5.0
    buf[1, 0] = rows[0, 1]
    rec = rows.reshape(-1).view([("a", "<f4"), ("b", "<f4"), ("c", "<f4")])
    buf2 = torch.zeros(3, n)
    cols = interop.aos_to_soa(rec, target="numpy", out=buf2)
    np.testing.assert_array_equal(buf2.numpy(), rows.T)
    assert cols["b"].ctypes.data == buf2[1].data_ptr()
    buf2[1, 0] = 11.0
    assert cols["b"][0] == 11.0
    back = torch.empty(n, 3)
    res = interop.soa_to_aos(tab, target="torch", out=back)
    assert res.data_ptr() == back.data_ptr()
    np.testing.assert_array_equal(back.numpy(), rows)
    back[0, 0] = 99.0
    assert res[0, 0].item() == 99.0


def test_out_errors_name_the_fix():
    rows = np.zeros((6, 2), dtype=np.float32)
    with pytest.raises(InteropError, match=r"shape \(2, 6\) and dtype float32; got shape \(6, 2\)"):
        interop.aos_to_soa(rows, out=np.empty((6, 2), np.float32))
    with pytest.raises(InteropError, match="dtype float32; got shape \\(2, 6\\), dtype float64"):
        interop.aos_to_soa(rows, out=np.empty((2, 6)))
    ro = np.empty((2, 6), np.float32)
    ro.flags.writeable = False
    with pytest.raises(InteropError, match="read-only"):
        interop.aos_to_soa(rows, out=ro)
    with pytest.raises(InteropError, match="rows must be contiguous"):
        interop.aos_to_soa(rows, out=np.empty((6, 2), np.float32).T)
    mixed = np.zeros(4, dtype=[("i", "<i4"), ("f", "<f8")])
    with pytest.raises(InteropError, match="drop out="):
        interop.aos_to_soa(mixed, out=np.empty((2, 4)))
    with pytest.raises(InteropError, match=r"\(N, C\) array of shape \(6, 2\)"):
        interop.soa_to_aos({"a": np.zeros(6), "b": np.zeros(6)}, target="numpy",
                           out=np.empty((2, 6)))
