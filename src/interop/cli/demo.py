"""``python -m interop demo``: a mixed pipeline, Parquet -> pyarrow -> torch -> JAX -> Arrow.

1. write a Parquet file on the fly with pyarrow (a few numeric columns);
2. read it back and filter the rows (pyarrow.compute);
3. hand the feature columns to torch (one ``to_framework`` per column) for a linear
   regression trained by a few steps of SGD (forward, backward, update);
4. hand the predictions and the target column to JAX for a jitted scoring function;
5. hand the scores back to Arrow and append them to the table as a new column.

Every hand-over prints its plan (``interop.explain``), whether it was zero-copy (checked
by the two frameworks' own data pointers, :mod:`interop.cli.memory`, not by interop's view)
and its time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from ..devices import cuda_devices
from . import memory

FEATURES = ("x1", "x2", "x3")


class Progress:
    """A plain-text progress display on stderr for the longer steps."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()

    def start(self, what: str) -> float:
        if not self.quiet:
            print(f"... {what}", file=sys.stderr, flush=True)
        return time.perf_counter()

    def tick(self, what: str, i: int, n: int) -> None:
        if self.quiet:
            return
        width = 20
        done = int(width * i / n)
        line = f"    {what} [{'#' * done}{'.' * (width - done)}] {i}/{n}"
        if self.tty:
            print("\r" + line, end="\n" if i == n else "", file=sys.stderr, flush=True)
        elif i == n:
            print(line, file=sys.stderr, flush=True)


