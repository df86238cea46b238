"""The GPU check's report: versions of this machine, and ``docs/gpu-report.md`` from the logs.

Used by ``scripts/gpu-check.sh``; runs with the standard library alone (plus the frameworks
it reports on, each imported only to ask for its device)::

    python3 scripts/gpu_report.py versions > LOG/versions.json
    python3 scripts/gpu_report.py table docs/gpu-cells.json conversion_table.md
    python3 scripts/gpu_report.py write LOG OUT/gpu-report.md [COMMAND DATE DEADLINE ELAPSED]

``write`` reads from the log folder: ``versions.json``, ``steps.tsv`` (one line per step:
name, exit status or ``-``, command or why it did not run, seconds), ``missing.txt`` (the
packages missing on the machine, one a line), a JUnit XML per pytest run (``<run>.xml``),
the table's GPU record (``gpu-cells.json``) and the GPU benchmark
(``bench/gpu-check.json``); whatever is missing is reported as missing, never guessed. It
writes the report and, beside it, ``gpu-check.json`` (the same facts, for a program). A
test that fails only because a package missing on the machine cannot be imported is counted
as *missing*, not as a failure of interop.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["torch", "jax", "jaxlib", "cupy", "numba", "numba-cuda", "rmm", "cudf",
            "cuda-bindings", "cuda-core", "numpy", "ml_dtypes", "pyarrow", "pandas", "polars",
            "dask", "distributed", "tensorflow", "paddle", "pytest", "pytest-xdist",
            "hypothesis"]
DISTRIBUTIONS = {"cupy": ["cupy", "cupy-cuda13x", "cupy-cuda12x"],
                 "rmm": ["rmm", "rmm-cu13", "rmm-cu12"], "cudf": ["cudf", "cudf-cu13", "cudf-cu12"],
                 "tensorflow": ["tensorflow", "tensorflow-cpu"], "paddle": ["paddlepaddle-gpu",
                                                                            "paddlepaddle"]}
RUNS = ("sources", "gpu", "pool", "core", "tensorflow", "paddle")


# ---- versions -----------------------------------------------------------------------------
def version(package: str) -> str | None:
    for dist in DISTRIBUTIONS.get(package, [package]):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return None


def _nvidia_smi() -> dict[str, Any]:
    query = "name,driver_version,memory.total"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    gpus = [dict(zip(("name", "driver", "memory"), (p.strip() for p in line.split(","))))
            for line in r.stdout.splitlines() if line.strip()]
    cuda = next((line.split("CUDA Version:")[1].split()[0] for line in
                 subprocess.run(["nvidia-smi"], capture_output=True, text=True,
                                timeout=60).stdout.splitlines() if "CUDA Version:" in line), None)
    return {"gpus": gpus, "cuda": cuda}


PROBES = {
    "torch": "import torch; print(torch.__version__, torch.version.cuda, "
             "torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA')",
    "jax": "import jax; print(jax.devices())",
    "cupy": "import cupy; print(cupy.cuda.runtime.getDeviceProperties(0)['name'].decode())",
    "numba": "from numba import cuda; n = cuda.get_current_device().name; "
             "print(n.decode() if isinstance(n, bytes) else n)",  # str in numba-cuda 0.30
    "rmm": "import rmm; print(rmm.__version__)",
}
"""What each GPU framework is asked for its device (run in a child interpreter each)."""


def _devices() -> dict[str, str]:
    """What each installed GPU framework reports as its device (an error says why not)."""
    out = {}
    for name, code in PROBES.items():
        if version(name) is None:
            continue
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300)
        err = [x for x in r.stderr.splitlines() if "Error" in x] or r.stderr.splitlines() or ["?"]
        out[name] = r.stdout.strip() if r.returncode == 0 else "error: " + err[-1].strip()
    return out


def versions() -> dict[str, Any]:
    import platform

    return {"python": platform.python_version(), "platform": platform.platform(),
            "nvidia_smi": _nvidia_smi(), "packages": {p: version(p) for p in PACKAGES},
            "devices": _devices()}


# ---- pytest results -------------------------------------------------------------------------
def junit(path: Path, missing: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Counts and the failed/skipped tests of one pytest JUnit XML file; a failure or error
    that only says a package of ``missing`` cannot be imported counts as ``missing``."""
    root = ET.parse(path).getroot()
    counts = Counter()
    failed, skipped, absent = [], Counter(), Counter()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
        failure, error, skip = (case.find(tag) for tag in ("failure", "error", "skipped"))
        bad = failure if failure is not None else error
        if bad is not None:
            text = f"{bad.get('message') or ''}\n{bad.text or ''}"
            package = _missing_package(text, missing)
            if package is not None:
                counts["missing"] += 1
                absent[package] += 1
                continue
            counts["failed" if failure is not None else "errors"] += 1
            message = (bad.get("message") or "").strip().splitlines()
            failed.append(f"{name}: {message[0]}" if message else name)
        elif skip is not None:
            counts["skipped"] += 1
            skipped[(skip.get("message") or "").strip()] += 1
        else:
            counts["passed"] += 1
    return {"passed": counts["passed"], "failed": counts["failed"], "errors": counts["errors"],
            "skipped": counts["skipped"], "missing": counts["missing"], "failures": failed,
            "skip_reasons": skipped.most_common(), "missing_packages": absent.most_common()}


