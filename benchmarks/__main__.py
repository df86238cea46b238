"""``python -m benchmarks [--quick] [--only a,b] [--out DIR] [--machine NAME]``.

Runs every benchmark (dispatch, sizes, tables, structures, nested, sparse, composite, aos_soa,
import_time,
gpu, pool, dali, mldata) and writes
``<out>/<machine>.json``, ``<out>/<machine>.md`` and PNG plots (default out:
``benchmarks/results``). ``--quick`` uses tiny sizes and few repetitions (a smoke run).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import sys
import time
import traceback
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

SECTIONS = ("import_time", "dispatch", "sizes", "tables", "structures", "nested", "sparse",
            "composite", "aos_soa", "gpu",
            "pool", "dali", "mldata")
HERE = Path(__file__).resolve().parent


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_name() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", platform.node() or "machine")


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("interop", "numpy", "torch", "jax", "pyarrow", "pandas", "polars", "cupy",
                "rmm-cu12", "numba-cuda", "nvidia-dali-cuda120", "ray", "datasets", "daft"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "absent"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, few repetitions")
    ap.add_argument("--only", default="", help=f"comma-separated subset of {SECTIONS}")
    ap.add_argument("--out", default=str(HERE / "results"), help="output directory")
    ap.add_argument("--machine", default=None, help="results file stem (default: host name)")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    only = [s for s in args.only.split(",") if s] or list(SECTIONS)
    unknown = set(only) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    machine = args.machine or (machine_name() + ("-quick" if args.quick else ""))
    command = "python -m benchmarks" + (" " + " ".join(argv if argv is not None
                                                       else sys.argv[1:])).rstrip()
    results: dict[str, Any] = {"meta": {
        "machine": machine, "command": command.strip(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": _cpu(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "platform": platform.platform(), "versions": _versions(), "quick": args.quick,
        "sections": only, "seconds": {},
    }}
    for name in SECTIONS:  # import_time first: before this process imports anything heavy
        if name not in only:
            continue
        t0 = time.perf_counter()
        print(f"[benchmarks] {name} ...", file=sys.stderr, flush=True)
        try:
            results[name] = import_module(f"benchmarks.{name}").run(quick=args.quick)
        except Exception as e:  # one broken section must not lose the others
            results[name] = {"error": f"{type(e).__name__}: {e}",
                             "traceback": traceback.format_exc()}
            print(results[name]["traceback"], file=sys.stderr)
        if isinstance(results[name], dict) and results[name].get("skipped"):
            print(f"[benchmarks] {name}: skipped ({results[name]['reason']})", file=sys.stderr)
        results["meta"]["seconds"][name] = round(time.perf_counter() - t0, 2)
    from .report import bars, write, write_docs

    paths = write(results, Path(args.out), machine, with_plots=not args.no_plots)
    if not args.quick and args.only == "" and Path(args.out).resolve() == HERE / "results":
        paths["docs"] = write_docs(results, HERE.parent / "docs", HERE / "results", machine)
    for b in bars(results):
        print(f"{'PASS' if b['pass'] else 'FAIL'}  {b['bar']}: {b['value']}")
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
