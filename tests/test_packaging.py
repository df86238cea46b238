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