class Report:
    """Collects the steps; prints each as it completes."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.steps: list[dict[str, Any]] = []

    def step(self, name: str, ms: float, detail: str = "", handover: dict | None = None) -> None:
        entry = {"step": name, "ms": round(ms, 2), "detail": detail}
        if handover:
            entry["handover"] = handover
        self.steps.append(entry)
        if self.as_json:
            return
        print(f"\n[{len(self.steps)}] {name}  ({ms:.1f} ms)")
        if detail:
            print(f"    {detail}")
        if handover:
            for col, h in handover.items():
                verdict = "zero-copy" if h["zero_copy"] else "COPY"
                print(f"    {col}: {verdict} (checked by pointer), {h['ms']:.3f} ms")
                print("      " + h["plan"].replace("\n", "\n      "))


def handover(x: Any, target: str, name: str, device: str | None = None) -> tuple[Any, dict]:
    """``to_framework(x, target)`` with its plan, a pointer check and its time."""
    import interop

    plan = interop.explain(x, target, device=device)
    t0 = time.perf_counter()
    y = interop.to_framework(x, target, device=device)
    ms = (time.perf_counter() - t0) * 1e3
    shared = memory.overlap(x, y)
    return y, {"zero_copy": bool(shared), "plan_zero_copy": plan.zero_copy, "ms": ms,
               "plan": str(plan), "column": name}


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e3


def run(rows: int, device: str, report: Report, progress: Progress, workdir: str) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    tdev = None if device == "cpu" else device

    # 0. the frameworks themselves take a while to import; time that apart ----------
    t0 = progress.start("importing torch and JAX")
    import jax
    import jax.numpy as jnp
    import torch

    jnp.zeros(1).block_until_ready()
    report.step("import torch and JAX", (time.perf_counter() - t0) * 1e3,
                f"torch {torch.__version__}, jax {jax.__version__}, pyarrow {pa.__version__}")

    # 1. write a Parquet file ---------------------------------------------------------
    t0 = progress.start(f"writing {rows:,} rows to Parquet")
    rng = np.random.default_rng(0)
    xs = {c: rng.standard_normal(rows, dtype=np.float32) for c in FEATURES}
    y = (1.5 * xs["x1"] - 2.0 * xs["x2"] + 0.5 * xs["x3"]
         + 0.1 * rng.standard_normal(rows, dtype=np.float32)).astype(np.float32)
    src = pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)),
                    **{c: pa.array(v) for c, v in xs.items()}, "y": pa.array(y),
                    "group": pa.array((np.arange(rows) % 4).astype(np.int32))})
    path = os.path.join(workdir, "demo.parquet")
    pq.write_table(src, path, row_group_size=max(rows, 1), compression="none")
    size = os.path.getsize(path)
    report.step("write Parquet (pyarrow)", (time.perf_counter() - t0) * 1e3,
                f"{rows:,} rows x {src.num_columns} columns -> {path} ({size / 2**20:.1f} MiB)")

    # 2. read and filter --------------------------------------------------------------
    t0 = progress.start("reading and filtering")
    table = pq.read_table(path)
    mask = pc.greater(table["x3"], -1.0)
    table = table.filter(mask)
    if any(table[c].num_chunks != 1 for c in table.column_names):
        table = table.combine_chunks()
    report.step("read Parquet and filter x3 > -1 (pyarrow.compute)",
                (time.perf_counter() - t0) * 1e3,
                f"{table.num_rows:,} rows kept; each column is one Arrow buffer (SoA)")

    # 3. torch: a linear model, a few SGD steps ---------------------------------------
    t0 = progress.start("handing columns to torch")

    cols, info = {}, {}
    for c in (*FEATURES, "y"):
        cols[c], info[c] = handover(table[c], "torch", c, device=tdev)
    report.step("pyarrow columns -> torch (interop.to_framework per column)",
                (time.perf_counter() - t0) * 1e3, "no bytes moved for fixed-width columns",
                info)

    t0 = time.perf_counter()
    torch.manual_seed(0)
    X = torch.stack([cols[c] for c in FEATURES], dim=1)  # the model's own copy (AoS)
    target = cols["y"]
    model = torch.nn.Linear(len(FEATURES), 1, device=X.device)  # where the data is
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    epochs = 8
    loss = torch.tensor(0.0)
    for i in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(X).squeeze(1), target)
        loss.backward()
        opt.step()
        loss = loss.detach()
        progress.tick("torch SGD", i + 1, epochs)
    with torch.no_grad():
        pred = model(X).squeeze(1).contiguous()
    w = [round(float(v), 3) for v in model.weight.detach().flatten()]
    report.step("torch: linear model, 8 SGD steps (forward + backward)",
                (time.perf_counter() - t0) * 1e3,
                f"final loss {loss.item():.4f}; weights {w} (true 1.5, -2.0, 0.5)")

    # 4. JAX: a jitted scoring function -----------------------------------------------
    t0 = progress.start("handing predictions to JAX")

    jpred, h_pred = handover(pred, "jax", "prediction (torch)")
    if tdev is None:  # the Arrow column, on the host as the prediction is
        jy, h_y = handover(table["y"], "jax", "y (pyarrow)")
    else:  # the target already on the GPU, as torch holds it
        jy, h_y = handover(target, "jax", "y (torch)")
    report.step("torch prediction and Arrow target -> JAX", (time.perf_counter() - t0) * 1e3,
                "", {"prediction": h_pred, "y": h_y})

    @jax.jit
    def score(p: Any, t: Any) -> Any:
        r = p - t
        return jnp.exp(-0.5 * (r / (jnp.std(r) + 1e-6)) ** 2)

    t0 = progress.start("JAX jit compile and run")
    scores, ms = _timed(lambda: score(jpred, jy).block_until_ready())
    again, ms2 = _timed(lambda: score(jpred, jy).block_until_ready())
    report.step("JAX: jitted residual score", ms,
                f"compile + run {ms:.1f} ms, cached run {ms2:.1f} ms; mean score "
                f"{float(jnp.mean(scores)):.4f}")

    # 5. back to Arrow -----------------------------------------------------------------
    t0 = time.perf_counter()
    ascore, h_score = handover(scores, "pyarrow", "score (jax)",  # Arrow lives on the host
                               device=None if tdev is None else "cpu")
    out = table.append_column("score", ascore)
    by_group = out.group_by("group").aggregate([("score", "mean")]).sort_by("group")
    means = [round(v, 4) for v in by_group["score_mean"].to_pylist()]
    report.step("JAX scores -> Arrow column, group-by mean (pyarrow)",
                (time.perf_counter() - t0) * 1e3,
                f"table now {out.num_columns} columns x {out.num_rows:,} rows; mean score per "
                f"group {means}", {"score": h_score})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m interop demo",
                                description="Parquet -> pyarrow -> torch -> JAX -> Arrow, "
                                            "printing each hand-over's plan and time")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--rows", type=int, default=1_000_000, help="rows in the Parquet file")
    p.add_argument("--json", action="store_true", help="the steps as JSON on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress display on stderr")
    args = p.parse_args(argv)
    if args.rows < 1:
        p.error("--rows must be at least 1")
    if args.device == "cuda":
        n, why = cuda_devices()
        if not n:
            print(f"interop demo --device cuda: no CUDA device is present on this machine "
                  f"({why}); no GPU work was done. The GPU variant needs one; run "
                  "`python -m interop demo` for the CPU pipeline.", file=sys.stderr)
            return 3
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    report = Report(args.json)
    progress = Progress(args.quiet or args.json)
    if not args.json:
        print(f"interop demo: {args.rows:,} rows on {args.device}: "
              "Parquet -> pyarrow -> torch -> JAX -> Arrow")
    t0 = time.perf_counter()
    from interop.errors import InteropError

    try:
        with tempfile.TemporaryDirectory(prefix="interop-demo-") as d:
            run(args.rows, args.device, report, progress, d)
    except InteropError as e:
        print(f"interop demo failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    total = (time.perf_counter() - t0) * 1e3
    hand = [h for s in report.steps for h in s.get("handover", {}).values()]
    zc = sum(h["zero_copy"] for h in hand)
    if args.json:
        print(json.dumps({"rows": args.rows, "device": args.device, "steps": report.steps,
                          "handovers": len(hand), "zero_copy": zc, "total_ms": total},
                         indent=2))
    else:
        print(f"\n{zc} of {len(hand)} hand-overs between frameworks were zero-copy; "
              f"total {total / 1e3:.2f} s")
    return 0
