"""Size sweep, 1 KiB .. 1 GiB: a zero-copy conversion costs the same at every size.

For each size a float32 array is converted (numpy->torch, numpy->jax, torch->numpy) with
``interop.to_framework`` and with the native call, and a real copy of the same bytes
(``np.copyto``, the memcpy line) is timed next to it. Conversions at all sizes are timed
interleaved, round by round, in short samples (about 0.3 ms), so the 1 KiB and 1 GiB points
see the same machine state; those two run next to each other in every round, and the bar
is the median of their per-round ratio (paired, as in the dispatch benchmark).
"""

from __future__ import annotations

import warnings
from typing import Any

from . import GiB, KiB, MiB, aligned_empty, calibrate, interleaved, summary, timer

FULL_SIZES = tuple(KiB << (2 * i) for i in range(11))  # 1 KiB, 4 KiB, ..., 1 GiB
QUICK_SIZES = (KiB, 64 * KiB, 4 * MiB)
SAMPLE_S, REPEAT = 3e-4, 201  # seconds per sample, rounds
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
    repeat = 5 if quick else REPEAT
    order = [sizes[0], sizes[-1], *sizes[1:-1]]  # the two the bar compares, side by side
    srcs = {}
    for n in sizes:
        a = aligned_empty(n, "float32")
        a[:] = 1.0  # touch every page once, so no timing sees a first-touch fault
        srcs[n] = a
    results: dict[str, Any] = {"sizes": list(sizes), "pairs": {}, "memcpy": {}}
    for pair, (src, tgt, native) in PAIRS.items():
        timers = {}
        for n in dict.fromkeys(order):
            a = srcs[n]
            x = torch.from_numpy(a) if src == "torch" else a
            env = {"x": x, "torch": torch, "jax": jax, "np": np,
                   "to_framework": interop.to_framework}
            timers[("interop", n)] = timer(f"to_framework(x, {tgt!r})", env)
            timers[("native", n)] = timer(native, env)
        number = calibrate(timers[("native", sizes[0])], SAMPLE_S)
        samples = interleaved(timers, number, repeat)
        rows = []
        for n in sizes:
            rows.append({"nbytes": n, "interop_us": summary(samples[("interop", n)]),
                         "native_us": summary(samples[("native", n)])})
        first, last = samples[("interop", sizes[0])], samples[("interop", sizes[-1])]
        results["pairs"][pair] = {
            "native": native, "rows": rows, "number": number, "repeat": repeat,
            "largest_over_smallest": summary([b / a for a, b in zip(first, last)], 1)["median"],
            "ratio_of_medians": rows[-1]["interop_us"]["median"]
            / rows[0]["interop_us"]["median"],
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
