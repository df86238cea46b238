"""Benchmarks for interop: dispatch overhead, size sweep, tables, AoS<->SoA, import time.

``python -m benchmarks`` runs everything and writes ``benchmarks/results/<machine>.json``,
a markdown summary and PNG plots; ``--quick`` uses tiny sizes (a smoke run).
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable
from typing import Any

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


def aligned_empty(nbytes: int, dtype: Any = "float32", alignment: int = 64) -> Any:
    """An uninitialised 1-D NumPy array of ``nbytes`` whose data pointer is ``alignment``-aligned.

    XLA on the CPU imports a DLPack buffer without copying only when it is 64-byte aligned,
    so every benchmark array is aligned: the native baselines then are zero-copy too.
    """
    import numpy as np

    dt = np.dtype(dtype)
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    off = (-raw.ctypes.data) % alignment
    return raw[off:off + nbytes].view(dt)


def timer(stmt: str | Callable[[], Any], env: dict[str, Any] | None = None) -> timeit.Timer:
    """A :class:`timeit.Timer` for ``stmt`` (a string run with ``env`` as globals, or a call)."""
    if callable(stmt):
        return timeit.Timer(stmt)
    return timeit.Timer(stmt, globals=dict(env or {}))


def calibrate(t: timeit.Timer, target_s: float) -> int:
    """Calls per sample so that one sample of ``t`` takes about ``target_s`` seconds."""
    for _ in range(10):  # the first calls are cold (0.5 ms for a 1 us call, more for JAX)
        if t.timeit(1) < target_s / 50:
            break
    n = 1
    while True:
        el = t.timeit(n)
        if el >= target_s / 5 or n >= 1 << 20:
            return max(1, int(n * target_s / max(el, 1e-9)))
        n *= 4


def interleaved(timers: dict[str, timeit.Timer], number: int, repeat: int,
                warmup: int | None = None) -> dict[str, list[float]]:
    """Seconds per call of each timer, ``repeat`` samples of ``number`` calls, interleaved.

    Round ``r`` times every timer once before round ``r + 1`` starts, so drift (frequency
    scaling, a noisy neighbour) hits every contender alike; odd rounds run them in reverse
    order, so neither always runs first (with warm or cold caches).
    """
    for t in timers.values():  # warm-up: one sample's worth of calls (``warmup`` if given),
        t.timeit(max(1, number if warmup is None else warmup))  # so caches fill untimed
    out: dict[str, list[float]] = {k: [] for k in timers}
    items = list(timers.items())
    for r in range(repeat):
        for k, t in items if r % 2 == 0 else reversed(items):
            out[k].append(t.timeit(number) / number)
    return out


def summary(samples: list[float], scale: float = 1e6) -> dict[str, float]:
    """Median, quartiles, min and max of ``samples`` times ``scale`` (default: microseconds)."""
    xs = sorted(s * scale for s in samples)
    if len(xs) >= 4:
        q1, _, q3 = statistics.quantiles(xs, n=4)
    else:
        q1, q3 = xs[0], xs[-1]
    return {"median": statistics.median(xs), "q1": q1, "q3": q3, "min": xs[0], "max": xs[-1],
            "n": len(xs)}


def fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"
