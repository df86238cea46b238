"""pyarrow ``Array`` and ``ChunkedArray``: zero-copy for fixed-width data without nulls."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import NullsError
from ..view import BufferView
from .base import (
    ARROW_TYPE_ID,
    COPIES,
    COPY_ROUTE,
    NULLS,
    UNSUPPORTED,
    Adapter,
    Edge,
    NeedsCopy,
    left_to_check,
    memo,
    memo_by,
    module,
    read_only_1d,
    series_check,
    series_fast,
)

# NumPy type strings pyarrow stores as plain fixed-width buffers.
_ARROW_NUMERIC = set("bBhHiIlLqQefd")


def _is_value(x: Any) -> bool:
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(x, (pa.Array, pa.ChunkedArray))


def describe(x: Any) -> str:
    """A short name for an array in messages: its type and length."""
    return f"pyarrow {type(x).__name__}<{x.type}> of length {len(x)}"


def _kind_of(t: Any) -> str:
    """"n" (a NumPy view exists), "b" (bit-packed bool), "c" (a date: NumPy's datetime64
    needs a conversion, so a copy), "x" (no fixed-width NumPy dtype holds it)."""
    types = sys.modules["pyarrow"].types
    return ("n" if (types.is_integer(t) or types.is_floating(t) or types.is_timestamp(t)
                    or types.is_duration(t))
            else "b" if types.is_boolean(t) else "c" if types.is_date(t) else "x")


_kind = memo_by(ARROW_TYPE_ID, _kind_of)


def _chunk(x: Any) -> Any:
    return x.chunk(0) if type(x).__name__ == "ChunkedArray" and x.num_chunks == 1 else x


def check(x: Any) -> tuple[str, str] | None:
    """Why ``x`` cannot be viewed by NumPy without copying (``None``: it can)."""
    k = _kind(x.type)
    if k == "x":
        return UNSUPPORTED, (f"{describe(x)}: type {x.type} is not fixed-width numeric; select "
                             "numeric columns or cast first")
    if x.null_count:
        return NULLS, (f"{describe(x)} holds {x.null_count} nulls, which a dense buffer cannot "
                       "represent: fill them first (x.fill_null(value)) or pass copy=True "
                       "(floating types get NaN)")
    if type(x).__name__ == "ChunkedArray" and x.num_chunks != 1:
        return COPY_ROUTE, f"{describe(x)} is split into {x.num_chunks} chunks; joining them copies"
    if k == "b":
        return COPIES, "Arrow packs booleans into bits; unpacking them to bytes copies"
    if k == "c":
        return COPIES, (f"Arrow {x.type} counts days or milliseconds in its own width; NumPy's "
                        "datetime64 needs a converted copy")
    return None


def _to_numpy_view(x: Any) -> Any:
    """Zero-copy when Arrow allows; a bool/date copy (``COPIES``) done here; any other
    obstacle raised as ``NeedsCopy`` for the registry (this edge is ``eafp``)."""
    try:
        return _chunk(x).to_numpy(zero_copy_only=True)
    except Exception as e:  # ArrowInvalid, ValueError: Arrow says it would have to copy
        err = e
    verdict = check(x)
    if verdict is not None and verdict[0] == COPIES:
        return _chunk(x).to_numpy(zero_copy_only=False)
    raise NeedsCopy(*(verdict or (COPY_ROUTE, f"{describe(x)}: Arrow cannot give a NumPy view "
                                              f"without copying ({err})")))


def _to_numpy_fast() -> Any:
    """The fast step: the NumPy view of an Array, or of a ChunkedArray's one chunk (a table
    column); Arrow raises where it would copy, and the checked plan decides. Its results
    are read-only 1-D NumPy arrays."""
    chunked = module("pyarrow").ChunkedArray

    def fast(x: Any) -> Any:
        if type(x) is chunked:
            if x.num_chunks != 1:
                raise left_to_check()
            x = x.chunk(0)
        return x.to_numpy(zero_copy_only=True)

    return read_only_1d(fast)


def to_numpy(x: Any) -> Any:
    """A NumPy array of ``x``, copying when it must; nulls only for floating types (NaN)."""
    pa = sys.modules["pyarrow"]
    if x.null_count and not pa.types.is_floating(x.type):
        raise NullsError(f"{describe(x)} holds {x.null_count} nulls and has no NaN to stand for "
                         "them: fill them first (x.fill_null(value))")
    verdict = check(x)
    if verdict is not None and verdict[0] == UNSUPPORTED:
        from ..errors import UnsupportedConversionError

        raise UnsupportedConversionError(verdict[1])
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks() if x.num_chunks else pa.array([], type=x.type)
    return x.to_numpy(zero_copy_only=False)


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of the values buffer of a fixed-width array."""
    if sys.modules["pyarrow"].types.is_boolean(x.type):
        # unpacking bits makes a temporary copy: its pointer says nothing about x's memory
        from ..errors import UnsupportedConversionError

        raise UnsupportedConversionError(f"{describe(x)}: booleans are bit-packed, no byte view")
    arr = _to_numpy_view(x)
    from ..protocols.array_interface import view_of_numpy

    v = view_of_numpy(arr)
    return BufferView(v.ptr, v.shape, v.strides, v.itemsize, v.dtype, v.device, True, x)


def _dtype_verdict(dt: Any) -> tuple[str, str] | None:
    if dt.char == "?":
        return COPIES, "Arrow packs booleans into bits; packing them copies"
    if dt.char not in _ARROW_NUMERIC and dt.kind not in "mM" or not dt.isnative:
        return UNSUPPORTED, f"Arrow has no type for dtype {dt}"
    return None


_np_check = series_check("pyarrow Array", memo(_dtype_verdict),
                         dense=("Arrow", "pyarrow.array would wrap it as it is, and Arrow "
                                "buffers are aligned"))


def _from_numpy(a: Any) -> Any:
    return module("pyarrow").array(a)


def _edges() -> list[Edge]:
    return [
        Edge("pyarrow", "numpy", "Array.to_numpy(zero_copy_only=True)", _to_numpy_view,
             check=check, eafp=True,
             fast=_to_numpy_fast),
        Edge("numpy", "pyarrow", "pyarrow.array", _from_numpy, check=_np_check,
             fast=series_fast(_ARROW_NUMERIC, lambda: module("pyarrow").array, dense=True)),
    ]


ADAPTER = Adapter(
    name="pyarrow",
    aliases=("arrow", "pa"),
    modules=("pyarrow",),
    package="pyarrow",
    chunks=lambda x: x.chunks if type(x).__name__ == "ChunkedArray" and x.num_chunks > 1 else None,
    install='pip install "interop[arrow]"',
    is_value=_is_value,
    view=view,
    to_numpy=to_numpy,
    edges=_edges,
)


