"""GPU conversions. Every test needs a CUDA device and skips, with the reason, without one.

None of these has run on hardware yet (no GPU machine was available); they are written
from the frameworks' documented APIs so that they pass the day they run on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import interop
import oracles
from interop.errors import NullsError, ZeroCopyError

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy", reason="CuPy is not installed: it makes and reads the GPU samples")

GPU = ["cupy", "numba", "torch", "jax", "cudf"]
DTYPES = ["bool", "float16", "float32", "float64", "complex64", "int32", "uint8"]


def _make(kind, values):
    """A device value of framework ``kind`` holding ``values`` (a host NumPy array)."""
    import cupy

    c = cupy.asarray(values)
    if kind == "cupy":
        return c
    pytest.importorskip(kind)
    if kind == "numba":
        from numba import cuda

        return cuda.as_cuda_array(c)
    if kind == "torch":
        import torch

        return torch.as_tensor(c, device="cuda")
    if kind == "jax":
        import jax

        return jax.dlpack.from_dlpack(c)
    if kind == "cudf":
        import cudf

        return cudf.Series(c)
    raise AssertionError(kind)


def _host(x) -> np.ndarray:
    """A device value's values on the host, copied by its own framework (not by interop)."""
    mod = type(x).__module__.partition(".")[0]
    if mod == "cupy":
        import cupy

        return cupy.asnumpy(x)
    if mod == "numba":
        return x.copy_to_host()
    if mod == "torch":
        return x.cpu().numpy()
    if mod == "cudf":
        return x.to_numpy()
    return np.asarray(x)  # JAX


def _ptr(x):
    """The device address, by the framework's own accessor (tests/oracles.py)."""
    return oracles.pointer(x)


def _mutable(kind):
    return kind in ("cupy", "numba", "torch")


def _write(x, i, v) -> None:
    """``x[i] = v`` through a mutable framework's own API, then wait for the device."""
    import cupy

    x[i] = v
    cupy.cuda.runtime.deviceSynchronize()


@pytest.mark.parametrize("src", GPU)
@pytest.mark.parametrize("tgt", GPU)
def test_pair_is_zero_copy_on_device(src, tgt):
    import cupy

    if "cudf" in (src, tgt):
        pytest.importorskip("cudf", reason="cuDF is not installed")

    values = np.arange(16, dtype=np.float32)
    x = _make(src, values)
    y = interop.to_framework(x, tgt, copy=False)
    assert interop.explain(x, tgt).zero_copy
    assert _ptr(x) == _ptr(y)
    np.testing.assert_array_equal(_host(y), values)
    # the write proof: through a mutable side with its own API, read on the other with its own
    if _mutable(src):
        _write(x, 3, 99.0)
        assert _host(y)[3] == 99.0
    elif _mutable(tgt):
        _write(y, 3, 99.0)
        assert _host(x)[3] == 99.0
    else:  # jax <-> cudf, jax <-> jax, cudf <-> cudf: neither may be written
        cupy.cuda.runtime.memset(_ptr(x) + 3 * 4, 0, 4)  # a raw write at the source's address
        cupy.cuda.runtime.deviceSynchronize()
        assert _host(y)[3] == 0.0


@pytest.mark.parametrize("src", ["cupy", "torch", "jax"])
@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16"])
def test_dtypes_round_trip(src, dtype):
    if dtype == "bfloat16":
        import ml_dtypes

        values = np.arange(8).astype(ml_dtypes.bfloat16)  # CuPy 14 holds it (ml_dtypes)
    else:
        values = (np.arange(8) % 2).astype(dtype)
    x = _make(src, values) if dtype != "bfloat16" else _bf16(src, values)
    for tgt in ("torch", "jax"):
        y = interop.to_framework(x, tgt)
        back = interop.to_framework(y, "numpy", device="cpu")
        np.testing.assert_array_equal(np.asarray(back), values)


def _bf16(src, values):
    import torch

    if src == "cupy":  # CuPy's own bfloat16 array, whose CAI typestr is <V2
        import cupy

        return cupy.asarray(values)
    t = torch.from_numpy(values.view(np.int16)).view(torch.bfloat16).cuda()
    return t if src == "torch" else interop.to_framework(t, src)


def test_strided_cupy_to_jax_copies_and_copy_false_refuses():
    import cupy

    x = cupy.arange(20, dtype=cupy.float32)[::2]
    assert not interop.explain(x, "jax").zero_copy
    with pytest.raises(ZeroCopyError):
        interop.to_framework(x, "jax", copy=False)
    np.testing.assert_array_equal(np.asarray(interop.to_framework(x, "jax")),
                                  np.arange(20, dtype=np.float32)[::2])


