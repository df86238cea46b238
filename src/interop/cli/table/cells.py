"""One cell of the table: what happened to one conversion, as a JSON-ready dict."""

from __future__ import annotations

import re
from typing import Any

ZERO_COPY, COPY, UNSUPPORTED, NOT_PROBED = "zero-copy", "copy", "unsupported", "not probed"
NOT_SUPPORTED = "not supported"
"""A cell's status; :data:`NOT_SUPPORTED` is for a retired framework interop has no adapter
for."""


def clean(text: Any) -> str:
    """A reason without run-specific details (addresses), on one line, without pipes."""
    text = re.sub(r"0x[0-9a-fA-F]+", "0x...", str(text))
    return " ".join(text.split()).replace("|", "/")


def cell(source: str, target: str, status: str, reason: str | None = None,
         hazards: tuple[str, ...] = (), steps: tuple[str, ...] = (),
         plan_agrees: bool = True, proof: str | None = None) -> dict[str, Any]:
    """The cell of ``source`` -> ``target``: its status, the reason for anything but a
    zero-copy, the plan's hazards and steps, whether :func:`interop.explain` predicted the
    status, and how a zero-copy was proved."""
    return {"source": source, "target": target, "status": status, "reason": reason,
            "hazards": [clean(h) for h in hazards], "steps": list(steps),
            "plan_agrees": plan_agrees, "proof": proof}
