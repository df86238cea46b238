"""Read pool settings from ``MEMPOOL_*`` environment variables (no side effects).

See :mod:`mempool.auto` for the variables; ``import mempool.auto`` applies them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .adapters.jax import ALLOCATORS
from .errors import ConfigError
from .pool import BACKENDS
from .sizes import check_size_syntax

__all__ = ["config_from_env", "flag"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")

def flag(env: Mapping[str, str], name: str) -> bool:
    """Parse a yes/no variable; unset or empty is False."""
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
        "managed": flag(env, "MEMPOOL_MANAGED"),
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
    backend = env.get("MEMPOOL_BACKEND", "").strip()
    if backend:
        if backend not in BACKENDS:
            raise ConfigError(f"MEMPOOL_BACKEND={backend!r}: use one of {', '.join(BACKENDS)}")
        config["backend"] = backend
    jax_allocator = env.get("MEMPOOL_JAX_ALLOCATOR", "").strip()
    if jax_allocator:
        if jax_allocator not in ALLOCATORS:
            raise ConfigError(
                f"MEMPOOL_JAX_ALLOCATOR={jax_allocator!r}: use one of {', '.join(ALLOCATORS)}, "
                "or leave it unset"
            )
        config["jax_allocator"] = jax_allocator
    frameworks = env.get("MEMPOOL_FRAMEWORKS", "").strip()
    if frameworks:
        config["frameworks"] = [f.strip() for f in frameworks.split(",") if f.strip()]
    return config
