"""polars ``Series``: zero-copy for numeric data without nulls in one chunk."""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

from ..errors import NullsError, UnsupportedConversionError
from ..view import BufferView
from . import pyarrow_
from .base import (
    NEEDS_COPY,
    NULLS,
    STEP_COPIES,
    UNSUPPORTED,
    Accepts,
    ArrayAdapter,
    Edge,
    NeedsCopy,
    instance_test,
    memo,
    memo_by,
    module,
    series_check,
)

_POLARS_NUMERIC = set("bBhHiIlLqQefd")


_is_value = instance_test("polars", "Series")


_VIEWABLE = frozenset({"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
                       "Float16", "Float32", "Float64", "Datetime", "Duration"})
_NUMBERS = frozenset({"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32",
                      "UInt64", "Float16", "Float32", "Float64"})


def _kind_of(dt: Any) -> str:
    """"n" (a NumPy view exists), "a" (an ``Array`` of numbers: an N-D NumPy view of its
    flat values), "b" (bit-packed bool), "c" (Date: NumPy's datetime64[D] is a converted
    copy), "x" (no fixed-width NumPy dtype holds it)."""
    name = type(dt).__name__
    if name == "Array":
        return "a" if type(_innermost(dt)).__name__ in _NUMBERS else "x"
    return ("n" if name in _VIEWABLE else "b" if name == "Boolean"
            else "c" if name == "Date" else "x")


def _innermost(dt: Any) -> Any:
    while type(dt).__name__ == "Array":
        dt = dt.inner
    return dt


def _nulls(s: Any) -> int:
    """Nulls of ``s``; of an ``Array`` Series, those of its rows and of their values."""
    if type(s.dtype).__name__ == "Array":
        return s.reshape((-1,)).null_count()
    return s.null_count()


def _kind_key(dt: Any) -> Any:
    """What a dtype's kind depends on: its class (Datetime("us") and Datetime("ns") alike),
    and for an ``Array`` its innermost dtype's class (Array(Int8) and Array(String) differ)."""
    cls = type(dt)
    return (cls, type(_innermost(dt))) if cls.__name__ == "Array" else cls


_kind = memo_by(_kind_key, _kind_of)


def check(s: Any) -> tuple[str, str] | None:
    """Why ``s`` cannot be viewed by NumPy without copying (``None``: it can)."""
    k = _kind(s.dtype)
    if k == "x":
        return UNSUPPORTED, (f"polars Series {s.name!r} of dtype {s.dtype} is not numeric in "
                             "NumPy terms (no fixed-width NumPy dtype holds it); cast it first")
    nulls = _nulls(s) if k == "a" else s.null_count()
    if nulls:
        return NULLS, (f"polars Series {s.name!r} holds {nulls} nulls: fill them first "
                       "(s.fill_null(value)) or pass copy=True (floating types get NaN)")
    if s.n_chunks() > 1:
        return NEEDS_COPY, (f"polars Series {s.name!r} is split into {s.n_chunks()} chunks; "
                            "joining them copies (s.rechunk())")
    if k == "b":
        return STEP_COPIES, "Arrow (and polars) pack booleans into bits; unpacking them copies"
    if k == "c":
        return STEP_COPIES, "polars Date counts days in 32 bits; NumPy's datetime64[D] is a copy"
    return None


def _to_numpy_converter() -> Any:
    """``Series.to_numpy(allow_copy=False)``: a view of numbers as it is; where polars would
    copy, or "views" what the check may refuse (an empty Series of any dtype, object or
    time data), the check decides (:func:`_checked_view`). "Numbers" is a set of NumPy's
    native integer, floating, complex and bool dtypes (one set test: reading ``dtype.kind``
    costs more); any other view, which polars does not make, would be handed to the check
    too."""
    np = module("numpy")
    numbers = frozenset(np.dtype(c) for c in
                        np.typecodes["AllInteger"] + np.typecodes["AllFloat"] + "?")

    def convert(s: Any) -> Any:
        try:
            out = s.to_numpy(allow_copy=False)
        except RuntimeError as e:  # polars says the view would need a copy
            return _checked_view(s, None, f" ({e})")
        if out.size and out.dtype in numbers:
            return out
        return _checked_view(s, out, "")

    return convert


