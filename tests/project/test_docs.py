"""Every ```python block of README.md and docs/*.md (the user docs) runs.

Blocks of one file run in order in one namespace, like a reader following along. A block
preceded by a ``<!-- no-test -->`` line is skipped: only for examples that need a GPU.
A block preceded by ``<!-- requires: tensorflow -->`` (or ``paddle``, ``dali``, ``multidevice``:
JAX with four CPU devices; ``mldata``: Ray Data, datasets, Daft, Lance) runs only in that
suite's own test process (``pytest -m tensorflow``), through ``run_optional_blocks``, so the
core run never imports it. The reading and running of
the blocks is ``tests/docs_examples.py``'s.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_examples import DOCS, OPTIONAL, REQUIRES, ROOT, all_blocks, blocks, run_block


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_example_runs(path):
    assert path.exists(), f"{path} is missing"
    found = blocks(path)
    assert found or path.name == "index.md", f"{path.name} has no python examples"
    ns: dict = {"__name__": f"docs_{path.stem}"}
    for line, code, skipped in found:
        if skipped:
            continue
        run_block(path, line, code, ns)


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
        for line, _, before in all_blocks(path):
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


# ---- the documentation site (docs/site/, built by ./scripts/docs.sh) ---------------------------
SITE_TOOLS = ROOT / "docs" / "site"


def _site_module():
    import importlib
    import sys

    if str(SITE_TOOLS) not in sys.path:
        sys.path.insert(0, str(SITE_TOOLS))
    return importlib.import_module("interop_site")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once by docs/site/build.py (what ./scripts/docs.sh runs): strict, so
    any warning fails here with Sphinx's list of them."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("docs") / "site"
    run = subprocess.run([sys.executable, str(SITE_TOOLS / "build.py"), str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"the strict docs build failed:\n{run.stdout}\n{run.stderr}"
    return out


def test_the_site_builds_strictly_with_navigation_and_search(site):
    home = (site / "index.html").read_text()
    assert 'url=docs/index.html' in home  # the front door leads to the guides' index
    index = (site / "docs" / "index.html").read_text()
    for page in ("quickstart", "troubleshooting", "api/interop", "api/errors", "api/cli"):
        assert f'href="{page}.html"' in index, page  # in the navigation of every page
    assert 'href="../conversion_table.html"' in index
    assert 'action="../search.html"' in index  # the search box
    assert (site / "searchindex.js").read_text().count("to_framework") > 0


def test_every_public_name_has_a_reference_entry_with_its_docstring(site):
    pages = "".join(p.read_text() for p in (site / "docs" / "api").glob("*.html"))
    names = _site_module().public_names()
    assert any(n == "interop.to_framework" for n, _, _ in names)
    for name, where, _ in names:
        assert f'id="{name}"' in pages or f'id="{where}"' in pages, name
    import interop

    # the signature and the docstring of to_framework, as written in the source
    assert 'id="interop.to_framework"' in pages
    first = interop.to_framework.__doc__.split("``")[0].strip()
    assert first and first in pages


def test_a_public_name_without_a_docstring_fails_the_check(tmp_path, monkeypatch):
    import sys

    (tmp_path / "fake_public.py").write_text(
        '"""A module."""\n'
        "from dataclasses import dataclass\n\n"
        '__all__ = ["bare", "Result"]\n\n\n'
        "def bare():\n    return 1\n\n\n"
        "@dataclass\nclass Result:\n"
        '    """Documented."""\n\n'
        "    #: Documented field.\n    good: int\n    silent: int\n\n"
        "    def method(self):\n        return 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "fake_public", raising=False)
    mod = _site_module()
    monkeypatch.setattr(mod, "PUBLIC_MODULES", ("fake_public",))
    problems = mod.missing({"fake_public.Result", "fake_public.Result.good"})
    assert problems == [
        "public name fake_public.bare (defined at fake_public.bare) has no docstring",
        "public name fake_public.bare has no entry in the API reference (docs/api/)",
        "public name fake_public.Result.silent (defined at fake_public.Result.silent) has no "
        "docstring (a `#:` comment above the field)",
        "public name fake_public.Result.silent has no entry in the API reference (docs/api/)",
        "public name fake_public.Result.method (defined at fake_public.Result.method) has no "
        "docstring",
        "public name fake_public.Result.method has no entry in the API reference (docs/api/)",
    ], problems


def test_the_errors_reference_gives_each_fix_and_links_its_section(site):
    from myst_parser.mdit_to_docutils.base import default_slugify

    from interop import errors

    page = (site / "docs" / "api" / "errors.html").read_text()
    for name in ("ZeroCopyError", "NullsError", "DeviceError", "CapsuleConsumedError"):
        cls = getattr(errors, name)
        assert f'id="interop.errors.{name}"' in page
        assert f'href="../troubleshooting.html#{default_slugify(name)}"' in page, name
        assert (site / "docs" / "troubleshooting.html").read_text().count(
            f'id="{default_slugify(name)}"') == 1
        assert cls.__doc__.split("``")[0].strip() in page
    assert page.count("<strong>Fix</strong>") >= len(
        [c for c in vars(errors).values() if isinstance(c, type)
         and issubclass(c, (errors.InteropError, Warning))])


def test_the_cli_reference_lists_every_command_and_option(site):
    import argparse

    from interop.__main__ import COMMANDS

    page = (site / "docs" / "api" / "cli.html").read_text()
    mod = _site_module()
    for command in COMMANDS:
        assert f"interop {command}" in page
        parser = mod.command_parser(f"interop.cli.{command}")
        for action in parser._actions:  # argparse has no public list of them
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert option in page, (command, option)
    assert "python -m mempool" in page and "--json" in page


def test_the_table_page_is_probed_at_build_time_with_the_committed_gpu_section(site):
    import numpy as np

    from interop.cli.table.render import GPU_HEADING

    page = (site / "conversion_table.html").read_text()
    assert "probed on the machine that built this" in page
    assert f"numpy {np.__version__}" in page  # this machine's versions, probed here
    committed = (ROOT / "conversion_table.md").read_text().split(GPU_HEADING, 1)[1]
    first = committed.strip().split("\n")[0].split("`")[0].strip()
    assert first and first in page


def test_every_benchmark_figure_is_on_the_performance_page(site):
    page = (site / "docs" / "performance.html").read_text()
    figures = sorted((ROOT / "benchmarks" / "results").glob("*.png"))
    assert figures
    for png in figures:
        assert f'src="../_images/{png.name}"' in page, png.name
        assert (site / "_images" / png.name).read_bytes() == png.read_bytes()


def test_the_readme_names_the_docs_command_beside_the_two_setup_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    first_block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in first_block.splitlines() if line.strip()]
    assert [c.split()[0] for c in commands] == ["./scripts/demo.sh", "./scripts/test.sh"]
    assert "./scripts/docs.sh" in text and "./scripts/docs.sh" not in first_block
    assert "docs/site/build.py" in (ROOT / "scripts" / "docs.sh").read_text()
