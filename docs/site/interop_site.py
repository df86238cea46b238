"""The site's own Sphinx extension: what the guides and autodoc do not give by themselves.

- the navigation: one hidden toctree added to ``docs/index`` at build time (``NAV``), so the
  Markdown guides stay as they read on the repository page;
- the conversion table page: ``interop table --markdown`` probed on the building machine (its
  CPU sections) with the GPU section of the committed ``conversion_table.md``;
- each error class's reference entry ends with the fix its guide gives;
- the CLI reference (the ``interop-cli`` directive), read from the commands' own parsers;
- the check that every public name has a docstring and an entry in the API reference, and
  that every benchmark figure is on the performance page: each miss is a warning, and the
  strict build (``-W``) fails on it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import inspect
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.parsing import nested_parse_to_nodes

ROOT = Path(__file__).resolve().parents[2]
logger = logging.getLogger(__name__)

# The pages in the order of the navigation, as paths from the source root (the repository).
NAV = {
    "Guides": ["docs/quickstart", "docs/concepts", "docs/frameworks", "docs/nested",
               "docs/troubleshooting", "docs/pool", "docs/dask", "docs/sparse",
               "docs/performance", "docs/reliability",
               "docs/architecture", "docs/gpu", "conversion_table"],
    "API reference": ["docs/api/interop", "docs/api/errors", "docs/api/mempool",
                      "docs/api/cli"],
}
# The modules whose public names (``__all__``) the API reference documents.
PUBLIC_MODULES = ("interop", "interop.errors", "interop.dask", "mempool", "mempool.errors",
                  "mempool.dask")
# Where each package's errors are explained, with their fixes.
ERROR_GUIDES = {"interop": "docs/troubleshooting", "mempool": "docs/pool"}
TABLE_PAGE = "conversion_table"
PERFORMANCE_PAGE = "docs/performance"
FIGURES = "benchmarks/results"


# ---- pages changed at build time ------------------------------------------------------------
def _navigation() -> str:
    out = []
    for caption, pages in NAV.items():
        out += ["", "```{toctree}", ":hidden:", f":caption: {caption}", ""]
        out += [f"/{page}" for page in pages] + ["```"]
    return "\n".join(out) + "\n"


def start_table() -> subprocess.Popen:
    """``interop table --markdown``, started in its own process: it probes while the other
    pages are read (the table page is read last)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]),
        TF_CPP_MIN_LOG_LEVEL="3", GLOG_minloglevel="3", PYTHONWARNINGS="ignore")
    return subprocess.Popen([sys.executable, "-m", "interop", "table", "--markdown"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def live_table(probe: subprocess.Popen) -> str:
    """The table ``probe`` printed, with the committed GPU section (a GPU cell comes only from
    a recorded device run, never from the building machine's guess)."""
    from interop.cli.table.render import GPU_HEADING

    out, err = probe.communicate()
    if probe.returncode:
        raise ExtensionError(f"`interop table --markdown` failed (exit {probe.returncode}):\n"
                             f"{err[-4000:]}")
    committed = (ROOT / f"{TABLE_PAGE}.md").read_text()
    if GPU_HEADING not in committed or GPU_HEADING not in out:
        raise ExtensionError(f"{TABLE_PAGE}.md or the live table has no {GPU_HEADING!r} section")
    cpu = out.split(GPU_HEADING, 1)[0].rstrip("\n")
    note = ("\n\n:::{note}\nThe sections above were probed on the machine that built this "
            "site, when it built it. The GPU section below is the device run committed in "
            f"the repository's `{TABLE_PAGE}.md`.\n:::\n\n")
    return cpu + note + GPU_HEADING + committed.split(GPU_HEADING, 1)[1]


def _check_figures(text: str) -> None:
    for png in sorted((ROOT / FIGURES).glob("*.png")):
        if f"../{FIGURES}/{png.name}" not in text:
            logger.warning(f"{FIGURES}/{png.name} is not shown on {PERFORMANCE_PAGE}.md",
                           location=PERFORMANCE_PAGE)


_probes: dict[int, subprocess.Popen] = {}  # per Sphinx application: its table probe


def on_builder_inited(app: Sphinx) -> None:
    _probes[id(app)] = start_table()


def on_before_read(app: Sphinx, env: Any, docnames: list[str]) -> None:
    if TABLE_PAGE in docnames:  # last: the probe runs while the other pages are read
        docnames.remove(TABLE_PAGE)
        docnames.append(TABLE_PAGE)


def on_source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname == app.config.root_doc:
        source[0] += _navigation()
    elif docname == TABLE_PAGE:
        source[0] = live_table(_probes.pop(id(app)))
    elif docname == PERFORMANCE_PAGE:
        _check_figures(source[0])


# ---- errors: the fix their guide gives ----------------------------------------------------
def _guide_section(guide: str, name: str) -> tuple[str, str] | None:
    """(the anchor, the fix) of the section about error ``name`` in ``guide``: a heading
    ``## name`` with a ``**Fix**:`` paragraph, or a row of a table of errors."""
    from myst_parser.mdit_to_docutils.base import default_slugify

    text = (ROOT / f"{guide}.md").read_text()
    m = re.search(rf"^## {name}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if m:
        fix = re.search(r"^\*\*Fix\*\*: (.*?)(?:\n\n|\Z)", m.group(1), re.M | re.S)
        return default_slugify(name), fix.group(1) if fix else ""
    row = re.search(rf"^\| `{name}` \|.*\| (.*?) \|$", text, re.M)
    if row:
        heading = text[:row.start()].rsplit("\n## ", 1)[1].split("\n", 1)[0]
        return default_slugify(heading), f"raised when: {row.group(1)}"
    return None


def _rst(markdown: str) -> str:
    """A paragraph of the guides' Markdown as reST: code spans and links."""
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", markdown)
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text).replace("\n", " ")


def on_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                 lines: list[str]) -> None:
    if what != "exception" and not (inspect.isclass(obj) and issubclass(obj, Warning)):
        return
    guide = ERROR_GUIDES.get(name.split(".", 1)[0])
    if guide is None or not obj.__module__.endswith(".errors"):
        return
    found = _guide_section(guide, obj.__name__)
    if found is None:
        logger.warning(f"{name} has no section in {guide}.md (its cause and fix)")
        return
    anchor, fix = found
    page = Path(guide).name
    lines += ["", f"**Fix**: {_rst(fix)}" if fix else "",
              "", f"Explained in `{page} <../{page}.html#{anchor}>`__."]


# ---- the CLI reference -----------------------------------------------------------------------
class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def command_parser(module: str) -> argparse.ArgumentParser:
    """The parser a command's ``main`` builds, taken as it parses (the command does not run)."""
    def capture(self, *args, **kwargs):
        raise _Parsed(self)

    saved = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture
    try:
        importlib.import_module(module).main([])
    except _Parsed as p:
        return p.parser
    finally:
        argparse.ArgumentParser.parse_args = saved
    raise ExtensionError(f"{module}.main() parsed no arguments")


def _options_rst(program: str, parser: argparse.ArgumentParser) -> list[str]:
    out = ["", f".. program:: {program}", "", ".. code-block:: text", ""]
    out += ["   " + line for line in parser.format_usage().strip().splitlines()] + [""]
    for action in parser._actions:  # argparse keeps no public list of a parser's arguments
        if isinstance(action, argparse._HelpAction):
            continue
        metavar = action.metavar or (action.dest.upper() if action.nargs != 0 else "")
        names = action.option_strings or [action.dest]
        if action.nargs != 0 and action.option_strings:
            names = [f"{n} {metavar}" for n in names]
        out += [f".. option:: {', '.join(names)}", ""]
        what = [(action.help or "").rstrip(".") + "." if action.help else ""]
        if action.choices:
            what.append("One of " + ", ".join(f"``{c}``" for c in action.choices) + ".")
        if action.default not in (None, False, "", argparse.SUPPRESS):
            what.append(f"Default: ``{action.default}``.")
        out += ["   " + " ".join(w for w in what if w), ""]
    return out


def cli_rst() -> list[str]:
    """The reference of ``interop COMMAND`` and ``python -m mempool``, from their parsers."""
    from interop.__main__ import COMMANDS, usage

    out = ["interop", "-------", "",
           "The ``interop`` command (also ``python -m interop``), installed with the package.",
           "", ".. code-block:: text", ""] + ["   " + line for line in usage().splitlines()]
    for name, what in COMMANDS.items():
        title = f"interop {name}"
        out += ["", title, "~" * len(title), "", what[0].upper() + what[1:] + "."]
        out += _options_rst(title, command_parser(f"interop.cli.{name}"))
    parser = command_parser("mempool.__main__")
    out += ["", "python -m mempool", "-----------------", "",
            (parser.description or "").strip().replace("\n", " ")]
    out += _options_rst("python -m mempool", parser)
    return out


class CLIReference(SphinxDirective):
    """``.. interop-cli::``: every command with its options, read from its parser."""

    def run(self) -> list:
        with contextlib.redirect_stdout(io.StringIO()):
            text = cli_rst()
        return nested_parse_to_nodes(self.state, StringList(text, "interop-cli"))


# ---- every public name documented ------------------------------------------------------------
def _own_doc(obj: Any) -> str | None:
    doc = vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and doc and \
            doc.startswith(f"{obj.__name__}("):
        return None  # the signature dataclasses writes where the class has no docstring
    if isinstance(obj, property):
        doc = obj.fget.__doc__
    return doc if doc and doc.strip() else None


def public_names() -> list[tuple[str, str, Any]]:
    """``(public name, where it is defined, object)`` for every name of ``PUBLIC_MODULES``'
    ``__all__``, and the public methods, properties and dataclass fields of their classes."""
    out = []
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        names = getattr(module, "__all__", None) or [
            n for n, v in vars(module).items() if not n.startswith("_")
            and getattr(v, "__module__", None) == modname]
        for name in names:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            where = f"{obj.__module__}.{getattr(obj, '__qualname__', name)}"
            out.append((f"{modname}.{name}", where, obj))
            if inspect.isclass(obj):
                out += [(f"{modname}.{name}.{m}", f"{where}.{m}", v) for m, v in _members(obj)]
    return out


@dataclasses.dataclass(frozen=True)
class _Field:
    """A dataclass field: documented by a ``#:`` comment above it, not a docstring."""

    module: str
    cls: str
    name: str

    def documented(self) -> bool:
        return (self.cls, self.name) in ModuleAnalyzer.for_module(self.module).find_attr_docs()


def _members(cls: type) -> list[tuple[str, Any]]:
    fields = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
    out: list[tuple[str, Any]] = [(f, _Field(cls.__module__, cls.__qualname__, f))
                                  for f in fields if not f.startswith("_")]
    for name, value in vars(cls).items():
        if name.startswith("_") or name in fields:
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            out.append((name, value))
    return out


def missing(documented: set[str]) -> list[str]:
    """What the reference lacks: each public name without a docstring, or without an entry
    among ``documented`` (the full names the API pages describe)."""
    out = []
    for name, where, obj in public_names():
        field = isinstance(obj, _Field)
        if not (obj.documented() if field else _own_doc(obj)):
            out.append(f"public name {name} (defined at {where}) has no docstring"
                       + (" (a `#:` comment above the field)" if field else ""))
        if name not in documented and where not in documented:
            out.append(f"public name {name} has no entry in the API reference (docs/api/)")
    return out


def on_check_consistency(app: Sphinx, env: Any) -> None:
    for problem in missing(set(env.get_domain("py").objects)):
        logger.warning(problem)


# ---- the site's front door -------------------------------------------------------------------
def on_build_finished(app: Sphinx, exception: Exception | None) -> None:
    probe = _probes.pop(id(app), None)
    if probe is not None:  # the table page was not read (an error stopped the build first)
        probe.kill()
        probe.communicate()
    if exception is None and app.builder.format == "html":
        target = app.builder.get_target_uri(app.config.root_doc)
        (Path(app.outdir) / "index.html").write_text(
            f'<!doctype html><meta charset="utf-8"><title>interop</title>'
            f'<meta http-equiv="refresh" content="0; url={target}">'
            f'<a href="{target}">interop documentation</a>\n')


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", on_builder_inited)
    app.connect("env-before-read-docs", on_before_read)
    app.connect("source-read", on_source_read)
    app.connect("autodoc-process-docstring", on_docstring)
    app.connect("env-check-consistency", on_check_consistency)
    app.connect("build-finished", on_build_finished)
    app.add_directive("interop-cli", CLIReference)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
