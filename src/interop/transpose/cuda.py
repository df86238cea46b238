"""AoS <-> SoA on a GPU: one CuPy ``RawKernel``, a tiled transpose through shared memory.

Used by :mod:`interop.transpose.records` for device arrays (CuPy, torch CUDA tensors, Numba device
arrays: anything with ``__cuda_array_interface__``), read zero-copy as CuPy arrays. The
records are an ``(N, C)`` array of one type (CuPy has no structured dtypes); the columns
one ``(C, N)`` array. Each block of 32 x 8 threads moves a 32 x 32 tile: read along rows
(coalesced), through shared memory (padded a column, so no bank conflicts), written along
columns (coalesced): one read and one write of the data, as a device-to-device copy.
The kernel is compiled by CuPy on first use and cached on disk by CuPy.
"""

from __future__ import annotations

from typing import Any

_SOURCE = r"""
template<typename T>
__global__ void transpose(const T* src, T* dst, long long rows, long long cols,
                          long long ld_src, long long ld_dst) {
    __shared__ T tile[32][33];
    long long r0 = (long long)blockIdx.x * 32;
    int tx = threadIdx.x, ty = threadIdx.y;
    /* column tiles in a grid-stride loop: gridDim.y is at most 65535 */
    for (long long c0 = (long long)blockIdx.y * 32; c0 < cols; c0 += (long long)gridDim.y * 32) {
        for (int j = ty; j < 32; j += 8) {
            long long r = r0 + j, c = c0 + tx;
            if (r < rows && c < cols) tile[j][tx] = src[r * ld_src + c];
        }
        __syncthreads();
        for (int j = ty; j < 32; j += 8) {
            long long c = c0 + j, r = r0 + tx;
            if (r < rows && c < cols) dst[c * ld_dst + r] = tile[tx][j];
        }
        __syncthreads();
    }
}
"""
_TYPES = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
_UINT = {1: "u1", 2: "u2", 4: "u4", 8: "u8"}
_module: list[Any] = []


def _kernel(itemsize: int) -> Any:
    import cupy

    if not _module:
        names = [f"transpose<{t}>" for t in _TYPES.values()]
        _module.append(cupy.RawModule(code=_SOURCE, options=("-std=c++11",),
                                      name_expressions=names))
    return _module[0].get_function(f"transpose<{_TYPES[itemsize]}>")


def _rows_contiguous(x: Any) -> bool:
    return x.ndim == 2 and (x.shape[1] <= 1 or x.strides[1] == x.itemsize)


def transpose(src: Any, dst: Any) -> None:
    """``dst[j, i] = src[i, j]`` for CuPy arrays ``src`` ``(R, K)`` and ``dst`` ``(K, R)`` of
    one dtype: the kernel where both have contiguous rows and aligned elements of 1, 2, 4 or
    8 bytes, else CuPy's own strided copy."""
    rows, cols = src.shape
    if rows == 0 or cols == 0:
        return
    size = src.itemsize
    aligned = all(x.data.ptr % size == 0 and x.strides[0] % size == 0 for x in (src, dst))
    if size not in _TYPES or not aligned or not (_rows_contiguous(src)
                                                 and _rows_contiguous(dst)):
        dst[...] = src.T
        return
    import numpy as np

    u = _UINT[size]
    grid = ((rows + 31) // 32, min((cols + 31) // 32, 65535))
    i64 = np.int64  # the kernel's long long parameters, typed explicitly for CuPy
    _kernel(size)(grid, (32, 8), (src.view(u), dst.view(u), i64(rows), i64(cols),
                                  i64(src.strides[0] // size), i64(dst.strides[0] // size)))


def columns_buffer(c: int, n: int, dtype: Any) -> Any:
    """A fresh CuPy ``(C, N)`` array whose rows each start 256-byte aligned."""
    import cupy

    per = max(256 // dtype.itemsize, 1)
    padded = -(-n // per) * per
    return cupy.empty((c, padded), dtype=dtype)[:, :n]


def stack_columns(arrays: list[Any]) -> Any:
    """The CuPy columns as one ``(C, N)`` array: a strided view where they lie evenly spaced
    in one allocation (as :func:`columns_buffer` makes them), else a copy into one."""
    import cupy

    c, n, dt = len(arrays), len(arrays[0]), arrays[0].dtype
    ptrs = [x.data.ptr for x in arrays]
    step = ptrs[1] - ptrs[0] if c > 1 else n * dt.itemsize
    even = (all(b - a == step for a, b in zip(ptrs, ptrs[1:])) and step > 0
            and step % dt.itemsize == 0 and all(x.dtype == dt for x in arrays)
            and all(x.strides[0] == dt.itemsize or n <= 1 for x in arrays))
    if even:
        from cupy.lib.stride_tricks import as_strided

        return as_strided(arrays[0], shape=(c, n), strides=(step, dt.itemsize))
    return cupy.stack(arrays)
