"""polars ``Series``: zero-copy for numeric data without nulls in one chunk."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import NullsError, UnsupportedConversionError
from ..view import BufferView
from .base import COPIES, COPY_ROUTE, NULLS, UNSUPPORTED, Adapter, Edge

_POLARS_NUMERIC = set("bBhHiIlLqQefd")


def _is_value(x: Any) -> bool:
    pl = sys.modules.get("polars")
    return pl is not None and isinstance(x, pl.Series)


def check(s: Any) -> tuple[str, str] | None:
    """Why ``s`` cannot be viewed by NumPy without copying (``None``: it can)."""
    dt = s.dtype
    if not (dt.is_numeric() or dt.is_temporal() or dt == sys.modules["polars"].Boolean):
        return UNSUPPORTED, f"polars Series {s.name!r} of dtype {dt} is not numeric"
    if s.null_count():
        return NULLS, (f"polars Series {s.name!r} holds {s.null_count()} nulls: fill them first "
                       "(s.fill_null(value)) or pass copy=True (floating types get NaN)")
    if s.n_chunks() > 1:
        return COPY_ROUTE, (f"polars Series {s.name!r} is split into {s.n_chunks()} chunks; "
                            "joining them copies (s.rechunk())")
    if dt == sys.modules["polars"].Boolean:
        return COPIES, "Arrow (and polars) pack booleans into bits; unpacking them copies"
    return None


def _to_numpy_view(s: Any) -> Any:
    if s.dtype == sys.modules["polars"].Boolean:
        return s.to_numpy()
    return s.to_numpy(allow_copy=False)


def to_numpy(s: Any) -> Any:
    """The Series as NumPy, copying if it must; nulls only for floating types (NaN)."""
    verdict = check(s)
    if verdict is not None and verdict[0] == UNSUPPORTED:
        raise UnsupportedConversionError(verdict[1])
    if s.null_count() and not s.dtype.is_float():
        raise NullsError(f"polars Series {s.name!r} holds {s.null_count()} nulls and has no NaN "
                         "to stand for them: fill them first (s.fill_null(value))")
    return s.to_numpy()


def view(s: Any) -> BufferView:
    """The :class:`BufferView` of the Series' values buffer."""
    if s.dtype == sys.modules["polars"].Boolean:
        # unpacking bits makes a temporary copy: its pointer says nothing about s's memory
        raise UnsupportedConversionError(f"polars Series {s.name!r}: booleans are bit-packed")
    from ..protocols.array_interface import view_of_numpy

    v = view_of_numpy(_to_numpy_view(s))
    return BufferView(v.ptr, v.shape, v.strides, v.itemsize, v.dtype, v.device, True, s)


def _np_check(a: Any) -> tuple[str, str] | None:
    if a.ndim != 1:
        return UNSUPPORTED, f"a polars Series is one-dimensional; the array has shape {a.shape}"
    if a.dtype.char == "?":
        return COPIES, "polars packs booleans into bits; packing them copies"
    if a.dtype.char not in _POLARS_NUMERIC or not a.dtype.isnative:
        return UNSUPPORTED, f"polars has no numeric dtype for {a.dtype}"
    if not a.flags.c_contiguous or (a.size and a.strides[0] != a.itemsize):
        return COPY_ROUTE, f"strides {a.strides} are not contiguous: polars buffers are dense"
    if not a.flags.aligned:
        return COPY_ROUTE, "the array is not aligned to its itemsize: polars.Series copies it"
    return None


def _from_numpy(a: Any) -> Any:
    import polars as pl

    return pl.Series(values=a)


def _edges() -> list[Edge]:
    return [
        Edge("polars", "numpy", "Series.to_numpy(allow_copy=False)", _to_numpy_view,
             check=check),
        Edge("numpy", "polars", "polars.Series", _from_numpy, check=_np_check),
    ]


ADAPTER = Adapter(
    name="polars",
    aliases=("pl",),
    modules=("polars",),
    package="polars",
    is_value=_is_value,
    view=view,
    to_numpy=to_numpy,
    edges=_edges,
)
