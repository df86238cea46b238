"""GPU tables: cuDF DataFrame <-> dict of CuPy/torch/JAX columns through each column's CUDA
Array Interface, and the Arrow C Device Data Interface. Skipped without a CUDA device."""

from __future__ import annotations

import pytest

import interop

pytestmark = pytest.mark.gpu


def _cai_ptr(x):
    return x.__cuda_array_interface__["data"][0]


def test_cudf_dataframe_to_cupy_columns_zero_copy():
    cudf = pytest.importorskip("cudf")
    cp = pytest.importorskip("cupy")
    df = cudf.DataFrame({"x": cp.arange(10, dtype=cp.float32), "y": cp.arange(10)})
    cols = interop.to_framework(df, "cupy")
    for n in ("x", "y"):
        assert _cai_ptr(cols[n]) == _cai_ptr(df[n])
        cp.testing.assert_array_equal(cols[n], df[n].values)


def test_cudf_dataframe_to_torch_columns():
    cudf = pytest.importorskip("cudf")
    torch = pytest.importorskip("torch")
    df = cudf.DataFrame({"x": [1.0, 2.0, 3.0]})
    cols = interop.to_framework(df, "torch")
    assert cols["x"].is_cuda and cols["x"].data_ptr() == _cai_ptr(df["x"])
    assert cols["x"].tolist() == [1.0, 2.0, 3.0]
    del torch


def test_cudf_dataframe_nulls_raise_by_default():
    cudf = pytest.importorskip("cudf")
    df = cudf.DataFrame({"a": [1, None, 3]})
    with pytest.raises(interop.errors.NullsError, match="'a'"):
        interop.to_framework(df, "cupy")


def test_dict_of_device_columns_to_cudf():
    cudf = pytest.importorskip("cudf")
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    x = cp.arange(8, dtype=cp.float64)
    y = torch.arange(8, device="cuda", dtype=torch.int64)
    df = interop.to_framework({"x": x, "y": y}, "cudf")
    assert isinstance(df, cudf.DataFrame) and df.columns.tolist() == ["x", "y"]
    assert df["x"].values.tolist() == x.tolist() and df["y"].values.tolist() == y.tolist()


def test_dict_of_jax_device_columns_to_cudf():
    cudf = pytest.importorskip("cudf")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jax.device_put(jnp.arange(4.0), jax.devices("gpu")[0])
    df = interop.to_framework({"x": x}, "cudf")
    assert isinstance(df, cudf.DataFrame) and df["x"].values.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_arrow_c_device_array_on_cuda():
    """cuDF's own export, without ``pyarrow.cuda`` (pyarrow's wheels have none: before, this
    was a raw ``ArrowKeyError: Device type 2 is not registered``, hidden by an importorskip)."""
    cudf = pytest.importorskip("cudf")
    cp = pytest.importorskip("cupy")
    df = cudf.DataFrame({"x": cp.arange(5, dtype=cp.float32)})
    if not hasattr(df, "__arrow_c_device_array__"):
        pytest.skip("this cuDF does not export __arrow_c_device_array__")
    holder = type("Holder", (), {"__arrow_c_device_array__":
                                 lambda self, *a, **k: df.__arrow_c_device_array__(*a, **k)})()
    cols = interop.to_framework(holder, "cupy")
    cp.testing.assert_array_equal(cols["x"], cp.arange(5, dtype=cp.float32))


class CupyDeviceArray:
    """An Arrow C device array over CuPy memory, as cuDF's ``to_arrow_device`` exports one:
    pyarrow's export of a host batch of the same schema, its data buffers replaced by CuPy's
    pointers, labelled CUDA device ``device``, with ``sync_event`` a ``cudaEvent_t*``
    recorded on the stream that writes the data."""

    def __init__(self, columns, device, event=None, null_count=None):
        import ctypes

        import pyarrow as pa
        from test_tables_device_arrow import _struct

        self.columns, self.device, self.null_count = columns, device, null_count
        self.event = None if event is None else ctypes.c_void_p(event.ptr)
        self.batch = pa.record_batch({n: pa.array(c.get()) for n, c in columns.items()})
        self._ctypes, self._struct = ctypes, _struct

    def __arrow_c_device_array__(self, requested_schema=None, **kw):
        ctypes = self._ctypes
        schema, array = self.batch.__arrow_c_device_array__(requested_schema, **kw)
        s = self._struct(array)
        s.device_type, s.device_id = 2, self.device
        s.sync_event = ctypes.addressof(self.event) if self.event is not None else None
        for i, col in enumerate(self.columns.values()):
            child = s.array.children[i].contents
            buffers = ctypes.cast(child.buffers, ctypes.POINTER(ctypes.c_void_p))
            buffers[1] = col.data.ptr
            if self.null_count is not None:
                buffers[0] = col.data.ptr  # a "validity bitmap" at a device address
                child.null_count = self.null_count
        return schema, array


def test_arrow_c_device_array_from_cupy_memory_waits_for_its_event_on_its_device():
    """No cuDF needed: the columns are CuPy's own memory (pointers equal), the values are
    those written on a side stream before the event was recorded there (the consumer waited
    on it), and on a second GPU the columns are on that GPU."""
    cp = pytest.importorskip("cupy")
    device = 1 if cp.cuda.runtime.getDeviceCount() > 1 else 0
    with cp.cuda.Device(device):
        side = cp.cuda.Stream(non_blocking=True)
        with side:
            x = cp.zeros(1 << 22, dtype=cp.float32)
            side.synchronize()
            for _ in range(20):
                x += 1.0  # queued on the side stream
            event = side.record()
        holder = CupyDeviceArray({"x": x}, device, event)
    cols = interop.to_framework(holder, "cupy")
    assert cols["x"].data.ptr == x.data.ptr and cols["x"].device.id == device
    assert float(cols["x"].sum()) == 20.0 * (1 << 22)


def test_arrow_c_device_array_with_an_unknown_null_count_is_refused_not_read():
    """null_count -1 and a bitmap at a device address: pyarrow would count its bits on the
    host (a segfault); interop refuses from the struct. In a child: a crash fails this test."""
    from helpers import run_child

    done = run_child("""
        import sys
        sys.path[:0] = ["tests", "tests/tables"]
        import cupy as cp, interop
        from interop.errors import UnsupportedConversionError
        from test_tables_gpu import CupyDeviceArray
        x = cp.arange(8, dtype=cp.float64)
        try:
            interop.to_framework(CupyDeviceArray({"x": x}, 0, null_count=-1), "cupy")
        except UnsupportedConversionError as e:
            assert "unknown number of nulls" in str(e), e
            print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
