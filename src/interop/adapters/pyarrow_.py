"""pyarrow ``Array`` and ``ChunkedArray``: zero-copy for fixed-width data without nulls."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import NullsError
from ..view import BufferView
from .base import (
    ALIGNED,
    ARROW_TYPE_ID,
    NEEDS_COPY,
    NULLS,
    STEP_COPIES,
    UNSUPPORTED,
    Accepts,
    ArrayAdapter,
    Edge,
    NeedsCopy,
    memo,
    memo_by,
    module,
    series_check,
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


def single_chunk(x: Any) -> Any:
    """A ChunkedArray of one chunk as that chunk; any other value as it is."""
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
        return NEEDS_COPY, (f"{describe(x)} is split into {x.num_chunks} chunks; joining them "
                            "copies")
    if k == "b":
        return STEP_COPIES, "Arrow packs booleans into bits; unpacking them to bytes copies"
    if k == "c":
        return STEP_COPIES, (f"Arrow {x.type} counts days or milliseconds in its own width; "
                             "NumPy's datetime64 needs a converted copy")
    return None


def _to_numpy_converter() -> Any:
    """The NumPy view of an array (of a ChunkedArray's one chunk); booleans unpacked and
    dates converted (a ``STEP_COPIES`` verdict); where Arrow would copy, ``NeedsCopy``."""
    chunked = module("pyarrow").ChunkedArray

    def convert(x: Any) -> Any:
        if type(x) is chunked and x.num_chunks == 1:
            x = x.chunk(0)
        try:
            return x.to_numpy(zero_copy_only=True)
        except (ValueError, TypeError, NotImplementedError) as e:  # Arrow would copy
            if _kind(x.type) in "bc":
                return x.to_numpy(zero_copy_only=False)
            raise NeedsCopy(NEEDS_COPY, f"{describe(x)}: Arrow cannot give a NumPy view "
                                        f"without copying ({e})") from None

    return convert


def numeric_array_types() -> tuple[type, ...]:
    """The Arrow array classes a NumPy view exists for (numbers, timestamps, durations)."""
    lib = module("pyarrow").lib
    return tuple(getattr(lib, n) for n in (
        "Int8Array", "Int16Array", "Int32Array", "Int64Array", "UInt8Array", "UInt16Array",
        "UInt32Array", "UInt64Array", "HalfFloatArray", "FloatArray", "DoubleArray",
        "TimestampArray", "DurationArray", "ChunkedArray") if hasattr(lib, n))


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
    arr = _to_numpy_converter()(x)
    from ..protocols.array_interface import view_of_numpy

    v = view_of_numpy(arr)
    return BufferView(v.ptr, v.shape, v.strides, v.itemsize, v.dtype, v.device, True, x)


def _dtype_verdict(dt: Any) -> tuple[str, str] | None:
    if dt.char == "?":
        return STEP_COPIES, "Arrow packs booleans into bits; packing them copies"
    if dt.char not in _ARROW_NUMERIC and dt.kind not in "mM" or not dt.isnative:
        return UNSUPPORTED, f"Arrow has no type for dtype {dt}"
    return None


_np_check = series_check("pyarrow Array", memo(_dtype_verdict), strided="pyarrow.array",
                         item_strides=True,
                         misaligned=(NEEDS_COPY, "pyarrow.array would wrap it as it is, and "
                                     "Arrow buffers are aligned"))


def _arrow_dtypes() -> frozenset[Any]:
    np = module("numpy")
    return frozenset(np.dtype(c) for c in _ARROW_NUMERIC)


def _edges() -> list[Edge]:
    return [
        Edge("pyarrow", "numpy", "Array.to_numpy(zero_copy_only=True)", _to_numpy_converter,
             check=check, accepts=Accepts(numeric_array_types)),
        Edge("numpy", "pyarrow", "pyarrow.array", lambda: module("pyarrow").array,
             check=_np_check, accepts=Accepts(lambda: (module("numpy").ndarray,),
                                              _arrow_dtypes, flags=ALIGNED, ndim=1)),
    ]


ADAPTER = ArrayAdapter(
    name="pyarrow",
    aliases=("arrow", "pa"),
    modules=("pyarrow",),
    package="pyarrow",
    chunks=lambda x: x.chunks if type(x).__name__ == "ChunkedArray" and x.num_chunks > 1 else None,
    install='pip install "interop-mempool[arrow]"',
    is_value=_is_value,
    view=view,
    to_numpy=to_numpy,
    edges=_edges,
)


