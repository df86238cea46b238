"""The compiled AoS <-> SoA transpose: Numba, parallel over blocks of rows, cached on disk.

Imported only by :mod:`interop.tables.aos` when a transpose is large enough to pay for
loading Numba (``aos._KERNEL_MIN_BYTES``); importing this module imports ``numba``.

Two kernels, each a ``prange`` over blocks of rows (about ``BLOCK_BYTES`` of records, which
stay in the core's L2 cache while their fields are written out, so the data is read once
and written once, as by a ``memcpy``):

- :func:`rows_to_columns` / :func:`columns_to_rows`: records of ``C`` fields of one type,
  as a ``(N, C)`` array of unsigned integers of the field's width, <-> a ``(C, N)`` array.
  The copy goes in tiles of 8 rows by 8 fields, written out with constant trip counts, so
  LLVM unrolls them (no loop or index arithmetic per element); within a block, 8 fields at
  a time over all its rows, so that a record of many fields writes 8 streams at once, not
  one per field;
- :func:`gather` / :func:`scatter`: any record layout, given as addresses: rows of
  ``row_stride`` bytes, field ``f`` at byte ``offsets[f]`` of ``sizes[f]`` bytes (packed or
  padded, mixed widths, unaligned), column ``f`` a contiguous buffer at ``columns[f]``. One
  compiled signature serves every layout; per block, one field at a time, its width picking
  a loop of unrolled 8-row tiles.

``cache=True`` writes the compiled code next to this file (``__pycache__``) when that
directory is writable (a source checkout, an editable install, a venv's site-packages),
else in Numba's per-user cache directory, or in ``NUMBA_CACHE_DIR`` where that is set;
a later process loads it instead of compiling.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import njit, prange, types, uint64
from numba.extending import intrinsic

BLOCK_BYTES = 256 * 1024
"""Bytes of records per block: half of this machine's per-core L2, measured best."""
TILE = 8
_u = uint64


