"""NumPy: the CPU hub. Every CPU framework has an edge to and from it."""

from __future__ import annotations

from typing import Any

from ..protocols import array_interface, dlpack
from .base import NEEDS_COPY, UNSUPPORTED, ArrayAdapter, ConsumerRules, instance_test

# Type strings NumPy itself exports and imports over DLPack.
DLPACK_DTYPES = frozenset({
    "|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
    "<f2", "<f4", "<f8", "<c8", "<c16",
})


_is_value = instance_test("numpy", "ndarray")


def view(x: Any):
    """The :class:`BufferView` of a NumPy array."""
    return array_interface.view_of_numpy(x)


def export_check(a: Any) -> tuple[str, str] | None:
    """Why NumPy cannot hand ``a`` over DLPack as it is (a dtype DLPack has no code for, a
    byte order, or a buffer not aligned to its itemsize), whatever the consumer."""
    ts = dlpack.typestr_of(a.dtype)
    if ts not in DLPACK_DTYPES:
        return UNSUPPORTED, f"NumPy cannot export dtype {a.dtype} over DLPack"
    why = dlpack.byte_order_obstacle(a.dtype)
    if why:
        return UNSUPPORTED, why
    if not a.flags.aligned:
        return NEEDS_COPY, "the array is not aligned to its itemsize"
    return element_strides(a)


def element_strides(a: Any) -> tuple[str, str] | None:
    """``NEEDS_COPY`` when a stride of ``a`` (on a dimension of extent > 1) is not a multiple
    of its itemsize: DLPack counts strides in elements, so NumPy's ``__dlpack__`` refuses it
    (a complex64 array at a 4-byte step is "aligned" yet off its itemsize)."""
    size = a.itemsize
    if any(st % size for n, st in zip(a.shape, a.strides) if n > 1):
        return NEEDS_COPY, (f"strides {a.strides} are not multiples of the {size}-byte "
                            "itemsize: DLPack counts strides in elements")
    return None


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


ADAPTER = ArrayAdapter(
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
    export_check=export_check,
    from_dlpack=from_dlpack,
    dlpack_call="numpy.from_dlpack",
    refuse=_refuse,
)