def _checked_view(s: Any, out: Any, why: str) -> Any:
    """What the check says of ``s``, whose view polars gave as ``out`` (``None``: it would
    copy): ``out`` where it says nothing, booleans unpacked and dates converted (its
    ``STEP_COPIES`` verdict), anything else ``NeedsCopy`` with its verdict (nulls, chunks,
    no NumPy dtype)."""
    verdict = check(s)
    if verdict is None and out is not None:
        return out
    if verdict is not None and verdict[0] == STEP_COPIES:
        return s.to_numpy()
    raise NeedsCopy(*(verdict or (NEEDS_COPY, f"polars Series {s.name!r}: no NumPy view "
                                              f"without a copy{why}"))) from None


def to_numpy(s: Any) -> Any:
    """The Series as NumPy, copying if it must; nulls only for floating types (NaN)."""
    verdict = check(s)
    if verdict is not None and verdict[0] == UNSUPPORTED:
        raise UnsupportedConversionError(verdict[1])
    nulls = _nulls(s)
    if nulls and not _innermost(s.dtype).is_float():
        raise NullsError(f"polars Series {s.name!r} holds {nulls} nulls and has no NaN "
                         "to stand for them: fill them first (s.fill_null(value))")
    return s.to_numpy()


def view(s: Any) -> BufferView:
    """The :class:`BufferView` of the Series' values buffer."""
    if s.dtype == sys.modules["polars"].Boolean:
        # unpacking bits makes a temporary copy: its pointer says nothing about s's memory
        raise UnsupportedConversionError(f"polars Series {s.name!r}: booleans are bit-packed")
    from ..protocols.array_interface import view_of_numpy

    v = view_of_numpy(_to_numpy_converter()(s))
    return BufferView(v.ptr, v.shape, v.strides, v.itemsize, v.dtype, v.device, True, s)


def buffers(s: Any) -> list[BufferView]:
    """Every buffer of a one-chunk Series (validity bitmap, values, offsets), read from
    polars' own Arrow export of its physical data (categorical codes, not a dictionary
    made for the export; string views kept as they are). A buffer the export copies (at
    another address in a second export: a sliced validity bitmap) is not the Series' own
    and is left out; where the export copies every one, the Series' memory cannot be read
    (raised)."""
    pl = sys.modules["polars"]
    newest = pl.CompatLevel.newest()
    physical = s.to_physical() if type(s.dtype).__name__ in ("Categorical", "Enum") else s
    first = pyarrow_.buffers(physical.to_arrow(compat_level=newest))
    again = {v.extent() for v in pyarrow_.buffers(physical.to_arrow(compat_level=newest))}
    own = [v for v in first if v.extent() in again]
    if first and not own:  # every buffer made for the export (an Object Series' pointers)
        raise UnsupportedConversionError(f"polars Series {s.name!r} of dtype {s.dtype}: its "
                                         "Arrow export copies every buffer")
    return own


def _dtype_verdict(dt: Any) -> tuple[str, str] | None:
    if dt.char == "?":
        return STEP_COPIES, "polars packs booleans into bits; packing them copies"
    if dt.char not in _POLARS_NUMERIC or not dt.isnative:
        return UNSUPPORTED, f"polars has no numeric dtype for {dt}"
    return None


_np_check = series_check("polars Series", memo(_dtype_verdict), strided="polars.Series",
                         misaligned=(STEP_COPIES, "polars.Series copies it"))


def _polars_dtypes() -> frozenset[Any]:
    np = module("numpy")
    return frozenset(np.dtype(c) for c in _POLARS_NUMERIC)


def _edges() -> list[Edge]:
    return [
        Edge("polars", "numpy", "Series.to_numpy(allow_copy=False)", _to_numpy_converter,
             check=check, accepts=Accepts(lambda: (module("polars").Series,))),
        Edge("numpy", "polars", "polars.Series",
             lambda: partial(module("polars").Series, None),  # Series(name=None, values=a)
             check=_np_check, accepts=Accepts(lambda: (module("numpy").ndarray,),
                                              _polars_dtypes, ndim=1)),
    ]


ADAPTER = ArrayAdapter(
    name="polars",
    aliases=("pl",),
    modules=("polars",),
    package="polars",
    chunks=lambda s: s.get_chunks() if s.n_chunks() > 1 else None,
    is_value=_is_value,
    view=view,
    buffers=buffers,
    to_numpy=to_numpy,
    edges=_edges,
)
