"""interop.versions: a package's installed version from its distribution's metadata."""

from __future__ import annotations

import importlib.metadata as md
import sys

import pytest

from interop.versions import package_version


def _dist_version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def test_a_package_named_as_its_distribution():
    assert package_version("numpy") == md.version("numpy")
    import numpy

    assert package_version("numpy") == numpy.__version__


@pytest.mark.parametrize("package, dists", [("tensorflow", ("tensorflow", "tensorflow-cpu")),
                                            ("paddle", ("paddlepaddle", "paddlepaddle-gpu"))])
def test_a_package_shipped_under_another_name_is_found_without_importing_it(package, dists):
    want = next((v for v in map(_dist_version, dists) if v), None)
    if want is None:
        pytest.skip(f"{package} is not installed ({' or '.join(dists)})")
    imported = package in sys.modules  # a run that selects paddle tests imports paddle first
    assert package_version(package) == want
    assert imported or package not in sys.modules


def test_a_missing_package_has_no_version():
    assert package_version("interop_no_such_package") is None
