"""The :class:`~interop.errors.NarrowingWarning`: emitted once per conversion that narrowed a
dtype (the copy route casts; ``rules.narrows`` of the target decides), pointing at the user's
call; a table or a dask collection gathers its columns' or blocks' into one."""

from __future__ import annotations

import sys
import warnings
from contextvars import ContextVar

from .errors import NarrowingWarning

GATHERED: ContextVar[list[str] | None] = ContextVar("interop_narrowing", default=None)
"""The list the enclosing :func:`gather` appends reasons to (``None`` outside one); a
structure's plan sets and reads it directly (``GATHERED.set``/``.get``/``.reset``, no frame
of ours per call or per leaf)."""


def warn(reason: str) -> None:
    """Emit ``reason`` as a :class:`NarrowingWarning` at the first frame outside interop, or
    hand it to the enclosing :func:`gather`."""
    got = GATHERED.get()
    if got is not None:
        got.append(reason)
        return
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("interop."):
        frame, level = frame.f_back, level + 1
    warnings.warn(NarrowingWarning(reason), stacklevel=level)


class gather:  # noqa: N801 - used as a function: ``with gather() as got``
    """Within the block, narrowing reasons are appended to the list given, not warned (a
    class, not a generator: entered once per structure or table conversion, it stays cheap)."""

    __slots__ = ("got", "token")

    def __enter__(self) -> list[str]:
        self.got: list[str] = []
        self.token = GATHERED.set(self.got)
        return self.got

    def __exit__(self, *exc: object) -> None:
        GATHERED.reset(self.token)
