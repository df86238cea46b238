"""Rows of different lengths as values and offsets: :class:`Jagged` (``interop.Jagged``), what a
list column or a jagged tensor becomes in a framework without a ragged type, and the parts,
rebuild and explain line every ``"jagged"`` composite shares."""

from __future__ import annotations

from typing import Any

from .base import Parts, assembly


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


def jagged_parts(j: Any) -> Parts:
    """A :class:`Jagged` taken apart."""
    return Parts("jagged", (("values", j.values), ("offsets", j.offsets)))


def rebuild_jagged(reg: Any, p: Parts, tgt: str) -> Any:
    """Converted ``values`` and ``offsets`` as ``tgt``'s ragged type where it has one
    (:func:`~interop.adapters.base.assembly`), else a :class:`Jagged` of them."""
    made = assembly(reg, tgt, "jagged")
    arrays = dict(p.arrays)
    return made[1](p) if made is not None else Jagged(arrays["values"], arrays["offsets"])


def describe_jagged(reg: Any, p: Parts, tgt: str, what: str) -> str:
    """The explain line of ``what``, values and offsets, rebuilt by :func:`rebuild_jagged`."""
    made = assembly(reg, tgt, "jagged")
    arrays = dict(p.arrays)
    v = arrays["values"]
    return (f"{what}: {len(arrays['offsets']) - 1} rows: values {tuple(v.shape)} + offsets "
            f"-> {made[0] if made is not None else 'interop.Jagged(values, offsets)'}")
