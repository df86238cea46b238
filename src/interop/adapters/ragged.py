"""Rows of different lengths as values and offsets: :class:`Jagged` (``interop.Jagged``), what a
list column or a jagged tensor becomes in a framework without a ragged type, and the parts,
rebuild and explain line every ``"jagged"`` composite shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import MalformedError, UnsupportedConversionError
from . import capsule
from .base import Parts, RegistryLike, assembly
from .index_kernel import offsets_ok


class Jagged:
    """Rows of different lengths in a framework without a ragged type: ``values`` (the rows'
    items, one after another) and ``offsets`` (``rows + 1``, from 0: row ``i`` is
    ``values[offsets[i]:offsets[i + 1]]``), each an array of the target framework. Unpacks
    as ``values, offsets``; converted on (to torch, to pyarrow), it becomes that
    framework's ragged type."""

    __slots__ = ("values", "offsets")

    def __init__(self, values: Any, offsets: Any) -> None:
        self.values, self.offsets = values, offsets

    def __iter__(self) -> Any:
        return iter((self.values, self.offsets))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        return f"Jagged(values={self.values!r}, offsets={self.offsets!r})"


def check_offsets(offsets: Any, items: int, what: str) -> None:
    """Raise :class:`MalformedError` unless ``offsets`` (an array of any framework) are the
    offsets of rows over ``items`` values: one dimension of integers, at least one, none
    below 0 or past ``items``, never decreasing. Checked, never trusted (as sparse index
    pointers are): a framework handed bad offsets reads past its values, or builds a value
    that fails later."""
    if offsets_ok(offsets, items):  # one compiled pass (index_kernel), where it runs
        return
    offsets = _positional(offsets)
    shape = tuple(getattr(offsets, "shape", ()))
    kind = str(getattr(offsets, "dtype", ""))
    if len(shape) != 1 or not shape[0] or "int" not in kind:
        raise MalformedError(f"{what}: offsets of shape {shape} and dtype {kind or '?'}; they "
                             "are one dimension of integers, rows + 1 of them")
    first, last = int(offsets[0]), int(offsets[-1])
    if first < 0 or last > items:
        raise MalformedError(f"{what}: offsets run from {first} to {last}, outside the {items}"
                             f" values (0 to {items}); fix the offsets or pass all the values")
    if shape[0] > 1:
        down = (offsets[1:] < offsets[:-1]).nonzero()
        down = down[0] if isinstance(down, tuple) else down  # NumPy and JAX give a tuple
        if len(down):
            i = int(down[0])
            raise MalformedError(f"{what}: offsets decrease at row {i + 1} ({int(offsets[i])} "
                                 f"then {int(offsets[i + 1])}): row {i + 1} would have a "
                                 "negative length; offsets never decrease")


def _positional(a: Any) -> Any:
    """``a`` read by position: a host array of any framework as NumPy (a pandas Series'
    ``a[-1]`` is a label, not the last item), a device array as it is."""
    import numpy as np

    try:
        return np.asarray(a)
    except (TypeError, ValueError, RuntimeError):  # a device array: read where it lives
        return a


def _inspected(a: Any) -> Any:
    """``a`` as the check reads it: a DLPack capsule (a Jagged made for ``"dlpack"``) through a
    host preview of its memory, left unused; any other array as it is."""
    if not capsule.ADAPTER.is_value(a):
        return a
    if capsule.ADAPTER.device(a)[0] != "cpu":
        raise UnsupportedConversionError(
            "interop.Jagged of DLPack capsules on a device: its offsets cannot be checked "
            "without consuming them; convert the capsules to a framework first")
    return capsule.ADAPTER.preview(a)


def jagged_parts(j: Any) -> Parts:
    """A :class:`Jagged` taken apart, its offsets checked (:func:`check_offsets`)."""
    offsets, values = _inspected(j.offsets), _inspected(j.values)
    check_offsets(offsets, len(values), f"interop.Jagged of {len(offsets) - 1} rows")
    return Parts("jagged", (("values", j.values), ("offsets", j.offsets)))


def rebuild_jagged(reg: RegistryLike, p: Parts, tgt: str) -> Any:
    """Converted ``values`` and ``offsets`` as ``tgt``'s ragged type where it has one
    (:func:`~interop.adapters.base.assembly`), else a :class:`Jagged` of them."""
    return jagged_rebuilder(reg, p, tgt)(tuple(a for _, a in p.arrays))


def jagged_rebuilder(reg: RegistryLike, p: Parts, tgt: str) -> Callable[[tuple[Any, ...]], Any]:
    """:func:`rebuild_jagged` bound to ``tgt`` (the
    :attr:`~interop.adapters.base.CompositeAdapter.rebuilder` of every jagged kind)."""
    made = assembly(reg, tgt, "jagged")
    roles = tuple(r for r, _ in p.arrays)
    if made is not None:
        make = made[1]
        return lambda arrays: make(p.with_arrays(tuple(zip(roles, arrays))))
    v, o = roles.index("values"), roles.index("offsets")
    return lambda arrays: Jagged(arrays[v], arrays[o])


def describe_jagged(reg: RegistryLike, p: Parts, tgt: str, what: str) -> str:
    """The explain line of ``what``, values and offsets, rebuilt by :func:`rebuild_jagged`."""
    made = assembly(reg, tgt, "jagged")
    arrays = dict(p.arrays)
    v = arrays["values"]
    return (f"{what}: {len(arrays['offsets']) - 1} rows: values {tuple(v.shape)} + offsets "
            f"-> {made[0] if made is not None else 'interop.Jagged(values, offsets)'}")
