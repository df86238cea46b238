"""NumPy: the CPU hub. Every CPU framework has an edge to and from it."""

from __future__ import annotations

import sys
from ctypes import addressof as _addressof
from ctypes import c_char as _c_char
from typing import Any

from ..protocols import array_interface, dlpack
from .base import COPY_ROUTE, UNSUPPORTED, Adapter, ConsumerRules, dtype_obstacle, view_obstacle

# Type strings NumPy itself exports and imports over DLPack.
DLPACK_DTYPES = frozenset({
    "|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
    "<f2", "<f4", "<f8", "<c8", "<c16",
})


def _is_value(x: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def view(x: Any):
    """The :class:`BufferView` of a NumPy array."""
    return array_interface.view_of_numpy(x)


def _address(x: Any) -> int:
    """The data pointer of a writable, C-contiguous, non-empty array (4x faster than
    ``x.ctypes.data``, which builds a helper object per call)."""
    try:
        return _addressof(_c_char.from_buffer(x))
    except (TypeError, ValueError):  # a dtype the buffer protocol does not carry
        return x.ctypes.data


def ready(a: Any, alignment: int = 1) -> bool:
    """The fast path of every consumer check: C-contiguous, writable, aligned to its itemsize
    and its data pointer a multiple of ``alignment``."""
    flags = a.flags
    return flags.c_contiguous and flags.writeable and flags.aligned and (
        alignment == 1 or not a.size or _address(a) % alignment == 0)


def _check(x: Any, rules: ConsumerRules, dlpack_dtype: bool = True) -> tuple[str, str] | None:
    """Why ``x`` cannot go to a DLPack consumer with ``rules`` as it is (fast path first);
    ``dlpack_dtype=False`` for a consumer that takes the buffer by other means, so NumPy's
    DLPack dtypes do not bound it."""
    ts = dlpack.typestr_of(x.dtype)
    if dlpack_dtype and ts not in DLPACK_DTYPES:
        return UNSUPPORTED, f"NumPy cannot export dtype {x.dtype} over DLPack"
    why = dlpack.byte_order_obstacle(x.dtype)
    if why:
        return UNSUPPORTED, why
    if ready(x, rules.alignment):
        return dtype_obstacle(rules, ts)
    if not x.flags.aligned:
        verdict = dtype_obstacle(rules, ts)  # a copy cannot fix an unsupported dtype
        return verdict or (COPY_ROUTE, "the array is not aligned to its itemsize")
    return view_obstacle(view(x), rules)


def from_dlpack(producer: Any) -> Any:
    """Import a DLPack producer into NumPy, taking bfloat16/float8 through ml_dtypes."""
    import numpy as np

    if isinstance(producer, dlpack.CapsuleProducer):
        return dlpack.to_numpy(producer.__dlpack__(max_version=dlpack.MAX_VERSION))
    try:
        return np.from_dlpack(producer)
    except (BufferError, TypeError, ValueError, RuntimeError):
        return dlpack.to_numpy(dlpack.export(producer))


def _refuse(x: Any) -> str | None:
    if type(x).__name__ == "MaskedArray":
        return "a NumPy masked array would lose its mask: call .filled(value) first"
    return None


ADAPTER = Adapter(
    name="numpy",
    aliases=("np", "ndarray"),
    modules=("numpy",),
    package="numpy",
    hub=True,
    rules=ConsumerRules(name="NumPy"),
    is_value=_is_value,
    view=view,
    to_numpy=lambda x: x,
    export_dlpack=lambda x: x,
    dlpack_check=_check,
    from_dlpack=from_dlpack,
    dlpack_call="numpy.from_dlpack",
    refuse=_refuse,
)
