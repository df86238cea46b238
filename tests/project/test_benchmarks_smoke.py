"""The benchmark command runs on tiny sizes and writes the expected keys (no timing asserts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("numpy")
for _mod in ("torch", "jax", "pyarrow", "pandas", "polars"):
    pytest.importorskip(_mod)


def test_quick_benchmark_run_writes_results(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(tmp_path),
         "--machine", "smoke", "--no-plots", "--only", "import_time,dispatch,sizes,tables,"
         "structures,nested,composite,aos_soa,gpu,pool"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads((tmp_path / "smoke.json").read_text())
    assert (tmp_path / "smoke.md").read_text().startswith("# interop benchmarks")
    assert isinstance(data["bars"], list)
    for key in ("meta", "import_time", "dispatch", "sizes", "tables", "structures", "aos_soa",
                "gpu", "pool"):
        assert isinstance(data[key], dict) and "error" not in data[key], (key, data.get(key))
    pairs = data["dispatch"]["pairs"]
    assert {p["pair"] for p in pairs} >= {"numpy->torch", "torch->numpy", "numpy->jax",
                                         "jax->numpy", "torch->jax", "pyarrow->numpy"}
    for p in pairs:
        if "skipped" not in p:
            assert {"interop_us", "native_us", "overhead_us", "ratio", "native"} <= set(p)
    dispatch_bar = data["bars"][0]  # issue 31's bar, every timed pair named pass or fail
    timed = {p["pair"] for p in pairs if "overhead_us" in p}
    assert "<= 0.3 us" in dispatch_bar["bar"] and dispatch_bar["worst"] in timed
    assert set(dispatch_bar["failing"]) | set(dispatch_bar["passing"]) == timed
    control = data["dispatch"]["control"]  # A/A: the slowest native call against itself
    assert control["pair"] in {p["pair"] for p in pairs}
    assert "Control (A/A)" in (tmp_path / "smoke.md").read_text()
    assert set(data["sizes"]["pairs"]) >= {"numpy->torch", "numpy->jax", "torch->numpy"}
    assert data["sizes"]["memcpy"]["rows"]
    assert "per_column_us" in data["tables"]
    for target in ("numpy", "jax"):  # interop, its leaves' own calls and the native loop
        weights = data["structures"]["weights"][target]
        assert weights["zero_copy"] and {"ratio", "ratio_nested", "leaves_ratio"} <= set(weights)
        assert "over_leaves_us" in data["structures"]["batch"][target]
    assert "## 3b. Structures" in (tmp_path / "smoke.md").read_text()
    nested = data["nested"]  # issue 37: list and tensor columns, zero-copy, by rows
    assert nested["embeddings"]["zero_copy"] and nested["ragged"]["zero_copy"]
    assert [p["rows"] for p in nested["scaling"]["ragged_us"]] == [1_000, 10_000]
    assert "## 3c. Nested columns" in (tmp_path / "smoke.md").read_text()
    assert "ratio_to_memcpy" in data["aos_soa"] and data["aos_soa"]["correct"]
    assert "import_ms" in data["import_time"] and "cold_plan" in data["import_time"]
    import torch  # the GPU benchmark runs exactly when torch sees a CUDA device

    assert data["gpu"]["conversions"].get("skipped") is (not torch.cuda.is_available())
    pool = data["pool"]  # the GPU pool: skipped with the reason, or every mode side by side
    report = (tmp_path / "smoke.md").read_text()
    assert "## 7. GPU pool" in report
    if pool["skipped"]:
        assert pool["reason"].startswith("no CUDA device") and "Skipped: no CUDA" in report
    else:
        expected = {"cupy": {"own", "pool", "shared", "cached_pool", "cudaMalloc"},
                    "torch": {"own", "pool", "shared", "cached_pool", "cudaMalloc"},
                    "numba": {"own", "pool", "shared"},
                    "jax": {"own", "pool", "shared", "cudaMalloc"}}
        for framework, names in expected.items():
            modes = pool["frameworks"][framework]["modes"]
            assert set(modes) == names
            assert all(len(m["us"]) == len(pool["sizes"]) for m in modes.values()), modes
        assert set(pool["pipeline"]["modes"]) == {"own", "pool", "shared", "cached_pool"}
        assert all("held_mib" in m for m in pool["pipeline"]["modes"].values())
    rows = data["composite"]["rows"]  # issue 49: each row against its hand route, one bar
    assert set(rows) == {"fsl", "tensor", "jagged", "table", "csr", "check"}
    assert all(v["ratio"] > 0 and v["bar"] >= 1.0 for v in rows.values())
    assert "## 3e. Composite values" in (tmp_path / "smoke.md").read_text()
    # the AoS<->SoA transpose has two (speed and first call), structures two (issue 30),
    # composite values one (issue 49)
    assert len(data["bars"]) == 9
    aos = data["aos_soa"]  # anchors, mixed records, sweeps, first call, GPU rows (or why not)
    assert aos["fastest_anchor"]["aos_to_soa"].startswith("anchor_")
    assert aos["mixed"]["correct"] and aos["mixed"]["fields"] == 100
    assert [p["rows"] for p in aos["sweeps"]["rows"]] and aos["sweeps"]["fields"]
    assert aos["first_call"]["first_ms"] > 0
    assert aos["gpu"].get("skipped") is (not torch.cuda.is_available())
    first = data["import_time"]["first_call"]  # import + first call vs the native first call
    assert set(first["pairs"]) >= {"numpy->torch", "numpy->jax", "pandas->torch"}
    for v in first["pairs"].values():
        assert v["over_native_ms"] == v["interop_ms"] - v["native_ms"] and v["native_ms"] > 0
    assert "import + first call ms" in (tmp_path / "smoke.md").read_text()


def test_pool_section_renders_every_mode_and_ratio() -> None:
    import sys

    sys.path.insert(0, str(ROOT))
    from benchmarks import pool

    # The shape run() returns on a GPU (stand-in numbers: no GPU here), two sizes.
    us = {"own": [4.0, 5.0], "pool": [10.0, 12.0], "shared": [6.0, 5.0],
          "cached_pool": [4.4, 5.5], "cudaMalloc": [80.0, 120.0]}
    modes = {m: {"us": v} for m, v in us.items()}
    ratios = pool._ratios(modes)
    assert ratios["pool/own"] == [2.5, 2.4] and ratios["cudaMalloc/shared"] == [
        80.0 / 6.0, 24.0]
    result = {"skipped": False, "sizes": [4096, 1 << 30],
              "frameworks": {"cupy": {"modes": modes, "ratios": ratios}},
              "rmm_resource": {"us": {"cudaMalloc": [90.0, 900.0], "pool": [7.0, 7.5]}},
              "pipeline": {"bytes": 2 << 30, "modes": {
                  "own": {"held_mib": 4096.0, "alive_mib": 2048.0},
                  "pool": {"held_mib": 2304.0, "alive_mib": 2048.0, "pool_mib": 2304.0,
                           "peak_mib": 2048.0}}}}
    text = "\n".join(pool.markdown(result))
    assert ("| size | own | pool | shared | cached_pool | cudaMalloc | pool/own | shared/own | "
            "cached_pool/own |") in text
    assert "| 4 KiB | 4.0 | 10.0 | 6.0 | 4.4 | 80.0 | 2.50 | 1.50 | 1.10 |" in text
    numba = {m: {"us": [9.0, 90.0]} for m in ("own", "pool")} | {"shared": {"us": [4.5, 9.0]}}
    ratios = pool._ratios(numba)  # no cudaMalloc mode: no cudaMalloc ratios
    assert ratios == {"pool/own": [1.0, 1.0], "shared/own": [0.5, 0.1]}
    assert "| 1 GiB | 900.0 | 7.5 |" in text
    assert "| own | 4096 |  |  |" in text and "| pool | 2304 | 2304 | 2048 |" in text
    assert pool.markdown({"skipped": True, "reason": "no CUDA device: x"})[-1] == (
        "Skipped: no CUDA device: x.")


def test_dispatch_bar_is_issue_31s_and_names_every_pair() -> None:
    """0.3 us over the native call, by the paired median: the worst pair named first, every
    pair listed as over or within, the per-pair table saying PASS or FAIL."""
    sys.path.insert(0, str(ROOT))
    from benchmarks import report

    def pair(name: str, paired: float, medians: float) -> dict:
        return {"pair": name, "overhead_paired_us": {"median": paired, "q1": 0.0, "q3": 0.0},
                "overhead_us": medians, "overhead_paired_per_pass_us": [paired, 0.1],
                "interop_us": {"median": 1.0, "q1": 1.0, "q3": 1.0}, "ratio": 1.0,
                "native_us": {"median": 1.0, "q1": 1.0, "q3": 1.0}, "native": "f(x)",
                "interop_zero_copy": True, "native_zero_copy": True}

    d = {"n_elements": 4, "dtype": "float32",
         "pairs": [pair("a->b", 0.25, 0.2), pair("c->d", 0.31, 0.5), pair("e->f", 0.9, 0.8),
                   pair("g->h", 0.3, 0.1), {"pair": "i->j", "skipped": "no native"}]}
    bar = report.dispatch_bar(d)
    assert report.OVERHEAD_BAR_US == 0.3 and not bar["pass"]
    assert bar["worst"] == "e->f" and bar["failing"] == ["e->f", "c->d"]
    assert bar["passing"] == ["g->h", "a->b"]  # 0.3 itself is within
    assert bar["value"].startswith("paired: worst e->f +0.90 us; 2/4 pairs over: e->f +0.90, "
                                   "c->d +0.31; within: g->h +0.30, a->b +0.25")
    assert "(difference of the medians: 2/4 over; 2/8 single-pass medians over)" in bar["value"]
    assert report.dispatch_bar({"pairs": [pair("a->b", 0.3, 0.3)]})["pass"]
    meta = {"machine": "m", "command": "c", "date": "d", "cpu": "x", "cpus": 2,
            "python": "3", "versions": {}}
    text = report.markdown({"meta": meta, "dispatch": d})
    assert "| c->d | 1.00 [1.00-1.00] | 1.00 [1.00-1.00] | +0.31 [+0.00-+0.00] | FAIL |" in text
    assert "| a->b | 1.00 [1.00-1.00] | 1.00 [1.00-1.00] | +0.25 [+0.00-+0.00] | PASS |" in text
