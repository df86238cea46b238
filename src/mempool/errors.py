"""Errors and warnings raised by :mod:`mempool`.

Every error is a :class:`MempoolError` and also the builtin that fits, so callers can
catch either. Messages name the offending value and the fix.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "MempoolError",
    "MempoolWarning",
    "MissingDependencyError",
    "NoDeviceError",
    "OrderError",
]


class MempoolError(Exception):
    """Base class of every error raised by mempool."""


class NoDeviceError(MempoolError, RuntimeError):
    """No usable CUDA device: the pool cannot be created. Nothing was changed."""


class OrderError(MempoolError, RuntimeError):
    """A framework already started using the GPU, so its allocator can no longer be routed."""


class ConfigError(MempoolError, ValueError):
    """Bad settings: an unparsable size, an unknown framework, or a conflicting second pool."""


class MissingDependencyError(MempoolError, ImportError):
    """A package mempool needs (rmm, cuda-bindings, distributed) is not installed."""


class MempoolWarning(UserWarning):
    """Something the user should know about but that does not stop the program."""
