"""``import interop`` time in fresh interpreters, and the first (cold plan) call vs cached.

``import interop`` alone loads no registry (PEP 562: the API loads on first attribute
access), so three things are timed, each the median over fresh subprocesses:
``import interop``; ``import interop; interop.to_framework`` (the registry built); and the
bare interpreter (``python -c pass``) for reference. Each child also reports which
frameworks ended up in ``sys.modules`` (the bar: none).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FRAMEWORK_MODULES = ("numpy", "torch", "jax", "jaxlib", "pyarrow", "pandas", "polars", "cupy")
SRC = str(Path(__file__).resolve().parent.parent / "src")

_CHILD = """
import sys, time, json
t0 = time.perf_counter()
import interop
t1 = time.perf_counter()
if {touch}:
    interop.to_framework
t2 = time.perf_counter()
print(json.dumps({{"import_ms": (t1 - t0) * 1e3, "touch_ms": (t2 - t1) * 1e3,
                  "imported": [m for m in {mods!r} if m in sys.modules]}}))
"""

_COLD = """
import sys, time, json, warnings
warnings.filterwarnings("ignore")
import numpy as np, torch, jax, pyarrow as pa
import interop
t0 = time.perf_counter(); interop.to_framework; t1 = time.perf_counter()
registry_ms = (t1 - t0) * 1e3
b = np.empty(4096 + 64, np.uint8); o = (-b.ctypes.data) % 64
a = b[o:o + 4096].view(np.float32); a[:] = 1
vals = {{"numpy": a, "torch": torch.from_numpy(a.copy()), "pyarrow": pa.array(a)}}
out = {{}}
for src, tgt in {pairs!r}:
    x = vals[src]
    t0 = time.perf_counter(); interop.to_framework(x, tgt); t1 = time.perf_counter()
    cold = (t1 - t0) * 1e6
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        interop.to_framework(x, tgt)
    cached = (time.perf_counter() - t0) / n * 1e6
    out[src + "->" + tgt] = {{"cold_us": cold, "cached_us": cached}}
print(json.dumps({{"registry_load_ms": registry_ms, "pairs": out}}))
"""
COLD_PAIRS = [("numpy", "torch"), ("torch", "numpy"), ("numpy", "jax"), ("pyarrow", "torch")]


def _child(code: str) -> tuple[dict[str, Any], float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    wall = (time.perf_counter() - t0) * 1e3
    return (json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}), wall


def run(quick: bool = False) -> dict[str, Any]:
    runs = 3 if quick else 11
    plain, touched, bare = [], [], []
    imported: set[str] = set()
    imported_touch: set[str] = set()
    _child("pass")  # warm the file cache
    for _ in range(runs):
        r, _ = _child(_CHILD.format(touch=False, mods=FRAMEWORK_MODULES))
        plain.append(r["import_ms"])
        imported.update(r["imported"])
        r, _ = _child(_CHILD.format(touch=True, mods=FRAMEWORK_MODULES))
        touched.append(r["import_ms"] + r["touch_ms"])
        imported_touch.update(r["imported"])
        _, wall = _child("pass")
        bare.append(wall)
    cold, _ = _child(_COLD.format(pairs=COLD_PAIRS))
    med_plain = statistics.median(plain)
    med_touch = statistics.median(touched)
    return {
        "runs": runs,
        "import_ms": {"median": med_plain, "min": min(plain), "max": max(plain)},
        "import_and_registry_ms": {"median": med_touch, "min": min(touched),
                                   "max": max(touched)},
        "bare_interpreter_wall_ms": statistics.median(bare),
        "frameworks_imported": sorted(imported),
        "frameworks_imported_after_registry": sorted(imported_touch),
        "cold_plan": cold,
        "bar": {"bar": "import interop < 50 ms, no framework imported",
                "pass": med_plain < 50 and not imported,
                "with_registry_pass": med_touch < 50 and not imported_touch},
    }
