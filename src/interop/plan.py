"""The Plan: what a conversion does, as ``explain`` reports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One step of a conversion: ``source`` to ``target`` through ``via``."""

    source: str
    target: str
    via: str
    copies: bool = False

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} via {self.via}" + (" [copy]" if self.copies else "")


@dataclass(frozen=True)
class Plan:
    """How a value converts: the steps, whether it stays zero-copy, why, and hazards.

    ``supported`` is false when the conversion would raise; ``error`` then says which kind
    (``"unsupported"``, ``"nulls"`` or ``"zero-copy"`` for ``copy=False``).
    """

    source: str
    target: str
    steps: tuple[Step, ...]
    zero_copy: bool
    reasons: tuple[str, ...] = ()
    hazards: tuple[str, ...] = ()
    supported: bool = True
    error: str | None = None

    @property
    def protocols(self) -> tuple[str, ...]:
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
