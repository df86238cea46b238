"""The :class:`~interop.errors.NarrowingWarning`: emitted once per conversion that narrowed a
dtype (the copy route casts; ``rules.narrows`` of the target decides), pointing at the user's
call; a table or a dask collection gathers its columns' or blocks' into one."""

from __future__ import annotations

import sys
import threading
import warnings

from .errors import NarrowingWarning


class _Gathering(threading.local):
    got: list[str] | None = None


STATE = _Gathering()
"""``STATE.got``: the list the enclosing :func:`gather` appends reasons to (``None`` outside
one), per thread; a structure's plan sets, reads and restores it directly (no frame of ours
per call or per leaf). A thread-local, not a ``ContextVar``: a gathering spans no ``await``
(a conversion is one synchronous call), and setting a ``ContextVar`` makes the framework's
own ``ContextVar`` reads within it miss their cache (a JAX conversion cost 0.3 us more in
one; issue 49)."""


def warn(reason: str) -> None:
    """Emit ``reason`` as a :class:`NarrowingWarning` at the first frame outside interop, or
    hand it to the enclosing :func:`gather`."""
    got = STATE.got
    if got is not None:
        got.append(reason)
        return
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("interop."):
        frame, level = frame.f_back, level + 1
    warnings.warn(NarrowingWarning(reason), stacklevel=level)


class gather:  # noqa: N801 - used as a function: ``with gather() as got``
    """Within the block, narrowing reasons are appended to the list given, not warned (a
    class, not a generator: entered once per structure or table conversion, it stays cheap);
    the enclosing gathering, if any, is restored after it."""

    __slots__ = ("got", "outer")

    def __enter__(self) -> list[str]:
        self.outer = STATE.got
        self.got: list[str] = []
        STATE.got = self.got
        return self.got

    def __exit__(self, *exc: object) -> None:
        STATE.got = self.outer