def _copier(bits: int) -> Any:
    """An intrinsic copying one ``bits``-wide value from address ``src`` to ``dst``, neither
    assumed aligned (packed records put fields at any byte)."""

    @intrinsic
    def copy(typingctx: Any, dst: Any, src: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            ptr = ir.IntType(bits).as_pointer()
            value = builder.load(builder.inttoptr(args[1], ptr), align=1)
            builder.store(value, builder.inttoptr(args[0], ptr), align=1)
            return context.get_dummy_value()

        return types.void(types.intp, types.intp), codegen

    return copy


_copy8, _copy16, _copy32, _copy64 = (_copier(b) for b in (8, 16, 32, 64))


@njit(inline="always")
def _tile8(copy: Any, dst: int, dstep: int, src: int, sstep: int) -> None:
    copy(dst, src)
    copy(dst + dstep, src + sstep)
    copy(dst + 2 * dstep, src + 2 * sstep)
    copy(dst + 3 * dstep, src + 3 * sstep)
    copy(dst + 4 * dstep, src + 4 * sstep)
    copy(dst + 5 * dstep, src + 5 * sstep)
    copy(dst + 6 * dstep, src + 6 * sstep)
    copy(dst + 7 * dstep, src + 7 * sstep)


@njit(inline="always")
def _strided(dst: int, dstep: int, src: int, sstep: int, count: int, size: int) -> None:
    """``count`` values of ``size`` bytes, the k-th from ``src + k*sstep`` to ``dst + k*dstep``:
    in unrolled tiles of 8, then one by one."""
    tiles = count - count % TILE
    k = 0
    if size == 4:
        while k < tiles:
            _tile8(_copy32, dst + k * dstep, dstep, src + k * sstep, sstep)
            k += TILE
        while k < count:
            _copy32(dst + k * dstep, src + k * sstep)
            k += 1
    elif size == 8:
        while k < tiles:
            _tile8(_copy64, dst + k * dstep, dstep, src + k * sstep, sstep)
            k += TILE
        while k < count:
            _copy64(dst + k * dstep, src + k * sstep)
            k += 1
    elif size == 1:
        while k < tiles:
            _tile8(_copy8, dst + k * dstep, dstep, src + k * sstep, sstep)
            k += TILE
        while k < count:
            _copy8(dst + k * dstep, src + k * sstep)
            k += 1
    elif size == 2:
        while k < tiles:
            _tile8(_copy16, dst + k * dstep, dstep, src + k * sstep, sstep)
            k += TILE
        while k < count:
            _copy16(dst + k * dstep, src + k * sstep)
            k += 1
    else:  # 16-byte complex, 12-byte fields ...: 8 bytes at a time, then the rest
        for k in range(count):
            d, s = dst + k * dstep, src + k * sstep
            b = 0
            while b + 8 <= size:
                _copy64(d + b, s + b)
                b += 8
            while b < size:
                _copy8(d + b, s + b)
                b += 1


@njit(parallel=True, cache=True, nogil=True)
def rows_to_columns(a: Any, out: Any, block: int) -> None:
    """``out[j, i] = a[i, j]`` for an ``(N, C)`` ``a`` and a ``(C, N)`` ``out`` of one
    unsigned integer type, in blocks of ``block`` rows over the threads. (Indices are cast
    to unsigned: Numba then drops its negative-index test, which costs as much as the copy.)"""
    n, c = a.shape
    ct = c - c % TILE
    for b in prange((n + block - 1) // block):
        i0 = b * block
        i1 = min(i0 + block, n)
        it = i1 - (i1 - i0) % TILE
        for j in range(0, ct, TILE):  # 8 columns at a time: 8 output streams
            uj = _u(j)
            for i in range(i0, it, TILE):
                ui = _u(i)
                for jj in range(TILE):
                    for ii in range(TILE):
                        out[uj + _u(jj), ui + _u(ii)] = a[ui + _u(ii), uj + _u(jj)]
        for j in range(ct, c):
            for i in range(i0, it, TILE):
                ui = _u(i)
                for ii in range(TILE):
                    out[_u(j), ui + _u(ii)] = a[ui + _u(ii), _u(j)]
        for i in range(it, i1):
            for j in range(c):
                out[_u(j), _u(i)] = a[_u(i), _u(j)]


@njit(parallel=True, cache=True, nogil=True)
def columns_to_rows(cols: Any, out: Any, block: int) -> None:
    """``out[i, j] = cols[j, i]``: the inverse of :func:`rows_to_columns`."""
    c, n = cols.shape
    ct = c - c % TILE
    for b in prange((n + block - 1) // block):
        i0 = b * block
        i1 = min(i0 + block, n)
        it = i1 - (i1 - i0) % TILE
        for j in range(0, ct, TILE):  # 8 columns at a time: 8 input streams
            uj = _u(j)
            for i in range(i0, it, TILE):
                ui = _u(i)
                for ii in range(TILE):
                    for jj in range(TILE):
                        out[ui + _u(ii), uj + _u(jj)] = cols[uj + _u(jj), ui + _u(ii)]
        for j in range(ct, c):
            for i in range(i0, it, TILE):
                ui = _u(i)
                for ii in range(TILE):
                    out[ui + _u(ii), _u(j)] = cols[_u(j), ui + _u(ii)]
        for i in range(it, i1):
            for j in range(c):
                out[_u(i), _u(j)] = cols[_u(j), _u(i)]


@njit(parallel=True, cache=True, nogil=True)
def gather(src: int, row_stride: int, offsets: Any, sizes: Any, columns: Any, n: int,
           block: int) -> None:
    """Records -> columns: for each row ``i`` and field ``f``, the ``sizes[f]`` bytes at
    ``src + i*row_stride + offsets[f]`` go to ``columns[f] + i*sizes[f]``: per block (in L2),
    one field at a time over its rows, in unrolled tiles of 8 (the field's width is looked
    at once per block; measured 0.72 of memcpy for 100 mixed fields against 0.52 for 8
    fields at a time over 8-row tiles)."""
    nf = offsets.size
    for b in prange((n + block - 1) // block):
        i0 = b * block
        m = min(block, n - i0)
        row = src + i0 * row_stride
        for f in range(nf):
            s = sizes[f]
            _strided(columns[f] + i0 * s, s, row + offsets[f], row_stride, m, s)


@njit(parallel=True, cache=True, nogil=True)
def scatter(dst: int, row_stride: int, offsets: Any, sizes: Any, columns: Any, n: int,
            block: int) -> None:
    """Columns -> records: the inverse of :func:`gather` (bytes of a record that no field
    covers, padding, are left as they were)."""
    nf = offsets.size
    for b in prange((n + block - 1) // block):
        i0 = b * block
        m = min(block, n - i0)
        row = dst + i0 * row_stride
        for f in range(nf):
            s = sizes[f]
            _strided(row + offsets[f], row_stride, columns[f] + i0 * s, s, m, s)
