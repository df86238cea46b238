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
    assert isinstance(data["bars"], list)
    for key in ("meta", "import_time", "dispatch", "sizes", "tables", "aos_soa", "gpu"):
        assert isinstance(data[key], dict) and "error" not in data[key], (key, data.get(key))
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
    import torch  # the GPU benchmark runs exactly when torch sees a CUDA device

    assert data["gpu"]["conversions"].get("skipped") is (not torch.cuda.is_available())
    assert len(data["bars"]) == 4
