"""``import interop`` time in fresh interpreters, and the first (cold plan) call vs cached.

``import interop`` alone loads no registry (PEP 562: the API loads on first attribute
access), so three things are timed, each the median over fresh subprocesses:
``import interop``; ``import interop; interop.to_framework`` (the registry built); and the
bare interpreter (``python -c pass``) for reference. Each child also reports which
frameworks ended up in ``sys.modules`` (the bar: none). :func:`first_call` times what a user
meets: ``import interop`` plus the first conversion, against the native call's own first
call, with bytecode cached (the bar: under 10 ms more).
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
        "first_call": first_call(quick),
        "bar": {"bar": "import interop < 50 ms, no framework imported",
                "pass": med_plain < 50 and not imported,
                "with_registry_pass": med_touch < 50 and not imported_touch},
    }


# ---- the first call: import interop + one to_framework, against the native call's first ----
# Measured as a user meets it after ``pip install``: fresh interpreters, the frameworks of the
# value and the target already imported (and JAX's backend started), bytecode cached. This
# machine may set PYTHONDONTWRITEBYTECODE: it is unset and a private PYTHONPYCACHEPREFIX used,
# warmed by one run first, or the timings would be of the compiler.

_FIRST = """
import sys, time, json, warnings
warnings.filterwarnings("ignore")
{setup}
x = {value}
t0 = time.perf_counter()
{call}
t1 = time.perf_counter()
print(json.dumps({{"ms": (t1 - t0) * 1e3}}))
"""
FIRST_PAIRS = {
    # pair: (setup, value, native first call)
    "numpy->torch": ("import numpy as np, torch", "np.arange(1024.0)", "torch.from_numpy(x)"),
    "torch->numpy": ("import numpy as np, torch", "torch.arange(1024.0)", "x.numpy()"),
    "numpy->jax": ("import numpy as np, jax; jax.devices()", "np.arange(1024, dtype=np.float32)",
                   "jax.dlpack.from_dlpack(x)"),
    "pyarrow->numpy": ("import numpy as np, pyarrow as pa", "pa.array(np.arange(1024.0))",
                       "x.to_numpy(zero_copy_only=True)"),
    "pandas->torch": ("import numpy as np, pandas as pd, torch",
                      "pd.Series(np.arange(1024.0))", "torch.from_numpy(x.to_numpy())"),
}


QUICK_PAIRS = ("numpy->torch", "numpy->jax", "pandas->torch")  # --quick: a smoke run


def _bytecode_env(prefix: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = prefix
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def _first(code: str, env: dict[str, str]) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["ms"]


def first_call(quick: bool = False) -> dict[str, Any]:
    """Per pair, medians over fresh interpreters: ``import interop`` plus the first
    ``to_framework`` (ms), the native call's own first call, and the difference."""
    import tempfile

    runs = 1 if quick else 9
    pairs = QUICK_PAIRS if quick else tuple(FIRST_PAIRS)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="interop-pycache-") as prefix:
        env = _bytecode_env(prefix)
        for pair in pairs:
            setup, value, native = FIRST_PAIRS[pair]
            tgt = pair.split("->")[1]
            ours = _FIRST.format(setup=setup, value=value,
                                 call=f"import interop; interop.to_framework(x, {tgt!r})")
            theirs = _FIRST.format(setup=setup, value=value, call=native)
            _first(ours, env)  # warm: writes the bytecode of interop (and of the frameworks)
            _first(theirs, env)
            a, b = [], []
            for _ in range(runs):
                a.append(_first(ours, env))
                b.append(_first(theirs, env))
            ma, mb = statistics.median(a), statistics.median(b)
            out[pair] = {"interop_ms": ma, "native_ms": mb, "over_native_ms": ma - mb,
                         "interop_runs_ms": a, "native_runs_ms": b}
    worst = max(v["over_native_ms"] for v in out.values())
    return {"runs": runs, "pairs": out, "worst_over_native_ms": worst,
            "bar": {"bar": "import interop + first call < 10 ms over the native first call",
                    "pass": worst < 10}}
