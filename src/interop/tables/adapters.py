"""Table kinds for the registry: composite values (:class:`~interop.adapters.base.CompositeAdapter`)
whose parts are their columns, recognised like a framework and converted column by column
(their own ``convert``: nulls, masks, chunks) through the registry they are given.

Sources: pyarrow ``Table``, ``RecordBatch``, ``RecordBatchReader``; pandas and polars
``DataFrame``; a ``dict`` of arrays; any object speaking the Arrow PyCapsule interface (DuckDB
relations, nanoarrow, arro3); cuDF ``DataFrame`` (GPU). Targets: every array framework of the
registry (a :class:`~interop.tables.columns.Columns` dict, one array per column) and, as whole
tables, ``"pyarrow"`` (``pa.Table``), ``"pandas"``, ``"polars"`` and ``"cudf"``.

For a table source, the array frameworks that are also table frameworks (pyarrow, pandas,
polars) give a whole table; ask for single columns with ``interop.columns_of``.
Detection never imports a library: it reads ``sys.modules`` like the array adapters.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..adapters.base import CompositeAdapter, Parts, RegistryLike, instance_test
from ..errors import InteropError, UnsupportedConversionError
from . import TABLE_TARGETS, arrow_c

if TYPE_CHECKING:
    from ..plan import Step

# The conversion modules (columns, build) and the Plan load on the first table converted or
# explained, not with the registry: an array's first conversion never needs them.


def _mod(name: str) -> Any:
    return sys.modules.get(name)


# ---- sources: value -> (label, [(name, column)], pre-steps) --------------------------------
def _arrow_table(t: Any) -> list[tuple[Any, Any]]:
    return list(zip(t.schema.names, t.columns))  # (Fields and column_names are slower)


def _pandas(df: Any) -> list[tuple[Any, Any]]:
    return [(n, df.iloc[:, i]) for i, n in enumerate(df.columns)]


def _polars(df: Any) -> list[tuple[Any, Any]]:
    return [(s.name, s) for s in df.get_columns()]


def _dict(d: Any) -> list[tuple[Any, Any]]:
    return list(d.items())


def _cudf(df: Any) -> list[tuple[Any, Any]]:  # pragma: no cover - needs a GPU
    return [(n, df[n]) for n in df.columns]


def _stream_table(x: Any) -> tuple[Any, tuple[Step, ...]]:
    from ..plan import Step

    pa = sys.modules["pyarrow"]
    reader = x if isinstance(x, pa.RecordBatchReader) else arrow_c.import_stream(x)
    return reader.read_all(), (Step("arrow stream", "pyarrow",
                                    "RecordBatchReader.read_all() (each batch a chunk)"),)


# ---- the table kinds --------------------------------------------------------------------
def _converter(label: str, named_of: Callable[[Any], list], *, stream: bool = False,
               same: str = ""):
    """``same``: the table target the source already is (returned as it is, index and all)."""

    def convert_table(reg: RegistryLike, x: Any, target: str, *, copy: bool | None = None,
                      device: Any = None, **options: Any) -> Any:
        if target == same and copy is not True and not options and device is None:
            return x
        steps: tuple[Step, ...] = ()
        if stream:
            x, steps = _stream_table(x)
            named = _arrow_table(x)
        else:
            named = named_of(x)
        return _convert(reg, label, named, target, copy, device, options, steps)

    def explain_table(reg: RegistryLike, x: Any, target: str, *, copy: bool | None = None,
                      **options: Any):
        from ..plan import Plan, Step

        if target == same and copy is not True and not options:
            return Plan(label, target, (Step(label, target, "identity"),), True, (), ())
        if stream:
            return _explain_stream(reg, label, x, target, copy, options)
        return _explain(reg, label, named_of(x), target, copy, options)

    return convert_table, explain_table


def _whole_table(options: dict[str, Any]) -> Any:
    from . import columns

    nulls, _, cols = columns._options(dict(options))
    if nulls != "raise":
        raise InteropError(f"nulls={nulls!r} applies to array targets; a table keeps its nulls")
    return cols


def _convert(reg: RegistryLike, label: str, named: list, target: str, copy: bool | None,
             device: Any, options: dict[str, Any], steps: tuple[Step, ...] = ()) -> Any:
    from . import build, columns

    if target in TABLE_TARGETS:
        cols = _whole_table(options)
        named = columns.select(named, cols)
        return build.build(reg, dict(named), target, copy=copy)
    return columns.convert(reg, label, named, target, copy=copy, device=device,
                           options=options)


def _explain(reg: RegistryLike, label: str, named: list, target: str, copy: bool | None,
             options: dict[str, Any], **kw: Any) -> Any:
    from . import build, columns

    if target in TABLE_TARGETS:
        named = columns.select(named, _whole_table(options))
        return build.explain(reg, label, dict(named), target, copy=copy)
    return columns.explain(reg, label, named, target, copy=copy, options=options, **kw)


def _explain_stream(reg: RegistryLike, label: str, x: Any, target: str, copy: bool | None,
                    options: dict[str, Any]) -> Any:
    """A stream is read once: plan from its schema; chunking is unknown until it is read."""
    from ..plan import Step
    from . import columns

    pa = sys.modules["pyarrow"]
    schema = x.schema if isinstance(x, pa.RecordBatchReader) else arrow_c.schema_of(x)
    why = (f"{label}: a stream is read when converted; one batch gives zero-copy columns, "
           "several batches give chunked columns joined by one copy, so zero-copy is not "
           "claimed")
    step = Step("arrow stream", "pyarrow", "RecordBatchReader.read_all() (each batch a chunk)")
    if schema is None:
        return columns.TablePlan(label, target, (step,), False,
                                 (why, "the schema is unknown without reading the stream"))
    named = [(f.name, pa.array([], type=f.type)) for f in schema]
    return _explain(reg, label, named, target, copy, options, pre_steps=(step,),
                    pre_reasons=(why,), zero_copy_known=False) if target not in TABLE_TARGETS \
        else _explain(reg, label, named, target, copy, options)


def _arrow_c_convert(reg: RegistryLike, x: Any, target: str, *, copy: bool | None = None,
                     device: Any = None, **options: Any) -> Any:
    label = f"{type(x).__module__}.{type(x).__qualname__} (Arrow PyCapsule)"
    if arrow_c.has_array(x):
        imp = arrow_c.import_array(x)
    elif arrow_c.has_stream(x):
        t, steps = _stream_table(x)
        return _convert(reg, label, _arrow_table(t), target, copy, device, options, steps)
    else:
        imp, dev, _ = arrow_c.import_device_array(x)
        if imp is not None and dev != arrow_c.ARROW_DEVICE_CPU:  # CUDA: needs a GPU
            return _convert(reg, label, arrow_c.device_columns(imp), target, copy, device,
                            options)
        if dev != arrow_c.ARROW_DEVICE_CPU:
            raise UnsupportedConversionError(f"{label}: Arrow device type {dev} is not supported "
                                             "(CPU and CUDA are)")
    pa = sys.modules["pyarrow"]
    if isinstance(imp, pa.RecordBatch):
        return _convert(reg, label, _arrow_table(imp), target, copy, device, options)
    if options:
        raise InteropError(f"options {sorted(options)} apply to tables; {label} holds one "
                           f"array of type {imp.type}")
    return reg.convert(imp, target, copy=copy, device=device)


def _arrow_c_explain(reg: RegistryLike, x: Any, target: str, *, copy: bool | None = None,
                     **options: Any):
    from ..plan import Step
    from . import columns

    label = f"{type(x).__module__}.{type(x).__qualname__} (Arrow PyCapsule)"
    if arrow_c.has_array(x):
        imp = arrow_c.import_array(x)  # zero-copy import; reads no data
        pa = sys.modules["pyarrow"]
        if isinstance(imp, pa.RecordBatch):
            return _explain(reg, label, _arrow_table(imp), target, copy, options)
        return reg.explain(imp, target, None, copy)
    if arrow_c.has_stream(x):
        return _explain_stream(reg, label, x, target, copy, options)
    return columns.TablePlan(label, target, (Step(label, "pyarrow",
                                                  "__arrow_c_device_array__"),), False,
                             ("a device array is planned when it is imported",))


def _table_adapter(name: str, modules: tuple[str, ...], package: str,
                   is_value: Callable[[Any], bool], label: str, named_of: Callable,
                   stream: bool = False, devices: tuple[str, ...] = ("cpu",),
                   same: str = "", **fast: Any) -> CompositeAdapter:
    """``fast``: the kind's ``reader`` and ``rebuilder`` (its kept plans' fast form)."""
    conv, expl = _converter(label, named_of, stream=stream, same=same)
    return CompositeAdapter(name=name, modules=modules, package=package, devices=devices,
                            is_value=is_value, convert=conv, explain=expl,
                            parts=None if stream else _parts_of(named_of), **fast)


def _parts_of(named_of: Callable[[Any], list]) -> Callable[[Any], Parts]:
    """A table's :class:`~interop.adapters.base.Parts`: its columns by name (a stream has
    none to show before it is read)."""
    def parts(x: Any) -> Parts:
        return Parts("table", tuple(named_of(x)))

    return parts


def _is_dict(x: Any) -> bool:
    return isinstance(x, dict)


def _is_arrow_c(x: Any) -> bool:
    return arrow_c.is_arrow_c(x)


def _cudf_convert(reg: RegistryLike, x: Any, target: str, **kw: Any) -> Any:  # pragma: no cover
    return _convert(reg, "cuDF DataFrame", _cudf(x), target, kw.pop("copy", None),
                    kw.pop("device", None), kw)


def _cudf_explain(reg: RegistryLike, x: Any, target: str, *, copy: bool | None = None,
                  **options: Any):
    return _explain(reg, "cuDF DataFrame", _cudf(x), target, copy, options)  # pragma: no cover


def _arrow_reader(t: Any, parts: Parts) -> Callable[[Any], tuple[Any, ...] | None] | None:
    """The fast reader of Arrow tables and record batches of ``t``'s type and schema, every
    column on the common path (:func:`~interop.tables.columns.plain_arrow`): each column of a
    value without nulls, as that path hands it on (a list or tensor column's one chunk);
    ``None`` for a value of another schema or with nulls, which the full path takes
    (``parts``: unread, the schema says it all)."""
    from . import columns

    hows = [columns.plain_arrow(f.type, True) for f in t.schema]
    if None in hows:
        return None
    kind, schema = type(t), t.schema
    chunks = tuple(i for i, how in enumerate(hows)
                   if how == columns.CHUNK and kind.__name__ == "Table")
    count = len(hows)

    def read(v: Any) -> tuple[Any, ...] | None:
        if type(v) is not kind or not v.schema.equals(schema):
            return None
        got = [v.column(i) for i in range(count)]
        for c in got:
            if c.null_count:
                return None
        for i in chunks:
            if got[i].num_chunks == 1:
                got[i] = got[i].chunk(0)
        return tuple(got)

    return read


def _columns_rebuilder(reg: RegistryLike, parts: Parts, target: str) -> Any:
    """The columns converted to an array framework as the table's ``Columns``; ``None`` for a
    table target (which builds a table: that plan keeps no fast form)."""
    if target in TABLE_TARGETS:
        return None
    from .columns import Columns

    names = tuple(n for n, _ in parts.arrays)
    return lambda arrays: Columns(zip(names, arrays))


ARROW_TABLE = _table_adapter("arrow-table", ("pyarrow",), "pyarrow",
                             instance_test("pyarrow", "Table"), "pyarrow Table", _arrow_table,
                             same="pyarrow", reader=_arrow_reader, rebuilder=_columns_rebuilder)
ARROW_BATCH = _table_adapter("arrow-batch", ("pyarrow",), "pyarrow",
                             instance_test("pyarrow", "RecordBatch"), "pyarrow RecordBatch",
                             _arrow_table, reader=_arrow_reader, rebuilder=_columns_rebuilder)
ARROW_STREAM = _table_adapter("arrow-stream", ("pyarrow",), "pyarrow",
                              instance_test("pyarrow", "RecordBatchReader"),
                              "pyarrow RecordBatchReader", _arrow_table, stream=True)
PANDAS_DF = _table_adapter("pandas-dataframe", ("pandas",), "pandas",
                           instance_test("pandas", "DataFrame"), "pandas DataFrame", _pandas,
                           same="pandas")
POLARS_DF = _table_adapter("polars-dataframe", ("polars",), "polars",
                           instance_test("polars", "DataFrame"), "polars DataFrame", _polars,
                           same="polars")
DICT = _table_adapter("dict", (), "interop", _is_dict, "dict of arrays", _dict)
"""A dict read as a table: not in ``ADAPTERS`` (dicts are structures, whose adapter,
:mod:`interop.structures.adapter`, decides when a dict is a table and then converts it so)."""
CUDF = CompositeAdapter(name="cudf-dataframe", modules=("cudf",), package="cudf",
                        devices=("cuda",), is_value=instance_test("cudf", "DataFrame"),
                        convert=_cudf_convert, explain=_cudf_explain, parts=_parts_of(_cudf))
ARROW_C = CompositeAdapter(name="arrow-c", package="pyarrow", is_value=_is_arrow_c,
                           convert=_arrow_c_convert, explain=_arrow_c_explain)

ADAPTERS = [ARROW_TABLE, ARROW_BATCH, ARROW_STREAM, PANDAS_DF, POLARS_DF, CUDF, ARROW_C]


def columns_of(reg: RegistryLike, x: Any, target: str, **kw: Any) -> Any:
    """Per-column conversion even when ``target`` is a table framework (pyarrow, pandas,
    polars): ``{name: pyarrow.Array}`` rather than a ``pa.Table``."""
    from . import columns

    adapter = DICT if isinstance(x, dict) else reg.adapters[reg.owner(x)]
    if not isinstance(adapter, CompositeAdapter):
        raise UnsupportedConversionError(f"{type(x).__name__} is not a table")
    copy, device = kw.pop("copy", None), kw.pop("device", None)
    tgt = reg.target(target)
    pa = _mod("pyarrow")
    if pa is not None and isinstance(x, pa.RecordBatchReader):
        x, _ = _stream_table(x)
    named = (_arrow_table(x) if pa is not None and isinstance(x, (pa.Table, pa.RecordBatch))
             else _pandas(x) if adapter is PANDAS_DF else _polars(x) if adapter is POLARS_DF
             else _dict(x) if adapter is DICT else None)
    if named is None:
        raise UnsupportedConversionError(f"columns_of does not read a {type(x).__name__}")
    return columns.convert(reg, type(x).__name__, named, tgt, copy=copy, device=device,
                           options=kw)
