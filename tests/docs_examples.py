"""The python blocks of README.md and docs/*.md (the user docs), read and run: for
``test_docs.py`` (every block needing no optional framework) and for the optional frameworks'
suite (:func:`run_optional_blocks`, in that framework's own process)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + [ROOT / "docs" / f"{n}.md" for n in
                               ("index", "quickstart", "concepts", "frameworks",
                                "nested", "troubleshooting", "dask", "sparse",
                                "architecture")]
BLOCK = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)\n```", re.S)
REQUIRES = re.compile(r"<!-- requires: (?P<name>[\w-]+) -->")
OPTIONAL = ("tensorflow", "paddle", "dali", "multidevice", "mldata")


def all_blocks(path: Path) -> list[tuple[int, str, str]]:
    """``(line, code, the line before the fence)`` for each python block of ``path``."""
    text = "\n" + path.read_text()
    out = []
    for m in BLOCK.finditer(text):
        line = text[:m.start("code")].count("\n")
        out.append((line, m.group("code"), m.group("before").strip()))
    return out


def blocks(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, code, skipped)`` for each python block of ``path`` needing no optional
    framework (those run in their own process: :func:`run_optional_blocks`)."""
    return [(line, code, before == "<!-- no-test -->")
            for line, code, before in all_blocks(path) if not REQUIRES.fullmatch(before)]


def run_optional_blocks(name: str) -> int:
    """Run the blocks marked ``<!-- requires: name -->``, in order, one namespace per file;
    called by that framework's own suite. Returns how many ran."""
    ran = 0
    for path in DOCS:
        ns: dict = {"__name__": f"docs_{path.stem}_{name}"}
        for line, code, before in all_blocks(path):
            m = REQUIRES.fullmatch(before)
            if not m or m.group("name") != name:
                continue
            run_block(path, line, code, ns)
            ran += 1
    return ran


def run_block(path, line: int, code: str, ns: dict) -> None:
    """Execute one example block in ``ns``; a failure names the file and the line."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(code, f"{path.name}:{line}", "exec"), ns)
        except Exception as e:
            raise AssertionError(f"{path.name}, block at line {line} failed: "
                                 f"{type(e).__name__}: {e}") from e
