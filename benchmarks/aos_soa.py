"""AoS -> SoA and back with ``interop.aos_to_soa`` / ``soa_to_aos``: GB/s against memcpy.

Inputs: an ``(N, C)`` row-major float32 array. Each library call is compared like for like:
writing into an existing buffer (``out=``) against ``np.copyto`` of the same bytes into an
existing buffer, and the default call (a fresh output buffer) against ``ndarray.copy`` (memcpy
into a fresh buffer, which pays the same page faults). NumPy's one-line transpose copy
``np.copyto(out, a.T)`` is shown for reference.

From ``interop.tables.aos._THREAD_MIN_BYTES`` (16 MiB) on, the library shares the blocks of
rows among all the process's CPUs (NumPy releases the GIL while it copies); the memcpy
baselines are single-threaded, a plain memcpy of the same bytes, as the bar asks. ``cpus``
records how many CPUs the library could use, and ``other_load_cores`` how many cores other
processes kept busy meanwhile (Linux; ``None`` elsewhere): another process on a core takes
that core from the threaded copy.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from . import MiB, aligned_empty

BAR = 0.7
PAIRS = {  # library kernel -> the memcpy it is compared with
    "aos_to_soa_out": "memcpy",
    "aos_to_soa": "memcpy_fresh",
    "soa_to_aos_out": "memcpy",
    "soa_to_aos": "memcpy_fresh",
    "numpy_transpose_copy": "memcpy",
}


def _busy_ticks() -> int | None:
    """Clock ticks all CPUs spent busy since boot (Linux ``/proc/stat``), else ``None``."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(v) - v[3] - v[4]  # all but idle and iowait


def run(quick: bool = False, nbytes: int | None = None, columns: int = 8) -> dict[str, Any]:
    import numpy as np

    import interop

    nbytes = nbytes or (1 * MiB if quick else 256 * MiB)
    repeat = 3 if quick else 9
    n = nbytes // (4 * columns)
    nbytes = n * 4 * columns
    a = aligned_empty(nbytes, "float32").reshape(n, columns)
    a[:] = np.arange(n * columns, dtype=np.float32).reshape(n, columns)
    cols = aligned_empty(nbytes, "float32").reshape(columns, n)
    cols[:] = 0
    rows = aligned_empty(nbytes, "float32").reshape(n, columns)
    rows[:] = 0
    flat_src, flat_dst = a.reshape(-1), rows.reshape(-1)
    table = interop.aos_to_soa(a)

    fns: dict[str, Any] = {
        "memcpy": lambda: np.copyto(flat_dst, flat_src),
        "memcpy_fresh": lambda: flat_src.copy(),
        "aos_to_soa_out": lambda: interop.aos_to_soa(a, out=cols),
        "aos_to_soa": lambda: interop.aos_to_soa(a),
        "soa_to_aos_out": lambda: interop.soa_to_aos(table, target="numpy", out=rows),
        "soa_to_aos": lambda: interop.soa_to_aos(table, target="numpy"),
        "numpy_transpose_copy": lambda: np.copyto(cols, a.T),
    }
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for f in fns.values():
        f()
    busy0, cpu0, wall0 = _busy_ticks(), os.times(), time.perf_counter()
    for _ in range(repeat):  # interleaved, so machine noise hits every kernel alike
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            samples[k].append(time.perf_counter() - t0)
    busy1, cpu1, wall = _busy_ticks(), os.times(), time.perf_counter() - wall0
    other = None
    if busy0 is not None and busy1 is not None:
        ours = cpu1.user + cpu1.system - cpu0.user - cpu0.system
        other = max(0.0, ((busy1 - busy0) / os.sysconf("SC_CLK_TCK") - ours) / wall)
    interop.aos_to_soa(a, out=cols)
    back = interop.soa_to_aos(table, target="numpy")
    correct = bool(np.array_equal(cols, a.T) and np.array_equal(back, a))
    med = {k: statistics.median(v) for k, v in samples.items()}
    gbps = {k: nbytes / v / 1e9 for k, v in med.items()}
    ratio = {k: gbps[k] / gbps[base] for k, base in PAIRS.items()}
    from interop.tables import aos

    cpus = aos._cpus()
    threads = cpus if nbytes >= aos._THREAD_MIN_BYTES else 1
    load = f"{other:.2f}" if other is not None else "unknown"
    return {
        "nbytes": nbytes, "rows": n, "columns": columns, "dtype": "float32", "repeat": repeat,
        "cpus": cpus, "threads": threads, "other_load_cores": other,
        "note": ("interop.aos_to_soa / soa_to_aos; *_out write into an existing buffer and are "
                 "compared with memcpy into an existing buffer, the others allocate and are "
                 "compared with memcpy into a fresh buffer. The library copies on "
                 f"{threads} thread(s) of {cpus} CPU(s) here (from "
                 f"{aos._THREAD_MIN_BYTES // MiB} MiB on, every CPU); the memcpy baselines are "
                 "single-threaded. Other processes kept "
                 f"{load} cores busy during the timing"),
        "compared_with": PAIRS,
        "median_ms": {k: v * 1e3 for k, v in med.items()},
        "spread_ms": {k: [min(v) * 1e3, max(v) * 1e3] for k, v in samples.items()},
        "gb_per_s": gbps, "ratio_to_memcpy": ratio, "correct": correct,
        "bar": {"measured": "aos_to_soa_out", "ratio": ratio["aos_to_soa_out"],
                "fresh_ratio": ratio["aos_to_soa"],
                "back": "soa_to_aos_out", "back_ratio": ratio["soa_to_aos_out"],
                "pass": ratio["aos_to_soa_out"] >= BAR},
    }
