"""AoS <-> SoA on a GPU (CuPy RawKernel): every value against NumPy's answer on the host."""

from __future__ import annotations

import numpy as np
import pytest

import interop
from interop.errors import InteropError

pytestmark = pytest.mark.gpu

SHAPES = [(0, 3), (1, 1), (1, 8), (31, 33), (1000, 8), (4099, 100), (70001, 256)]
TYPES = ["i1", "u1", "?", "<i2", "<f2", "<i4", "<f4", "<i8", "<f8"]


def _host(x):
    import cupy

    return cupy.asnumpy(x)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", TYPES)
def test_cupy_rows_to_columns_and_back(shape, dtype):
    import cupy

    rng = np.random.default_rng(hash((shape, dtype)) % 2**32)
    host = rng.integers(0, 100, shape).astype(dtype)
    rows = cupy.asarray(host)
    cols = interop.aos_to_soa(rows, target="cupy")
    for j in range(shape[1]):
        assert isinstance(cols[f"c{j}"], cupy.ndarray)
        np.testing.assert_array_equal(_host(cols[f"c{j}"]), host[:, j])
    out = cupy.full(shape[::-1], 7, dtype=dtype)
    res = interop.aos_to_soa(rows, target="cupy", out=out)
    np.testing.assert_array_equal(_host(out), host.T)
    if shape[0] and shape[1]:
        assert res["c0"].data.ptr == out.data.ptr  # the columns are out's rows
    back = interop.soa_to_aos(cols, target="cupy")
    np.testing.assert_array_equal(_host(back), host)
    separate = {k: v.copy() for k, v in cols.items()}  # columns in separate allocations
    again = cupy.empty(shape, dtype=dtype)
    got = interop.soa_to_aos(separate, target="cupy", out=again)
    assert got.data.ptr == again.data.ptr
    np.testing.assert_array_equal(_host(again), host)


def test_torch_cuda_rows_and_strided_out():
    import cupy
    import torch

    host = np.arange(5000 * 6, dtype=np.float32).reshape(5000, 6)
    t = torch.from_numpy(host).cuda()
    cols = interop.aos_to_soa(t, names=list("abcdef"), target="torch")
    for j, k in enumerate("abcdef"):
        assert cols[k].is_cuda
        np.testing.assert_array_equal(cols[k].cpu().numpy(), host[:, j])
    wide = cupy.zeros((6, 5100), np.float32)
    interop.aos_to_soa(t, target="cupy", out=wide[:, :5000])  # rows padded: strided out
    np.testing.assert_array_equal(_host(wide[:, :5000]), host.T)
    assert not _host(wide[:, 5000:]).any()
    back = interop.soa_to_aos({k: v for k, v in cols.items()}, target="torch")
    assert back.is_cuda and back.shape == (5000, 6)
    np.testing.assert_array_equal(back.cpu().numpy(), host)


def test_mixed_column_types_are_promoted_and_bad_out_refused():
    import cupy

    cols = {"i": cupy.arange(100, dtype=cupy.int32), "f": cupy.linspace(0, 1, 100)}
    got = interop.soa_to_aos(cols, target="cupy")
    assert got.dtype == np.float64
    np.testing.assert_array_equal(_host(got), np.stack([np.arange(100.0),
                                                        np.linspace(0, 1, 100)], 1))
    rows = cupy.zeros((10, 2), np.float32)
    with pytest.raises(InteropError, match=r"shape \(2, 10\) and dtype float32"):
        interop.aos_to_soa(rows, out=cupy.zeros((10, 2), np.float32))
    with pytest.raises(InteropError, match="must be on the GPU"):
        interop.aos_to_soa(rows, out=np.zeros((2, 10), np.float32))
    with pytest.raises(InteropError, match="2-D"):
        interop.aos_to_soa(cupy.zeros(10))
