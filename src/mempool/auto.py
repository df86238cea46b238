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
from typing import Any

from .api import use_rmm_pool
from .errors import ConfigError, MempoolWarning, NoDeviceError
from .pool import Pool
from .sizes import check_size_syntax

__all__ = ["config_from_env", "error", "pool", "setup"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")

pool: Pool | None = None
error: NoDeviceError | None = None


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={env[name]!r}: use one of {', '.join(_TRUE + _FALSE[1:])}")


def config_from_env(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The keyword arguments for :func:`use_rmm_pool` that the ``MEMPOOL_*`` variables ask for."""
    env = os.environ if env is None else env
    config: dict[str, Any] = {
        "initial_size": env.get("MEMPOOL_SIZE") or None,
        "maximum": env.get("MEMPOOL_MAXIMUM") or None,
        "limit": env.get("MEMPOOL_LIMIT") or None,
        "managed": _flag(env, "MEMPOOL_MANAGED"),
    }
    for key, var in (("initial_size", "MEMPOOL_SIZE"), ("maximum", "MEMPOOL_MAXIMUM"),
                     ("limit", "MEMPOOL_LIMIT")):
        check_size_syntax(config[key], what=var)
    devices = env.get("MEMPOOL_DEVICES", "").strip()
    if devices == "all":
        config["devices"] = "all"
    elif devices:
        try:
            config["devices"] = [int(d) for d in devices.split(",") if d.strip()]
        except ValueError:
            raise ConfigError(
                f"MEMPOOL_DEVICES={devices!r}: use 'all' or device numbers like '0,1'"
            ) from None
    frameworks = env.get("MEMPOOL_FRAMEWORKS", "").strip()
    if frameworks:
        config["frameworks"] = [f.strip() for f in frameworks.split(",") if f.strip()]
    return config


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
        if _flag(env, "MEMPOOL_STRICT"):
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
