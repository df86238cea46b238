"""pandas ``Series``: zero-copy over NumPy-backed data; nullable dtypes with NA refused."""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

from ..errors import NullsError, UnsupportedConversionError
from ..view import BufferView
from . import pyarrow_
from .base import (
    NULLS,
    STEP_COPIES,
    UNSUPPORTED,
    Accepts,
    ArrayAdapter,
    Edge,
    NeedsCopy,
    instance_test,
    memo,
    module,
    series_check,
)

_NUMERIC = set("?bBhHiIlLqQefdFD")


_is_value = instance_test("pandas", "Series")


def _plain_class(dt: Any) -> bool:
    return isinstance(dt, _np().dtype) and (dt.char in _NUMERIC or dt.kind in "mM")


_plain = memo(_plain_class)  # NumPy dtypes of plain numeric Series (viewed as they are)


def check(s: Any) -> tuple[str, str] | None:
    """Why the Series' values cannot be viewed as NumPy without a copy."""
    dt = s.dtype
    if _plain(dt):
        return None
    if isinstance(dt, _np().dtype):
        if dt.char in _NUMERIC or dt.kind in "mM":
            return None
        return UNSUPPORTED, f"pandas Series {s.name!r} of dtype {dt} is not numeric"
    na = int(s.isna().sum())
    if na:
        return NULLS, (f"pandas Series {s.name!r} ({dt}) holds {na} missing values: fill them "
                       "first (s.fillna(value)) or pass copy=True (floating types get NaN)")
    numpy_dt = getattr(dt, "numpy_dtype", None)
    if numpy_dt is None or numpy_dt.char not in _NUMERIC:
        return UNSUPPORTED, f"pandas Series {s.name!r} of dtype {dt} is not numeric"
    return STEP_COPIES, (f"pandas extension dtype {dt} keeps its values in its own buffers "
                         "(a mask, or Arrow's): interop copies them out, so no write reaches "
                         "the Series")


def _np() -> Any:
    np = sys.modules.get("numpy")  # pandas imports NumPy: no import statement per call
    if np is None:  # pragma: no cover
        import numpy as np
    return np


def _to_numpy_converter() -> Any:
    """``Series.to_numpy()``, which is the copy-on-write view of NumPy-backed values: a
    read-only view, of a plain numeric dtype, of a writable array. Any other result
    (categorical, masked, Arrow-backed, tz-aware, strings) goes to :func:`_values`."""
    np = _np()
    plain, ndarray = frozenset(np.dtype(c) for c in _NUMERIC), np.ndarray

    def convert(s: Any) -> Any:
        if not _plain(s.dtype):  # an extension dtype's to_numpy may raise its own errors
            return _values(s)
        a = s.to_numpy()
        if not a.flags.writeable and a.dtype in plain:
            base = a.base  # NumPy-backed: a read-only view of pandas' own writable array
            if type(base) is ndarray and base.flags.writeable:
                return a
        return _values(s)

    return convert


def _values(s: Any) -> Any:
    """The values as NumPy: a view for NumPy dtypes; the masked-dtype copy (``STEP_COPIES``)
    made here; missing values or non-numeric data ``NeedsCopy`` (the check names them)."""
    dt = s.dtype
    if _plain(dt):
        return s.to_numpy()  # a read-only view under copy-on-write (.values is slower)
    verdict = check(s)
    if verdict is not None and verdict[0] != STEP_COPIES:
        raise NeedsCopy(*verdict)
    numpy_dt = getattr(dt, "numpy_dtype", None)
    if numpy_dt is not None and not isinstance(dt, type(numpy_dt)):
        # the plan says STEP_COPIES: pandas may hand out a view of a masked or Arrow-backed
        # array's own values, and a write through the result would change the Series
        return s.to_numpy(dtype=numpy_dt, copy=True)
    return s.to_numpy()


def to_numpy(s: Any) -> Any:
    """The Series' values as NumPy, copying if it must; NA only where NaN can stand in."""
    verdict = check(s)
    if verdict is not None:
        if verdict[0] == UNSUPPORTED:
            raise UnsupportedConversionError(verdict[1])
        if verdict[0] == NULLS:
            numpy_dt = getattr(s.dtype, "numpy_dtype", None)
            if numpy_dt is None or numpy_dt.kind not in "fc":
                raise NullsError(verdict[1])
            return s.to_numpy(dtype=numpy_dt, na_value=float("nan"))
    return _values(s)


def view(s: Any) -> BufferView:
    """The :class:`BufferView` of the Series' NumPy values."""
    from ..protocols.array_interface import view_of_numpy
    try:
        return view_of_numpy(_values(s))
    except NeedsCopy as nc:  # NA or non-numeric: no NumPy view of the Series' own memory
        raise UnsupportedConversionError(f"pandas Series {s.name!r}: {nc.reason}") from None


def buffers(s: Any) -> list[BufferView]:
    """Every buffer of the Series' values: an Arrow-backed array's (per chunk: validity,
    values, offsets), a masked array's values and mask, or the one NumPy array behind the
    others (categorical codes, datetimes, plain NumPy data), a sparse array's stored values.
    pandas names most of these only privately (``_pa_array``, ``_data``/``_mask``,
    ``_ndarray``); a kind without them has none interop can point at."""
    from ..protocols.array_interface import view_of_numpy

    arr = s.array
    chunked = getattr(arr, "_pa_array", None)
    if chunked is not None:
        return [v for c in chunked.chunks for v in pyarrow_.buffers(c)]
    ndarray = _np().ndarray
    parts = [getattr(arr, n, None) for n in ("_data", "_mask")]
    if not all(type(p) is ndarray for p in parts):
        parts = [getattr(arr, "_ndarray", None), getattr(arr, "sp_values", None)]
    return [view_of_numpy(p) for p in parts if type(p) is ndarray]


def _dtype_verdict(dt: Any) -> tuple[str, str] | None:
    if dt.char not in _NUMERIC and dt.kind not in "mM" or not dt.isnative:
        return UNSUPPORTED, f"pandas has no numeric dtype for {dt}"
    return None


_np_check = series_check("pandas Series", memo(_dtype_verdict))


def _numeric_dtypes() -> frozenset[Any]:
    np = _np()
    return frozenset(np.dtype(c) for c in _NUMERIC)


def _edges() -> list[Edge]:
    return [
        Edge("pandas", "numpy", "Series.to_numpy()", _to_numpy_converter, check=check,
             accepts=Accepts(lambda: (module("pandas").Series,))),
        Edge("numpy", "pandas", "pandas.Series(copy=False)",
             lambda: partial(module("pandas").Series, copy=False), check=_np_check,
             accepts=Accepts(lambda: (_np().ndarray,), _numeric_dtypes, ndim=1)),
    ]


ADAPTER = ArrayAdapter(
    name="pandas",
    aliases=("pd", "series"),
    modules=("pandas",),
    package="pandas",
    is_value=_is_value,
    view=view,
    buffers=buffers,
    to_numpy=to_numpy,
    edges=_edges,
)


