"""The compiled kernels' C calling convention, declared once.

Every exported function (``gather``, ``scatter`` and their fixed-width forms) takes the same
arguments, in this order. :mod:`interop.transpose.llvm` derives the IR signature from
:data:`ARGS`, the ctypes prototype comes from :func:`prototype`, and :mod:`interop.transpose.cpu`
calls a function with :class:`Call` (its fields are :data:`ARGS`' names, in order), so the
three cannot disagree (a mismatch would be a crash, not an error).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, NamedTuple

BYTES, INT, INTS, POINTERS = "bytes", "int", "ints", "pointers"
"""The kinds of argument: a byte pointer, a 64-bit integer, a pointer to 64-bit integers, a
pointer to byte pointers."""

ARGS: tuple[tuple[str, str], ...] = (
    ("base", BYTES),        # the records (gather: read; scatter: written)
    ("row_stride", INT),    # bytes from one record to the next
    ("offsets", INTS),      # each field's byte offset in a record
    ("sizes", INTS),        # each field's bytes
    ("places", INTS),       # gather: each field's place in the stage (bytes)
    ("columns", POINTERS),  # each column's first value
    ("fields", INT),        # how many fields
    ("i0", INT),            # the rows [i0, i1) this call copies
    ("i1", INT),
    ("r0", INT),            # rows from row 0 to the first that starts a line of the output
    ("line_rows", INT),     # rows per period of output lines
    ("stage", BYTES),       # this thread's staging buffer, 64-byte aligned
    ("tile", INT),          # gather: rows read per tile
    ("block", INT),         # rows per block
)
"""The arguments of every exported function: ``(name, kind)``; they return nothing."""
NOALIAS = frozenset({"offsets", "sizes", "places", "columns", "stage"})
"""The arguments whose memory no other argument reaches (LLVM's ``noalias``)."""

_CTYPES = {BYTES: ctypes.c_void_p, INT: ctypes.c_int64, INTS: ctypes.c_void_p,
           POINTERS: ctypes.c_void_p}


Call = NamedTuple("Call", [(name, int) for name, _ in ARGS])  # type: ignore[misc]
"""One call's arguments, by name (the order is :data:`ARGS`')."""


def prototype() -> Callable[[int], Callable[..., None]]:
    """The ctypes prototype of an exported function (called with a :class:`Call`'s fields)."""
    return ctypes.CFUNCTYPE(None, *(_CTYPES[kind] for _, kind in ARGS))


def ir_types(types: dict[str, Any]) -> list[Any]:
    """The IR types of the arguments, given the IR type of each kind."""
    return [types[kind] for _, kind in ARGS]
