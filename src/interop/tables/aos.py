"""Array of structures <-> structure of arrays: a real transpose, so one copy.

``aos_to_soa`` takes row-major records -- a NumPy structured array, or an ``(N, C)`` array or
tensor of any framework the registry reads -- and writes each field into its own contiguous
column of one fresh 64-byte aligned ``(C, N)`` buffer, then hands the columns to Arrow without
another copy. ``soa_to_aos`` is the inverse: columns (read zero-copy through the registry)
into one fresh ``(N, C)`` row-major buffer, handed to the target framework without a copy.

The copy is a single pass, blocked over rows: each block of ``_BLOCK`` rows is read once,
while it is in cache, and written to the ``C`` column streams, so the memory traffic is one
read and one write of the data -- the same as a ``memcpy`` (``benchmarks/aos_soa.py``
measures the ratio).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InteropError, UnsupportedConversionError
from ..host import ALIGNMENT

_BLOCK_BYTES = 1024 * 1024  # bytes of source rows per block: stays in cache with its output


def _aligned_empty(shape: tuple[int, ...], dtype: Any) -> Any:
    import numpy as np

    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _block_rows(row_bytes: int) -> int:
    return max(1024, _BLOCK_BYTES // max(row_bytes, 1))


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


def transpose_rows(a: Any) -> Any:
    """``(N, C)`` NumPy array -> a fresh ``(C, N)`` array (each row 64-byte aligned), in one
    blocked pass."""
    n, c = a.shape
    per = max(ALIGNMENT // a.dtype.itemsize, 1)
    padded = -(-n // per) * per  # every column starts 64-byte aligned, as Arrow recommends
    out = _aligned_empty((c, padded), a.dtype)[:, :n]
    b = _block_rows(c * a.dtype.itemsize)
    for i in range(0, n, b):
        out[:, i:i + b] = a[i:i + b].T
    return out


def _fields_to_columns(rows: Any) -> list[Any]:
    """Structured array of mixed field types -> one fresh aligned column per field."""
    names = rows.dtype.names
    cols = [_aligned_empty((len(rows),), rows.dtype.fields[n][0]) for n in names]
    b = _block_rows(rows.dtype.itemsize)
    for i in range(0, len(rows), b):
        blk = rows[i:i + b]
        for n, col in zip(names, cols):
            col[i:i + b] = blk[n]
    return cols


def _as_numpy(rows: Any) -> Any:
    import numpy as np

    if isinstance(rows, np.ndarray):
        return rows
    from .. import api

    return api.to_framework(rows, "numpy")  # zero-copy for CPU arrays the registry reads


def aos_to_soa(rows: Any, names: Sequence[str] | None = None, *,
               target: str = "pyarrow") -> Any:
    """Row-major records -> columns: a ``pyarrow.Table`` by default.

    ``rows``: a NumPy structured array (field names are the column names unless ``names``
    renames them) or a 2-D ``(N, C)`` array or tensor (``names``: C names, default
    ``c0..c{C-1}``). ``target``: ``"pyarrow"`` (``pa.Table``), ``"pandas"``, ``"polars"``, or
    any array framework for ``{name: column}``. One copy (the transpose); the columns are
    then handed on without another (booleans are bit-packed by Arrow, a second copy).
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
        if ftype is not None:
            flat = a.view(ftype).reshape(len(a), len(fields)) if a.flags.c_contiguous else None
            cols = list(transpose_rows(flat)) if flat is not None else _fields_to_columns(a)
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
        cols = list(transpose_rows(a))
    if len(set(names)) != len(names):
        raise InteropError(f"column names must be unique, got {names}")
    cols_by_name = dict(zip(names, cols))
    from .. import api

    return api.to_framework(cols_by_name, target)


def soa_to_aos(table: Any, target: str = "torch", *, columns: Sequence[str] | None = None,
               dtype: Any = None) -> Any:
    """Columns -> one row-major ``(N, C)`` array of ``target`` (default torch), one copy.

    ``table``: anything :func:`interop.to_framework` reads as a table (pyarrow, pandas,
    polars, a dict of arrays, Arrow PyCapsule objects). Columns are read zero-copy where the
    registry allows (nulls raise :class:`~interop.errors.NullsError`; select with
    ``columns=``). ``dtype``: the common type, by default NumPy's promotion of the columns.
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
    out = _aligned_empty((n, len(arrays)), dt)
    b = _block_rows(len(arrays) * dt.itemsize)
    for i in range(0, n, b):
        blk = out[i:i + b]
        for j, x in enumerate(arrays):
            blk[:, j] = x[i:i + b]
    return api.to_framework(out, target)

