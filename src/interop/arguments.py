"""The call arguments every public call takes alike, validated in one place: ``copy=``."""

from __future__ import annotations

from typing import Any

from .errors import ArgumentError


def check_copy(copy: Any) -> None:
    """Raise :class:`~interop.errors.ArgumentError` unless ``copy`` is ``None``, ``True`` or
    ``False`` (the objects themselves: ``1``, ``"yes"`` or an array are refused, as the array
    API's ``from_dlpack`` takes an optional bool)."""
    if copy is not None and copy is not True and copy is not False:
        raise ArgumentError(
            f"copy must be None, True or False, got {_short(copy)} of type "
            f"{type(copy).__name__}: None copies only when it must, False never copies "
            "(ZeroCopyError instead), True always copies")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
