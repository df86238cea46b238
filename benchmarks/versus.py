"""This checkout's interop against another commit's, in one run: ``python -m benchmarks.versus
--base REV``.

The base commit's ``src/interop`` is exported (``git archive``) and renamed to the package
``interop_base``, so both load in one process. Dispatch: for every CPU pair of
``benchmarks.dispatch``, the native call (its first spelling there that works zero-copy),
this checkout's ``to_framework`` and the base's are
timed in interleaved short samples, in passes over the pairs; each overhead is the median of
the per-round differences from the native call. First call: fresh interpreters, alternately
of the two versions, each importing its interop and converting one value (the frameworks
imported first), both compiled to bytecode beforehand as an install has it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import calibrate, interleaved, summary, timer
from .dispatch import FRAMEWORKS, candidates, data_pointer, make_values

ROOT = Path(__file__).resolve().parent.parent
FIRST_CALL_PAIRS = [("numpy", "torch"), ("torch", "numpy"), ("numpy", "jax"),
                    ("pyarrow", "numpy"), ("pandas", "torch")]
MAKE = {"numpy": "np.arange(1024, dtype=np.float32)", "torch": "torch.arange(1024.0)",
        "pyarrow": "pa.array(np.arange(1024, dtype=np.float32))",
        "pandas": "pd.Series(np.arange(1024, dtype=np.float32))"}
IMPORTS = {"numpy": "import numpy as np", "torch": "import torch", "jax": "import jax",
           "pyarrow": "import pyarrow as pa", "pandas": "import pandas as pd"}


def export_base(rev: str, into: Path) -> Path:
    """``src/interop`` of ``rev`` as the package ``interop_base`` under ``into``."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/interop"],
                         check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    pkg = into / "interop_base"
    (into / "src" / "interop").rename(pkg)
    name = re.compile(r"\binterop(?=[.\s\"'])")
    for path in pkg.rglob("*.py"):
        path.write_text(name.sub("interop_base", path.read_text()))
    return into


def dispatch(quick: bool, only: set[str] | None = None) -> list[dict[str, Any]]:
    import interop_base

    import interop

    values = make_values()
    repeat, target, passes = (5, 0.002, 1) if quick else (301, 3e-4, 3)
    plans = []
    for src in FRAMEWORKS:
        for tgt in FRAMEWORKS:
            if src == tgt or (only and f"{src}->{tgt}" not in only):
                continue
            x = values[src]
            env = {"x": x, "new": interop.to_framework, "base": interop_base.to_framework,
                   **_native_env()}
            native = None
            for stmt in candidates(src, tgt):
                try:
                    out = eval(stmt, dict(env))  # noqa: S307 - our own fixed statements
                except Exception:  # a spelling this version does not accept
                    continue
                if data_pointer(out) == data_pointer(x):
                    native = stmt
                    break
            if native is None:
                continue
            for fn in (interop.to_framework, interop_base.to_framework):
                fn(x, tgt)  # plan once
            timers = {"native": timer(native, env), "new": timer(f"new(x, {tgt!r})", env),
                      "base": timer(f"base(x, {tgt!r})", env)}
            plans.append(({"pair": f"{src}->{tgt}", "native": native,
                           "number": calibrate(timers["native"], target)}, timers))
    got: dict[str, dict[str, list[float]]] = {r["pair"]: {"new": [], "base": []}
                                              for r, _ in plans}
    for _ in range(passes):
        for row, timers in plans:
            s = interleaved(timers, row["number"], max(1, repeat // passes))
            for k in ("new", "base"):
                got[row["pair"]][k] += [a - b for a, b in zip(s[k], s["native"])]
    rows = []
    for row, _ in plans:
        d = got[row["pair"]]
        rows.append({**row, "new_us": summary(d["new"])["median"],
                     "base_us": summary(d["base"])["median"]})
    return rows


def _native_env() -> dict[str, Any]:
    import jax
    import numpy as np
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import torch

    return {"np": np, "torch": torch, "jax": jax, "pa": pa, "pd": pd, "pl": pl}


def first_call(base_dir: Path, runs: int) -> list[dict[str, Any]]:
    """Import + first conversion, ms, in fresh interpreters (frameworks imported first)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(base_dir)]))
    for tree in (ROOT / "src" / "interop", base_dir / "interop_base"):  # as installed
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], env=env,
                       check=True, capture_output=True)
    rows = []
    for src, tgt in FIRST_CALL_PAIRS:
        times: dict[str, list[float]] = {"new": [], "base": []}
        setup = "; ".join(IMPORTS[f] for f in {"numpy", src, tgt})
        for _ in range(runs):
            for key, pkg in (("new", "interop"), ("base", "interop_base")):
                code = (f"{setup}; import time; x = {MAKE[src]}; t0 = time.perf_counter(); "
                        f"import {pkg}; {pkg}.to_framework(x, {tgt!r}); "
                        "print((time.perf_counter() - t0) * 1e3)")
                out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                     capture_output=True, text=True).stdout
                times[key].append(float(out.strip().splitlines()[-1]))
        rows.append({"pair": f"{src}->{tgt}", "runs": runs,
                     "new_ms": statistics.median(times["new"]),
                     "base_ms": statistics.median(times["base"])})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.versus", description=__doc__)
    ap.add_argument("--base", required=True, help="the commit to compare with")
    ap.add_argument("--quick", action="store_true", help="few samples (a smoke run)")
    ap.add_argument("--runs", type=int, default=9, help="fresh interpreters per first call")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--pairs", default="", help="comma-separated pairs (default: all)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base_dir = export_base(args.base, Path(tmp))
        sys.path.insert(0, str(base_dir))
        rows = dispatch(args.quick, {p for p in args.pairs.split(",") if p})
        first = first_call(base_dir, 1 if args.quick else args.runs)
    if not rows:
        ap.error(f"no pair to time: {args.pairs!r} names none of {FRAMEWORKS} as 'src->tgt'")
    print(f"dispatch overhead over the native call, us (paired medians), base {args.base}:")
    for r in rows:
        print(f"  {r['pair']:18} base {r['base_us']:+.2f}  now {r['new_us']:+.2f}   "
              f"({r['native']})")
    worst_b = max(rows, key=lambda r: r["base_us"])
    worst_n = max(rows, key=lambda r: r["new_us"])
    print(f"  worst: base {worst_b['pair']} {worst_b['base_us']:+.2f}, "
          f"now {worst_n['pair']} {worst_n['new_us']:+.2f}")
    print("import + first call, ms (medians of fresh interpreters):")
    for r in first:
        print(f"  {r['pair']:18} base {r['base_ms']:.1f}  now {r['new_ms']:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"base": args.base, "dispatch": rows,
                                               "first_call": first}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
