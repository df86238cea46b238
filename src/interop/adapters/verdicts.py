"""What a check says of a value at one step: ``None`` (the step is zero-copy for it), or a
``(verdict, reason)`` pair with one of the verdicts below."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NEEDS_COPY = "needs-copy"
"""The value needs a fresh compact buffer first (the copy route), then goes on zero-copy."""
STEP_COPIES = "step-copies"
"""The step itself copies (unpacking bit-packed booleans, XLA aligning a buffer): allowed
with ``copy=None``, a ``ZeroCopyError`` with ``copy=False``."""
UNSUPPORTED = "unsupported"
"""No conversion exists (a dtype the target lacks): an ``UnsupportedConversionError``."""
NULLS = "nulls"
"""The value holds nulls a dense buffer cannot represent: a ``NullsError``."""

Verdict = "tuple[str, str] | None"
Check = Callable[[Any], "tuple[str, str] | None"]
"""A per-value check before a step: ``None`` or ``(verdict, reason)``."""


class NeedsCopy(Exception):
    """The named signal by which a conversion says, while converting, that this value is not
    for it as it is (a framework refused it): the step then asks its check what to do."""

    def __init__(self, verdict: str, reason: str) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason
