"""The public table calls, on the default registry (:mod:`interop.default`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..default import REGISTRY


def to_arrow_table(cols: Mapping, *, copy: bool | None = None) -> Any:
    """A ``pyarrow.Table`` over the columns' own buffers (see :mod:`interop.tables.build`)."""
    from .build import arrow_table

    return arrow_table(REGISTRY, cols, copy=copy)


def to_record_batch(cols: Mapping, *, copy: bool | None = None) -> Any:
    """A ``pyarrow.RecordBatch`` over the columns' own buffers."""
    from .build import record_batch

    return record_batch(REGISTRY, cols, copy=copy)


def columns_of(x: Any, target: str, **kw: Any) -> Any:
    """Per-column conversion even when ``target`` is a table framework (pyarrow, pandas,
    polars): ``{name: pyarrow.Array}`` rather than a ``pa.Table``."""
    from .adapters import columns_of as per_column

    return per_column(REGISTRY, x, target, **kw)
