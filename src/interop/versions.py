"""Installed versions of packages, read from distribution metadata without importing them."""

from __future__ import annotations

import importlib.metadata as md
from functools import cache


def package_version(package: str) -> str | None:
    """The installed version of importable package ``package``, without importing it.

    The distribution may be named differently (``tensorflow`` ships as ``tensorflow-cpu``,
    ``paddle`` as ``paddlepaddle``, ``nvidia.dali`` as ``nvidia-dali-cuda120``); ``None``
    when it is not installed.
    """
    try:
        return md.version(package)
    except md.PackageNotFoundError:
        pass
    top, _, sub = package.partition(".")
    for dist in _distributions().get(top, ()):
        if sub and sub.replace("_", "-") not in dist.lower():
            continue  # a namespace package (nvidia.dali): the distribution that names it
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return None


@cache
def _distributions() -> dict[str, list[str]]:
    """``{importable package: [distributions that provide it]}`` (read once: it scans every
    installed distribution)."""
    return md.packages_distributions()