def _missing_package(text: str, missing: frozenset[str]) -> str | None:
    """The package of ``missing`` whose absence is all that ``text`` (a failure) reports."""
    marker = "No module named '"
    at = text.find(marker)
    if at < 0:
        return None
    package = text[at + len(marker):].split("'", 1)[0].split(".", 1)[0]
    return package if package in missing else None


def steps(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        name, rc, command, seconds = (line.split("\t") + ["", "", ""])[:4]
        out.append({"name": name, "rc": int(rc) if rc.lstrip("-").isdigit() else None,
                    "command": command,
                    "seconds": int(seconds) if seconds.isdigit() else None})
    return out


def _missing(logs: Path) -> list[str]:
    try:
        return [m for m in (logs / "missing.txt").read_text().split() if m]
    except OSError:
        return []


# ---- the report ---------------------------------------------------------------------------
def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def render(logs: Path, command: str = "./scripts/gpu-check.sh", date: str = "",
           deadline: str = "", elapsed: str = "") -> str:
    v = _load(logs / "versions.json") or {}
    missing = _missing(logs)
    smi = v.get("nvidia_smi") or {}
    gpus = smi.get("gpus") or []
    device = gpus[0]["name"] if gpus else "unknown (nvidia-smi gave nothing)"
    driver = gpus[0]["driver"] if gpus else "?"
    lines = ["# GPU report", "",
             "<!-- Written by scripts/gpu_report.py from a run of scripts/gpu-check.sh on a "
             "CUDA machine. Do not edit by hand. -->", "",
             f"- Device: {device}" + (f" ({len(gpus)} GPUs)" if len(gpus) > 1 else ""),
             f"- NVIDIA driver {driver}, CUDA {smi.get('cuda') or '?'}; Python "
             f"{v.get('python', '?')} on {v.get('platform', '?')}",
             f"- Date: {date or '?'}",
             f"- Command: `{command}`"]
    if deadline:
        lines.append(f"- Deadline: {deadline} s for the whole check; {elapsed or '?'} s used "
                     "when this report was written")
    lines.append("")
    pkgs = v.get("packages") or {}
    lines += ["## Versions", "", "| package | version |", "|---|---|"]
    lines += [f"| {k} | {val} |" for k, val in pkgs.items() if val]
    absent = [k for k, val in pkgs.items() if not val]
    lines += ["", "Not installed: " + (", ".join(absent) or "nothing") + "."]
    if missing:
        lines.append("Missing on this machine (their tests skip or are not collected; a test "
                     "failing only for one of them is counted as *missing*, never as a "
                     "failure of interop): " + ", ".join(missing) + ".")
    lines.append("")
    for name, said in (v.get("devices") or {}).items():
        lines.append(f"- {name}: {said}")
    lines += ["", "## Tests", "", "| run | passed | failed | errors | skipped | exit |",
              "|---|---|---|---|---|---|"]
    by_name = {s["name"]: s for s in steps(logs / "steps.tsv")}
    details = []
    for run in RUNS:
        step = by_name.get(run)
        xml = logs / f"{run}.xml"
        if step is None and not xml.exists():
            lines.append(f"| {run} | not run | | | | |")
            continue
        if step is not None and step["command"] == "not installed":
            lines.append(f"| {run} | not run: {run} is not installed | | | | |")
            continue
        if step is not None and step["rc"] is None:
            lines.append(f"| {run} | {step['command']} | | | | |")
            continue
        if not xml.exists():
            lines.append(f"| {run} | no results (JUnit XML missing) | | | | {step['rc']} |")
            continue
        r = junit(xml, frozenset(missing))
        rc = step["rc"] if step else "?"
        lines.append(f"| {run} | {r['passed']} | {r['failed']} | {r['errors']} | "
                     f"{r['skipped']} | {rc} |")
        if step:
            details.append(f"- {run}: `{step['command']}`")
        for f in r["failures"]:
            details.append(f"  - FAILED {f}")
        for reason, n in r["skip_reasons"]:
            details.append(f"  - skipped ({n}): {reason}")
        for package, n in r["missing_packages"]:
            details.append(f"  - missing ({n}): failed only because {package} is not "
                           "installed here (not counted as failures)")
    lines += [""] + details
    other = [s for s in by_name.values() if s["name"] not in RUNS]
    if other:
        lines += ["", "## Other steps", "", "| step | exit | command |", "|---|---|---|"]
        lines += [f"| {s['name']} | {s['rc']} | `{s['command']}` |" if s["rc"] is not None
                  else f"| {s['name']} | - | {s['command']} |" for s in other]
    lines += ["", "## GPU cells of the conversion table", ""]
    record = _load(logs / "gpu-cells.json")
    if record is None:
        lines.append("Not probed in this run (no gpu-cells.json in the logs).")
    else:
        lines += ["Verified on GPU by this run (`python -m interop table --save-gpu`); "
                  "the same cells are in conversion_table.md.", "",
                  "| source | target | result | reason |", "|---|---|---|---|"]
        lines += [f"| {c['source']} | {c['target']} | {c['status']} | {c['reason'] or ''} |"
                  for c in record["pairs"]]
    lines += ["", "## GPU benchmarks", ""]
    bench = _load(logs / "bench" / "gpu-check.json")
    if bench is None or "gpu" not in bench:
        lines.append("Not run, or no results (no bench/gpu-check.json in the logs).")
    else:
        sys.path.insert(0, str(ROOT))
        from benchmarks.report import gpu_lines

        lines += gpu_lines(bench["gpu"])
        if bench.get("pool"):
            from benchmarks.pool import markdown as pool_markdown

            lines += pool_markdown(bench["pool"])
    return "\n".join(lines).rstrip("\n") + "\n"


def summary(logs: Path) -> str:
    """The short table the check prints last: one line per pytest run and step."""
    out = []
    missing = frozenset(_missing(logs))
    by_name = {s["name"]: s for s in steps(logs / "steps.tsv")}
    for name, s in by_name.items():
        xml = logs / f"{name}.xml"
        counts = ""
        if xml.exists():
            r = junit(xml, missing)
            counts = (f"{r['passed']} passed, {r['failed']} failed, {r['errors']} errors, "
                      f"{r['skipped']} skipped" + (f", {r['missing']} missing packages"
                                                   if r["missing"] else ""))
        rc = "-" if s["rc"] is None else s["rc"]
        out.append(f"{name:<13} exit {rc!s:<4} {counts or s['command']}")
    return "\n".join(out)


def facts(logs: Path, command: str = "", date: str = "", deadline: str = "",
          elapsed: str = "") -> dict[str, Any]:
    """What the report says, for a program: ``gpu-check.json``."""
    missing = frozenset(_missing(logs))
    runs = {}
    for s in steps(logs / "steps.tsv"):
        xml = logs / f"{s['name']}.xml"
        if xml.exists():
            r = junit(xml, missing)
            runs[s["name"]] = {k: r[k] for k in ("passed", "failed", "errors", "skipped",
                                                 "missing", "failures")}
    record = _load(logs / "gpu-cells.json")
    return {"command": command, "date": date, "deadline_s": deadline, "elapsed_s": elapsed,
            "versions": _load(logs / "versions.json"), "missing": sorted(missing),
            "steps": steps(logs / "steps.tsv"), "runs": runs,
            "gpu_cells": None if record is None else len(record.get("pairs", []))}


def main(argv: list[str]) -> int:
    if argv[:1] == ["versions"]:
        print(json.dumps(versions(), indent=1))
        return 0
    if argv[:1] == ["table"] and len(argv) == 3:
        sys.path.insert(0, str(ROOT / "src"))
        from interop.cli import table

        record, md_path = table.load_gpu_record(argv[1]), Path(argv[2])
        md_path.write_text(table.with_gpu_section(md_path.read_text(), record))
        return 0
    if argv[:1] == ["write"] and len(argv) >= 3:
        logs, out = Path(argv[1]), Path(argv[2])
        rest = (argv[3:] + ["./scripts/gpu-check.sh", "", "", ""][len(argv) - 3:])[:4]
        out.write_text(render(logs, *rest))
        (out.parent / "gpu-check.json").write_text(json.dumps(facts(logs, *rest), indent=1))
        print(summary(logs))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
