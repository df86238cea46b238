"""The machine the tests run on: how many CUDA devices, or why none, or why it is broken.

One answer for the whole suite (``tests/conftest.py`` turns it into the ``gpu`` and
``cpu_only`` markers). The count comes from outside interop (CuPy's runtime, else torch),
never from the code under test. A machine without a CUDA device (no driver, no device)
gives ``count == 0`` and tests that need one skip, saying why; a machine whose driver is
there but answers with an unexpected error is *broken*: tests that depend on the answer
fail instead of skipping, so a broken GPU host never passes as a CPU one.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

NO_DEVICE = 100  # cudaErrorNoDevice
NO_DRIVER = 35  # cudaErrorInsufficientDriver: also what CuPy says where no driver is installed


@dataclass(frozen=True)
class Machine:
    """``count`` CUDA devices; ``reason`` says why there are none; ``broken`` is set (to the
    error) when a driver is present but the device query failed."""

    count: int
    reason: str
    broken: str | None = None


def driver_present() -> bool:
    """An NVIDIA driver is installed: its device node or its user-space library exists."""
    return os.path.exists("/dev/nvidiactl") or ctypes.util.find_library("cuda") is not None


def classify(error: BaseException, driver: bool) -> Machine:
    """What a failed device query means: no device, no driver, or a broken driver."""
    status = getattr(error, "status", None)
    text = f"{type(error).__name__}: {error}"
    if status == NO_DEVICE:
        return Machine(0, f"no CUDA device ({text})")
    if status == NO_DRIVER and not driver:
        return Machine(0, f"no NVIDIA driver is installed ({text})")
    return Machine(0, f"the CUDA device query failed ({text})", broken=text)


def _torch_count() -> Machine:
    try:
        import torch
    except ImportError:
        return Machine(0, "neither CuPy nor torch is installed to reach a CUDA device")
    if not torch.backends.cuda.is_built():
        return Machine(0, f"CuPy is not installed and torch {torch.__version__} has no CUDA")
    n = int(torch.cuda.device_count())
    return Machine(n, f"torch sees {n} CUDA device(s)" if n else "torch sees no CUDA device")


@functools.lru_cache(maxsize=1)
def machine() -> Machine:
    """This machine's CUDA devices, asked once (CuPy's runtime, or torch without CuPy)."""
    try:
        import cupy
    except ImportError:
        return _torch_count()
    except Exception as e:  # installed but cannot load: broken, never "no GPU"
        return Machine(0, f"CuPy fails to import ({type(e).__name__}: {e})",
                       broken=f"{type(e).__name__}: {e}")
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:
        return classify(e, driver_present())
    return Machine(n, f"{n} CUDA device(s)" if n else "no CUDA device")


def absent_cuda_device() -> str:
    """A ``cuda:N`` device string naming no device of this machine (N = the device count)."""
    return f"cuda:{machine().count}"


@contextlib.contextmanager
def jax_on_cpu() -> Iterator[Any]:
    """JAX arrays created inside land on the CPU, whatever JAX's default device is (on a GPU
    host it is the GPU). Yields the CPU device."""
    import jax

    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        yield cpu


def missing(module: str, install: str) -> str | None:
    """Why ``module`` cannot be imported here (naming ``install``), or ``None``; imports
    nothing (a module set to ``None`` in ``sys.modules`` counts as missing)."""
    import importlib.util
    import sys

    if module in sys.modules:
        found = sys.modules[module] is not None
    else:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
    return None if found else f"{module} is not installed: {install}"


RMM_MISSING = missing("rmm", "pip install rmm-cu13 (or rmm-cu12; the lent GPU image has "
                             "neither: carry the wheels, see docs/gpu.md)")
"""Why the pool's GPU tests cannot run here (``None``: RMM is there)."""
