"""Packaging: one version everywhere, and the typing marker shipped for both packages."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

import interop
import mempool

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()


DECLARED = re.search(r'^version = "([^"]+)"', PYPROJECT, re.M).group(1)


def test_one_version_everywhere() -> None:
    assert interop.__version__ == mempool.__version__ == DECLARED


def test_installed_metadata_has_the_declared_version() -> None:
    try:
        installed = importlib.metadata.version("interop")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("interop runs from source here (PYTHONPATH=src), not installed: "
                    "no package metadata to compare")
    assert installed == DECLARED


def test_py_typed_is_shipped_for_both_packages() -> None:
    for package in ("interop", "mempool"):
        assert (ROOT / "src" / package / "py.typed").is_file()
        assert re.search(rf'^{package} = \["py.typed"\]', PYPROJECT, re.M), package


def test_gpu_extras_per_cuda_major_version() -> None:
    import tomllib

    extras = tomllib.loads(PYPROJECT)["project"]["optional-dependencies"]
    assert "gpu" not in extras  # one CUDA version hard-coded for everyone
    for major in ("12", "13"):
        names = {re.split(r"[<>=\[]", r)[0] for r in extras[f"gpu-cu{major}"]}
        assert names == {f"cupy-cuda{major}x", f"rmm-cu{major}", "numba", "numba-cuda"}, names
        assert any(r.startswith(f"numba-cuda[cu{major}]") for r in extras[f"gpu-cu{major}"])
    for deps in extras.values():  # torch and JAX CUDA builds come from their own channels
        assert not any(d.startswith(("torch==", "jax[cuda")) for d in deps)


def test_missing_rmm_names_both_cuda_extras(monkeypatch) -> None:
    import sys

    import pytest

    from mempool.api import _import_rmm
    from mempool.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "rmm", None)
    monkeypatch.setitem(sys.modules, "rmm.mr", None)
    with pytest.raises(MissingDependencyError) as e:
        _import_rmm()
    assert "interop[gpu-cu12]" in str(e.value) and "interop[gpu-cu13]" in str(e.value)
