"""Array of structures <-> structure of arrays: a real transpose, so one copy.

``aos_to_soa`` takes row-major records -- a NumPy structured array, or an ``(N, C)`` array or
tensor of any framework the registry reads -- and writes each field into its own contiguous
column of one ``(C, N)`` buffer (fresh and 64-byte aligned, or the caller's ``out=``), then
hands the columns to Arrow without another copy. ``soa_to_aos`` is the inverse: columns (read
zero-copy through the registry) into one ``(N, C)`` row-major buffer, handed to the target
framework without a copy.

The copy is a single pass, blocked over rows: each block of ``_BLOCK_BYTES`` of rows is read
once, while it is in cache, and written to the ``C`` column streams, so the memory traffic is
one read and one write of the data, as for a ``memcpy`` (``benchmarks/aos_soa.py`` measures
the ratio). A fresh output costs page faults on top; ``out=`` reuses a buffer instead.

From ``_THREAD_MIN_BYTES`` on, the blocks are shared among the process's CPUs: the calling
thread and ``cpus - 1`` threads of a small pool (made on first use) each take the next block
until none is left, writing disjoint slices of the output. NumPy releases the GIL while it
copies a block, so the transpose, which one core cannot run at memory speed (a strided
read or write per element), uses every core. The benchmark still compares it with a plain
single-threaded ``memcpy`` of the same bytes. Smaller inputs stay on the calling thread,
where handing blocks over costs more than it saves.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InteropError, UnsupportedConversionError
from ..host import ALIGNMENT

_BLOCK_BYTES = 2 * 1024 * 1024  # bytes of source rows per block: one L2 cache, measured best
# below this, one thread: on 2 idle CPUs, two threads were no faster at 8 MiB, 1.25x at 16 MiB
_THREAD_MIN_BYTES = 16 * 1024 * 1024
_pool: Any = None  # (pid, threads, ThreadPoolExecutor), made on the first threaded copy


def _aligned_empty(shape: tuple[int, ...], dtype: Any) -> Any:
    import numpy as np

    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


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
    import threading

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


def _homogeneous(dt: Any) -> Any:
    """The field dtype if a structured dtype is C fields of one type packed back to back."""
    names = dt.names
    first = dt.fields[names[0]][0]
    if first.shape or first.fields is not None:
        return None
    for i, n in enumerate(names):
        f, off = dt.fields[n][:2]
        if f != first or off != i * first.itemsize:
            return None
    return first if dt.itemsize == len(names) * first.itemsize else None


def transpose_rows(a: Any, out: Any = None) -> Any:
    """``(N, C)`` NumPy array -> ``(C, N)`` columns in one blocked pass: into ``out`` when given
    (checked by :func:`_check_out`), else into a fresh array whose rows start 64-byte aligned."""
    n, c = a.shape
    if out is None:
        per = max(ALIGNMENT // a.dtype.itemsize, 1)
        padded = -(-n // per) * per  # every column starts 64-byte aligned, as Arrow recommends
        out = _aligned_empty((c, padded), a.dtype)[:, :n]

    def copy(i: int, j: int) -> None:
        out[:, i:j] = a[i:j].T

    _run_blocks(n, _block_rows(c * a.dtype.itemsize), a.nbytes, copy)
    return out


def _check_out(out: Any, shape: tuple[int, int], dtype: Any, what: str) -> Any:
    """``out`` as a writable NumPy array of ``shape`` and ``dtype`` whose rows are contiguous."""
    import numpy as np

    arr = _as_numpy(out)
    if arr.shape != shape or arr.dtype != np.dtype(dtype):
        raise InteropError(f"out= must be a {what} array of shape {shape} and dtype "
                           f"{np.dtype(dtype)}; got shape {arr.shape}, dtype {arr.dtype}")
    if not arr.flags.writeable:
        raise InteropError("out= is read-only; pass a writable array (e.g. np.empty(...))")
    if arr.ndim == 2 and arr.shape[1] > 1 and arr.strides[1] != arr.itemsize:
        raise InteropError(f"out= rows must be contiguous (strides {arr.strides}); pass "
                           f"np.empty({shape}, dtype={np.dtype(dtype).name!r})")
    return arr


def _fields_to_columns(rows: Any) -> list[Any]:
    """Structured array of mixed field types -> one fresh aligned column per field."""
    names = rows.dtype.names
    cols = [_aligned_empty((len(rows),), rows.dtype.fields[n][0]) for n in names]

    def copy(i: int, j: int) -> None:
        blk = rows[i:j]
        for n, col in zip(names, cols):
            col[i:j] = blk[n]

    _run_blocks(len(rows), _block_rows(rows.dtype.itemsize), rows.nbytes, copy)
    return cols


def _as_numpy(rows: Any) -> Any:
    import numpy as np

    if isinstance(rows, np.ndarray):
        return rows
    from .. import api

    return api.to_framework(rows, "numpy")  # zero-copy for CPU arrays the registry reads


def aos_to_soa(rows: Any, names: Sequence[str] | None = None, *,
               target: str = "pyarrow", out: Any = None) -> Any:
    """Row-major records -> columns: a ``pyarrow.Table`` by default.

    ``rows``: a NumPy structured array (field names are the column names unless ``names``
    renames them) or a 2-D ``(N, C)`` array or tensor (``names``: C names, default
    ``c0..c{C-1}``). ``target``: ``"pyarrow"`` (``pa.Table``), ``"pandas"``, ``"polars"``, or
    any array framework for ``{name: column}``. One copy (the transpose); the columns are
    then handed on without another (booleans are bit-packed by Arrow, a second copy).
    ``out``: an existing ``(C, N)`` array with contiguous rows to write the columns into
    (reusing it skips the page faults of a fresh buffer; the result then aliases ``out``).
    Only for 2-D rows and structured arrays of one field type.
    """
    a = _as_numpy(rows)
    if a.dtype.names is not None:
        if a.ndim != 1:
            raise InteropError(f"a structured array of records must be 1-D, got shape {a.shape}")
        fields = list(a.dtype.names)
        names = list(names) if names is not None else fields
        if len(names) != len(fields):
            raise InteropError(f"{len(names)} names for {len(fields)} fields {fields}")
        sub = [a.dtype.fields[f][0] for f in fields]
        bad = [(f, str(t)) for f, t in zip(fields, sub) if t.shape or t.kind not in "biufmM"]
        if bad:
            raise UnsupportedConversionError(f"fields {bad} are not fixed-width scalars; only "
                                             "numeric, boolean and datetime fields become columns")
        ftype = _homogeneous(a.dtype)
        flat = None
        if ftype is not None and a.flags.c_contiguous:
            flat = a.view(ftype).reshape(len(a), len(fields))
        if out is not None:
            if flat is None:
                raise InteropError("out= needs C-contiguous records whose fields share one "
                                   f"type; got dtype {a.dtype}: drop out=")
            cols = list(transpose_rows(flat, _check_out(out, flat.shape[::-1], ftype, "(C, N)")))
        elif flat is not None:
            cols = list(transpose_rows(flat))
        else:
            cols = _fields_to_columns(a)
    else:
        if a.ndim != 2:
            raise InteropError(f"rows must be a structured array or a 2-D (N, C) array; got "
                               f"shape {a.shape}")
        c = a.shape[1]
        names = list(names) if names is not None else [f"c{i}" for i in range(c)]
        if len(names) != c:
            raise InteropError(f"{len(names)} names for {c} columns (shape {a.shape})")
        if a.dtype.kind not in "biufmM":
            raise UnsupportedConversionError(f"dtype {a.dtype} is not a fixed-width scalar")
        if out is not None:
            out = _check_out(out, a.shape[::-1], a.dtype, "(C, N)")
        cols = list(transpose_rows(a, out))
    if len(set(names)) != len(names):
        raise InteropError(f"column names must be unique, got {names}")
    cols_by_name = dict(zip(names, cols))
    from .. import api

    return api.to_framework(cols_by_name, target)


def soa_to_aos(table: Any, target: str = "torch", *, columns: Sequence[str] | None = None,
               dtype: Any = None, out: Any = None) -> Any:
    """Columns -> one row-major ``(N, C)`` array of ``target`` (default torch), one copy.

    ``table``: anything :func:`interop.to_framework` reads as a table (pyarrow, pandas,
    polars, a dict of arrays, Arrow PyCapsule objects). Columns are read zero-copy where the
    registry allows (nulls raise :class:`~interop.errors.NullsError`; select with
    ``columns=``). ``dtype``: the common type, by default NumPy's promotion of the columns.
    ``out``: an existing writable ``(N, C)`` array with contiguous rows to write into (the
    result is then ``out`` handed to ``target``).
    """
    import numpy as np

    from .. import api

    opts = {"columns": list(columns)} if columns is not None else {}
    cols = api.to_framework(table, "numpy", **opts)
    names = list(cols)
    if not names:
        raise InteropError("the table has no columns")
    arrays = [np.asarray(cols[n]) for n in names]
    bad = [n for n, x in zip(names, arrays) if x.ndim != 1]
    if bad:
        raise InteropError(f"columns {bad} are not one-dimensional")
    n = len(arrays[0])
    if any(len(x) != n for x in arrays):
        raise InteropError(f"columns differ in length: {[len(x) for x in arrays]}")
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*arrays)
    if out is None:
        out = _aligned_empty((n, len(arrays)), dt)
    else:
        out = _check_out(out, (n, len(arrays)), dt, "(N, C)")

    def copy(i: int, j: int) -> None:
        blk = out[i:j]
        for k, x in enumerate(arrays):
            blk[:, k] = x[i:j]

    _run_blocks(n, _block_rows(len(arrays) * dt.itemsize), out.nbytes, copy)
    return api.to_framework(out, target)

