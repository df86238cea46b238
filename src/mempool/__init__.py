"""mempool: one RMM pool for every framework's GPU allocations.

    >>> import mempool
    >>> pool = mempool.use_rmm_pool("8GiB")      # doctest: +SKIP  (needs a CUDA GPU)
    >>> print(mempool.status())                  # doctest: +SKIP

Importing mempool imports no framework (not rmm, cupy, numba, torch or jax); they are
imported when :func:`use_rmm_pool` routes them.
"""

from __future__ import annotations

from . import errors
from .api import current_pool, rmm_pool, use_rmm_pool
from .errors import ConfigError, MempoolError, NoDeviceError, OrderError
from .pool import Pool
from .report import StatusReport, status
from .sizes import parse_size

_DISTRIBUTION = "interop-mempool"  # ships mempool and interop; its version is interop.__version__

__all__ = [
    "ConfigError",
    "MempoolError",
    "NoDeviceError",
    "OrderError",
    "Pool",
    "StatusReport",
    "current_pool",
    "errors",
    "parse_size",
    "rmm_pool",
    "status",
    "use_rmm_pool",
]


def __getattr__(name: str) -> str:
    """``mempool.__version__``: the installed distribution's version, read from its metadata on
    first use (the version is written once, as ``interop.__version__``, which mempool does not
    import)."""
    if name != "__version__":
        raise AttributeError(f"module 'mempool' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version(_DISTRIBUTION)
    except PackageNotFoundError:
        raise AttributeError(f"mempool.__version__ is the version of the installed {_DISTRIBUTION} "
                             "distribution, and it is not installed here (mempool runs from a "
                             "source tree): pip install the project") from None
    globals()["__version__"] = value
    return value
