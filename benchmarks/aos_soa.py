"""AoS -> SoA and back: a real transpose, so one copy; its bandwidth against memcpy.

Inputs: an ``(N, C)`` row-major float32 array and the same bytes as a NumPy structured
array with ``C`` float32 fields. Output: ``C`` contiguous columns (one ``(C, N)`` buffer).
When ``interop.aos_to_soa`` exists it is measured; otherwise (reported as such) a
straightforward NumPy reference: the plain transpose-copy ``np.copyto(out, a.T)`` and the
same copy done in cache-sized row blocks. memcpy is ``np.copyto`` of the same bytes.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from . import MiB, aligned_empty

BLOCK_BYTES = 1 << 20  # a row block that stays in cache while its columns are written


def naive_aos_to_soa(a: Any, out: Any) -> Any:
    """``(N, C)`` row-major -> ``(C, N)``: one strided copy, as NumPy orders it."""
    import numpy as np

    np.copyto(out, a.T)
    return out


def blocked_aos_to_soa(a: Any, out: Any) -> Any:
    """The same copy in row blocks of ~1 MiB, so each block is read from memory once."""
    n, c = a.shape
    step = max(1, BLOCK_BYTES // (c * a.itemsize))
    for r0 in range(0, n, step):
        out[:, r0:r0 + step] = a[r0:r0 + step].T
    return out


def blocked_soa_to_aos(cols: Any, out: Any) -> Any:
    """``(C, N)`` columns -> ``(N, C)`` rows, in row blocks."""
    c, n = cols.shape
    step = max(1, BLOCK_BYTES // (c * cols.itemsize))
    for r0 in range(0, n, step):
        out[r0:r0 + step] = cols[:, r0:r0 + step].T
    return out


def naive_soa_to_aos(cols: Any, out: Any) -> Any:
    import numpy as np

    np.copyto(out, cols.T)
    return out


def structured_to_soa(s: Any, out: Any) -> Any:
    """A structured array (one float32 field per column) -> ``(C, N)``, field by field."""
    for i, name in enumerate(s.dtype.names):
        out[i] = s[name]
    return out


def structured_blocked_to_soa(s: Any, out: Any) -> Any:
    """The structured array viewed as ``(N, C)`` (same bytes), then the blocked transpose."""
    import numpy as np

    c = len(s.dtype.names)
    flat = s.view(np.float32).reshape(len(s), c)
    return blocked_aos_to_soa(flat, out)


def _times(fn: Any, repeat: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def run(quick: bool = False, nbytes: int | None = None, columns: int = 8) -> dict[str, Any]:
    import numpy as np

    import interop

    nbytes = nbytes or (1 * MiB if quick else 256 * MiB)
    repeat = 3 if quick else 7
    n = nbytes // (4 * columns)
    nbytes = n * 4 * columns
    a = aligned_empty(nbytes, "float32").reshape(n, columns)
    a[:] = np.arange(n * columns, dtype=np.float32).reshape(n, columns)
    s = a.reshape(-1).view(np.dtype([(f"f{i}", "<f4") for i in range(columns)]))
    out = aligned_empty(nbytes, "float32").reshape(columns, n)
    out[:] = 0
    back = aligned_empty(nbytes, "float32").reshape(n, columns)
    back[:] = 0
    flat_src, flat_dst = a.reshape(-1), back.reshape(-1)

    try:
        library = interop.aos_to_soa
    except AttributeError:
        library = None
    fns: dict[str, Any] = {
        "memcpy": lambda: np.copyto(flat_dst, flat_src),
        "aos_to_soa_naive": lambda: naive_aos_to_soa(a, out),
        "aos_to_soa_blocked": lambda: blocked_aos_to_soa(a, out),
        "structured_to_soa_fields": lambda: structured_to_soa(s, out),
        "structured_to_soa_blocked": lambda: structured_blocked_to_soa(s, out),
        "soa_to_aos_naive": lambda: naive_soa_to_aos(out, back),
        "soa_to_aos_blocked": lambda: blocked_soa_to_aos(out, back),
    }
    if library is not None:
        fns["aos_to_soa_library"] = lambda: library(a)
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            samples[k].extend(_times(f, 1))
    blocked_aos_to_soa(a, out)
    correct = bool(np.array_equal(out, a.T))
    med = {k: statistics.median(v) for k, v in samples.items()}
    gbps = {k: nbytes / v / 1e9 for k, v in med.items()}
    ratio = {k: v / gbps["memcpy"] for k, v in gbps.items() if k != "memcpy"}
    if library is not None:
        measured, note = "aos_to_soa_library", "interop.aos_to_soa"
    else:
        measured = "aos_to_soa_blocked"
        note = ("interop.aos_to_soa is not present in the library: measured a NumPy reference "
                "implementation (row-blocked transpose copy, benchmarks/aos_soa.py)")
    back_key = "soa_to_aos_blocked"
    return {
        "nbytes": nbytes, "rows": n, "columns": columns, "dtype": "float32", "repeat": repeat,
        "library_function_present": library is not None, "note": note,
        "median_ms": {k: v * 1e3 for k, v in med.items()},
        "gb_per_s": gbps, "ratio_to_memcpy": ratio, "correct": correct,
        "bar": {"measured": measured, "ratio": ratio[measured],
                "back": back_key, "back_ratio": ratio[back_key],
                "pass": ratio[measured] >= 0.7},
    }
