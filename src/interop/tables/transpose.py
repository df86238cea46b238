"""The copies behind ``aos_to_soa`` / ``soa_to_aos``: which kernel runs, and each kernel.

Two kernels do the same copies, one decision (:func:`kernel`) picks one per call:

- **numba**: :mod:`interop.tables.kernels`, compiled loops over blocks of rows
  (``numba.njit(parallel=True, cache=True)``), on Numba's threads from
  ``_PARALLEL_MIN_BYTES`` on. It reads each record once and writes each field once with no
  per-element interpreter or NumPy overhead, so it runs near ``memcpy`` speed. Loading it
  is not free: ``import numba`` (0.4-0.6 s here), then, at the first call, Numba's typing
  and lowering registries (about 1 s here, a scipy.linalg import by Numba included), then
  the compiled code from the on-disk cache (compiling it, once per machine and Numba
  version, takes seconds). So it runs only from ``_KERNEL_MIN_BYTES`` of data on, or from
  ``_KERNEL_LOADED_MIN_BYTES`` once Numba is loaded in the process anyway; a smaller
  transpose never imports Numba.
- **numpy**: the fallback (Numba absent or broken, small inputs, a forked child of a
  process that ran the numba kernel: its OpenMP threads do not survive a fork): the same
  blocks of rows copied by NumPy slice assignments, each block read once while in cache,
  shared among the CPUs from ``_THREAD_MIN_BYTES`` on (NumPy releases the GIL while it
  copies a block). Every element is still a strided read or write, so it reaches about
  half of ``memcpy`` speed.

Every copy here goes from NumPy arrays to NumPy arrays that the caller has checked
(:mod:`interop.tables.aos`); columns are 1-D and contiguous where a kernel writes them.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

MiB = 1 << 20
_KERNEL_MIN_BYTES = 64 * MiB
"""From this many bytes the numba kernel runs, loading Numba if it is not loaded yet: a
64 MiB transpose saved 20-30 ms over NumPy's (docs/performance.md, section 4), so loading
Numba (its import and registries: 2-5 s on the loaded test machine) pays back over some
100-200 such calls, a data pipeline's run; a smaller call saves too little for that."""
_KERNEL_LOADED_MIN_BYTES = 1 * MiB
"""Once Numba is loaded in this process (by an earlier transpose or by the user), the numba
kernel runs from this size on: below it, the two kernels take about the same time."""
_PARALLEL_MIN_BYTES = 64 * MiB
"""The numba kernel runs on Numba's threads from this size on, below it on the calling thread:
waking a pool thread that slept on a busy core costs milliseconds, more than a smaller
copy saves by sharing (measured on this shared 2-core machine: 12 ms for a 1 MiB copy)."""
_BLOCK_BYTES = 2 * MiB  # NumPy kernel: bytes of source rows per block, one L2 cache
_THREAD_MIN_BYTES = 16 * MiB  # NumPy kernel: from here on the blocks go to every CPU
_UINT = {1: "u1", 2: "u2", 4: "u4", 8: "u8"}

_pool: Any = None  # (pid, threads, ThreadPoolExecutor), made on the first threaded copy
_numba: dict[str, Any] = {}  # "module": kernels, or "error": why Numba could not load
_ran_in: list[int] = []  # the pid that ran the numba kernel first
_kernel_lock = threading.Lock()  # one numba kernel at a time (its thread pool is shared)


class Kernel(NamedTuple):
    """Which kernel a transpose of ``nbytes`` runs (``"numba"`` or ``"numpy"``) and why."""

    name: str
    why: str


