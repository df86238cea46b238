"""Arrow's columnar (structure-of-arrays) layout: tables and dataframes <-> per-column arrays.

``interop.to_framework(table, "torch")`` gives ``{name: tensor}`` zero-copy per fixed-width
column (see :mod:`interop.tables.columns` for nulls, chunks, booleans and temporals);
``interop.to_framework({"x": t1, "y": t2}, "pyarrow")`` builds a table over the tensors'
buffers (:mod:`interop.tables.build`). The public table calls (``interop.to_arrow_table``,
``interop.columns_of``, ...) are :mod:`interop.tabular`'s; the AoS <-> SoA transpose is
:mod:`interop.transpose`. Nothing here imports the API: the registry is handed in.
"""

from __future__ import annotations

from typing import Any

TABLE_TARGETS = ("pyarrow", "pandas", "polars", "cudf")
"""The table frameworks: a table converted to one of them stays a whole table."""

__all__ = ["Columns", "TablePlan"]

_WHERE = {"Columns": "columns", "TablePlan": "columns"}


def __getattr__(name: str) -> Any:
    # The modules load on first use: the registry needs only the table kinds (.adapters),
    # and a conversion of an array never touches the rest (the first call stays cheap).
    if name not in _WHERE:
        raise AttributeError(f"module 'interop.tables' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
