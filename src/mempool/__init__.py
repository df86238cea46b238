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

__version__ = "0.1.0"  # the distribution's version (pyproject.toml), as interop.__version__

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
