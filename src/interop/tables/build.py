"""Columns of arrays -> a whole table (pyarrow ``Table``/``RecordBatch``, pandas, polars).

Each column goes through the registry to a pyarrow ``Array`` (``pyarrow.array`` over the
column's own buffer, so fixed-width contiguous columns are not copied; the Arrow buffer holds
a reference to the source, which keeps a tensor alive after the caller drops it). A
non-contiguous column is copied (``copy=False`` raises), booleans are packed (a copy), and
``(values, mask)`` pairs become Arrow arrays with a validity bitmap (packing the mask copies).
The plan from :func:`explain` says, per column, which of these happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..adapters.base import RegistryLike
from ..errors import InteropError, MalformedError, UnsupportedConversionError
from ..plan import Plan, Step
from . import TABLE_TARGETS
from .columns import TablePlan


def _named(cols: Mapping) -> list[tuple[str, Any]]:
    out = []
    for k, v in cols.items():
        if not isinstance(k, str):
            raise InteropError(f"column names of a table must be strings; got {k!r} "
                               f"({type(k).__name__})")
        out.append((k, v))
    return out


def _mismatch(lengths: dict[str, int]) -> str | None:
    """Why columns of these lengths make no table, if they don't."""
    if len(set(lengths.values())) > 1:
        return f"columns of one table must have one length; got {lengths}"
    return None


def _check_lengths(columns: list[tuple[str, Any]]) -> None:
    """One length for every converted column (an Arrow array, a Series: each has ``len``;
    the sources need not: a DLPack capsule or producer says its length once read)."""
    why = _mismatch({n: len(c) for n, c in columns})
    if why:
        raise MalformedError(why)


def _source_lengths(named: list[tuple[str, Any]]) -> dict[str, int]:
    """The lengths of the columns that say theirs before they are read (arrays, tensors,
    Arrow arrays, Series; a ``(values, mask)`` pair by its values)."""
    out = {}
    for n, v in named:
        try:
            out[n] = len(v[0] if isinstance(v, tuple) else v)
        except TypeError:  # a capsule, a producer, a 0-d value: known once read
            pass
    return out


def _masked(reg: RegistryLike, values: Any, mask: Any, copy: bool | None) -> Any:
    import numpy as np
    import pyarrow as pa

    arr = reg.convert(values, "pyarrow", copy=copy)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    m = np.asarray(reg.convert(mask, "numpy"), dtype=bool)
    if m.shape != (len(arr),):
        raise InteropError(f"a mask must be one bool per value: {m.shape} for {len(arr)} values")
    bits = np.concatenate([np.zeros(arr.offset, bool), m]) if arr.offset else m
    validity = pa.py_buffer(np.packbits(bits, bitorder="little"))
    return pa.Array.from_buffers(arr.type, len(arr), [validity, arr.buffers()[1]],
                                 null_count=int(len(m) - m.sum()), offset=arr.offset)


def to_arrow_arrays(reg: RegistryLike, cols: Mapping, *,
                    copy: bool | None = None) -> tuple[list[str], list[Any]]:
    """Names and pyarrow arrays over the columns' buffers."""
    named = _named(cols)
    arrays = []
    for n, v in named:
        try:
            if isinstance(v, tuple):
                arrays.append(_masked(reg, v[0], v[1], copy))
            else:
                arrays.append(reg.convert(v, "pyarrow", copy=copy))
        except InteropError as e:
            raise type(e)(f"column {n!r}: {e}") from e
    names = [n for n, _ in named]
    _check_lengths(list(zip(names, arrays)))
    return names, arrays


def arrow_table(reg: RegistryLike, cols: Mapping, *, copy: bool | None = None) -> Any:
    """A ``pyarrow.Table`` over the columns' own buffers (see the module doc)."""
    import pyarrow as pa

    names, arrays = to_arrow_arrays(reg, cols, copy=copy)
    return pa.Table.from_arrays(arrays, names=names)


def record_batch(reg: RegistryLike, cols: Mapping, *, copy: bool | None = None) -> Any:
    """A ``pyarrow.RecordBatch`` over the columns' own buffers."""
    import pyarrow as pa

    names, arrays = to_arrow_arrays(reg, cols, copy=copy)
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def build(reg: RegistryLike, cols: Mapping, target: str, *, copy: bool | None = None) -> Any:
    """``{name: array}`` -> a table of framework ``target`` (pyarrow, pandas, polars, cudf)."""
    if target == "pyarrow":
        return arrow_table(reg, cols, copy=copy)
    if target == "polars":
        import polars as pl

        return pl.from_arrow(_levels(arrow_table(reg, cols, copy=copy)), rechunk=False)
    if target == "pandas":
        return _to_pandas(reg, cols, copy)
    if target == "cudf":
        return _to_cudf(reg, cols, copy)
    raise UnsupportedConversionError(f"a table cannot be built in {target}; use one of "
                                     f"{TABLE_TARGETS}")


