"""AoS -> SoA and back with ``interop.aos_to_soa`` / ``soa_to_aos``: against memcpy and anchors.

Everything is timed interleaved in one run (each round times every contender once, odd
rounds in reverse order) and reported as medians:

- **the bar shape**: an ``(N, 8)`` float32 array (a structured array of 8 float32 fields
  for the anchors), written into an existing buffer (``*_out``, against ``np.copyto`` of the
  same bytes into an existing buffer: ``memcpy``) and into a fresh one (against
  ``ndarray.copy``, a memcpy that pays the same page faults: ``memcpy_fresh``); each on the
  kernel :func:`interop.transpose_kernel` picks (``llvm`` at this size), on it with one
  thread (``*_1thread``) and on the NumPy fallback (``*_numpy``);
- **anchors**: the same conversion the way a user would write it without interop --
  ``numpy.lib.recfunctions.structured_to_unstructured`` plus the transpose copy,
  ``pandas.DataFrame(records)`` then ``pyarrow.Table.from_pandas``, ``polars.from_numpy``;
  back: ``unstructured_to_structured``, ``DataFrame.to_records``;
- **mixed records**: 100 fields of mixed types (float64 ... bool, aligned, so with padding)
  into fresh columns, against ``memcpy_fresh`` of the same bytes, and anchors;
- **sweeps**: time against rows (8 float32 fields) and against fields (same bytes), both
  kernels and memcpy: how the cost grows;
- **first call**: in fresh interpreters, ``import llvmlite.binding`` alone, and the first
  large transpose (the kernel loaded, its machine code read from the on-disk cache) against
  the same process's steady state.

The memcpy baselines are single-threaded (a plain memcpy); both kernels share the rows among
every CPU from 16 MiB on; ``cpus`` says how many, ``other_load_cores`` how many cores other
processes kept busy meanwhile (Linux; ``None`` elsewhere).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from . import MiB, aligned_empty

BAR_OUT = 0.8  # out=, 8 float32 fields, both directions, of memcpy into an existing buffer
BAR_MIXED = 0.7  # 100 mixed fields into fresh columns, of memcpy into a fresh buffer
BAR_FIRST_MS = 100.0  # first large transpose <= import llvmlite + this + steady state


def _busy_ticks() -> int | None:
    """Clock ticks all CPUs spent busy since boot (Linux ``/proc/stat``), else ``None``."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(v) - v[3] - v[4]  # all but idle and iowait


class _Kernel:
    """Run a call on one kernel: ``"numpy"`` names the fallback (``kernel="numpy"``),
    ``"1thread"`` runs the chosen kernel on the calling thread only (``threads=1``), through
    the calls' own keywords."""

    CHOICES = {"numpy": {"kernel": "numpy"}, "1thread": {"threads": 1}}

    def on(self, kernel: str, f: Callable[..., Any]) -> Callable[[], Any]:
        choice = self.CHOICES[kernel]
        return lambda: f(**choice)


def _time(fns: dict[str, Callable[[], Any]], repeat: int) -> tuple[dict[str, list[float]],
                                                                    float | None]:
    """Seconds per call of each function, interleaved; and the cores others kept busy."""
    for f in fns.values():
        f()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    items = list(fns.items())
    busy0, cpu0, wall0 = _busy_ticks(), os.times(), time.perf_counter()
    for r in range(repeat):
        for k, f in items if r % 2 == 0 else reversed(items):
            t0 = time.perf_counter()
            f()
            samples[k].append(time.perf_counter() - t0)
    busy1, cpu1, wall = _busy_ticks(), os.times(), time.perf_counter() - wall0
    other = None
    if busy0 is not None and busy1 is not None:
        ours = cpu1.user + cpu1.system - cpu0.user - cpu0.system
        other = max(0.0, ((busy1 - busy0) / os.sysconf("SC_CLK_TCK") - ours) / wall)
    return samples, other


def _summary(samples: dict[str, list[float]], nbytes: int) -> dict[str, Any]:
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {"median_ms": {k: v * 1e3 for k, v in med.items()},
            "spread_ms": {k: [min(v) * 1e3, max(v) * 1e3] for k, v in samples.items()},
            "gb_per_s": {k: nbytes / v / 1e9 for k, v in med.items()}}


