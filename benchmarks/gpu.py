"""GPU benchmarks: device conversions per pair.

Without a CUDA device (this machine) everything is skipped with the reason. The pool
(allocate/free per framework, memory a pipeline holds) is its own section, ``pool``.
"""

from __future__ import annotations

import sys
from typing import Any


def cuda_reason() -> str | None:
    """``None`` when a CUDA device is usable, else why not."""
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            torch = None
    if torch is not None:
        if not torch.backends.cuda.is_built():
            return f"torch {torch.__version__} is a CPU-only build and no CUDA device is present"
        if not torch.cuda.is_available():
            return "torch was built with CUDA but no CUDA device is available"
        return None
    return "no CUDA-capable framework (torch) installed"


def run(quick: bool = False) -> dict[str, Any]:
    reason = cuda_reason()
    out: dict[str, Any] = {}
    if reason is not None:
        out["conversions"] = {"skipped": True, "reason": reason}
    else:  # pragma: no cover - needs a GPU
        out["conversions"] = _device_conversions(quick)
    return out


def _device_conversions(quick: bool) -> dict[str, Any]:  # pragma: no cover - needs a GPU
    import timeit

    import torch

    import interop

    t = torch.ones(1 << 20, device="cuda")
    rows = {}
    for tgt, native in (("jax", "jax.dlpack.from_dlpack(t)"),):
        try:
            import jax

            env = {"t": t, "jax": jax, "f": interop.to_framework}
            n = 200 if quick else 5000
            ti = min(timeit.repeat(f"f(t, {tgt!r})", globals=env, number=n, repeat=5)) / n
            tn = min(timeit.repeat(native, globals=env, number=n, repeat=5)) / n
            rows[f"torch(cuda)->{tgt}"] = {"interop_us": ti * 1e6, "native_us": tn * 1e6}
        except Exception as e:
            rows[f"torch(cuda)->{tgt}"] = {"skipped": True, "reason": repr(e)}
    return {"skipped": False, "pairs": rows}
