"""Packaging: the distribution's name, one version, the root of the repository, and the built
wheel installed into a fresh virtual environment and used there as a user would."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import tomllib

import interop

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = (ROOT / "pyproject.toml").read_text()
PROJECT = tomllib.loads(PYPROJECT)["project"]
DIST = "interop-mempool"  # `interop` on the package index is another project's
# What the repository root holds (git ls-files, first path component); a stray file fails.
ROOT_ENTRIES = {".ci", ".gitignore", "CHANGELOG.md", "README.md", "benchmarks",
                "conversion_table.md", "docs", "pyproject.toml", "scripts", "src", "tests"}
SKIP = ("--skip", "tensorflow,paddle")  # the core run never imports them (tests/cli/test_cli.py)


def test_the_distribution_is_interop_mempool_everywhere() -> None:
    assert PROJECT["name"] == DIST
    assert PROJECT["optional-dependencies"]["all"][0].startswith(f"{DIST}[")
    texts = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("scripts/*"),
             *ROOT.glob("src/**/*.py"), *ROOT.glob("tests/*.py")]
    bare = re.compile(r"(?<![\w-])interop\[")  # an extra of the other project's distribution
    found = [f"{p.relative_to(ROOT)}:{n}" for p in texts if p.is_file()
             for n, line in enumerate(p.read_text().splitlines(), 1) if bare.search(line)]
    assert not found, found


def test_the_version_is_written_once() -> None:
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    dynamic = tomllib.loads(PYPROJECT)["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "interop.__version__"}
    literals = [p.relative_to(ROOT) for p in ROOT.glob("src/**/*.py")
                if re.search(r"^__version__ = ", p.read_text(), re.M)]
    assert literals == [Path("src/interop/__init__.py")], literals
    assert re.fullmatch(r"\d+\.\d+\.\d+", interop.__version__)


def test_installed_metadata_has_the_version() -> None:
    try:
        installed = importlib.metadata.version(DIST)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{DIST} is not installed here (interop runs from source, PYTHONPATH=src): "
                    "the wheel test below checks the installed metadata")
    import mempool

    assert installed == interop.__version__ == mempool.__version__


def test_mempool_version_says_why_it_is_missing_from_a_source_tree(monkeypatch) -> None:
    import mempool

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.delitem(mempool.__dict__, "__version__", raising=False)
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    with pytest.raises(AttributeError, match=f"installed {DIST} distribution"):
        mempool.__version__  # noqa: B018


def test_py_typed_is_declared_for_both_packages() -> None:
    for package in ("interop", "mempool"):
        assert (ROOT / "src" / package / "py.typed").is_file()
        assert re.search(rf'^{package} = \["py.typed"\]', PYPROJECT, re.M), package


def test_gpu_extras_per_cuda_major_version() -> None:
    extras = PROJECT["optional-dependencies"]
    assert "gpu" not in extras  # one CUDA version hard-coded for everyone
    for major in ("12", "13"):
        names = {re.split(r"[<>=\[]", r)[0] for r in extras[f"gpu-cu{major}"]}
        assert names == {f"cupy-cuda{major}x", f"rmm-cu{major}", "numba", "numba-cuda"}, names
        assert any(r.startswith(f"numba-cuda[cu{major}]") for r in extras[f"gpu-cu{major}"])
    for deps in extras.values():  # torch and JAX CUDA builds come from their own channels
        assert not any(d.startswith(("torch==", "jax[cuda")) for d in deps)


def test_missing_rmm_names_both_cuda_extras(monkeypatch) -> None:
    from mempool.api import _import_rmm
    from mempool.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "rmm", None)
    monkeypatch.setitem(sys.modules, "rmm.mr", None)
    with pytest.raises(MissingDependencyError) as e:
        _import_rmm()
    assert all(f"{DIST}[gpu-cu{major}]" in str(e.value) for major in ("12", "13"))


def test_the_root_holds_only_what_belongs_there() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"not a git checkout: {r.stderr.decode().strip()}")
    tracked = {name.split("/")[0] for name in r.stdout.decode().split("\0") if name}
    assert tracked == ROOT_ENTRIES, (sorted(tracked - ROOT_ENTRIES),
                                     sorted(ROOT_ENTRIES - tracked))


# ---- the built wheel, installed ------------------------------------------------------------
ROUND_TRIP = """
import json, sys
import interop, mempool
imported = sorted(m for m in ("numpy", "torch", "jax", "pyarrow") if m in sys.modules)
import importlib.metadata as md
import numpy as np
import torch
x = np.arange(6.0)
t = interop.to_framework(x, "torch")
t[1] = 42.0
back = interop.to_framework(t, "numpy")
back[2] = 7.0
print(json.dumps({
    "interop": interop.__file__, "mempool": mempool.__file__, "imported": imported,
    "version": interop.__version__, "mempool_version": mempool.__version__,
    "metadata": md.version("interop-mempool"),
    "pointers": [x.ctypes.data, t.data_ptr(), back.__array_interface__["data"][0]],
    "seen": [float(x[1]), float(t[2])],
}))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """``python -m build`` (the sdist, then the wheel from the sdist) of a copy of this tree
    (the build's egg-info stays out of ``src``), the wheel installed without dependencies into a
    fresh venv, which then reuses this environment's frameworks through a path line to its
    site-packages (whose own .pth files, the project's editable install among them, are not
    read): ``import interop`` there can only find the wheel."""
    tree = tmp_path_factory.mktemp("tree") / "project"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"))
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                        str(tree)], capture_output=True, text=True, timeout=300, env=clean_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    wheel, = out.glob("*.whl")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                        "--no-deps", "--no-index", "--disable-pip-version-check", str(wheel)],
                       capture_output=True, text=True, timeout=300, env=clean_env())
    assert r.returncode == 0 and "Successfully installed" in r.stdout, r.stdout + r.stderr
    site = run_in(venv, [str(python), "-c",
                         "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout
    Path(site.strip(), "_frameworks.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return {"venv": venv, "site": Path(site.strip()), "wheel": wheel,
            "sdist": next(out.glob("*.tar.gz")), "cwd": tmp_path_factory.mktemp("elsewhere")}


def clean_env() -> dict[str, str]:
    """This process's environment without the variables that would put ``src`` on the path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def run_in(venv: Path, argv: list[str], cwd: Path | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess:
    """``argv`` as a user of ``venv`` runs it: its bin first on PATH, no PYTHONPATH, from a
    directory outside the source tree."""
    env = clean_env()
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                       cwd=cwd or venv)
    assert r.returncode == 0, (argv, r.stdout[-2000:], r.stderr[-3000:])
    return r


def test_the_wheel_holds_the_packages_and_nothing_else(built) -> None:
    names = zipfile.ZipFile(built["wheel"]).namelist()
    dist_info = f"interop_mempool-{interop.__version__}.dist-info"
    assert {n.split("/")[0] for n in names} == {"interop", "mempool", dist_info}
    assert {"interop/py.typed", "mempool/py.typed"} <= set(names)
    assert not [n for n in names if re.search(r"(^|/)(tests?|benchmarks)/|/test_\w+\.py$", n)]
    sources = {p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src").rglob("*.py")
               if p.parent.name != "__pycache__"}
    assert sources <= set(names), sorted(sources - set(names))
    meta = zipfile.ZipFile(built["wheel"]).read(f"{dist_info}/METADATA").decode()
    assert f"\nName: {DIST}\n" in meta and f"\nVersion: {interop.__version__}\n" in meta
    entry = zipfile.ZipFile(built["wheel"]).read(f"{dist_info}/entry_points.txt").decode()
    assert re.search(r"^interop = interop\.__main__:main$", entry, re.M), entry
    assert built["sdist"].name == f"interop_mempool-{interop.__version__}.tar.gz"


def test_the_installed_wheel_imports_and_converts(built) -> None:
    r = run_in(built["venv"], ["python", "-c", ROUND_TRIP], cwd=built["cwd"])
    got = json.loads(r.stdout)
    for package in ("interop", "mempool"):
        assert Path(got[package]).is_relative_to(built["site"]), got[package]
        assert (built["site"] / package / "py.typed").is_file()
    assert got["imported"] == []  # importing interop and mempool imports no framework
    assert got["version"] == got["mempool_version"] == got["metadata"] == interop.__version__
    x_ptr, t_ptr, back_ptr = got["pointers"]
    assert x_ptr == t_ptr == back_ptr  # numpy -> torch -> numpy, one buffer throughout
    assert got["seen"] == [42.0, 7.0]  # writes through each side, read on the other


def test_the_console_command_and_python_m_interop(built) -> None:
    venv, cwd = built["venv"], built["cwd"]
    command = venv / "bin" / "interop"
    assert command.is_file()
    version = interop.__version__
    assert run_in(venv, ["interop", "--version"], cwd).stdout.strip() == f"interop {version}"
    usage = run_in(venv, ["interop", "--help"], cwd).stdout
    assert all(c in usage for c in ("table", "demo", "doctor")), usage
    assert "--rows" in run_in(venv, ["interop", "demo", "--help"], cwd).stdout
    table = run_in(venv, ["interop", "table", "--markdown", *SKIP], cwd).stdout
    assert table.startswith("# Conversion table") and "zero-copy" in table, table[:500]
    doctor = run_in(venv, ["interop", "doctor", *SKIP], cwd).stdout
    assert doctor.startswith(f"interop {version} on Python"), doctor[:300]
    as_json = json.loads(run_in(venv, ["python", "-m", "interop", "doctor", "--json", *SKIP],
                                cwd).stdout)
    assert as_json["interop"] == version
    torch = {f["name"]: f for f in as_json["frameworks"]}["torch"]
    assert torch["importable"] and torch["version"] == importlib.metadata.version("torch")
