"""Installed versions of packages, read from their distributions without importing them."""

from __future__ import annotations

_DISTS: dict[str, list[str]] = {}


def package_version(package: str) -> str | None:
    """The installed version of importable package ``package``, without importing it.

    The distribution may be named differently (``tensorflow`` ships as ``tensorflow-cpu``,
    ``paddle`` as ``paddlepaddle``); ``None`` when it is not installed.
    """
    import importlib.metadata as md

    try:
        return md.version(package)
    except md.PackageNotFoundError:
        pass
    if not _DISTS:
        _DISTS.update(md.packages_distributions())
    for dist in _DISTS.get(package, ()):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return None