def _bar_shape(nbytes: int, columns: int, repeat: int, kern: _Kernel) -> dict[str, Any]:
    import numpy as np
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    from numpy.lib import recfunctions as rfn

    import interop
    from interop import transpose_kernel

    n = nbytes // (4 * columns)
    nbytes = n * 4 * columns
    a = aligned_empty(nbytes, "float32").reshape(n, columns)
    a[:] = np.arange(n * columns, dtype=np.float32).reshape(n, columns)
    rec = a.reshape(-1).view([(f"f{j}", "<f4") for j in range(columns)])
    cols = aligned_empty(nbytes, "float32").reshape(columns, n)
    cols[:] = 0
    rows = aligned_empty(nbytes, "float32").reshape(n, columns)
    rows[:] = 0
    flat_src, flat_dst = a.reshape(-1), rows.reshape(-1)
    table = interop.aos_to_soa(a)
    df = pd.DataFrame(rec)
    fns: dict[str, Callable[[], Any]] = {
        "memcpy": lambda: np.copyto(flat_dst, flat_src),
        "memcpy_fresh": lambda: flat_src.copy(),
        "aos_to_soa_out": lambda: interop.aos_to_soa(a, out=cols),
        "soa_to_aos_out": lambda: interop.soa_to_aos(table, target="numpy", out=rows),
        "aos_to_soa": lambda: interop.aos_to_soa(a),
        "soa_to_aos": lambda: interop.soa_to_aos(table, target="numpy"),
        "aos_to_soa_out_1thread": kern.on("1thread", lambda **k: interop.aos_to_soa(
            a, out=cols, **k)),
        "soa_to_aos_out_1thread": kern.on("1thread", lambda **k: interop.soa_to_aos(
            table, target="numpy", out=rows, **k)),
        "aos_to_soa_out_numpy": kern.on("numpy", lambda **k: interop.aos_to_soa(a, out=cols, **k)),
        "soa_to_aos_out_numpy": kern.on("numpy", lambda **k: interop.soa_to_aos(
            table, target="numpy", out=rows, **k)),
        "numpy_transpose_copy": lambda: np.copyto(cols, a.T),
        "anchor_structured_to_unstructured": lambda: np.ascontiguousarray(
            rfn.structured_to_unstructured(rec).T),
        "anchor_pandas_to_arrow": lambda: pa.Table.from_pandas(pd.DataFrame(rec),
                                                               preserve_index=False),
        "anchor_pyarrow_from_pandas": lambda: pa.Table.from_pandas(df, preserve_index=False),
        "anchor_polars_from_numpy": lambda: pl.from_numpy(rec),
        "anchor_unstructured_to_structured": lambda: rfn.unstructured_to_structured(
            cols.T, dtype=rec.dtype),
        "anchor_to_records": lambda: df.to_records(index=False),
    }
    samples, other = _time(fns, repeat)
    interop.aos_to_soa(a, out=cols)
    back = interop.soa_to_aos(table, target="numpy")
    correct = bool(np.array_equal(cols, a.T) and np.array_equal(back, a))
    res = _summary(samples, nbytes)
    g = res["gb_per_s"]
    pairs = {"aos_to_soa_out": "memcpy", "soa_to_aos_out": "memcpy",
             "aos_to_soa": "memcpy_fresh", "soa_to_aos": "memcpy_fresh",
             "aos_to_soa_out_1thread": "memcpy", "soa_to_aos_out_1thread": "memcpy",
             "aos_to_soa_out_numpy": "memcpy", "soa_to_aos_out_numpy": "memcpy",
             "numpy_transpose_copy": "memcpy"}
    fwd = [k for k in fns if k.startswith("anchor_") and k not in
           ("anchor_unstructured_to_structured", "anchor_to_records")]
    rev = ["anchor_unstructured_to_structured", "anchor_to_records"]
    best_fwd, best_rev = max(fwd, key=g.get), max(rev, key=g.get)
    res.update({
        "nbytes": nbytes, "rows": n, "columns": columns, "dtype": "float32",
        "repeat": repeat, "other_load_cores": other, "correct": correct,
        "kernel": transpose_kernel(nbytes)._asdict(),
        "compared_with": pairs,
        "ratio_to_memcpy": {k: g[k] / g[b] for k, b in pairs.items()},
        "fastest_anchor": {"aos_to_soa": best_fwd, "soa_to_aos": best_rev},
        "ratio_to_fastest_anchor": {
            "aos_to_soa": g["aos_to_soa"] / g[best_fwd],
            "soa_to_aos": g["soa_to_aos"] / g[best_rev]},
    })
    return res


