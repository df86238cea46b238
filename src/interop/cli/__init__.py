"""The ``python -m interop`` commands: ``table``, ``demo`` and ``doctor``.

Each command lives in its own module with a ``main(args) -> int``; nothing here is
imported by ``import interop``.
"""

from __future__ import annotations

from ..devices import cuda_devices as cuda_devices


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
    for dist in _distributions().get(package, ()):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return None


_DISTS: dict[str, list[str]] = {}


def _distributions() -> dict[str, list[str]]:
    if not _DISTS:
        import importlib.metadata as md

        _DISTS.update(md.packages_distributions())
    return _DISTS