def kernel(nbytes: int, cast: bool = False) -> Kernel:
    """The kernel a transpose of ``nbytes`` bytes runs, and why: the one place that decides.
    ``cast``: some column is of another type than its place in the records, or not
    contiguous (the numba kernel copies bytes; NumPy's assignment casts and strides)."""
    if cast:
        return Kernel("numpy", "a column differs in type from its place in the records, or "
                      "is not contiguous: NumPy's assignment casts it")
    loaded = sys.modules.get("numba") is not None
    least = _KERNEL_LOADED_MIN_BYTES if loaded else _KERNEL_MIN_BYTES
    if nbytes < least:
        return Kernel("numpy", f"{nbytes} bytes is under the {least} bytes from which the "
                      "compiled kernel pays for " + ("itself" if loaded else
                                                     "loading Numba (its import and its "
                                                     "registries: seconds, once a process)"))
    if "error" in _numba:
        return Kernel("numpy", _numba["error"])
    if _ran_in and _ran_in[0] != os.getpid():
        return Kernel("numpy", "a forked child of a process that ran the Numba kernel (its "
                      "OpenMP threads do not survive a fork)")
    if "module" not in _numba:
        try:
            import importlib.util

            found = importlib.util.find_spec("numba") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            _numba["error"] = "Numba is not installed (pip install numba)"
            return Kernel("numpy", _numba["error"])
    return Kernel("numba", f"{nbytes} bytes: Numba's parallel compiled kernel"
                  + ("" if "module" in _numba else ", loading Numba now (once per process)"))


def _kernels(nbytes: int, cast: bool = False) -> Any:
    """The numba kernels module if :func:`kernel` picks it, else ``None``."""
    if kernel(nbytes, cast).name != "numba":
        return None
    mod = _numba.get("module")
    if mod is None:
        try:
            from . import kernels as mod
        except Exception as e:  # a broken install: say so in kernel(), copy with NumPy
            _numba["error"] = f"Numba failed to load ({type(e).__name__}: {e})"
            return None
        _numba["module"] = mod
    if not _ran_in:
        _ran_in.append(os.getpid())
    return mod


def _launch(nbytes: int, fn: Any, *args: Any) -> None:
    """``fn(*args)``, one numba kernel at a time, on one thread under ``_PARALLEL_MIN_BYTES``."""
    with _kernel_lock:
        if nbytes >= _PARALLEL_MIN_BYTES:
            fn(*args)
            return
        import numba

        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            fn(*args)
        finally:
            numba.set_num_threads(threads)


