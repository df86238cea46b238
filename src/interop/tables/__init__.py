"""Arrow's columnar (structure-of-arrays) layout: tables and dataframes <-> per-column arrays.

``interop.to_framework(table, "torch")`` gives ``{name: tensor}`` zero-copy per fixed-width
column (see :mod:`interop.tables.columns` for nulls, chunks, booleans and temporals);
``interop.to_framework({"x": t1, "y": t2}, "pyarrow")`` builds a table over the tensors'
buffers (:mod:`interop.tables.build`); :func:`aos_to_soa` / :func:`soa_to_aos` transpose
row-major records to columns and back (:mod:`interop.tables.aos`).
"""

from __future__ import annotations

from .aos import aos_to_soa, soa_to_aos
from .build import to_arrow_table, to_record_batch
from .columns import Columns, TablePlan

__all__ = ["Columns", "TablePlan", "aos_to_soa", "soa_to_aos", "to_arrow_table",
           "to_record_batch", "columns_of"]


def columns_of(x, target, **kw):
    """Per-column conversion even to a table framework: ``{name: pyarrow.Array}``."""
    from .adapters import columns_of as impl

    return impl(x, target, **kw)
