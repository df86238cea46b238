"""The copies behind ``aos_to_soa`` / ``soa_to_aos`` on the host: which kernel runs, and each
kernel.

Two kernels do the same copies, one decision (:func:`kernel`) picks one per call (or runs
the one the caller names: ``kernel="llvm"`` / ``"numpy"``):

- **llvm**: :mod:`interop.transpose.llvm`, loops over blocks of rows compiled for this CPU
  through llvmlite (Numba's code generator, without Numba). Each record is read once and
  each column written once with non-temporal stores of whole cache lines, as ``memcpy``
  writes, so it runs near ``memcpy`` speed; the rows are shared among the CPUs from
  ``THREAD_MIN_BYTES`` on (or among ``threads=`` threads). Loading it costs
  ``import llvmlite`` and the machine code from the on-disk cache, about a tenth of a
  second (compiling it, once per machine and llvmlite version, half a second more), so it
  runs only from ``KERNEL_MIN_BYTES`` of data on, or from ``KERNEL_LOADED_MIN_BYTES`` once
  it is loaded in the process; a smaller transpose never imports llvmlite.
- **numpy**: the fallback (llvmlite absent or broken, small inputs, columns that need a
  cast, records wider than the kernel's stage): the same blocks of rows copied by NumPy
  slice assignments, each block read once while in cache, shared among the CPUs from
  ``THREAD_MIN_BYTES`` on (NumPy releases the GIL while it copies a block). Every element
  is a strided read or write and every written line is read first, so it reaches about
  half of ``memcpy`` speed.

Every copy here goes from NumPy arrays to NumPy arrays that the caller has checked
(:mod:`interop.transpose.records`); columns are 1-D and contiguous where a kernel writes
them. The compiled kernels' arguments are :class:`interop.transpose.abi.Call`'s.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from math import gcd
from typing import Any, NamedTuple

from ..errors import InteropError
from . import abi

MiB = 1 << 20
KERNEL_MIN_BYTES = 16 * MiB
"""From this many bytes the llvm kernel runs, loading it if it is not loaded yet: loading
costs about 0.1 s (docs/performance.md), a 16 MiB transpose runs 1.4 ms faster than NumPy's
and a 64 MiB one 12 ms, so the load pays back within some 70 calls of this size, a short
pipeline's run; a smaller call saves too little."""
KERNEL_LOADED_MIN_BYTES = 4 * MiB
"""Once the llvm kernel is loaded in this process, it runs from this size on: below it,
NumPy's copy is as fast (its fixed cost is lower)."""
THREAD_MIN_BYTES = 16 * MiB  # from here on the blocks of rows go to every CPU
_PIECE_BYTES = 4 * MiB  # llvm kernel: bytes of records per piece a thread takes
_BLOCK_BYTES = 4096
"""llvm kernel: bytes of records per block, staged in L1 and streamed out while the next
block is prefetched (measured on the 256 MiB bar shape, one thread: 4 KiB blocks 0.6-0.8 of
memcpy, 16 KiB 0.4-0.5, 64 KiB 0.3-0.45)."""
_TILE_BYTES = 32768  # llvm gather: bytes of records read per tile (in L1); 8-64 KiB measured
_RECORD_MAX = 16384  # wider records go to the NumPy kernel
_NUMPY_BLOCK_BYTES = 2 * MiB  # NumPy kernel: bytes of source rows per block, one L2 cache
_LINE = 64

_pool: Any = None  # (pid, threads, ThreadPoolExecutor), made on the first threaded copy
_llvm: dict[str, Any] = {}  # "kernels": the loaded kernels, or "error": why they could not load
_stages = threading.local()  # each thread's staging buffer for the llvm kernel


KERNELS = ("llvm", "numpy")
"""The kernels a caller may name (``kernel=``); ``None`` lets :func:`kernel` choose by size."""


class Kernel(NamedTuple):
    """Which kernel a transpose of ``nbytes`` runs (``"llvm"`` or ``"numpy"``) and why."""

    name: str
    why: str


def check_choice(kernel: str | None, threads: int | None) -> None:
    """Refuse a ``kernel=`` or ``threads=`` that no transpose takes, naming the fix."""
    if kernel is not None and kernel not in KERNELS:
        raise InteropError(f"kernel={kernel!r}: use 'llvm' (the compiled kernel), 'numpy' "
                           "(NumPy's blocked copies) or None (chosen by size)")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise InteropError(f"threads={threads!r}: give a number of threads (1 or more), or "
                           "None (every CPU from 16 MiB on)")


