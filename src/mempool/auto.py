"""``import mempool.auto``: set the pool up from environment variables.

For code you cannot edit::

    MEMPOOL_SIZE=8GiB python -c "import mempool.auto; import train"

Variables (all optional):

``MEMPOOL_SIZE``        initial pool size ("8GiB", "50%", bytes); unset = RMM's default
``MEMPOOL_MAXIMUM``     maximum pool size
``MEMPOOL_LIMIT``       cap on the bytes handed out
``MEMPOOL_MANAGED``     1/true/yes/on for managed memory; 0/false/no/off (default)
``MEMPOOL_DEVICES``     "0,1", "all", or unset for the current device
``MEMPOOL_FRAMEWORKS``  "cupy,torch"; unset = every installed framework
``MEMPOOL_BACKEND``     "pool" (default) or "async" (every framework on the device's default pool)
``MEMPOOL_JAX_ALLOCATOR`` "platform" or "cuda_async": XLA_PYTHON_CLIENT_ALLOCATOR for JAX
``MEMPOOL_STRICT``      1: raise NoDeviceError without a GPU instead of warning

Without a CUDA device this module warns (:class:`~mempool.errors.MempoolWarning`) and
changes nothing, so the same script still runs on a CPU machine; ``MEMPOOL_STRICT=1``
turns that into an error. Malformed variables always raise
:class:`~mempool.errors.ConfigError` naming the variable: a typo must not pass silently.
The outcome is kept in :data:`pool` (the live pool or None) and :data:`error`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping

from .api import use_rmm_pool
from .envconfig import config_from_env, flag
from .errors import ConfigError, MempoolWarning, NoDeviceError
from .pool import Pool

__all__ = ["config_from_env", "error", "pool", "setup"]

pool: Pool | None = None
error: NoDeviceError | None = None


def setup(env: Mapping[str, str] | None = None) -> Pool | None:
    """Create the pool the environment asks for; warn and return None without a GPU."""
    global pool, error
    env = os.environ if env is None else env
    config = config_from_env(env)
    try:
        pool = use_rmm_pool(config.pop("initial_size"), **config)
    except ConfigError as exc:
        raise ConfigError(f"mempool.auto: {exc} (check the MEMPOOL_* variables)") from exc
    except NoDeviceError as exc:
        if flag(env, "MEMPOOL_STRICT"):
            raise
        error = exc
        warnings.warn(
            f"mempool.auto: no RMM pool was set up, the program continues with each "
            f"framework's own allocator: {exc} (set MEMPOOL_STRICT=1 to make this an error)",
            MempoolWarning,
            stacklevel=2,
        )
    return pool


setup()
