"""Every ```python block of README.md and docs/*.md (the user docs) runs.

Blocks of one file run in order in one namespace, like a reader following along. A block
preceded by a ``<!-- no-test -->`` line is skipped: only for examples that need a GPU.
A block preceded by ``<!-- requires: tensorflow -->`` (or ``paddle``, ``dali``, ``multidevice``:
JAX with four CPU devices) runs only in that suite's own test process (``pytest -m tensorflow``),
through :func:`run_optional_blocks`, so the core run never imports it.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + [ROOT / "docs" / f"{n}.md" for n in
                               ("index", "quickstart", "concepts", "frameworks",
                                "troubleshooting", "dask", "architecture")]
BLOCK = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)\n```", re.S)
REQUIRES = re.compile(r"<!-- requires: (?P<name>[\w-]+) -->")
OPTIONAL = ("tensorflow", "paddle", "dali", "multidevice")


def _all_blocks(path: Path) -> list[tuple[int, str, str]]:
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
            for line, code, before in _all_blocks(path) if not REQUIRES.fullmatch(before)]


def run_optional_blocks(name: str) -> int:
    """Run the blocks marked ``<!-- requires: name -->``, in order, one namespace per file;
    called by that framework's own suite. Returns how many ran."""
    ran = 0
    for path in DOCS:
        ns: dict = {"__name__": f"docs_{path.stem}_{name}"}
        for line, code, before in _all_blocks(path):
            m = REQUIRES.fullmatch(before)
            if not m or m.group("name") != name:
                continue
            _run(path, line, code, ns)
            ran += 1
    return ran


def _run(path, line: int, code: str, ns: dict) -> None:
    """Execute one example block in ``ns``; a failure names the file and the line."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(code, f"{path.name}:{line}", "exec"), ns)
        except Exception as e:
            raise AssertionError(f"{path.name}, block at line {line} failed: "
                                 f"{type(e).__name__}: {e}") from e


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_example_runs(path):
    assert path.exists(), f"{path} is missing"
    found = blocks(path)
    assert found or path.name == "index.md", f"{path.name} has no python examples"
    ns: dict = {"__name__": f"docs_{path.stem}"}
    for line, code, skipped in found:
        if skipped:
            continue
        _run(path, line, code, ns)


def test_skipped_blocks_are_for_gpus_only():
    for path in DOCS:
        if not path.exists():
            continue
        for line, code, skipped in blocks(path):
            if skipped:
                assert re.search(r"cuda|cupy|gpu|rmm|mempool", code, re.I), (
                    f"{path.name}:{line} is marked no-test but needs no GPU")


def test_optional_blocks_name_a_framework_with_its_own_suite():
    seen = set()
    for path in DOCS:
        for line, _, before in _all_blocks(path):
            m = REQUIRES.fullmatch(before)
            if m:
                assert m.group("name") in OPTIONAL, f"{path.name}:{line}: {before}"
                seen.add(m.group("name"))
    assert seen == set(OPTIONAL), seen


def test_readme_names_the_two_commands_and_links():
    text = (ROOT / "README.md").read_text()
    for needle in ("./scripts/demo.sh", "./scripts/test.sh", "conversion_table.md", "docs/"):
        assert needle in text


def test_troubleshooting_covers_every_error():
    import inspect

    from interop import errors

    text = (ROOT / "docs" / "troubleshooting.md").read_text()
    for name, cls in inspect.getmembers(errors, inspect.isclass):
        if issubclass(cls, errors.InteropError):
            assert f"## {name}" in text, f"docs/troubleshooting.md lacks a section for {name}"
