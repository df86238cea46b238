"""The benchmark command runs on tiny sizes and writes the expected keys (no timing asserts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

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
         "aos_soa,gpu"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads((tmp_path / "smoke.json").read_text())
    assert (tmp_path / "smoke.md").read_text().startswith("# interop benchmarks")
    for key in ("meta", "bars", "import_time", "dispatch", "sizes", "tables", "aos_soa", "gpu"):
        assert key in data, key
        assert "error" not in data[key] if isinstance(data[key], dict) else True, data[key]
    pairs = data["dispatch"]["pairs"]
    assert {p["pair"] for p in pairs} >= {"numpy->torch", "torch->numpy", "numpy->jax",
                                         "jax->numpy", "torch->jax", "pyarrow->numpy"}
    for p in pairs:
        if "skipped" not in p:
            assert {"interop_us", "native_us", "overhead_us", "ratio", "native"} <= set(p)
    control = data["dispatch"]["control"]  # A/A: the slowest native call against itself
    assert control["pair"] in {p["pair"] for p in pairs}
    assert "Control (A/A)" in (tmp_path / "smoke.md").read_text()
    assert set(data["sizes"]["pairs"]) >= {"numpy->torch", "numpy->jax", "torch->numpy"}
    assert data["sizes"]["memcpy"]["rows"]
    assert "per_column_us" in data["tables"]
    assert "ratio_to_memcpy" in data["aos_soa"] and data["aos_soa"]["correct"]
    assert "import_ms" in data["import_time"] and "cold_plan" in data["import_time"]
    assert data["gpu"]["conversions"].get("skipped") in (True, False)
    assert len(data["bars"]) == 5
    first = data["import_time"]["first_call"]  # import + first call vs the native first call
    assert set(first["pairs"]) >= {"numpy->torch", "numpy->jax", "pandas->torch"}
    for v in first["pairs"].values():
        assert v["over_native_ms"] == v["interop_ms"] - v["native_ms"] and v["native_ms"] > 0
    assert "import + first call ms" in (tmp_path / "smoke.md").read_text()
