"""Dispatch overhead: ``interop.to_framework`` against the fastest native zero-copy call.

Every CPU pair the registry can convert zero-copy is timed against the native call(s) a
user would write for it, interleaved in the same run (``benchmarks.interleaved``). For
pairs with several native spellings, each is tried and the fastest that works zero-copy is
the baseline. Results are per call, in microseconds: medians, quartiles, overhead and ratio.

Samples are short (about 0.3 ms each) and many: this machine's noise comes in bursts of
milliseconds, so a long sample mixes quiet and noisy stretches, while short paired samples
mostly see one of them. Pairs whose native call takes over 5 us get five times the samples
(the bar is absolute). Each pair's samples are taken in three passes over all the pairs, so
that a slower stretch of the shared machine, which can last tens of seconds, does not decide
a pair alone; each pass's paired median is kept in the results. An A/A control times the
slowest native call against itself: its paired overhead is the bias of the method, and
should be near zero.
"""

from __future__ import annotations

import warnings
from typing import Any

from . import aligned_empty, calibrate, interleaved, summary, timer

FRAMEWORKS = ("numpy", "torch", "jax", "pyarrow", "pandas", "polars")
SLOW_CALL_S, SLOW_FACTOR = 5e-6, 5  # native calls slower than this get 5x the samples
SAMPLE_S, REPEAT = 3e-4, 601  # seconds per sample, samples per pair
CANDIDATE_REPEAT = 41  # samples per native spelling when choosing the fastest
PASSES = 3  # the samples of each pair are taken in this many passes over all pairs
N_ELEMENTS = 1024  # float32, 4 KiB: the size does not matter (zero-copy), see sizes.py

# Native spellings, fastest first is not assumed: every candidate is timed and the best kept.
TO_NUMPY = {
    "numpy": "{x}",
    "torch": "{x}.numpy()",
    "jax": "np.asarray({x})",
    "pyarrow": "{x}.to_numpy(zero_copy_only=True)",
    "pandas": "{x}.to_numpy()",
    "polars": "{x}.to_numpy(allow_copy=False)",
}
FROM_NUMPY = {
    "numpy": "{x}",
    "torch": "torch.from_numpy({x})",
    "jax": "jax.dlpack.from_dlpack({x})",
    "pyarrow": "pa.array({x})",
    "pandas": "pd.Series({x}, copy=False)",
    "polars": "pl.Series(values={x})",
}
DIRECT = {
    ("torch", "jax"): ["jax.dlpack.from_dlpack(x)"],
    ("jax", "torch"): ["torch.from_dlpack(x)"],
    ("pyarrow", "jax"): ["jax.dlpack.from_dlpack(x)"],
    ("pyarrow", "torch"): ["torch.from_dlpack(x)"],
    ("polars", "jax"): ["jax.dlpack.from_dlpack(x.to_arrow())"],
    ("polars", "pyarrow"): ["x.to_arrow()"],
    ("pandas", "torch"): ["torch.from_numpy(x.values)"],
    ("pandas", "numpy"): ["x.values"],
    ("numpy", "jax"): ["jax.dlpack.from_dlpack(x)"],
    ("pandas", "jax"): ["jax.dlpack.from_dlpack(pa.array(x.to_numpy()))"],
}


def candidates(src: str, tgt: str) -> list[str]:
    """Native statements converting ``x`` (a ``src`` value) to ``tgt``."""
    out = list(DIRECT.get((src, tgt), []))
    host = TO_NUMPY[src].format(x="x")  # through NumPy, the hub of interop's own routes
    out.append(FROM_NUMPY[tgt].format(x=host))
    if tgt == "jax":  # JAX's public import that also takes read-only NumPy arrays
        out.append(f"jax.device_put({host}, may_alias=True)")
    return list(dict.fromkeys(out))


def make_values(n: int = N_ELEMENTS) -> dict[str, Any]:
    """One float32 value of ``n`` elements per framework, all over 64-byte aligned memory."""
    import jax
    import numpy as np
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import torch

    a = aligned_empty(4 * n, "float32")
    a[:] = np.arange(n, dtype=np.float32)
    b = aligned_empty(4 * n, "float32")
    b[:] = a
    c = aligned_empty(4 * n, "float32")
    c[:] = a
    return {
        "numpy": a,
        "torch": torch.from_numpy(b),
        "jax": jax.dlpack.from_dlpack(c),
        "pyarrow": pa.array(a),
        "pandas": pd.Series(a, copy=False),
        "polars": pl.Series("x", a),
    }


