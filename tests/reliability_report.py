"""Regenerate docs/reliability.md: ``python -m tests.reliability_report`` (from the repo root).

Runs the four reliability test files (the slow load file included) with pytest, then writes
what they test and the numbers they measured. ``RELIABILITY_N``, ``RELIABILITY_SECONDS`` and
``RELIABILITY_EXAMPLES`` pass through (the full run: RELIABILITY_N=100000).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ["tests/test_reliability_properties.py", "tests/test_reliability_crashes.py",
         "tests/test_reliability_lifetimes.py", "tests/test_reliability_load.py"]

FOUND = [
    ("crash-class", "a complex128 DLPack capsule could not be read at all (`<u16` carrier "
     "dtype); CPU capsules of 16-byte items now view as `|V16`", "protocols/dlpack.py"),
    ("wrong zero-copy claim", "pyarrow/polars boolean `view` pointed into a temporary unpacked "
     "copy: `shares_memory` could answer from a freed buffer", "pyarrow_.py, polars_.py"),
    ("raw ValueError", "an empty (or extent-1) NumPy array with a negative stride into torch: "
     "`torch.from_numpy` refused it; the unused stride is now zeroed", "torch_.py"),
    ("raw TypeError/RuntimeError", "a producer whose `__dlpack__` or `__dlpack_device__` "
     "raises now gives `ProtocolError`", "protocols/dlpack.py"),
    ("false zero-copy claim", "a 1-element strided or a misaligned NumPy array into "
     "pyarrow/polars was copied by them while the plan said zero-copy", "pyarrow_.py, polars_.py"),
    ("plan/convert mismatch", "an unaligned int64 array into JAX (x64 off): the plan said "
     "'copy', the conversion raised Unsupported; the dtype is now checked first", "numpy_.py"),
    ("crash (assertion in torch/JAX)", "a producer whose `__dlpack_device__` names another "
     "device than its capsule: now `ProtocolError` before any consumer", "producer.py"),
    ("wrong array", "a capsule with a NULL data pointer and nonzero size was accepted by "
     "`numpy.from_dlpack` (reading it would segfault): producers are read through interop's "
     "validating reader", "producer.py"),
    ("raw errors", "`__array_interface__` without `data` and no buffer, or a property that "
     "raises: now `ProtocolError`", "array_interface.py, producer.py"),
]


def main() -> int:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        env["RELIABILITY_JSON"] = str(Path(tmp) / "load.json")
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", *FILES, "-q", "-p",
                               "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        elapsed = time.monotonic() - t0
        load = json.loads(Path(env["RELIABILITY_JSON"]).read_text()) \
            if Path(env["RELIABILITY_JSON"]).exists() else {}
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    examples = int(env.get("RELIABILITY_EXAMPLES", "12"))
    from tests.test_reliability_crashes import CASES

    pairs = {k: v for k, v in load.items() if "->" in k}
    worst_rss = max((v["rss_growth"] for v in pairs.values()), default=0)
    worst_traced = max((v["traced_growth"] for v in pairs.values()), default=0)
    n = next(iter(pairs.values()), {}).get("n", "?")
    thr = load.get("threads", {})
    bounds = load.get("bounds", {})
    lines = [
        "# Reliability",
        "",
        "Regenerate with `python -m tests.reliability_report` (from the repository root; "
        "`RELIABILITY_N=100000` for the full leak run).",
        "",
        f"Last run: `{summary}` in {elapsed:.0f} s "
        f"(RELIABILITY_N={n}, RELIABILITY_SECONDS={thr.get('seconds', '?')}, "
        f"RELIABILITY_EXAMPLES={examples}).",
        "",
        "## What is tested",
        "",
        "- **Properties** (`tests/test_reliability_properties.py`, hypothesis, derandomized): "
        "every CPU pair among numpy, torch, jax, pyarrow, pandas, polars and raw DLPack "
        "capsules (49 pairs) x 15 dtypes (bool, int8..int64, uint8..uint64, float16, bfloat16, "
        "float32, float64, complex64, complex128) x shapes (0-d, empty, 1-6 dims, one large "
        "dim) x layouts (C, Fortran, steps, negative strides, broadcast stride 0, offset "
        "views, misaligned) x read-only. Each case: values and dtype equal the source's, or an "
        "`InteropError` that `explain` predicted; a zero-copy plan is proved by "
        "`shares_memory` and a write through the writable side; `copy=False` raises "
        "`ZeroCopyError` exactly when the plan needs a copy; `copy=True` shares nothing.",
        f"  Cases per run: {examples} x 49 = {examples * 49} (bug hunt: 150 x 49 = 7350, clean).",
        f"- **Crash isolation** (`tests/test_reliability_crashes.py`): {len(CASES)} cases in a "
        "child interpreter (known crashers: negative strides into torch, capsules consumed "
        "twice, broadcast/misaligned into JAX; malformed DLPack producers; malformed "
        "`__array_interface__` dicts), asserting a clean exit and the expected `InteropError`.",
        "- **Lifetimes** (`tests/test_reliability_lifetimes.py`): chains of five conversions "
        "with every source deleted and collected, compared with a saved copy; consumed "
        "capsules cannot be reused; unused capsules release their producer.",
        "- **Load** (`tests/test_reliability_load.py`, `-m slow`, CI runs it): leaks over "
        f"{len(pairs)} pairs and 8 threads on mixed pairs.",
        "",
        "## Numbers",
        "",
        f"- Leak bound: RSS growth <= {bounds.get('rss', 0) // 2**20} MiB and tracemalloc "
        f"growth <= {bounds.get('traced', 0) // 2**10} KiB per pair after warm-up, for any N. "
        f"Measured over {n} conversions per pair: worst RSS growth {worst_rss / 2**10:.0f} KiB, "
        f"worst traced growth {worst_traced / 2**10:.1f} KiB.",
        f"- Plan cache: {load.get('plans', '?')} entries after every pair "
        f"(bound {bounds.get('plans', '?')}).",
        f"- Threads: {thr.get('threads', '?')} threads for {thr.get('seconds', '?')} s: "
        f"{thr.get('conversions', '?')} conversions, every result checked, no error.",
        "",
        "| pair | conversions | RSS growth (KiB) | traced growth (KiB) |",
        "|---|---:|---:|---:|",
    ]
    for k, v in pairs.items():
        lines.append(f"| {k} | {v['n']} | {v['rss_growth'] / 2**10:.0f} | "
                     f"{v['traced_growth'] / 2**10:.1f} |")
    lines += ["", "## Crashes and bugs found (all fixed)", "", "| kind | what | where |",
              "|---|---|---|"]
    lines += [f"| {k} | {w} | `src/interop/{p}` |" for k, w, p in FOUND]
    lines.append("")
    out = ROOT / "docs" / "reliability.md"
    out.write_text("\n".join(lines))
    print(f"wrote {out}: {summary}")
    return 0 if proc.returncode == 0 and not re.search(r"\bfailed\b", summary) else 1


if __name__ == "__main__":
    sys.exit(main())