def _mixed(nbytes: int, fields: int, repeat: int, kern: _Kernel) -> dict[str, Any]:
    import numpy as np
    import pandas as pd
    import polars as pl

    import interop
    from interop import transpose_kernel

    types = ["<f8", "<f4", "<i8", "<i4", "<i2", "i1", "?", "<u4"]
    dt = np.dtype([(f"f{j}", types[j % len(types)]) for j in range(fields)], align=True)
    n = max(1, nbytes // dt.itemsize)
    raw = aligned_empty(n * dt.itemsize, "uint8")
    raw[:] = np.random.default_rng(0).integers(0, 2, raw.size, dtype=np.uint8)
    rec = raw.view(dt)
    flat = raw
    fns: dict[str, Callable[[], Any]] = {
        "memcpy_fresh": lambda: flat.copy(),
        "aos_to_soa": lambda: interop.aos_to_soa(rec, target="numpy"),
        "aos_to_soa_1thread": kern.on("1thread", lambda **k: interop.aos_to_soa(
            rec, target="numpy", **k)),
        "aos_to_soa_numpy": kern.on("numpy", lambda **k: interop.aos_to_soa(
            rec, target="numpy", **k)),
        "anchor_pandas_dataframe": lambda: pd.DataFrame(rec),
        "anchor_polars_from_numpy": lambda: pl.from_numpy(rec),
    }
    samples, other = _time(fns, repeat)
    got = interop.aos_to_soa(rec, target="numpy")
    correct = all(np.array_equal(got[k], rec[k]) for k in dt.names)
    res = _summary(samples, n * dt.itemsize)
    g = res["gb_per_s"]
    anchors = [k for k in fns if k.startswith("anchor_")]
    best = max(anchors, key=g.get)
    res.update({"nbytes": n * dt.itemsize, "rows": n, "fields": fields, "itemsize": dt.itemsize,
                "field_bytes": sum(dt.fields[k][0].itemsize for k in dt.names),
                "repeat": repeat, "other_load_cores": other, "correct": correct,
                "kernel": transpose_kernel(n * dt.itemsize)._asdict(),
                "ratio_to_memcpy": {k: g[k] / g["memcpy_fresh"] for k in
                                    ("aos_to_soa", "aos_to_soa_1thread", "aos_to_soa_numpy")},
                "fastest_anchor": best, "ratio_to_fastest_anchor": g["aos_to_soa"] / g[best]})
    return res


def _sweep(shapes: list[tuple[int, int]], repeat: int, kern: _Kernel) -> list[dict[str, Any]]:
    """``(rows, fields)`` float32 shapes: both kernels into out= and memcpy, ms."""
    import numpy as np

    import interop
    from interop import transpose_kernel

    out = []
    for n, c in shapes:
        nbytes = n * c * 4
        a = aligned_empty(nbytes, "float32").reshape(n, c)
        a[:] = 1
        cols = aligned_empty(nbytes, "float32").reshape(c, n)
        dst = aligned_empty(nbytes, "float32")
        fns = {"memcpy": lambda dst=dst, a=a: np.copyto(dst, a.reshape(-1)),
               "kernel": lambda a=a, cols=cols: interop.aos_to_soa(a, target="numpy", out=cols),
               "numpy": kern.on("numpy", lambda a=a, cols=cols, **k: interop.aos_to_soa(
                   a, target="numpy", out=cols, **k))}
        samples, _ = _time(fns, repeat)
        out.append({"rows": n, "fields": c, "nbytes": nbytes,
                    "kernel": transpose_kernel(nbytes).name,
                    "median_ms": {k: statistics.median(v) * 1e3 for k, v in samples.items()}})
    return out


FIRST_CALL = """
import sys, time
t0 = time.perf_counter(); import llvmlite.binding; t1 = time.perf_counter()
print("import", t1 - t0)
""", """
import sys, time, numpy as np, interop
a = np.ones(({n}, 8), np.float32); out = np.empty((8, {n}), np.float32); out[:] = 0
interop.aos_to_soa(a[:16], target="numpy")  # interop's own first call, not the kernel's
t0 = time.perf_counter(); interop.aos_to_soa(a, target="numpy", out=out)
first = time.perf_counter() - t0
steady = []
for _ in range(7):
    t0 = time.perf_counter(); interop.aos_to_soa(a, target="numpy", out=out)
    steady.append(time.perf_counter() - t0)
steady.sort()
print("first", first, "steady", steady[3], "llvmlite" in sys.modules)
"""


def _first_call(nbytes: int, runs: int) -> dict[str, Any]:
    """Fresh interpreters: ``import llvmlite.binding``; the first large transpose against
    steady state."""
    def child(code: str) -> list[str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=600)
        if out.returncode:
            raise RuntimeError(out.stderr[-2000:])
        return out.stdout.split()

    child(FIRST_CALL[1].format(n=nbytes // 32))  # fills the on-disk cache if it is empty
    imports, firsts, steadies = [], [], []
    for _ in range(runs):
        imports.append(float(child(FIRST_CALL[0])[1]))
        got = child(FIRST_CALL[1].format(n=nbytes // 32))
        firsts.append(float(got[1]))
        steadies.append(float(got[3]))
    imp, first, steady = (statistics.median(x) * 1e3 for x in (imports, firsts, steadies))
    over = first - steady - imp
    return {"nbytes": nbytes, "runs": runs, "import_llvmlite_ms": imp, "first_ms": first,
            "steady_ms": steady, "first_over_steady_minus_import_ms": over,
            "pass": over <= BAR_FIRST_MS}


def _gpu(nbytes: int, repeat: int) -> dict[str, Any]:
    """The bar shape on the GPU (CuPy arrays): both directions into out= against a
    device-to-device copy of the same bytes; skipped, with the reason, without a device."""
    from .gpu import cuda_reason

    reason = cuda_reason()
    if reason is not None:
        return {"skipped": True, "reason": reason}
    import cupy  # pragma: no cover - needs a GPU

    import interop

    n = nbytes // 32
    a = cupy.arange(n * 8, dtype=cupy.float32).reshape(n, 8)
    cols = cupy.empty((8, n), cupy.float32)
    rows = cupy.empty_like(a)
    dst = cupy.empty_like(a)
    table = {f"c{j}": cols[j] for j in range(8)}
    sync = cupy.cuda.Device().synchronize

    def synced(f: Callable[[], Any]) -> Callable[[], Any]:
        def g() -> Any:
            f()
            sync()
        return g

    fns = {"d2d_copy": synced(lambda: cupy.copyto(dst, a)),
           "aos_to_soa_out": synced(lambda: interop.aos_to_soa(a, target="cupy", out=cols)),
           "soa_to_aos_out": synced(lambda: interop.soa_to_aos(table, target="cupy", out=rows))}
    samples, _ = _time(fns, repeat)
    res = _summary(samples, n * 32)
    g = res["gb_per_s"]
    correct = bool((cols == a.T).all() and (rows == a).all())
    return {"skipped": False, **res, "correct": correct,
            "ratio_to_d2d": {k: g[k] / g["d2d_copy"] for k in ("aos_to_soa_out",
                                                               "soa_to_aos_out")}}


def run(quick: bool = False) -> dict[str, Any]:
    from interop.transpose import cpu as transpose

    kern = _Kernel()
    repeat = 3 if quick else 9
    main = _bar_shape(1 * MiB if quick else 256 * MiB, 8, repeat, kern)
    mixed = _mixed(1 * MiB if quick else 256 * MiB, 100, repeat, kern)
    rows = [1 << k for k in ((10, 14) if quick else (10, 13, 15, 17, 19, 21, 23))]
    fields = (2, 8) if quick else (2, 4, 8, 16, 32, 64, 128, 256)
    sweep_bytes = 1 * MiB if quick else 64 * MiB
    sweeps = {"rows": _sweep([(n, 8) for n in rows], 3 if quick else 5, kern),
              "fields": _sweep([(sweep_bytes // (4 * c), c) for c in fields],
                               3 if quick else 5, kern)}
    first = _first_call(64 * MiB if quick else 256 * MiB, 1 if quick else 3)
    r = main["ratio_to_memcpy"]
    return {
        **main,
        "cpus": transpose._cpus(),
        "kernel_min_bytes": transpose.KERNEL_MIN_BYTES,
        "note": ("*_out write into an existing buffer and are compared with memcpy into an "
                 "existing buffer (np.copyto), the others allocate and are compared with memcpy "
                 "into a fresh buffer (ndarray.copy); *_numpy force the NumPy fallback. "
                 f"Kernel at this size: {main['kernel']['name']} ({main['kernel']['why']}); "
                 f"threads of both kernels: {transpose._cpus()}; memcpy is single-threaded"),
        "mixed": mixed, "sweeps": sweeps, "first_call": first,
        "gpu": _gpu(1 * MiB if quick else 256 * MiB, repeat),
        "bar": {"aos_to_soa_out": r["aos_to_soa_out"], "soa_to_aos_out": r["soa_to_aos_out"],
                "mixed_fresh": mixed["ratio_to_memcpy"]["aos_to_soa"],
                "pass": (r["aos_to_soa_out"] >= BAR_OUT and r["soa_to_aos_out"] >= BAR_OUT
                         and mixed["ratio_to_memcpy"]["aos_to_soa"] >= BAR_MIXED),
                "first_call_pass": first["pass"]},
    }
