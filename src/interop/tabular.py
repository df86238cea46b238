"""The public calls on tables and records, on the default registry (:mod:`interop.default`):
Arrow tables over the columns' own buffers, per-column conversion, and the AoS <-> SoA
transpose. They stand beside :mod:`interop.api`; the code they call (:mod:`interop.tables`,
:mod:`interop.transpose`) is handed the registry and never imports the API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .default import REGISTRY

if TYPE_CHECKING:
    from .transpose.cpu import Kernel


def to_arrow_table(cols: Mapping, *, copy: bool | None = None) -> Any:
    """A ``pyarrow.Table`` over the columns' own buffers (``{name: array}`` of any framework:
    fixed-width columns are not copied; ``copy=False`` refuses a column that would be)."""
    from .tables.build import arrow_table

    return arrow_table(REGISTRY, cols, copy=copy)


def to_record_batch(cols: Mapping, *, copy: bool | None = None) -> Any:
    """A ``pyarrow.RecordBatch`` over the columns' own buffers."""
    from .tables.build import record_batch

    return record_batch(REGISTRY, cols, copy=copy)


def columns_of(x: Any, target: str, **kw: Any) -> Any:
    """Per-column conversion even when ``target`` is a table framework (pyarrow, pandas,
    polars): ``{name: pyarrow.Array}`` rather than a ``pa.Table``."""
    from .tables.adapters import columns_of as per_column

    return per_column(REGISTRY, x, target, **kw)


def aos_to_soa(rows: Any, names: Sequence[str] | None = None, *, target: str = "pyarrow",
               out: Any = None, kernel: str | None = None, threads: int | None = None) -> Any:
    """Row-major records -> columns: a ``pyarrow.Table`` by default.

    ``rows``: a NumPy structured array (field names are the column names unless ``names``
    renames them) or a 2-D ``(N, C)`` array or tensor (``names``: C names, default
    ``c0..c{C-1}``). ``target``: ``"pyarrow"`` (``pa.Table``), ``"pandas"``, ``"polars"``, or
    any array framework for ``{name: column}``. One copy (the transpose); the columns are
    then handed on without another (booleans are bit-packed by Arrow, a second copy).
    ``out``: an existing ``(C, N)`` array with contiguous rows to write the columns into
    (reusing it skips the page faults of a fresh buffer; the result then aliases ``out``).
    Only for 2-D rows and structured arrays of one field type. ``kernel``: ``"llvm"`` or
    ``"numpy"`` (``None``: chosen by size); ``threads``: how many threads share the rows
    (``None``: every CPU from 16 MiB on).
    """
    from .transpose import records

    return records.aos_to_soa(REGISTRY, rows, names, target=target, out=out, kernel=kernel,
                              threads=threads)


def soa_to_aos(table: Any, target: str = "torch", *, columns: Sequence[str] | None = None,
               dtype: Any = None, out: Any = None, kernel: str | None = None,
               threads: int | None = None) -> Any:
    """Columns -> one row-major ``(N, C)`` array of ``target`` (default torch), one copy.

    ``table``: anything :func:`interop.to_framework` reads as a table (pyarrow, pandas,
    polars, a dict of arrays, Arrow PyCapsule objects). Columns are read zero-copy where the
    registry allows (nulls raise :class:`~interop.errors.NullsError`; select with
    ``columns=``). ``dtype``: the common type, by default NumPy's promotion of the columns;
    or a structured dtype of one field per column (in order, mixed types, packed or padded,
    its own field names): the result is then a 1-D structured array of ``N`` records
    (``target`` ``"numpy"``). ``out``: an existing writable ``(N, C)`` array with contiguous
    rows (or ``(N,)`` records of the structured ``dtype``) to write into (the result is then
    ``out`` handed to ``target``). ``kernel``, ``threads``: as :func:`aos_to_soa`'s.
    """
    from .transpose import records

    return records.soa_to_aos(REGISTRY, table, target, columns=columns, dtype=dtype, out=out,
                              kernel=kernel, threads=threads)


def transpose_kernel(nbytes: int, kernel: str | None = None) -> Kernel:
    """Which kernel (``"llvm"`` or ``"numpy"``) an ``aos_to_soa``/``soa_to_aos`` of
    ``nbytes`` bytes of records runs, and why (``kernel``: the one the call names; the
    compiled one is loaded only from a size on, and never by this question)."""
    from .transpose import cpu

    return cpu.kernel(nbytes, choice=kernel)
