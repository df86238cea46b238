"""The layout rules of the package, read from the source (nothing is imported):

* no module reaches into another framework module's private names (pair-specific edges use
  the adapters' public functions);
* the registry's own modules never import ``interop.api`` or ``interop.default`` (the default
  registry is built in one place; table code is handed the registry): no import cycle;
* ``interop.adapters`` only lists its modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "interop"
ADAPTERS = {p.stem for p in (SRC / "adapters").glob("*.py") if p.stem != "__init__"}
def _listed() -> set[str]:
    from interop import adapters  # lists module names; imports nothing

    return {*adapters.FRAMEWORKS, adapters.PRODUCERS, adapters.PAIRS}


FRAMEWORK_MODULES = _listed()
"""The modules of frameworks, producers and pairs: read from ``interop.adapters``' lists."""
# What the default registry loads: none of it may import the public layer back.
REGISTRY_SIDE = [*sorted((SRC / "adapters").glob("*.py")),
                 *(SRC / n for n in ("registry.py", "routing.py", "runner.py", "fastplan.py",
                                     "explanation.py", "devices.py", "record.py", "view.py",
                                     "plan.py", "host.py", "narrowing.py", "names.py",
                                     "route.py", "cache.py", "composite.py")),
                 *(SRC / "tables" / n for n in ("adapters.py", "columns.py", "build.py",
                                                "arrow_c.py")),
                 *sorted((SRC / "transpose").glob("*.py"))]


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _private_reaches(path: Path) -> list[str]:
    """``from .<adapter> import _x`` and ``<adapter>._x`` in ``path``, for another adapter."""
    tree = ast.parse(path.read_text())
    own = path.stem
    aliases: dict[str, str] = {}  # local name -> adapter module
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        mod = module.rpartition(".")[2]
        if mod in FRAMEWORK_MODULES and mod != own:
            found += [f"from {'.' * node.level}{module} import {a.name}" for a in node.names
                      if a.name.startswith("_")]
        if module.endswith("adapters") or not module:
            for a in node.names:
                if a.name in FRAMEWORK_MODULES and a.name != own:
                    aliases[a.asname or a.name] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            found.append(f"{node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_uses_another_adapters_private_names(path):
    assert _private_reaches(path) == []


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any level of the file, as an absolute name."""
    package = ".".join(("interop", *path.relative_to(SRC).parent.parts))
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
            target = ".".join([*base, node.module] if node.module else base) if node.level \
                else node.module
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


@pytest.mark.parametrize("path", REGISTRY_SIDE, ids=lambda p: str(p.relative_to(SRC)))
def test_the_registry_side_never_imports_the_public_layer(path):
    bad = {m for m in _imports(path) if m in ("interop.api", "interop.default")}
    assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


def _declares(path: Path) -> set[str]:
    """The module-level names among ``ADAPTER``, ``ADAPTERS`` and ``edges`` that ``path``
    defines."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        found.update(t.id for t in targets if isinstance(t, ast.Name))
        if isinstance(node, ast.FunctionDef):
            found.add(node.name)
    return found & {"ADAPTER", "ADAPTERS", "edges"}


def test_the_adapters_package_only_lists_its_modules():
    """``interop.adapters`` imports nothing; every module it lists exists and declares what
    the registry reads of it, and every module it does not list (the shared helpers)
    declares none of it: the lists are the one place a framework is named."""
    tree = ast.parse((SRC / "adapters" / "__init__.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    from interop import adapters

    assert FRAMEWORK_MODULES <= ADAPTERS
    for name in adapters.FRAMEWORKS:
        assert _declares(SRC / "adapters" / f"{name}.py") & {"ADAPTER", "ADAPTERS"}, name
    assert "ADAPTERS" in _declares(SRC / "adapters" / f"{adapters.PRODUCERS}.py")
    assert "edges" in _declares(SRC / "adapters" / f"{adapters.PAIRS}.py")
    for name in ADAPTERS - FRAMEWORK_MODULES:
        assert not _declares(SRC / "adapters" / f"{name}.py") & {"ADAPTER", "ADAPTERS"}, name


def test_the_checker_sees_a_private_reach(tmp_path):
    """The scan is not blind: a module taking another adapter's private name is caught."""
    bad = tmp_path / "jax_.py"
    bad.write_text("from . import torch_\nfrom .pyarrow_ import _kind\nx = torch_._tables\n")
    assert _private_reaches(bad) == ["from .pyarrow_ import _kind", "torch_._tables"]


def test_interop_frameworks_is_the_public_call():
    import interop

    assert callable(interop.frameworks) and type(interop).__name__ == "module"
    assert {r["name"] for r in interop.frameworks()} >= {"numpy", "torch"}
