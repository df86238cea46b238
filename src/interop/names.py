"""Names a user types (targets, devices, options): the known ones, and the closest to a typo."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

CALL_OPTIONS = ("device", "copy", "stream")
"""The keyword arguments of ``to_framework`` besides the table options."""
TABLE_OPTIONS = ("nulls", "fill_value", "columns", "ragged")
"""The options tables and dataframes take (:mod:`interop.tables.columns`)."""
STRUCTURE_OPTIONS = ("structure",)
"""The option of dicts and other structures: ``structure="tree"`` or ``"table"``
(:mod:`interop.structures.adapter`)."""
DEVICE_SYNONYMS = {"gpu": "cuda", "host": "cpu"}
"""Device words other libraries use, and the name interop takes for them."""


def unknown_option(options: Iterable[str],
                   declared: Mapping[str, tuple[str, ...]]) -> str | None:
    """The message for the first of ``options`` no source takes (naming the closest known
    option and every known one), or ``None`` when each is some source's option. ``declared``:
    the options sources declare beyond the table options, by source (a DALI batch's
    ``ragged=``; the registry's :meth:`~interop.registry.Registry.declared_options`)."""
    own = tuple(dict.fromkeys(o for opts in declared.values() for o in opts))
    known = tuple(dict.fromkeys(TABLE_OPTIONS + own + STRUCTURE_OPTIONS))
    unknown = sorted(o for o in options if o not in known)
    if not unknown:
        return None
    listed = lambda names: ", ".join(o + "=" for o in names)  # noqa: E731
    sources = "".join(f", for {src} {listed(opts)}" for src, opts in declared.items())
    return (f"unknown option {unknown[0]!r}{did_you_mean(unknown[0], CALL_OPTIONS + known)}; "
            f"known: {listed(CALL_OPTIONS)}, for tables and dataframes "
            f"{listed(TABLE_OPTIONS)}{sources}, and for dicts and other structures "
            f"{listed(STRUCTURE_OPTIONS)}")


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