def _levels(table: Any) -> Any:
    """``table`` with each ``arrow.fixed_shape_tensor`` column in C order as its
    ``fixed_size_list`` levels over the same buffer (polars' ``Array`` of that shape: its
    ``.arr`` operations take no extension column)."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        t = field.type
        if getattr(t, "extension_name", None) != "arrow.fixed_shape_tensor" or t.permutation:
            continue
        chunks = []
        for c in table.column(i).chunks:
            flat = c.storage.flatten()
            for d in reversed(t.shape):
                flat = pa.FixedSizeListArray.from_arrays(flat, d)
            chunks.append(flat)
        col = pa.chunked_array(chunks, type=chunks[0].type) if chunks else None
        if col is not None:
            table = table.set_column(i, field.name, col)
    return table


def _to_pandas(reg: RegistryLike, cols: Mapping, copy: bool | None) -> Any:
    import pandas as pd

    named = _named(cols)
    series = {}
    for n, v in named:
        try:
            if isinstance(v, tuple):
                series[n] = pd.Series(pd.arrays.ArrowExtensionArray(_masked(reg, v[0], v[1],
                                                                              copy)))
            else:
                series[n] = reg.convert(v, "pandas", copy=copy)
        except InteropError as e:
            raise type(e)(f"column {n!r}: {e}") from e
    _check_lengths(list(series.items()))
    return pd.DataFrame(series, copy=False)


def _to_cudf(reg: RegistryLike, cols: Mapping,  # pragma: no cover - needs a GPU
             copy: bool | None) -> Any:
    """cuDF columns over each device array's ``__cuda_array_interface__`` (cudf.Series)."""
    import cudf

    named = _named(cols)
    out = {}
    for n, v in named:
        if isinstance(v, tuple):  # NaN stays a value: only the mask makes nulls
            s = _cudf_column(reg, v[0], copy)
            s[~_cudf_column(reg, v[1], True).astype(bool)] = None  # a copy
            out[n] = s
        else:
            out[n] = _cudf_column(reg, v, copy)
    _check_lengths(list(out.items()))
    return cudf.DataFrame(out)


def _cudf_column(reg: RegistryLike, v: Any, copy: bool | None) -> Any:
    """A cuDF Series over a device value's buffer, or over a device copy of host data."""
    on_device = reg.adapters[reg.owner(v)].device(v)[0] == "cuda"
    return reg.convert(v, "cudf", copy=copy, device=None if on_device else "cuda")


def explain(reg: RegistryLike, source: str, cols: Mapping, target: str, *,
            copy: bool | None = None) -> TablePlan:
    """The plan of :func:`build`: per column the registry's plan to pyarrow (or pandas)."""
    named = _named(cols)
    col_target = target if target in ("pandas", "cudf") else "pyarrow"
    plans: dict[str, Plan] = {}
    for n, v in named:
        if isinstance(v, tuple):
            inner = reg.explain(v[0], col_target, None, copy)
            plans[n] = Plan(inner.source, col_target,
                            (*inner.steps, Step("numpy", "pyarrow", "mask packed into a "
                                                "validity bitmap", copies=True)),
                            False, (*inner.reasons, f"column {n!r}: packing the mask copies"),
                            inner.hazards, inner.supported, inner.error)
        else:
            plans[n] = reg.explain(v, col_target, None, copy)
    errors = [f"column {n!r}: {p.reasons[0] if p.reasons else p.error}"
              for n, p in plans.items() if not p.supported]
    mismatch = _mismatch(_source_lengths(named))
    if mismatch:
        errors.append(mismatch)
    steps = [Step(source, col_target, f"column by column ({len(plans)} columns)")]
    if target == "polars":
        steps.append(Step("pyarrow", "polars", "polars.from_arrow(rechunk=False)"))
    elif target == "pyarrow":
        steps.append(Step("pyarrow", "pyarrow", "pyarrow.Table.from_arrays"))
    elif target == "pandas":
        steps.append(Step("pandas", "pandas", "pandas.DataFrame(copy=False)"))
    summary = tuple(f"column {n!r}: " + ("zero-copy" if p.zero_copy else "copy"
                                         if p.supported else f"fails ({p.error})")
                    for n, p in plans.items())
    kind = next((p.error for p in plans.values() if not p.supported),
                "unsupported" if mismatch else None)
    return TablePlan(source, target, tuple(steps),
                     not errors and all(p.zero_copy for p in plans.values()),
                     (*errors, *summary), (), supported=not errors, error=kind, columns=plans)
