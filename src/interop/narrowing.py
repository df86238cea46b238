"""The :class:`~interop.errors.NarrowingWarning`: emitted once per conversion that narrowed a
dtype (the copy route casts; ``rules.narrows`` of the target decides), pointing at the user's
call; a table or a dask collection gathers its columns' or blocks' into one."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import NarrowingWarning

_gathered: ContextVar[list[str] | None] = ContextVar("interop_narrowing", default=None)


def warn(reason: str) -> None:
    """Emit ``reason`` as a :class:`NarrowingWarning` at the first frame outside interop, or
    hand it to the enclosing :func:`gather`."""
    got = _gathered.get()
    if got is not None:
        got.append(reason)
        return
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("interop."):
        frame, level = frame.f_back, level + 1
    warnings.warn(NarrowingWarning(reason), stacklevel=level)


def gathered() -> list[str] | None:
    """The list the enclosing :func:`gather` appends to, or ``None`` outside one."""
    return _gathered.get()


@contextmanager
def gather() -> Iterator[list[str]]:
    """Within the block, narrowing reasons are appended to the list given, not warned."""
    got: list[str] = []
    token = _gathered.set(got)
    try:
        yield got
    finally:
        _gathered.reset(token)
