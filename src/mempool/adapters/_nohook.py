"""Shared logic for frameworks without an external-allocator hook (XLA/JAX, TensorFlow).

They cannot be routed. What can be done: before their runtime starts, an environment
variable tells them not to preallocate most of the GPU; afterwards, warn that they
already hold memory of their own. They are always reported *not routed*.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import MempoolWarning
from ._base import ABSENT, FrameworkStatus, is_installed, restore_env, set_env

UNTOUCHED: Any = ("untouched",)


@dataclass(frozen=True)
class NoHook:
    """How to talk to one framework that has no allocator hook."""

    key: str  # the adapter's NAME, e.g. "jax"
    name: str  # how messages spell it, e.g. "JAX"
    module: str
    env_var: str
    env_value: str
    started: Callable[[], tuple[bool, bool]]  # (runtime started?, holds GPU memory?)
    default_behaviour: str  # what happens without the variable, e.g. "preallocates 75% ..."

    def _is_safe(self, value: str | None) -> bool:
        return value is not None and value.strip().lower() == self.env_value

    def install(self) -> Any:
        """Set the variable if the runtime has not started and the user did not set it."""
        started, holds_gpu = self.started()
        if started:
            if holds_gpu:
                warnings.warn(
                    f"{self.name} already started on the GPU and holds memory of its own that "
                    f"the RMM pool cannot reclaim ({self.name} has no allocator hook; it "
                    f"{self.default_behaviour} unless {self.env_var}={self.env_value} is set "
                    f"before it starts). Call use_rmm_pool() before the first {self.name} "
                    "operation, or set that variable before starting Python.",
                    MempoolWarning,
                    stacklevel=4,
                )
            return UNTOUCHED
        if self.env_var in os.environ:
            return UNTOUCHED  # the user's explicit choice wins
        return set_env(self.env_var, self.env_value)

    def uninstall(self, previous: Any) -> None:
        """Put the variable back exactly as it was."""
        if previous is not UNTOUCHED:
            restore_env(self.env_var, previous)

    def status(self) -> FrameworkStatus:
        """Always *not routed*; the reason says what the framework does with GPU memory."""
        if not is_installed(self.module):
            return FrameworkStatus(self.key, False, "not installed", installed=False)
        started, holds_gpu = self.started()
        if started and holds_gpu:
            detail = "its GPU runtime already started and holds memory of its own"
        elif started:
            detail = "its runtime started without a GPU (it holds no GPU memory)"
        elif self._is_safe(os.environ.get(self.env_var)):
            detail = f"{self.env_var}={self.env_value}: it allocates on demand beside the pool"
        else:
            detail = (
                f"when it starts it {self.default_behaviour}; set "
                f"{self.env_var}={self.env_value}"
            )
        return FrameworkStatus(self.key, False, f"no allocator hook; {detail}")


__all__ = ["ABSENT", "NoHook", "UNTOUCHED"]
