"""A table, column by column: ``{name: column}`` in any framework, with nulls and temporals.

Every column goes through the registry (``interop.to_framework`` / ``interop.explain``), so
it follows the same zero-copy rules as a lone array. This module only decides what is handed
to the registry for each column:

* fixed-width columns without nulls in one chunk: the column itself (zero-copy);
* timestamps, dates, times, durations: a zero-copy integer *view* (int64; int32 for
  ``date32``/``time32``); the Arrow type, unit and time zone are kept in ``Columns.meta``;
* nulls: ``nulls="raise"`` (default) raises :class:`~interop.errors.NullsError` naming every
  column with nulls; ``nulls="mask"`` gives ``(values, mask)`` -- the values buffer without
  its validity bitmap (zero-copy; slots under a null hold whatever bytes Arrow left there) and
  the bitmap unpacked to ``bool`` (``True`` = valid), the one copy; ``nulls="fill"`` with
  ``fill_value`` replaces nulls (a copy);
* list and tensor columns (``fixed_size_list``, ``arrow.fixed_shape_tensor``, ``list``,
  ``large_list``, ``list_view``; polars ``Array`` and ``List``): their one chunk, converted
  as a composite (:mod:`interop.adapters.arrow_nested`: an N-D array, or values and offsets);
* strings, structs, decimals, dictionaries ...: :class:`UnsupportedConversionError`
  naming each such column and its type, and offering ``columns=`` with the convertible ones.

The result is a :class:`Columns` -- a plain ``dict`` subclass -- carrying ``.meta``
(``{name: {"type": ..., "unit": ..., "tz": ...}}`` for temporal columns); ``interop.explain``
gives the :class:`TablePlan` (one :class:`~interop.plan.Plan` per column).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import narrowing
from ..adapters.arrow_extensions import ours
from ..adapters.arrow_nested import numeric_items
from ..adapters.base import RegistryLike
from ..errors import InteropError, NullsError, UnsupportedConversionError, ZeroCopyError
from ..memo import ARROW_TYPE_ID, extension_name, memo_by
from ..names import CALL_OPTIONS, TABLE_OPTIONS, did_you_mean
from ..plan import Plan, Step

NULLS_MODES = ("raise", "mask", "fill")


class Columns(dict):
    """``{name: column}``; ``.meta`` holds per-column metadata (temporal type and unit).
    A ``(values, mask)`` tuple stands for a masked column (mask ``True`` = valid)."""

    def __init__(self, data: Any = (), *, meta: dict | None = None) -> None:
        super().__init__(data)
        self.meta: dict[Any, dict[str, Any]] = dict(meta or {})

    def __repr__(self) -> str:
        return f"Columns({dict.__repr__(self)}, meta={self.meta!r})"


@dataclass(frozen=True)
class TablePlan(Plan):
    """A :class:`~interop.plan.Plan` for a table: ``columns`` holds one plan per column.

    ``zero_copy`` is true only if every column is zero-copy (a mask, a fill, joining chunks,
    unpacking booleans or a copy at the table level each make it false).
    """

    columns: dict = field(default_factory=dict)

    def __str__(self) -> str:
        head = super().__str__()
        lines = [head]
        for name, p in self.columns.items():
            body = str(p).splitlines()
            lines.append(f"  column {name!r}: " + body[0].split(": ", 1)[-1])
            lines += ["    " + b.strip() for b in body[1:]]
        return "\n".join(lines)


@dataclass
class Prepared:
    """What the registry gets for one column, and what happened before."""

    value: Any = None
    mask: Any = None  # a NumPy bool array (True = valid), or None
    meta: dict | None = None
    steps: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    copied: bool = False  # a copy happened before the registry (fill, join, mask)
    error: tuple[str, str] | None = None  # ("unsupported" | "nulls" | "zero-copy", reason)
    mask_step: Step | None = None
    nested: bool = False  # a list or tensor column: the call's ragged= goes with it
    copy: bool | None = None  # True: the column converts under copy=True (nulls='mask')


# ---- type tests ---------------------------------------------------------------------------
def _pa():
    return sys.modules.get("pyarrow")


def is_arrow_array(x: Any) -> bool:
    pa = _pa()
    return pa is not None and isinstance(x, (pa.Array, pa.ChunkedArray))


def _arrow_kind_of(t: Any) -> str:
    """``"numeric"``, ``"bool"``, ``"temporal"``, ``"nested"`` (a list or tensor column, a
    composite of :mod:`interop.adapters.arrow_nested`) or ``"unsupported"`` for an Arrow type."""
    from ..adapters.arrow_nested import nested_type

    types = _pa().types
    return ("bool" if types.is_boolean(t)
            else "numeric" if types.is_integer(t) or types.is_floating(t)
            else "temporal" if types.is_temporal(t) and not types.is_interval(t)
            else "nested" if nested_type(t)
            else "unsupported")


_arrow_kind = memo_by(ARROW_TYPE_ID, _arrow_kind_of)


def _temporal_meta(t: Any) -> dict[str, Any]:
    pa = _pa()
    meta: dict[str, Any] = {"type": str(t)}
    if pa.types.is_date32(t):
        meta["unit"] = "D"
    elif pa.types.is_date64(t):
        meta["unit"] = "ms"
    else:
        meta["unit"] = getattr(t, "unit", None)
    if getattr(t, "tz", None):
        meta["tz"] = t.tz
    return meta


def _int_view(arr: Any) -> Any:
    """A zero-copy integer view of a temporal Arrow array (chunk by chunk)."""
    pa = _pa()
    it = pa.int32() if arr.type.bit_width == 32 else pa.int64()
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([c.view(it) for c in arr.chunks], type=it)
    return arr.view(it)


def _strip_validity(arr: Any) -> Any:
    """The same values buffer without its validity bitmap: zero-copy."""
    pa = _pa()
    bufs = arr.buffers()
    return pa.Array.from_buffers(arr.type, len(arr), [None, bufs[1]], offset=arr.offset)


def unpack_validity(arr: Any) -> Any:
    """The validity bitmap of a single Arrow array unpacked to NumPy ``bool`` (one copy)."""
    import numpy as np

    n, off = len(arr), arr.offset
    buf = arr.buffers()[0]
    if buf is None:
        return np.ones(n, dtype=bool)
    bits = np.frombuffer(buf, dtype=np.uint8)
    # unpack only the bytes covering [off, off + n)
    lo, hi = off // 8, (off + n + 7) // 8
    out = np.unpackbits(bits[lo:hi], bitorder="little")[off - lo * 8: off - lo * 8 + n]
    return out.view(bool)


# ---- per-column preparation ---------------------------------------------------------------
def prepare(name: Any, col: Any, *, nulls: str, fill_value: Any, copy: bool | None,
            dry: bool = False) -> Prepared:
    """Decide what the registry receives for column ``name`` (``dry``: copy nothing)."""
    pa = _pa()
    if pa is not None and isinstance(col, (pa.Array, pa.ChunkedArray)):
        return _prepare_arrow(name, col, nulls, fill_value, copy, dry)
    if type(col) is tuple and len(col) == 2:  # a (values, mask) pair, e.g. from Columns
        return Prepared(value=col[0], mask=col[1],
                        mask_step=Step("mask", "mask", "the mask converts on its own"))
    mod = type(col).__module__.partition(".")[0]
    if mod == "pandas":
        return _prepare_pandas(name, col, nulls, fill_value, copy, dry)
    if mod == "polars":
        return _prepare_polars(name, col, nulls, fill_value, copy, dry)
    if mod == "cudf":  # pragma: no cover - needs a GPU
        return _prepare_cudf(name, col, nulls, fill_value, copy, dry)
    return Prepared(value=col)


def _prepare_cudf(name: Any, s: Any, nulls: str, fill_value: Any, copy: bool | None,
                  dry: bool) -> Prepared:  # pragma: no cover - needs a GPU
    """A cuDF Series: its CAI when it has no nulls; nulls filled on the device otherwise."""
    n = int(s.null_count)
    if not n:
        return Prepared(value=s)
    if nulls == "raise":
        return Prepared(error=("nulls", f"column {name!r} ({s.dtype}) holds {n} nulls"))
    if copy is False:
        return Prepared(error=("zero-copy", f"column {name!r}: cuDF exposes no CAI for a "
                               "column with nulls; filling them writes a new device buffer"))
    prep = Prepared(copied=True)
    fill = fill_value if nulls == "fill" else 0
    prep.value = s if dry else s.fillna(fill)
    prep.steps.append(Step("cudf", "cudf", f"Series.fillna({fill!r})", copies=True))
    prep.reasons.append(f"column {name!r}: {n} nulls filled with {fill!r} on the device "
                        "(a copy)")
    if nulls == "mask":
        prep.mask = None if dry else s.notna()
        prep.mask_step = Step("cudf", "cudf", "Series.notna()", copies=True)
    return prep


def _unsupported(name: Any, t: Any) -> Prepared:
    return Prepared(error=("unsupported", f"column {name!r} has type {t}"))


def _prepare_arrow(name: Any, col: Any, nulls: str, fill_value: Any, copy: bool | None,
                   dry: bool, prep: Prepared | None = None) -> Prepared:
    pa = _pa()
    prep = prep or Prepared()
    kind = "nested" if extension_name(col.type) is not None else _arrow_kind(col.type)
    if kind == "unsupported":
        return _unsupported(name, col.type)
    if kind == "nested":
        return _prepare_nested(name, col, nulls, copy, dry, prep)
    if kind == "temporal":
        prep.meta = _temporal_meta(col.type)
        col = _int_view(col)
        prep.steps.append(Step("pyarrow", "pyarrow", f"view {prep.meta['type']} as {col.type} "
                               "(zero-copy; unit kept in Columns.meta)"))
    if not col.null_count:
        prep.value = col
        return prep
    if nulls == "raise":
        prep.error = ("nulls", f"column {name!r} ({col.type}) holds {col.null_count} nulls")
        return prep
    if nulls == "fill":
        if copy is False:
            prep.error = ("zero-copy", f"column {name!r}: filling {col.null_count} nulls "
                          "writes a new buffer")
            return prep
        prep.copied = True
        prep.steps.append(Step("pyarrow", "pyarrow", f"fill_null({fill_value!r})", copies=True))
        prep.reasons.append(f"column {name!r}: {col.null_count} nulls filled with "
                            f"{fill_value!r} (a copy)")
        if dry:
            first = col.chunk(0) if isinstance(col, pa.ChunkedArray) else col
            prep.value = _strip_validity(first)
        else:
            prep.value = col.fill_null(pa.scalar(fill_value).cast(col.type))
        return prep
    # nulls == "mask"
    col = _one_chunk(name, col, copy, dry, prep, "with nulls ")
    if col is None:
        return prep
    prep.value = _strip_validity(col)
    prep.mask = None if dry else unpack_validity(col)
    prep.mask_step = Step("pyarrow", "numpy", "validity bitmap unpacked to bool", copies=True)
    prep.reasons.append(f"column {name!r}: {col.null_count} nulls; values are the buffer "
                        "without its bitmap, the mask (bitmap unpacked to bool) is a copy")
    return prep


def _prepare_nested(name: Any, col: Any, nulls: str, copy: bool | None, dry: bool,
                    prep: Prepared) -> Prepared:
    """A list or tensor column: the column itself (one chunk or several) handed to the
    registry as a composite, which reads its nulls and chunks as it reads a column alone
    (:mod:`interop.adapters.arrow_nested`: nulls refused unless ``copy=True``, several chunks
    joined by one copy). ``nulls='mask'`` adds the rows' validity as the mask, the values
    read as ``copy=True`` reads them; ``nulls='fill'`` takes columns of numbers."""
    if not (ours(col.type) or numeric_items(col.type)):
        return _unsupported(name, col.type)
    prep.value, prep.nested = col, True
    # a column on a device: its bitmap is refused, unread, where its rows are read
    # (arrow_nested); pyarrow would count an unknown null count's bits on the host
    if not getattr(col, "is_cpu", True) or not col.null_count or nulls == "raise":
        return prep
    if nulls == "fill":
        prep.error = ("unsupported", f"column {name!r} ({col.type}) holds {col.null_count} "
                      "null rows, and nulls='fill' fills columns of numbers; pass copy=True "
                      "(a null row of a list becomes empty, a null fixed-size row NaN) or "
                      "nulls='mask' (the same, with the rows' validity as the mask)")
        return prep
    if copy is False:
        prep.error = ("zero-copy", f"column {name!r}: {col.null_count} null rows; "
                      "nulls='mask' reads its values as copy=True does (a copy)")
        return prep
    prep.copy = prep.copied = True
    prep.mask = None if dry else col.is_valid().to_numpy(zero_copy_only=False)
    prep.mask_step = Step("pyarrow", "numpy", "row validity unpacked to bool", copies=True)
    prep.reasons.append(f"column {name!r}: {col.null_count} null rows; the values are read "
                        "as copy=True reads them (a null row of a list empty, a null "
                        "fixed-size row NaN), the mask is the rows' validity (a copy)")
    return prep


def _one_chunk(name: Any, col: Any, copy: bool | None, dry: bool, prep: Prepared,
               what: str = "") -> Any:
    """The column as one Arrow array: its one chunk, or its chunks joined (a copy, recorded
    in ``prep``; ``dry``: the first chunk stands in); ``None`` with ``prep.error`` set when
    ``copy=False`` refuses the join."""
    pa = _pa()
    if not isinstance(col, pa.ChunkedArray):
        return col
    if col.num_chunks == 1:
        return col.chunk(0)
    if not col.num_chunks:
        return pa.array([], type=col.type)
    if copy is False:
        prep.error = ("zero-copy", f"column {name!r} {what}is split into {col.num_chunks} "
                      "chunks; joining them copies")
        return None
    prep.copied = True
    prep.steps.append(Step("pyarrow", "pyarrow", "combine_chunks()", copies=True))
    prep.reasons.append(f"column {name!r} is split into {col.num_chunks} chunks; "
                        "joining them copies")
    return col.chunk(0) if dry else col.combine_chunks()


def _prepare_pandas(name: Any, s: Any, nulls: str, fill_value: Any, copy: bool | None,
                    dry: bool) -> Prepared:
    import numpy as np

    dt = s.dtype
    if isinstance(dt, np.dtype):
        if dt.kind in "mM":
            unit = np.datetime_data(dt)[0]
            meta = {"type": str(dt), "unit": unit}
            prep = Prepared(value=s.to_numpy().view(np.int64), meta=meta)
            prep.steps.append(Step("pandas", "numpy", f"view {dt} as int64 (zero-copy; unit "
                                   "kept in Columns.meta)"))
            if s.isna().any():  # NaT is a sentinel, not a null, in NumPy-backed columns
                prep.reasons.append(f"column {name!r}: NaT stays as the int64 minimum")
            return prep
        if dt.kind in "biufc":
            return Prepared(value=s)
        return _unsupported(name, dt)
    # extension dtypes (masked Int64/Float64/boolean, ArrowDtype, str, category): via Arrow
    pa = _pa()
    if pa is None:
        import pyarrow as pa
    try:
        arr = pa.array(s.array)
    except Exception:
        return _unsupported(name, dt)
    prep = Prepared()
    prep.steps.append(Step("pandas", "pyarrow", f"pyarrow.array(Series.array) ({dt})"))
    return _prepare_arrow(name, arr, nulls, fill_value, copy, dry, prep)


def _prepare_polars(name: Any, s: Any, nulls: str, fill_value: Any, copy: bool | None,
                    dry: bool) -> Prepared:
    dt = s.dtype
    pl = sys.modules["polars"]
    if dt.is_numeric() and not dt.is_decimal() and not s.null_count():
        return Prepared(value=s)
    nested = isinstance(dt, (pl.List, pl.Array))  # Arrow's list and fixed_size_list
    if not (dt.is_numeric() or dt.is_temporal() or dt == pl.Boolean or nested) \
            or dt.is_decimal():
        return _unsupported(name, dt)
    prep = Prepared()
    if dt == pl.Boolean and not s.null_count():
        return Prepared(value=s)
    if s.n_chunks() > 1:
        if copy is False:
            return Prepared(error=("zero-copy", f"column {name!r} is split into "
                                   f"{s.n_chunks()} chunks; joining them copies"))
        prep.copied = True
        prep.reasons.append(f"column {name!r} is split into {s.n_chunks()} chunks; "
                            "Series.to_arrow() joins them (a copy)")
    prep.steps.append(Step("polars", "pyarrow", "Series.to_arrow()", copies=prep.copied))
    if dry and prep.copied and not nested:  # a stand-in of the same type (and nulls) keeps
        # explain copy-free; a list column's nulls may lie in its items, which it cannot show
        pa = _pa()
        arr = s.head(0).to_arrow()
        arr = pa.array([None], type=arr.type) if s.null_count() else arr
    else:
        arr = s.to_arrow()
    return _prepare_arrow(name, arr, nulls, fill_value, copy, dry, prep)


# ---- the table --------------------------------------------------------------------------------
def _options(options: dict[str, Any]) -> tuple[str, Any, Any]:
    """``(nulls, fill_value, columns)`` of a table call (``ragged=`` is read per list column
    by :func:`ragged_options`)."""
    nulls = options.pop("nulls", "raise")
    fill_value = options.pop("fill_value", None)
    columns = options.pop("columns", None)
    ragged = options.pop("ragged", None)
    if options:
        first = sorted(options)[0]
        raise InteropError(f"unknown table option {first!r}"
                           f"{did_you_mean(first, CALL_OPTIONS + TABLE_OPTIONS)}; tables take "
                           "nulls=, fill_value=, columns= and ragged= (and device=, copy=)")
    if nulls not in NULLS_MODES:
        raise InteropError(f"nulls must be one of {NULLS_MODES}, got {nulls!r}")
    if nulls == "fill" and fill_value is None:
        raise InteropError("nulls='fill' needs a fill_value (e.g. fill_value=0)")
    if fill_value is not None and nulls != "fill" and ragged != "pad":
        raise InteropError(f"fill_value={fill_value!r} is used only with nulls='fill' (or "
                           "ragged='pad')")
    if isinstance(columns, str):
        columns = [columns]
    return nulls, fill_value, columns


def ragged_options(options: dict[str, Any]) -> dict[str, Any]:
    """What a table call hands each list column (:mod:`interop.adapters.arrow_nested`):
    ``ragged=``, and with ``ragged='pad'`` the ``fill_value`` padding (as for one column)."""
    ragged = options.get("ragged")
    if ragged is None:
        return {}
    pad = options.get("fill_value")
    return {"ragged": ragged, **({"fill_value": pad} if ragged == "pad" and pad is not None
                                 and options.get("nulls") != "fill" else {})}


def select(named: list[tuple[Any, Any]], columns: Iterable[Any] | None) -> list[tuple[Any, Any]]:
    """The ``columns=`` selection, in the order asked; unknown names raise."""
    names = [n for n, _ in named]
    try:
        unique = len(set(names)) == len(names)
    except TypeError:  # an unhashable name
        unique = len(set(map(_key, names))) == len(names)
    if not unique:
        dup = sorted({repr(n) for n in names if names.count(n) > 1})
        raise InteropError(f"the table has duplicate column names {', '.join(dup)}; a dict "
                           "of columns needs unique names (rename them first)")
    if columns is None:
        return named
    by = dict(named)
    missing = [c for c in columns if c not in by]
    if missing:
        raise InteropError(f"columns {missing} are not in the table; it has {names}")
    return [(c, by[c]) for c in columns]


def _key(n: Any) -> Any:
    try:
        hash(n)
        return n
    except TypeError:
        return repr(n)


def _raise_errors(source: str, preps: dict[Any, Prepared], nulls: str) -> None:
    errs = {n: p.error for n, p in preps.items() if p.error is not None}
    if not errs:
        return
    ok = [n for n, p in preps.items() if p.error is None or p.error[0] == "nulls"]
    unsupported = [r for r, in ((e[1],) for e in errs.values() if e[0] == "unsupported")]
    if unsupported:
        raise UnsupportedConversionError(
            f"{source}: {'; '.join(unsupported)}: only fixed-width numeric, boolean, "
            "temporal, list and tensor columns (of numbers) convert to arrays; select the "
            f"convertible ones with columns={ok!r} (or cast the others first)")
    with_nulls = [e[1] for e in errs.values() if e[0] == "nulls"]
    if with_nulls:
        raise NullsError(
            f"{source}: {'; '.join(with_nulls)}, which a dense buffer cannot represent: pass "
            "nulls='mask' for (values, mask) pairs, nulls='fill' with fill_value=..., or "
            "columns= to leave them out")
    zc = [e[1] for e in errs.values() if e[0] == "zero-copy"]
    raise ZeroCopyError(f"copy=False but {source} needs a copy: {'; '.join(zc)}")


def convert(reg: RegistryLike, source: str, named: list[tuple[Any, Any]], target: str, *,
            copy: bool | None, device: Any, options: dict[str, Any],
            pre_steps: tuple[Step, ...] = ()) -> Columns:
    """Convert each column to ``target``; ``Columns`` of arrays (or ``(values, mask)``)."""
    nulls, fill_value, columns = _options(dict(options))
    named = select(named, columns)
    narrowed: list[str] = []  # one NarrowingWarning for the table, naming its columns
    if copy is None and device is None and nulls == "raise":
        out = _dense_arrow_columns(reg, named, target, narrowed, not ragged_options(options))
        if out is not None:
            _warn_narrowed(source, narrowed)
            return out
    preps = {n: prepare(n, c, nulls=nulls, fill_value=fill_value, copy=copy) for n, c in named}
    _raise_errors(source, preps, nulls)
    out = Columns()
    narrowed.clear()
    for n, p in preps.items():
        try:
            with narrowing.gather() as got:
                values = reg.convert(p.value, target, copy=p.copy or copy, device=device,
                                     **(ragged_options(options) if p.nested else {}))
        except InteropError as e:
            raise type(e)(f"{source}, column {n!r}: {e}") from e
        narrowed += [f"column {n!r}: {why}" for why in got]
        if p.mask is not None:
            mask = reg.convert(p.mask, target, device=device)
            out[n] = (values, mask)
        else:
            out[n] = values
        if p.meta:
            out.meta[n] = p.meta
    _warn_narrowed(source, narrowed)
    return out


def _warn_narrowed(source: str, narrowed: list[str]) -> None:
    if narrowed:
        narrowing.warn(f"{source}: " + "; ".join(narrowed))


def _dense_arrow_columns(reg: RegistryLike, named: list[tuple[Any, Any]], target: str,
                         narrowed: list[str], nested: bool = False) -> Columns | None:
    """The common table, Arrow columns of numbers or booleans without nulls (and, where
    ``nested``: no ``ragged=`` asked, list and tensor columns of numbers without null rows),
    column by column with no preparation (what :func:`prepare` would hand on as they are);
    ``None`` for any other table, or any refusal, which the full path then explains."""
    pa = _pa()
    if pa is None:
        return None
    arrow = (pa.Array, pa.ChunkedArray)
    out = Columns()
    with narrowing.gather() as got:  # one for the table: each column's reasons labelled
        for n, c in named:
            if not isinstance(c, arrow) or c.null_count:
                return None
            how = plain_arrow(c.type, nested)
            if how is None:
                return None
            if how == CHUNK and isinstance(c, pa.ChunkedArray) and c.num_chunks == 1:
                c = c.chunk(0)  # its one chunk's parts are the column's (arrow_nested)
            seen = len(got)
            try:
                out[n] = reg.convert(c, target)
            except InteropError:
                return None
            got[seen:] = [f"column {n!r}: {why}" for why in got[seen:]]
    narrowed += got
    return out


WHOLE, CHUNK = "whole", "chunk"


def plain_arrow(t: Any, nested: bool) -> str | None:
    """How the common table path (:func:`_dense_arrow_columns`) hands on an Arrow column of
    type ``t`` without nulls: :data:`WHOLE` (numbers, booleans: the column as it is),
    :data:`CHUNK` (where ``nested``: a list or tensor column of numbers, its one chunk where
    it has one), ``None``: the column takes the full path."""
    kind = _arrow_kind(t)
    if kind in ("numeric", "bool"):
        return WHOLE
    return CHUNK if nested and kind == "nested" and numeric_items(t) else None


def explain(reg: RegistryLike, source: str, named: list[tuple[Any, Any]], target: str, *,
            copy: bool | None,
            options: dict[str, Any], pre_steps: tuple[Step, ...] = (),
            pre_reasons: tuple[str, ...] = (), zero_copy_known: bool = True) -> TablePlan:
    """The :class:`TablePlan`: per column what happens and why; converts nothing."""
    nulls, fill_value, columns = _options(dict(options))
    named = select(named, columns)
    plans: dict[Any, Plan] = {}
    errors: list[str] = []
    error_kind = None
    for n, c in named:
        p = prepare(n, c, nulls=nulls, fill_value=fill_value, copy=copy, dry=True)
        plans[n] = cp = column_plan(reg, source, n, p, target, copy,
                                    ragged_options(options) if p.nested else {})
        if not cp.supported:
            errors.append(cp.reasons[0] if cp.reasons else f"column {n!r}")
            error_kind = error_kind or cp.error
    zero_copy = zero_copy_known and all(p.zero_copy for p in plans.values())
    summary = tuple(f"column {n!r}: " + ("zero-copy" if p.zero_copy else
                                         "copy" if p.supported else f"fails ({p.error})")
                    for n, p in plans.items())
    steps = (*pre_steps, Step(source, target, f"column by column ({len(plans)} columns)"))
    return TablePlan(source, target, steps, zero_copy and not errors,
                     (*pre_reasons, *errors, *summary), (), supported=not errors,
                     error=error_kind, columns=plans)


def column_plan(reg: RegistryLike, source: str, name: Any, p: Prepared, target: str,
                copy: bool | None, options: dict[str, Any] | None = None) -> Plan:
    if p.error is not None:
        kind, reason = p.error
        return Plan(source, target, tuple(p.steps), False, (reason,), supported=False,
                    error=kind)
    inner = reg.explain(p.value, target, None, p.copy or copy, options or None)
    steps = (*p.steps, *inner.steps) + ((p.mask_step,) if p.mask_step else ())
    zero_copy = inner.zero_copy and not p.copied and p.mask is None and p.mask_step is None
    return Plan(inner.source, target, steps, zero_copy, (*p.reasons, *inner.reasons),
                inner.hazards, supported=inner.supported, error=inner.error)