def test_read_only_cai_producer_is_recorded():
    import cupy

    class ReadOnly:
        def __init__(self, a):
            self.a = a
            cai = dict(a.__cuda_array_interface__)
            cai["data"] = (cai["data"][0], True)
            self.__cuda_array_interface__ = cai

    x = cupy.arange(4, dtype=cupy.float32)
    y = interop.to_framework(ReadOnly(x), "cupy")
    assert int(y.data.ptr) == int(x.data.ptr)


def test_cudf_nulls_are_refused_by_name():
    cudf = pytest.importorskip("cudf")
    s = cudf.Series([1.0, None, 3.0], name="price")
    with pytest.raises(NullsError, match="price"):
        interop.to_framework(s, "torch")


def test_device_to_host_only_when_asked():
    import cupy

    x = cupy.arange(5, dtype=cupy.float64)
    with pytest.raises(interop.errors.DeviceError, match="device='cpu'"):
        interop.to_framework(x, "numpy")
    np.testing.assert_array_equal(interop.to_framework(x, "numpy", device="cpu"), np.arange(5.0))
    with pytest.raises(ZeroCopyError):
        interop.to_framework(x, "numpy", device="cpu", copy=False)


def test_host_to_device_is_an_explicit_copy():
    a = np.arange(6, dtype=np.float32)
    t = interop.to_framework(a, "torch", device="cuda")
    assert t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), a)


@pytest.mark.parametrize("tgt", ["torch", "numba"])
def test_stream_ordering_kernel_then_conversion(tgt):
    """Slow work on a CuPy side stream, then the conversion with the consumer's own side
    stream (not the default one) as ``stream=``: the consumer's work on its stream sees the
    producer's values. Without the ordering the sum runs before the additions finish."""
    import cupy
    import torch

    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        x = cupy.zeros(1 << 22, dtype=cupy.float32)
        for _ in range(50):
            x += 1.0  # queued on `side`
        consumer = torch.cuda.Stream()  # a non-default stream of the consumer
        y = interop.to_framework(x, tgt, stream=consumer)
    if tgt == "torch":
        with torch.cuda.stream(consumer):
            total = float(y.sum())
    else:  # Numba synchronised on the producer's stream itself (CAI v3)
        total = float(y.copy_to_host().sum())
    assert total == 50.0 * (1 << 22)


def _jax_pointer(j) -> int:
    return j.unsafe_buffer_pointer()


def test_kernel_result_in_a_numba_array_reaches_jax_zero_copy():
    """A kernel (CuPy's, so no Numba compiler is needed) fills a Numba device array; the
    array reaches JAX without a copy, by Numba's and JAX's own pointers."""
    import cupy

    cuda = pytest.importorskip("numba.cuda")
    pytest.importorskip("jax")

    double = cupy.ElementwiseKernel("", "float32 a", "a = i * 2", "double_index")
    d = cuda.device_array(256, dtype=np.float32)
    double(cupy.asarray(d))  # writes through CuPy's view of the Numba buffer
    cupy.cuda.get_current_stream().synchronize()
    j = interop.to_framework(d, "jax")
    assert interop.explain(d, "jax").zero_copy
    assert _jax_pointer(j) == d.device_ctypes_pointer.value
    np.testing.assert_array_equal(np.asarray(j), np.arange(256, dtype=np.float32) * 2)


def _numpy_removed_attribute(e: AttributeError) -> bool:
    """The known break: numba-cuda 0.30.4 asks NumPy 2.5 for an attribute NumPy removed
    (raised from ``numpy/__init__.py``'s module ``__getattr__``)."""
    import traceback

    last = traceback.extract_tb(e.__traceback__)[-1]
    return last.filename.replace("\\", "/").endswith("numpy/__init__.py")


def test_numba_kernel_result_reaches_jax_zero_copy():
    from importlib.metadata import version

    cuda = pytest.importorskip("numba.cuda")
    pytest.importorskip("jax")

    @cuda.jit
    def fill(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = i * 2

    d = cuda.device_array(256, dtype=np.float32)
    try:
        fill[1, 256](d)  # compiles here
    except AttributeError as e:
        if not _numpy_removed_attribute(e):
            raise
        pytest.skip(f"numba-cuda {version('numba-cuda')} cannot compile a CUDA kernel with "
                    f"NumPy {np.__version__} (AttributeError from NumPy: {e})")
    cuda.synchronize()
    j = interop.to_framework(d, "jax")
    assert interop.explain(d, "jax").zero_copy
    assert _jax_pointer(j) == d.device_ctypes_pointer.value
    np.testing.assert_array_equal(np.asarray(j), np.arange(256, dtype=np.float32) * 2)