def kernel(nbytes: int, cast: bool = False, row_stride: int | None = None,
           record_bytes: int = 1, choice: str | None = None) -> Kernel:
    """The kernel a transpose of ``nbytes`` bytes runs, and why: the one place that decides.
    ``cast``: some column is of another type than its place in the records, or not
    contiguous (the llvm kernel copies bytes; NumPy's assignment casts and strides);
    ``row_stride``: bytes from one record to the next (``None``: unknown, taken as ordinary
    records), ``record_bytes``: the bytes one record spans. ``choice``: the kernel the
    caller names (``None``: by size); ``"llvm"`` still gives way to NumPy where the compiled
    kernel cannot copy the layout or cannot load, and says why."""
    check_choice(choice, None)
    if choice == "numpy":
        return Kernel("numpy", "kernel='numpy' asks for NumPy's blocked copies")
    if cast:
        return Kernel("numpy", "a column differs in type from its place in the records, or "
                      "is not contiguous: NumPy's assignment casts it")
    loaded = "kernels" in _llvm
    least = KERNEL_LOADED_MIN_BYTES if loaded else KERNEL_MIN_BYTES
    if choice is None and nbytes < least:
        return Kernel("numpy", f"{nbytes} bytes is under the {least} bytes from which the "
                      "compiled kernel pays for " + ("itself" if loaded else
                                                     "loading it (llvmlite and the compiled "
                                                     "code: about 0.1 s, once a process)"))
    if "error" in _llvm:
        return Kernel("numpy", _llvm["error"])
    if not loaded:
        try:
            import importlib.util

            found = importlib.util.find_spec("llvmlite") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            _llvm["error"] = "llvmlite is not installed (pip install numba, or llvmlite)"
            return Kernel("numpy", _llvm["error"])
    if row_stride is not None and not max(record_bytes, 1) <= row_stride <= _RECORD_MAX:
        return Kernel("numpy", f"records of {record_bytes} bytes, {row_stride} bytes apart: "
                      "the compiled kernel takes records that do not overlap, in order of "
                      f"address, at most {_RECORD_MAX} bytes apart; NumPy copies each field "
                      "as one block")
    why = "kernel='llvm' asks for" if choice == "llvm" else f"{nbytes} bytes:"
    return Kernel("llvm", f"{why} the compiled kernel (LLVM through llvmlite, "
                  "non-temporal stores)" + ("" if loaded else ", loading it now (once a "
                                             "process)"))


def _kernels(nbytes: int, cast: bool, row_stride: int, record_bytes: int,
             choice: str | None) -> Any:
    """The loaded llvm kernels if :func:`kernel` picks them, else ``None``."""
    if kernel(nbytes, cast, row_stride, record_bytes, choice).name != "llvm":
        return None
    k = _llvm.get("kernels")
    if k is None:
        try:
            from . import llvm

            k = llvm.load()
        except Exception as e:  # a broken install: say so in kernel(), copy with NumPy
            _llvm["error"] = f"the compiled kernel failed to load ({type(e).__name__}: {e})"
            return None
        _llvm["kernels"] = k
    return k