def _block(row_bytes: int, block_bytes: int) -> int:
    """Rows per block: ``block_bytes`` of records, a multiple of 8 rows (the kernels' tile)."""
    return max(8, block_bytes // max(row_bytes, 1) // 8 * 8)


def _addresses(arrays: Sequence[Any]) -> Any:
    import numpy as np

    return np.array([x.ctypes.data for x in arrays], dtype=np.intp)


def _contiguous(x: Any) -> bool:
    """A 1-D array whose values are back to back."""
    return x.ndim == 1 and (x.shape[0] <= 1 or x.strides[0] == x.itemsize)


# ---- the four copies --------------------------------------------------------------------

def rows_to_columns(a: Any, out: Any) -> None:
    """``out[j, i] = a[i, j]``: an ``(N, C)`` array into a ``(C, N)`` one of the same dtype
    whose rows are contiguous."""
    n, c = a.shape
    if n == 0 or c == 0:
        return
    k = _kernels(a.size * a.itemsize)
    if k is None:
        def copy(i: int, j: int) -> None:
            out[:, i:j] = a[i:j].T

        _run_blocks(n, _block_rows(c * a.itemsize), a.size * a.itemsize, copy)
        return
    import numpy as np

    u = _UINT.get(a.itemsize)
    block = _block(c * a.itemsize, k.BLOCK_BYTES)
    if u is not None and a.flags.c_contiguous and a.flags.aligned and out.flags.aligned:
        _launch(a.size * a.itemsize, k.rows_to_columns, a.view(u), out.view(u), block)
    else:  # any strides, any width, unaligned
        _launch(a.size * a.itemsize, k.gather, a.ctypes.data, a.strides[0],
                np.arange(c, dtype=np.intp) * a.strides[1], np.full(c, a.itemsize, np.intp),
                _addresses(out), n, block)


def records_to_columns(rows: Any, cols: Sequence[Any]) -> None:
    """Each field of the 1-D structured array ``rows`` into its contiguous column."""
    names = rows.dtype.names
    n = len(rows)
    if n == 0:
        return
    k = _kernels(n * rows.dtype.itemsize)
    if k is None:
        def copy(i: int, j: int) -> None:
            blk = rows[i:j]
            for name, col in zip(names, cols):
                col[i:j] = blk[name]

        _run_blocks(n, _block_rows(rows.dtype.itemsize), n * rows.dtype.itemsize, copy)
        return
    import numpy as np

    fields = [rows.dtype.fields[name] for name in names]
    _launch(n * rows.dtype.itemsize, k.gather, rows.ctypes.data, rows.strides[0],
            np.array([f[1] for f in fields], np.intp),
            np.array([f[0].itemsize for f in fields], np.intp), _addresses(cols), n,
            _block(rows.dtype.itemsize, k.BLOCK_BYTES))


def columns_to_rows(arrays: Sequence[Any], out: Any) -> None:
    """``out[:, j] = arrays[j]``: 1-D columns into an ``(N, C)`` array whose rows are
    contiguous (columns of another dtype are cast as NumPy assignment casts)."""
    n, c = out.shape
    if n == 0 or c == 0:
        return
    dt = out.dtype
    cast = not all(x.dtype == dt and _contiguous(x) for x in arrays)
    k = _kernels(out.size * dt.itemsize, cast)
    if k is None:
        def copy(i: int, j: int) -> None:
            blk = out[i:j]
            for col, x in enumerate(arrays):
                blk[:, col] = x[i:j]

        _run_blocks(n, _block_rows(c * dt.itemsize), out.size * dt.itemsize, copy)
        return
    import numpy as np

    addr = _addresses(arrays)
    step = int(addr[1] - addr[0]) if c > 1 else n * dt.itemsize
    u = _UINT.get(dt.itemsize)
    even = bool(np.all(np.diff(addr) == step)) and step % dt.itemsize == 0 and step > 0
    nbytes, block = out.size * dt.itemsize, _block(c * dt.itemsize, k.BLOCK_BYTES)
    if u is not None and even and out.flags.aligned and all(x.flags.aligned for x in arrays):
        from numpy.lib.stride_tricks import as_strided

        cols = as_strided(arrays[0].view(u), shape=(c, n), strides=(step, dt.itemsize))
        _launch(nbytes, k.columns_to_rows, cols, out.view(u), block)
    else:
        _launch(nbytes, k.scatter, out.ctypes.data, out.strides[0],
                np.arange(c, dtype=np.intp) * dt.itemsize, np.full(c, dt.itemsize, np.intp),
                addr, n, block)


def columns_to_records(arrays: Sequence[Any], out: Any) -> None:
    """Column ``j`` into field ``j`` of the 1-D structured array ``out`` (cast as NumPy
    assignment casts where its dtype differs from the field's)."""
    names = out.dtype.names
    n = len(out)
    if n == 0:
        return
    fields = [out.dtype.fields[name] for name in names]
    cast = not all(x.dtype == f[0] and _contiguous(x) for x, f in zip(arrays, fields))
    k = _kernels(n * out.dtype.itemsize, cast)
    if k is None:
        def copy(i: int, j: int) -> None:
            blk = out[i:j]
            for name, x in zip(names, arrays):
                blk[name] = x[i:j]

        _run_blocks(n, _block_rows(out.dtype.itemsize), n * out.dtype.itemsize, copy)
        return
    import numpy as np

    _launch(n * out.dtype.itemsize, k.scatter, out.ctypes.data, out.strides[0],
            np.array([f[1] for f in fields], np.intp),
            np.array([f[0].itemsize for f in fields], np.intp), _addresses(arrays), n,
            _block(out.dtype.itemsize, k.BLOCK_BYTES))


# ---- the NumPy kernel's blocks and threads ----------------------------------------------

def _block_rows(row_bytes: int) -> int:
    return max(1024, _BLOCK_BYTES // max(row_bytes, 1))


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


def _run_blocks(n: int, step: int, nbytes: int, copy: Callable[[int, int], None]) -> None:
    """``copy(i, i + step)`` for every block of rows ``i`` in ``range(0, n, step)``: on the
    calling thread for fewer than ``_THREAD_MIN_BYTES``, else on every CPU, each thread taking
    the next block until none is left (a thread slowed by other load just takes fewer)."""
    starts = range(0, n, step)
    threads = min(_cpus(), len(starts)) if nbytes >= _THREAD_MIN_BYTES else 1
    if threads <= 1:
        for i in starts:
            copy(i, i + step)
        return
    todo = iter(starts)
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            copy(i, i + step)

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
