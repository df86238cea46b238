"""Reading a rendered table back: its cells, and the frameworks each involves (the tests
compare the committed ``conversion_table.md`` with a fresh probe this way)."""

from __future__ import annotations

import re

from .columns import PACKAGES
from .samples import LAYOUTS


def frameworks_of(section: str, row: str, col: str) -> set[str]:
    """The packages a cell of :func:`parse_markdown` involves (its row's source, its column)."""
    if section.startswith("Layouts"):
        source = next((src for label, src, _ in LAYOUTS if label == row), row)
        names = (source, col)
    else:
        names = (row, col)
    return {PACKAGES.get(n, n) for n in names}


def parse_markdown(md: str) -> dict[tuple[str, str, str], str]:
    """``{(section, row, column): cell text with notes resolved}`` from a rendered table."""
    notes = dict(re.findall(r"^\[\^(g?\d+)\]: (.*)$", md, flags=re.M))
    out: dict[tuple[str, str, str], str] = {}
    section, cols = "", []
    for line in md.splitlines():
        if line.startswith("## "):
            section, cols = line[3:].strip(), []
        elif line.startswith("|") and not line.startswith("|---"):
            parts = [p.strip() for p in line.strip().strip("|").split("|")]
            if not cols:
                cols = parts[1:]
                continue
            row = parts[0].strip("*")
            for col, cell in zip(cols, parts[1:]):
                out[(section, row, col)] = re.sub(
                    r"\[\^(g?\d+)\]", lambda m: "(" + notes.get(m.group(1), "?") + ")", cell)
    return out
