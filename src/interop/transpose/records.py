"""Array of structures <-> structure of arrays: a real transpose, so one copy.

``aos_to_soa`` takes row-major records -- a NumPy structured array (one field type or mixed,
packed or padded), or an ``(N, C)`` array or tensor of any framework the registry reads --
and writes each field into its own contiguous column (of one ``(C, N)`` buffer, fresh and
64-byte aligned, or the caller's ``out=``; one aligned buffer per field for mixed types), then
hands the columns to Arrow without another copy. ``soa_to_aos`` is the inverse: columns (read
zero-copy through the registry) into one ``(N, C)`` row-major buffer, or into a structured
array when ``dtype`` is a structured dtype, handed to the target framework without a copy.

The copy itself is :mod:`interop.transpose.cpu`'s: a kernel compiled for this CPU through
llvmlite for large inputs, NumPy's blocked copies otherwise (``interop.transpose_kernel``
says which a given size runs, and why; ``kernel=`` names one, ``threads=`` how many threads
share the rows; ``benchmarks/aos_soa.py`` measures both against ``memcpy``), or, for device
arrays, :mod:`interop.transpose.cuda`'s. Padding bytes of records written by ``soa_to_aos``
are unspecified (the compiled kernel writes zeros).

The values are read and handed on through the registry given (``reg.convert``): this
package never imports the API (the public calls are :mod:`interop.tabular`'s).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InteropError, UnsupportedConversionError
from ..host import ALIGNMENT, fresh_buffer
from . import cpu


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


def _columns_buffer(c: int, n: int, dtype: Any) -> Any:
    """A fresh ``(C, N)`` array whose rows each start 64-byte aligned, as Arrow recommends."""
    per = max(ALIGNMENT // dtype.itemsize, 1)
    padded = -(-n // per) * per
    return fresh_buffer((c, padded), dtype)[:, :n]


def _field_columns(n: int, dtypes: Sequence[Any]) -> list[Any]:
    """Fresh columns of ``n`` values of each dtype, each 64-byte aligned, carved from one
    buffer: one large allocation, which the system backs with huge pages (NumPy asks for them
    from 4 MiB on), where a column each would take a page fault per 4 KiB when first
    written (measured: a 100-field transpose into fresh columns ran 3x slower that way)."""
    import numpy as np

    sizes = [-(-n * np.dtype(t).itemsize // ALIGNMENT) * ALIGNMENT for t in dtypes]
    raw = fresh_buffer((sum(sizes),), np.uint8)
    starts = np.cumsum([0, *sizes[:-1]])
    return [raw[s:s + n * np.dtype(t).itemsize].view(t)
            for s, t in zip(starts.tolist(), dtypes)]


_COLUMN_KINDS = "biufmM"  # integer, unsigned, float, boolean, datetime, timedelta


def _check_fields(dt: Any) -> None:
    """Every field of the structured dtype ``dt`` (or ``dt`` itself, the dtype of a 2-D
    array's values) can be a column: one scalar of a kind Arrow and every framework hold;
    else an error naming the fields."""
    fields = [(f, dt.fields[f][0]) for f in dt.names] if dt.names else [("values", dt)]
    bad = [(f, str(t)) for f, t in fields if t.shape or t.kind not in _COLUMN_KINDS]
    if bad:
        raise UnsupportedConversionError(
            f"fields {bad} cannot be columns: only integer, float, boolean and "
            "datetime/timedelta scalars can (not complex, bytes, strings, objects or "
            "sub-arrays); cast them first (e.g. rows.astype(...))")


def _check_out(reg: Any, out: Any, shape: tuple[int, int], dtype: Any, what: str) -> Any:
    """``out`` as a writable NumPy array of ``shape`` and ``dtype`` whose rows are contiguous."""
    import numpy as np

    arr = _as_numpy(reg, out)
    if arr.shape != shape or arr.dtype != np.dtype(dtype):
        raise InteropError(f"out= must be a {what} array of shape {shape} and dtype "
                           f"{np.dtype(dtype)}; got shape {arr.shape}, dtype {arr.dtype}")
    if not arr.flags.writeable:
        raise InteropError("out= is read-only; pass a writable array (e.g. np.empty(...))")
    if arr.ndim == 2 and arr.size and arr.shape[1] > 1 and arr.strides[1] != arr.itemsize:
        raise InteropError(f"out= rows must be contiguous (strides {arr.strides}); pass "
                           f"np.empty({shape}, dtype={np.dtype(dtype).name!r})")
    return arr


def _on_gpu(x: Any) -> bool:
    """Device memory (CuPy, a CUDA tensor, a Numba device array): it exports the CUDA Array
    Interface (a CPU torch tensor's property raises AttributeError: not on the GPU)."""
    return hasattr(x, "__cuda_array_interface__")


def _names(names: Sequence[str] | None, c: int, shape: tuple[int, ...]) -> list[str]:
    names = list(names) if names is not None else [f"c{i}" for i in range(c)]
    if len(names) != c:
        raise InteropError(f"{len(names)} names for {c} columns (shape {shape})")
    if len(set(names)) != len(names):
        raise InteropError(f"column names must be unique, got {names}")
    return names


def _aos_to_soa_gpu(reg: Any, rows: Any, names: Sequence[str] | None, target: str,
                    out: Any) -> Any:
    """:func:`aos_to_soa` of an ``(N, C)`` device array: the transpose on its GPU."""
    from . import cuda

    a = reg.convert(rows, "cupy")
    if a.ndim != 2:
        raise InteropError(f"rows on a GPU must be a 2-D (N, C) array (CuPy has no structured "
                           f"dtypes); got shape {a.shape}")
    if a.dtype.kind not in "biuf":
        raise UnsupportedConversionError(f"dtype {a.dtype} is not a fixed-width number")
    names = _names(names, a.shape[1], a.shape)
    if out is None:
        out = cuda.columns_buffer(a.shape[1], a.shape[0], a.dtype)
    else:
        out = _check_gpu_out(reg, out, a.shape[::-1], a.dtype, "(C, N)")
    cuda.transpose(a, out)
    return reg.convert(dict(zip(names, out)), target)


def _check_gpu_out(reg: Any, out: Any, shape: tuple[int, int], dtype: Any, what: str) -> Any:
    """``out`` on a GPU as a CuPy array of ``shape`` and ``dtype`` with contiguous rows."""
    if not _on_gpu(out):
        raise InteropError(f"out= must be on the GPU, as the rows are; got a "
                           f"{type(out).__module__}.{type(out).__qualname__}")
    arr = reg.convert(out, "cupy")
    if arr.shape != shape or arr.dtype != dtype:
        raise InteropError(f"out= must be a {what} array of shape {shape} and dtype {dtype}; "
                           f"got shape {arr.shape}, dtype {arr.dtype}")
    if arr.shape[1] > 1 and arr.strides[1] != arr.itemsize:
        raise InteropError(f"out= rows must be contiguous (strides {arr.strides})")
    return arr


def _as_numpy(reg: Any, rows: Any) -> Any:
    import numpy as np

    if isinstance(rows, np.ndarray):
        return rows
    return reg.convert(rows, "numpy")  # zero-copy for CPU arrays the registry reads


def aos_to_soa(reg: Any, rows: Any, names: Sequence[str] | None = None, *,
               target: str = "pyarrow", out: Any = None, kernel: str | None = None,
               threads: int | None = None) -> Any:
    """``interop.aos_to_soa`` on the registry ``reg`` (its documentation says what it
    takes and returns)."""
    cpu.check_choice(kernel, threads)
    if _on_gpu(rows):
        return _aos_to_soa_gpu(reg, rows, names, target, out)
    a = _as_numpy(reg, rows)
    if a.dtype.names is not None:
        if a.ndim != 1:
            raise InteropError(f"a structured array of records must be 1-D, got shape {a.shape}")
        fields = list(a.dtype.names)
        names = list(names) if names is not None else fields
        if len(names) != len(fields):
            raise InteropError(f"{len(names)} names for {len(fields)} fields {fields}")
        names = _names(names, len(fields), a.shape)  # unique
        _check_fields(a.dtype)
        ftype = _homogeneous(a.dtype)
        flat = None
        if ftype is not None and a.flags.c_contiguous:
            flat = a.view(ftype).reshape(len(a), len(fields))
        if out is not None:
            if flat is None:
                raise InteropError("out= needs C-contiguous records whose fields share one "
                                   f"type; got dtype {a.dtype}: drop out=")
            out = _check_out(reg, out, flat.shape[::-1], ftype, "(C, N)")
        if flat is not None:
            if out is None:
                out = _columns_buffer(len(fields), len(a), ftype)
            cpu.rows_to_columns(flat, out, kernel, threads)
            cols = list(out)
        else:
            cols = _field_columns(len(a), [a.dtype.fields[f][0] for f in fields])
            cpu.records_to_columns(a, cols, kernel, threads)
    else:
        if a.ndim != 2:
            raise InteropError(f"rows must be a structured array or a 2-D (N, C) array; got "
                               f"shape {a.shape}")
        c = a.shape[1]
        names = _names(names, c, a.shape)
        _check_fields(a.dtype)
        if out is not None:
            out = _check_out(reg, out, a.shape[::-1], a.dtype, "(C, N)")
        else:
            out = _columns_buffer(c, len(a), a.dtype)
        cpu.rows_to_columns(a, out, kernel, threads)
        cols = list(out)
    return reg.convert(dict(zip(names, cols)), target)


def soa_to_aos(reg: Any, table: Any, target: str = "torch", *,
               columns: Sequence[str] | None = None, dtype: Any = None, out: Any = None,
               kernel: str | None = None, threads: int | None = None) -> Any:
    """``interop.soa_to_aos`` on the registry ``reg`` (its documentation says what it
    takes and returns)."""
    import numpy as np

    cpu.check_choice(kernel, threads)
    opts = {"columns": list(columns)} if columns is not None else {}
    if isinstance(table, dict) and table and all(_on_gpu(v) for v in table.values()):
        return _soa_to_aos_gpu(reg, table, target, columns, dtype, out)
    cols = reg.convert(table, "numpy", **opts)
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
    if dt.names is not None:
        if len(dt.names) != len(arrays):
            raise InteropError(f"dtype has {len(dt.names)} fields {list(dt.names)} for "
                               f"{len(arrays)} columns {names}; give one field per column")
        _check_fields(dt)
        out = (fresh_buffer((n,), dt) if out is None
               else _check_out(reg, out, (n,), dt, "records"))
        cpu.columns_to_records(arrays, out, kernel, threads)
    else:
        if out is None:
            out = fresh_buffer((n, len(arrays)), dt)
        else:
            out = _check_out(reg, out, (n, len(arrays)), dt, "(N, C)")
        cpu.columns_to_rows(arrays, out, kernel, threads)
    return reg.convert(out, target)


def _soa_to_aos_gpu(reg: Any, table: dict, target: str, columns: Sequence[str] | None,
                    dtype: Any, out: Any) -> Any:
    """:func:`soa_to_aos` of a dict of device columns: the transpose on their GPU."""
    import cupy

    from . import cuda

    names = list(columns) if columns is not None else list(table)
    arrays = [reg.convert(table[n], "cupy") for n in names]
    if any(x.ndim != 1 for x in arrays):
        raise InteropError(f"columns {[n for n, x in zip(names, arrays) if x.ndim != 1]} "
                           "are not one-dimensional")
    n = len(arrays[0])
    if any(len(x) != n for x in arrays):
        raise InteropError(f"columns differ in length: {[len(x) for x in arrays]}")
    dt = cupy.dtype(dtype) if dtype is not None else cupy.result_type(*arrays)
    if dt.names is not None:
        raise InteropError("a structured dtype needs host columns (CuPy has no structured "
                           "dtypes); convert the columns to NumPy first")
    arrays = [x if x.dtype == dt else x.astype(dt) for x in arrays]
    if out is None:
        out = cupy.empty((n, len(arrays)), dtype=dt)
    else:
        out = _check_gpu_out(reg, out, (n, len(arrays)), dt, "(N, C)")
    cuda.transpose(cuda.stack_columns(arrays), out)
    return reg.convert(out, target)