def data_pointer(v: Any) -> int | None:
    """The address of the first element of ``v``'s values buffer, or ``None``."""
    mod = type(v).__module__.partition(".")[0]
    try:
        if mod == "numpy":
            return v.__array_interface__["data"][0]
        if mod == "torch":
            return v.data_ptr()
        if mod in ("jax", "jaxlib"):
            return v.unsafe_buffer_pointer()
        if mod == "pyarrow":
            return v.buffers()[1].address + v.offset * v.type.byte_width
        if mod == "pandas":
            return v.to_numpy().__array_interface__["data"][0]
        if mod == "polars":
            return v.to_numpy(allow_copy=False).__array_interface__["data"][0]
    except Exception:
        return None
    return None


def _env(x: Any) -> dict[str, Any]:
    import jax
    import numpy as np
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import torch

    import interop

    return {"x": x, "np": np, "torch": torch, "jax": jax, "pa": pa, "pd": pd, "pl": pl,
            "to_framework": interop.to_framework}


def run(quick: bool = False, pairs: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Time every CPU pair; ``{"pairs": [...], "floor": {...}}``."""
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*not writable.*")
    import interop

    values = make_values()
    repeat, target = (5, 0.002) if quick else (REPEAT, SAMPLE_S)
    if pairs is None:
        pairs = [(s, t) for s in FRAMEWORKS for t in FRAMEWORKS if s != t]
    rows = []
    plans: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (row, timers) of each timed pair
    for src, tgt in pairs:
        x = values[src]
        plan = interop.explain(x, tgt)
        env = _env(x)
        res = interop.to_framework(x, tgt)
        src_ptr = data_pointer(x)
        row: dict[str, Any] = {
            "pair": f"{src}->{tgt}", "source": src, "target": tgt,
            "route": " | ".join(s.via for s in plan.steps),
            "interop_zero_copy": data_pointer(res) == src_ptr and src_ptr is not None,
        }
        # The fastest working native spelling that is zero-copy (or the fastest at all).
        working: dict[str, Any] = {}  # statement -> (timer, zero-copy)
        for stmt in candidates(src, tgt):
            try:
                out = eval(stmt, dict(env))  # noqa: S307 - our own fixed statements
            except Exception as e:  # a spelling this version does not accept
                row.setdefault("native_rejected", []).append(f"{stmt}: {type(e).__name__}")
                continue
            working[stmt] = (timer(stmt, env), data_pointer(out) == src_ptr and src_ptr is not None)
        best = None
        if working:  # the spellings against each other, interleaved: medians of short samples
            ts = {k: t for k, (t, _) in working.items()}
            number = calibrate(next(iter(ts.values())), target)
            costs = {k: summary(v)["median"] for k, v in
                     interleaved(ts, number, CANDIDATE_REPEAT if not quick else 3).items()}
            stmt = max(working, key=lambda k: (working[k][1], -costs[k]))
            row["native_candidates_us"] = costs
            best = (stmt, working[stmt][1], costs[stmt] * 1e-6)
        if best is None:
            row["skipped"] = "no native spelling works"
            rows.append(row)
            continue
        native_stmt, native_zc, _ = best
        row["native"] = native_stmt
        row["native_zero_copy"] = native_zc
        timers = {"interop": timer(f"to_framework(x, {tgt!r})", env),
                  "native": timer(native_stmt, env)}
        number = calibrate(timers["native"], target)
        # the bar is absolute (1 us): a call of tens of us (JAX, pandas) drifts by more than
        # that between samples, so it gets more samples for the same resolution
        reps = repeat * SLOW_FACTOR if best[2] > SLOW_CALL_S and not quick else repeat
        row.update({"number": number, "repeat": reps})
        plans.append((row, timers))
        rows.append(row)
    # The samples are taken in passes over every pair, spread over the run, so that a slow
    # stretch of this shared machine (tens of seconds) does not decide a pair on its own.
    passes = 1 if quick else PASSES
    samples = {id(row): {"interop": [], "native": []} for row, _ in plans}
    medians: dict[int, list[float]] = {id(row): [] for row, _ in plans}
    for _ in range(passes):
        for row, timers in plans:
            got = interleaved(timers, row["number"], max(1, row["repeat"] // passes))
            for k in got:
                samples[id(row)][k] += got[k]
            medians[id(row)].append(
                summary([a - b for a, b in zip(got["interop"], got["native"])])["median"])
    for row, _ in plans:
        got = samples[id(row)]
        diffs = [a - b for a, b in zip(got["interop"], got["native"])]
        s_i, s_n = summary(got["interop"]), summary(got["native"])
        row.update({
            "repeat": len(diffs), "interop_us": s_i, "native_us": s_n,
            "overhead_us": s_i["median"] - s_n["median"],
            "overhead_paired_us": summary(diffs),
            "overhead_paired_per_pass_us": medians[id(row)],
            "ratio": s_i["median"] / s_n["median"],
        })
    timed = [r for r in rows if "native_us" in r]
    slowest = max(timed, key=lambda r: r["native_us"]["median"], default=None)
    return {"n_elements": N_ELEMENTS, "dtype": "float32", "pairs": rows,
            "floor": _floor(values["numpy"], repeat, target),
            "control": slowest and _control(slowest, values[slowest["source"]]),
            "gpu_host": gpu_host(values, repeat, target)}


GPU_HOST_PAIRS = (("torch", "numpy"), ("jax", "numpy"), ("torch", "jax"), ("jax", "torch"))
GPU_SEEN = ("torch", "jax")  # the adapters whose gpu_present() the GPU-host registry patches
GPU_HOST_BAR_US = 0.3  # issue 35: a host value on a GPU host costs what it costs on a CPU host


def gpu_host(values: dict[str, Any], repeat: int, target: float) -> list[dict[str, Any]]:
    """Host values on a GPU host: ``to_framework`` on a registry whose torch and JAX adapters
    say ``gpu_present()`` (patched: values of one type may then live on either, so the plan
    is made per device) against one that sees no GPU, and the native call, interleaved;
    per pair the paired overhead of each over the native call, and their difference."""
    from dataclasses import replace

    from interop.default import build

    cpu, gpu = build(), build()
    for name in GPU_SEEN:
        gpu.add(replace(gpu.adapters[name], gpu_present=lambda: True))
    rows = []
    for src, tgt in GPU_HOST_PAIRS:
        x = values[src]
        native = candidates(src, tgt)[0]
        env = dict(_env(x), cpu_host=cpu.convert, gpu_host=gpu.convert)
        for reg in (cpu, gpu):  # the first calls make the plans and their fast forms
            for _ in range(3):
                reg.convert(x, tgt)
        timers = {k: timer(stmt, env) for k, stmt in (
            ("native", native), ("cpu_host", f"cpu_host(x, {tgt!r})"),
            ("gpu_host", f"gpu_host(x, {tgt!r})"))}
        number = calibrate(timers["native"], target)
        got = interleaved(timers, number, repeat)
        over = {k: summary([a - b for a, b in zip(got[k], got["native"])])
                for k in ("cpu_host", "gpu_host")}
        rows.append({"pair": f"{src}->{tgt}", "native": native, "repeat": repeat,
                     "native_us": summary(got["native"]),
                     "cpu_host_us": summary(got["cpu_host"]),
                     "gpu_host_us": summary(got["gpu_host"]),
                     "cpu_host_overhead_us": over["cpu_host"],
                     "gpu_host_overhead_us": over["gpu_host"],
                     "gpu_over_cpu_us": summary([a - b for a, b in
                                                 zip(got["gpu_host"], got["cpu_host"])])})
    return rows


def _control(row: dict[str, Any], x: Any) -> dict[str, Any]:
    """A/A: ``row``'s native call against itself, sampled as ``run`` sampled the pair; its
    paired overhead is what the method reports when there is nothing to find."""
    env = _env(x)
    timers = {"a": timer(row["native"], env), "b": timer(row["native"], env)}
    samples = interleaved(timers, row["number"], row["repeat"])
    diffs = [a - b for a, b in zip(samples["a"], samples["b"])]
    return {"pair": row["pair"], "native": row["native"], "repeat": row["repeat"],
            "overhead_paired_us": summary(diffs)}


def _floor(a: Any, repeat: int, target: float) -> dict[str, Any]:
    """What a minimal Python dispatch costs: a dict lookup keyed like interop's, then the call.

    This is the lower bound for any pure-Python ``to_framework``; interop's overhead above it
    is what its own code adds.
    """
    import torch

    plans = {(type(a), "torch", None, None): torch.from_numpy}

    def minimal(x: Any, target: str, *, device: Any = None, copy: Any = None) -> Any:
        return plans[(type(x), target, device, copy)](x)

    env = {"x": a, "minimal": minimal, "torch": torch}
    timers = {"minimal": timer("minimal(x, 'torch')", env),
              "native": timer("torch.from_numpy(x)", env)}
    number = calibrate(timers["native"], target)
    s = interleaved(timers, number, repeat)
    m, n = summary(s["minimal"]), summary(s["native"])
    return {"pair": "numpy->torch", "minimal_us": m, "native_us": n,
            "overhead_us": m["median"] - n["median"]}

