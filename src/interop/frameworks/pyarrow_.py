"""pyarrow ``Array`` and ``ChunkedArray``: zero-copy for fixed-width data without nulls."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import NullsError
from ..view import BufferView
from .base import COPIES, COPY_ROUTE, NULLS, UNSUPPORTED, Adapter, Edge

# NumPy type strings pyarrow stores as plain fixed-width buffers.
_ARROW_NUMERIC = set("bBhHiIlLqQefd")


def _is_value(x: Any) -> bool:
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(x, (pa.Array, pa.ChunkedArray))


def describe(x: Any) -> str:
    """A short name for an array in messages: its type and length."""
    return f"pyarrow {type(x).__name__}<{x.type}> of length {len(x)}"


def _chunk(x: Any) -> Any:
    return x.chunk(0) if hasattr(x, "num_chunks") and x.num_chunks == 1 else x


def check(x: Any) -> tuple[str, str] | None:
    """Why ``x`` cannot be viewed by NumPy without copying (``None``: it can)."""
    pa = sys.modules["pyarrow"]
    t = x.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_temporal(t)):
        return UNSUPPORTED, (f"{describe(x)}: type {t} is not fixed-width numeric; select "
                             "numeric columns or cast first")
    if x.null_count:
        return NULLS, (f"{describe(x)} holds {x.null_count} nulls, which a dense buffer cannot "
                       "represent: fill them first (x.fill_null(value)) or pass copy=True "
                       "(floating types get NaN)")
    if isinstance(x, pa.ChunkedArray) and x.num_chunks != 1:
        return COPY_ROUTE, f"{describe(x)} is split into {x.num_chunks} chunks; joining them copies"
    if pa.types.is_boolean(t):
        return COPIES, "Arrow packs booleans into bits; unpacking them to bytes copies"
    return None


def _to_numpy_view(x: Any) -> Any:
    x = _chunk(x)
    if sys.modules["pyarrow"].types.is_boolean(x.type):
        return x.to_numpy(zero_copy_only=False)
    return x.to_numpy(zero_copy_only=True)


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


def _np_check(a: Any) -> tuple[str, str] | None:
    if a.ndim != 1:
        return UNSUPPORTED, (f"a pyarrow Array is one-dimensional; the array has shape "
                             f"{a.shape} (reshape it, or convert a table column by column)")
    ch = a.dtype.char
    if ch == "?":
        return COPIES, "Arrow packs booleans into bits; packing them copies"
    if ch not in _ARROW_NUMERIC and a.dtype.kind not in "mM" or not a.dtype.isnative:
        return UNSUPPORTED, f"Arrow has no type for dtype {a.dtype}"
    if not a.flags.c_contiguous or (a.size and a.strides[0] != a.itemsize):
        return COPY_ROUTE, f"strides {a.strides} are not contiguous: Arrow buffers are dense"
    if not a.flags.aligned:
        return COPY_ROUTE, "the array is not aligned to its itemsize: pyarrow.array copies it"
    return None


def _from_numpy(a: Any) -> Any:
    import pyarrow as pa

    return pa.array(a)


def _edges() -> list[Edge]:
    return [
        Edge("pyarrow", "numpy", "Array.to_numpy(zero_copy_only=True)", _to_numpy_view,
             check=check),
        Edge("numpy", "pyarrow", "pyarrow.array", _from_numpy, check=_np_check),
    ]


ADAPTER = Adapter(
    name="pyarrow",
    aliases=("arrow", "pa"),
    modules=("pyarrow",),
    package="pyarrow",
    is_value=_is_value,
    view=view,
    to_numpy=to_numpy,
    edges=_edges,
)


