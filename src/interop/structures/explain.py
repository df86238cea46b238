"""``explain`` of a structure: one :class:`StructurePlan` with a plan per array leaf path, each
the registry's own plan for that leaf (so it says what the conversion does)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..adapters.base import RegistryLike
from ..plan import Plan, Step
from .walk import Leaf, Tree, kept, leaves


@dataclass(frozen=True)
class StructurePlan(Plan):
    """A :class:`~interop.plan.Plan` for a structure: ``leaves`` holds one plan per array leaf,
    by path (``"['layers'][3]['w']"``); ``kept`` the paths of the leaves kept as they are.

    ``zero_copy`` is true only when every leaf is zero-copy, ``supported`` only when every
    leaf converts; ``error`` is the first failing leaf's.
    """

    leaves: dict = field(default_factory=dict)
    kept: tuple[str, ...] = ()

    def __str__(self) -> str:
        lines = [super().__str__()]
        for path, p in self.leaves.items():
            body = str(p).splitlines()
            lines.append(f"  leaf {path}: " + body[0].split(": ", 1)[-1])
            lines += ["    " + b.strip() for b in body[1:]]
        return "\n".join(lines)


def explain(reg: RegistryLike, w: Tree, tgt: str, device: Any, copy: bool | None,
            options: Callable[[Leaf], dict[str, Any]] = lambda leaf: {}) -> StructurePlan:
    """The plan of converting the walked structure ``w`` to ``tgt`` (``options``: the options
    each leaf takes); converts nothing."""
    plans = {leaf.path: reg.explain(leaf.value, tgt, device, copy, options(leaf))
             for leaf in leaves(w)}
    failing = [(path, p) for path, p in plans.items() if not p.supported]
    label = f"{w.node.type.__name__} ({len(plans)} array leaves)"
    kept_paths = tuple(k.path for k in kept(w))
    reasons = [f"leaf {path}: " + (p.reasons[0] if p.reasons else str(p.error))
               for path, p in failing]
    if not plans and kept_paths:
        reasons.append("it holds no array: nothing to convert, it is returned as it is")
    copied = [path for path, p in plans.items() if p.supported and not p.zero_copy]
    if copied:
        reasons.append(f"copied leaves: {', '.join(copied)}")
    if kept_paths:
        reasons.append(f"kept as they are (not arrays): {', '.join(kept_paths)}")
    step = Step(w.node.type.__name__, tgt, f"leaf by leaf ({len(plans)} leaves, one plan per "
                                          "structure)")
    return StructurePlan(label, tgt, (step,),
                         not failing and all(p.zero_copy for p in plans.values()),
                         tuple(reasons),
                         tuple(dict.fromkeys(h for p in plans.values() for h in p.hazards)),
                         supported=not failing,
                         error=failing[0][1].error if failing else None,
                         leaves=plans, kept=kept_paths)
