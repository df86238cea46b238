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
    cudf = pytest.importorskip("cudf")
    cp = pytest.importorskip("cupy")
    pytest.importorskip("pyarrow.cuda")
    df = cudf.DataFrame({"x": cp.arange(5, dtype=cp.float32)})
    if not hasattr(df, "__arrow_c_device_array__"):
        pytest.skip("this cuDF does not export __arrow_c_device_array__")
    holder = type("Holder", (), {"__arrow_c_device_array__":
                                 lambda self, *a, **k: df.__arrow_c_device_array__(*a, **k)})()
    cols = interop.to_framework(holder, "cupy")
    cp.testing.assert_array_equal(cols["x"], cp.arange(5, dtype=cp.float32))
