"""Size sweep, 1 KiB .. 1 GiB: a zero-copy conversion costs the same at every size.

For each size a float32 array is converted (numpy->torch, numpy->jax, torch->numpy) with
``interop.to_framework`` and with the native call, and a real copy of the same bytes
(``np.copyto``, the memcpy line) is timed next to it. Conversions at all sizes are timed
interleaved, round by round, so the 1 KiB and 1 GiB points see the same machine state.
"""

from __future__ import annotations

import warnings
from typing import Any

from . import GiB, KiB, MiB, aligned_empty, interleaved, summary, timer

FULL_SIZES = tuple(KiB << (2 * i) for i in range(11))  # 1 KiB, 4 KiB, ..., 1 GiB
QUICK_SIZES = (KiB, 64 * KiB, 4 * MiB)
PAIRS = {
    "numpy->torch": ("numpy", "torch", "torch.from_numpy(x)"),
    "numpy->jax": ("numpy", "jax", "jax.dlpack.from_dlpack(x)"),
    "torch->numpy": ("torch", "numpy", "x.numpy()"),
}


def _copy_reps(nbytes: int, quick: bool) -> tuple[int, int]:
    number = max(1, min(100, (64 * MiB) // nbytes))
    repeat = 3 if nbytes >= 256 * MiB else (3 if quick else 7)
    return number, repeat


def run(quick: bool = False, sizes: tuple[int, ...] | None = None) -> dict[str, Any]:
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*not writable.*")
    import jax
    import numpy as np
    import torch

    import interop

    sizes = tuple(sizes or (QUICK_SIZES if quick else FULL_SIZES))
    number, repeat = (200, 5) if quick else (1000, 15)
    srcs = {}
    for n in sizes:
        a = aligned_empty(n, "float32")
        a[:] = 1.0  # touch every page once, so no timing sees a first-touch fault
        srcs[n] = a
    results: dict[str, Any] = {"sizes": list(sizes), "pairs": {}, "memcpy": {}}
    for pair, (src, tgt, native) in PAIRS.items():
        timers = {}
        for n, a in srcs.items():
            x = torch.from_numpy(a) if src == "torch" else a
            env = {"x": x, "torch": torch, "jax": jax, "np": np,
                   "to_framework": interop.to_framework}
            timers[("interop", n)] = timer(f"to_framework(x, {tgt!r})", env)
            timers[("native", n)] = timer(native, env)
        samples = interleaved(timers, number, repeat)
        rows = []
        for n in sizes:
            rows.append({"nbytes": n, "interop_us": summary(samples[("interop", n)]),
                         "native_us": summary(samples[("native", n)])})
        first, last = rows[0]["interop_us"]["median"], rows[-1]["interop_us"]["median"]
        results["pairs"][pair] = {
            "native": native, "rows": rows,
            "largest_over_smallest": last / first,
        }
    # The memcpy line: one real copy of the same bytes, into a buffer already faulted in.
    rows = []
    for n in sizes:
        dst = aligned_empty(n, "float32")
        dst[:] = 0.0
        src = srcs[n]
        num, rep = _copy_reps(n, quick)
        s = interleaved({"copy": timer(lambda s=src, d=dst: np.copyto(d, s))}, num, rep)
        med = summary(s["copy"])
        rows.append({"nbytes": n, "copy_us": med, "gb_per_s": n / (med["median"] * 1e-6) / 1e9})
        del dst
    results["memcpy"] = {"call": "np.copyto(dst, src)", "rows": rows}
    results["flat_bar"] = {
        "bar": "the largest size converts within 10% of the smallest (median, interop)",
        "smallest": sizes[0], "largest": sizes[-1],
        "ratios": {p: v["largest_over_smallest"] for p, v in results["pairs"].items()},
        "pass": all(v["largest_over_smallest"] <= 1.10 for v in results["pairs"].values()),
        "full_range": sizes[-1] >= GiB,
    }
    return results
