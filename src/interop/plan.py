"""The Plan: what a conversion does, as ``explain`` reports it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Step:
    """One step of a conversion: ``source`` to ``target`` through ``via``."""

    #: The framework the step reads from.
    source: str
    #: The framework the step hands to.
    target: str
    #: The protocol or call that carries the buffer (``"dlpack"``, a fast path's name, ...).
    via: str
    #: Whether this step copies the data.
    copies: bool = False

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} via {self.via}" + (" [copy]" if self.copies else "")


@dataclass(frozen=True)
class Plan:
    """How a value converts: the steps, whether it stays zero-copy, why, and hazards.

    ``supported`` is false when the conversion would raise; ``error`` then says which kind
    (``"unsupported"``, ``"nulls"`` or ``"zero-copy"`` for ``copy=False``).
    """

    #: The framework of the value converted.
    source: str
    #: The framework asked for.
    target: str
    #: The steps, in order, from ``source`` to ``target``.
    steps: tuple[Step, ...]
    #: Whether the result shares the source's buffer.
    zero_copy: bool
    #: Why: what makes a step copy, or why the conversion would fail.
    reasons: tuple[str, ...] = ()
    #: What to watch for in a result that converts (e.g. a read-only source made writable).
    hazards: tuple[str, ...] = ()
    #: Whether ``to_framework`` would succeed with these arguments.
    supported: bool = True
    #: The kind of failure when ``supported`` is false, else ``None``.
    error: str | None = None

    @property
    def protocols(self) -> tuple[str, ...]:
        """The ``via`` of each step, in order."""
        return tuple(s.via for s in self.steps)

    def __str__(self) -> str:
        head = f"{self.source} -> {self.target}: "
        if not self.supported:
            head += f"fails ({self.error or 'unsupported'})"
        else:
            head += "zero-copy" if self.zero_copy else "copy"
        lines = [head] + [f"  step: {s}" for s in self.steps]
        lines += [f"  why: {r}" for r in self.reasons]
        lines += [f"  hazard: {h}" for h in self.hazards]
        return "\n".join(lines)


def of_parts(source: str, target: str, what: str, plans: Sequence[tuple[Any, Plan]],
             first: Sequence[Step] = (), why: Sequence[str] = ()) -> Plan:
    """One plan of a composite value's parts' plans (``(role, plan)``): zero-copy where
    every part is, supported where every part is (with the first failing part's error),
    each part's reasons labelled ``"{what} {role}: ..."``, the hazards of all; the steps are
    ``first``, then the first part's (the others take the same way or say why not), the
    reasons ``why``, then the parts'."""
    failed = next((p for _, p in plans if not p.supported), None)
    notes = [f"{what} {role}: {r}" for role, p in plans for r in p.reasons]
    hazards = tuple(dict.fromkeys(h for _, p in plans for h in p.hazards))
    steps = plans[0][1].steps if plans else ()
    return Plan(source, target, (*first, *steps), all(p.zero_copy for _, p in plans),
                (*why, *notes), hazards, failed is None,
                failed.error if failed is not None else None)
