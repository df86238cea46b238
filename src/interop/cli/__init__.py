"""The ``python -m interop`` commands: ``table``, ``demo`` and ``doctor``.

Each command lives in its own module with a ``main(args) -> int``; nothing here is
imported by ``import interop``.
"""

from __future__ import annotations


def cuda_devices() -> tuple[int, str]:
    """How many CUDA devices CuPy sees, and a sentence saying why when there are none.

    Never raises: no CuPy, no driver or no device all give ``(0, reason)``.
    """
    try:
        import cupy
    except Exception as e:  # not installed, or broken
        return 0, f"CuPy is not importable ({type(e).__name__}: {e})"
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:
        return 0, f"CuPy reports {type(e).__name__}: {e}"
    return n, f"{n} CUDA device(s)" if n else "no CUDA device"


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
