"""An edge: one conversion step between two frameworks, and what it takes without a check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..record import record
from .verdicts import Check

DLPACK, CAI = "dlpack", "cai"
"""The exchange protocols an edge may speak (:attr:`Edge.protocol`): the runner orders a step
of either on the caller's stream."""

C_CONTIGUOUS, ALIGNED, WRITEABLE = 0x1, 0x100, 0x400
"""NumPy's flag bits (``ndarray.flags.num``), for :attr:`Accepts.flags`."""
FLAG_NAMES = {C_CONTIGUOUS: "c_contiguous", ALIGNED: "aligned", WRITEABLE: "writeable"}
"""Each flag bit's attribute of ``ndarray.flags`` (one read of it costs less than ``.num``)."""


@record(frozen=True)
class Accepts:
    """The values an edge converts with no per-value check: the declaration its fast form is
    made from (in one place, :mod:`interop.fastplan`). A value outside it, or one for which
    the conversion raises :class:`~interop.adapters.verdicts.NeedsCopy`, goes to the edge's
    check. Everything here must imply that the check says ``None`` or ``STEP_COPIES``."""

    types: Callable[[], tuple[type, ...]]
    """The exact types taken (subclasses go to the check), looked up when a plan is made."""
    dtypes: Callable[[], frozenset[Any]] | None = None
    """The ``x.dtype`` values taken; ``None``: any the type holds."""
    flags: int = 0
    """NumPy flag bits (``C_CONTIGUOUS``, ``ALIGNED``) that must all be set."""
    ndim: int | None = None
    """The number of dimensions taken; ``None``: any."""
    unset: tuple[str, ...] = ()
    """Attributes that must be false (``requires_grad``: a value with it set goes to the
    check)."""
    native: Callable[[], tuple[Callable[[Any], Any], tuple[type[BaseException], ...]]] | None = (
        None)
    """The framework's own call, and the exceptions it raises on a value it will not take:
    the fast form calls it in place of the edge's conversion (no frame of ours around it)
    and hands a value it raises one of those for to the checked plan. It must return what
    the conversion returns for every accepted value it takes."""


@record(frozen=True)
class Edge:
    """One conversion step from framework ``source`` to framework ``target``: what it takes
    (``accepts``, ``check``) and how it converts (``converter``)."""

    source: str
    target: str
    via: str
    converter: Callable[[], Callable[[Any], Any]]
    """Makes the conversion (once per plan, its frameworks imported by then). The conversion
    is zero-copy for every value the check passes (or does the copy a ``STEP_COPIES``
    verdict names); where its framework refuses a value it raises ``NeedsCopy``."""
    check: Check | None = None
    """The one decision for a value: ``None`` (convert it) or ``(verdict, reason)``. No
    check: the conversion takes every value (or raises ``NeedsCopy``)."""
    accepts: Accepts | None = None
    """The values converted without asking ``check`` (the fast form); ``None``: none."""
    hazard: Callable[[Any], str | tuple[str, ...] | None] | None = None
    cost: float = 1.0
    device: str = "cpu"
    """Where the step runs: ``"cpu"`` or ``"cuda"`` (both sides stay on that device)."""
    protocol: str | None = None
    """The exchange protocol the step speaks (:data:`DLPACK`, :data:`CAI`): a step that
    speaks one is ordered on the caller's ``stream=``; ``None``: a framework's own call. The
    runner reads this, never the display text ``via``."""

    def convert(self, x: Any) -> Any:
        """Convert one value (planning and explaining; plans bind :attr:`converter` once)."""
        return self.converter()(x)


def fixed(convert: Callable[[Any], Any]) -> Callable[[], Callable[[Any], Any]]:
    """The :attr:`Edge.converter` of a conversion that needs nothing bound."""
    return lambda: convert