def _run(fn: Any, base: int, row_stride: int, offsets: Sequence[int], sizes: Sequence[int],
         columns: Sequence[Any], n: int, r0: int, line_rows: int, tile: int,
         block: int, threads: int | None) -> None:
    """``fn`` (gather or scatter) over rows ``[0, n)``, in pieces that start on a line of the
    output (``r0`` modulo ``line_rows``), on every CPU from ``THREAD_MIN_BYTES`` on (or on
    ``threads`` threads, a block per piece)."""
    import numpy as np

    widths = np.asarray(sizes, np.int64)
    places = block * (np.cumsum(widths) - widths)  # gather: each field's part of the stage
    offs = np.asarray(offsets, np.int64)
    addr = np.array([x.ctypes.data for x in columns], np.int64)
    call = abi.Call(base=base, row_stride=row_stride, offsets=offs.ctypes.data,
                    sizes=widths.ctypes.data, places=places.ctypes.data,
                    columns=addr.ctypes.data, fields=len(offs), i0=0, i1=n, r0=r0,
                    line_rows=line_rows, stage=0, tile=tile, block=block)
    stage_bytes = block * max(row_stride, int(widths.sum()))
    nbytes = n * row_stride
    if threads is not None:
        step = block if threads > 1 else n
    elif nbytes >= THREAD_MIN_BYTES:
        step = max(block, _PIECE_BYTES // max(row_stride, 1) // block * block)
    else:
        step = n
    cuts = [0, *range(r0 + step, n, step), n] if step < n else [0, n]

    def piece(i: int, j: int) -> None:
        fn(*call._replace(i0=i, i1=j, stage=_stage(stage_bytes)))

    _run_pieces(list(zip(cuts, cuts[1:])), nbytes, piece, threads)


def _stage(nbytes: int) -> int:
    """The address of this thread's staging buffer of at least ``nbytes``, 64-byte aligned."""
    import numpy as np

    buf = getattr(_stages, "buf", None)
    if buf is None or buf.size < nbytes + _LINE:
        buf = _stages.buf = np.zeros(nbytes + _LINE, np.uint8)
    return buf.ctypes.data + (-buf.ctypes.data) % _LINE


def _phase(address: int, width: int) -> int:
    """Rows until ``address + row*width`` starts a 64-byte line (0 where none does)."""
    for r in range(_LINE // gcd(width, _LINE)):
        if (address + r * width) % _LINE == 0:
            return r
    return 0


def _block(row_stride: int, line_rows: int) -> int:
    """Rows per block: ``_BLOCK_BYTES`` of records, at least 64 rows (so that each column's
    part of a block is whole lines), a multiple of ``line_rows``."""
    rows = max(_LINE, _BLOCK_BYTES // max(row_stride, 1))
    return rows // line_rows * line_rows


def _uniform(offsets: Sequence[int], sizes: Sequence[int]) -> int | None:
    """The width of fields of one width packed back to back from byte 0, at least 8 of
    them (the kernel's register transposes take 8 at a time), else ``None``."""
    w = int(sizes[0])
    if len(sizes) < 8 or any(int(s) != w for s in sizes):
        return None
    return w if all(int(o) == j * w for j, o in enumerate(offsets)) else None


def _gather(k: Any, base: int, row_stride: int, offsets: Sequence[int],
            sizes: Sequence[int], columns: Sequence[Any], n: int, threads: int | None) -> None:
    """Records -> columns: blocks start on a line of column 0 (the others match it when
    they share its alignment, as fresh aligned columns and the rows of one array do)."""
    _run(k.pick("gather", _uniform(offsets, sizes)), base, row_stride, offsets, sizes,
         columns, n, _phase(columns[0].ctypes.data, int(sizes[0])), _LINE,
         max(1, _TILE_BYTES // max(row_stride, 1)), _block(row_stride, _LINE), threads)


def _scatter(k: Any, base: int, row_stride: int, offsets: Sequence[int],
             sizes: Sequence[int], columns: Sequence[Any], n: int,
             threads: int | None) -> None:
    """Columns -> records: blocks of whole records that start on a line of the output."""
    line_rows = _LINE // gcd(row_stride, _LINE)
    _run(k.pick("scatter", _uniform(offsets, sizes)), base, row_stride, offsets, sizes,
         columns, n, _phase(base, row_stride), line_rows, 1, _block(row_stride, line_rows),
         threads)


def _contiguous(x: Any) -> bool:
    """A 1-D array whose values are back to back."""
    return x.ndim == 1 and (x.shape[0] <= 1 or x.strides[0] == x.itemsize)


# ---- the four copies --------------------------------------------------------------------

def _copy(gather: bool, records: Any, n: int, record_bytes: int, offsets: Sequence[int],
          sizes: Sequence[int], columns: Sequence[Any], cast: bool,
          numpy_copy: Callable[[int, int], None], kernel: str | None,
          threads: int | None) -> None:
    """One transpose between ``n`` records of ``record_bytes`` (the rows of ``records``, its
    ``strides[0]`` apart; field ``f`` at ``offsets[f]``, ``sizes[f]`` bytes) and
    ``columns``: the llvm kernel where :func:`kernel` picks it (``gather``: records ->
    columns), else ``numpy_copy(i, j)`` over blocks of rows."""
    if n == 0:
        return
    k = _kernels(n * record_bytes, cast, records.strides[0], record_bytes, kernel)
    if k is None:
        _run_blocks(n, record_bytes, numpy_copy, threads)
        return
    (_gather if gather else _scatter)(k, records.ctypes.data, records.strides[0], offsets,
                                      sizes, columns, n, threads)


def rows_to_columns(a: Any, out: Any, kernel: str | None = None,
                    threads: int | None = None) -> None:
    """``out[j, i] = a[i, j]``: an ``(N, C)`` array into a ``(C, N)`` one of the same dtype
    whose rows are contiguous."""
    n, c = a.shape

    def copy(i: int, j: int) -> None:
        out[:, i:j] = a[i:j].T

    _copy(True, a, n * bool(c), c * a.itemsize, [j * a.strides[1] for j in range(c)],
          [a.itemsize] * c, list(out), False, copy, kernel, threads)


def records_to_columns(rows: Any, cols: Sequence[Any], kernel: str | None = None,
                       threads: int | None = None) -> None:
    """Each field of the 1-D structured array ``rows`` into its contiguous column."""
    names = rows.dtype.names
    fields = [rows.dtype.fields[name] for name in names]

    def copy(i: int, j: int) -> None:
        blk = rows[i:j]
        for name, col in zip(names, cols):
            col[i:j] = blk[name]

    _copy(True, rows, len(rows), rows.dtype.itemsize, [f[1] for f in fields],
          [f[0].itemsize for f in fields], cols, False, copy, kernel, threads)


def columns_to_rows(arrays: Sequence[Any], out: Any, kernel: str | None = None,
                    threads: int | None = None) -> None:
    """``out[:, j] = arrays[j]``: 1-D columns into an ``(N, C)`` array whose rows are
    contiguous (columns of another dtype are cast as NumPy assignment casts)."""
    n, c = out.shape
    dt = out.dtype

    def copy(i: int, j: int) -> None:
        blk = out[i:j]
        for col, x in enumerate(arrays):
            blk[:, col] = x[i:j]

    cast = not all(x.dtype == dt and _contiguous(x) for x in arrays)
    _copy(False, out, n * bool(c), c * dt.itemsize, [j * dt.itemsize for j in range(c)],
          [dt.itemsize] * c, arrays, cast, copy, kernel, threads)


def columns_to_records(arrays: Sequence[Any], out: Any, kernel: str | None = None,
                       threads: int | None = None) -> None:
    """Column ``j`` into field ``j`` of the 1-D structured array ``out`` (cast as NumPy
    assignment casts where its dtype differs from the field's)."""
    names = out.dtype.names
    fields = [out.dtype.fields[name] for name in names]

    def copy(i: int, j: int) -> None:
        blk = out[i:j]
        for name, x in zip(names, arrays):
            blk[name] = x[i:j]

    cast = not all(x.dtype == f[0] and _contiguous(x) for x, f in zip(arrays, fields))
    _copy(False, out, len(out), out.dtype.itemsize, [f[1] for f in fields],
          [f[0].itemsize for f in fields], arrays, cast, copy, kernel, threads)


# ---- the NumPy kernel's blocks and threads ----------------------------------------------

def _block_rows(row_bytes: int) -> int:
    return max(1024, _NUMPY_BLOCK_BYTES // max(row_bytes, 1))


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may run on
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _executor(workers: int) -> Any:
    """The module's thread pool of ``workers`` threads, made again after a fork (a forked
    child has the pool object but none of its threads)."""
    global _pool
    pid = os.getpid()
    if _pool is None or _pool[0] != pid or _pool[1] < workers:
        from concurrent.futures import ThreadPoolExecutor

        _pool = (pid, workers, ThreadPoolExecutor(workers, thread_name_prefix="interop-aos"))
    return _pool[2]


def _run_blocks(n: int, row_bytes: int, copy: Callable[[int, int], None],
                threads: int | None) -> None:
    """``copy(i, j)`` for every block of rows ``[i, j)`` of ``[0, n)``: blocks of
    :func:`_block_rows`, or with ``threads`` given, at least four a thread."""
    step = _block_rows(row_bytes)
    if threads is not None and threads > 1:
        step = min(step, -(-n // (4 * threads)))
    _run_pieces([(i, min(i + step, n)) for i in range(0, n, step)], n * row_bytes, copy,
                threads)


def _run_pieces(pieces: Sequence[tuple[int, int]], nbytes: int,
                copy: Callable[[int, int], None], threads: int | None = None) -> None:
    """``copy(i, j)`` for every piece of rows: on the calling thread for fewer than
    ``THREAD_MIN_BYTES``, else on every CPU (or on ``threads`` threads, whatever the
    size), each thread taking the next piece until none is left (a thread slowed by other
    load just takes fewer)."""
    if threads is None:
        threads = _cpus() if nbytes >= THREAD_MIN_BYTES else 1
    threads = min(threads, len(pieces))
    if threads <= 1:
        for i, j in pieces:
            copy(i, j)
        return
    todo = iter(pieces)
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                piece = next(todo, None)
            if piece is None:
                return
            copy(*piece)

    helpers = [_executor(threads - 1).submit(work) for _ in range(threads - 1)]
    try:
        work()
    except BaseException:
        with lock:  # the copy failed or was interrupted: leave the helpers nothing more to do
            for _ in todo:
                pass
        raise
    finally:
        for f in helpers:  # a helper that has not started yet has nothing left to do
            if not f.cancel():
                f.result()
