"""Names a user types (targets, devices, options): the known ones, and the closest to a typo."""

from __future__ import annotations

from collections.abc import Iterable

CALL_OPTIONS = ("device", "copy", "stream")
"""The keyword arguments of ``to_framework`` besides the table options."""
TABLE_OPTIONS = ("nulls", "fill_value", "columns")
"""The options tables and dataframes take (:mod:`interop.tables.columns`)."""
STRUCTURE_OPTIONS = ("structure",)
"""The option of dicts and other structures: ``structure="tree"`` or ``"table"``
(:mod:`interop.structures.adapter`)."""
DEVICE_SYNONYMS = {"gpu": "cuda", "host": "cpu"}
"""Device words other libraries use, and the name interop takes for them."""


def did_you_mean(name: str, known: Iterable[str] | dict[str, str],
                 synonyms: dict[str, str] | None = None) -> str:
    """``" (did you mean 'x'?)"`` for the known names closest to ``name``, or ``""``.

    ``known`` may map each spelling (an alias) to the name to suggest for it (canonical)."""
    import difflib

    suggest = {k.lower(): v for k, v in (known.items() if isinstance(known, dict)
                                         else ((k, k) for k in known))}
    key = name.lower()
    if synonyms and key in synonyms:
        close = [synonyms[key]]
    else:
        close = list(dict.fromkeys(suggest[k] for k in difflib.get_close_matches(
            key, sorted(suggest), n=3, cutoff=0.75)))
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
