"""scripts/gpu-check.sh and its report writer (scripts/gpu_report.py), checked on any machine:
the no-GPU branch by running the script where no GPU can be seen, the report from a real
pytest JUnit file and sample logs."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu-check.sh"


def _report_module():
    spec = importlib.util.spec_from_file_location("gpu_report", ROOT / "scripts" / "gpu_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gpu_report = _report_module()


def _run_script(path_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True,
                          timeout=60, cwd=path_dir, env={"PATH": str(path_dir)})


@pytest.mark.parametrize("smi", [None, "No devices were found", ""])
def test_without_a_gpu_the_check_says_so_in_one_line_and_exits_0(tmp_path, smi):
    """No nvidia-smi at all, or one that lists no GPU: one line, exit 0, nothing else run
    (true on a GPU host too: the script sees only this PATH)."""
    if smi is not None:
        fake = tmp_path / "nvidia-smi"
        fake.write_text(f"#!/bin/bash\necho '{smi}'\nexit 6\n")
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    r = _run_script(tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "gpu-check: no CUDA GPU on this machine (nvidia-smi lists none); nothing to check"]
    assert r.stderr == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == (["nvidia-smi"] if smi is not None
                                                          else [])


SAMPLE_TESTS = '''
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("driver went away")

def test_passes():
    assert True

def test_fails():
    assert 1 == 2, "one is not two"

def test_errors(broken):
    pass

@pytest.mark.skip(reason="needs a CUDA device: none here")
def test_skipped_a():
    pass

@pytest.mark.skip(reason="needs a CUDA device: none here")
def test_skipped_b():
    pass

@pytest.mark.skip(reason="cuDF is not installed")
def test_skipped_c():
    pass
'''


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """A log folder as gpu-check.sh leaves it, with a real pytest JUnit file for one run."""
    d = tmp_path_factory.mktemp("gpu-check")
    (d / "test_sample.py").write_text(SAMPLE_TESTS)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={d / 'gpu.xml'}", str(d / "test_sample.py")],
                   cwd=d, capture_output=True, text=True, timeout=120)
    (d / "versions.json").write_text(json.dumps({
        "python": "3.12.3", "platform": "Linux-x86_64",
        "nvidia_smi": {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "driver": "580.159.04",
                                 "memory": "81559 MiB"}], "cuda": "13.0"},
        "packages": {"torch": "2.11.0+cu130", "cupy": "14.2.0", "rmm": None, "cudf": None},
        "devices": {"torch": "2.11.0+cu130 13.0 NVIDIA H100 80GB HBM3"}}))
    (d / "steps.tsv").write_text(
        "gpu\t1\tpython3 -m pytest -m gpu\ntable\t0\tpython3 -m interop table --save-gpu x\n"
        "paddle\t-\tnot installed\n")
    (d / "gpu-cells.json").write_text(json.dumps({"pairs": [
        {"source": "cupy", "target": "torch-cuda", "status": "zero-copy", "reason": None},
        {"source": "numpy", "target": "cupy", "status": "copy", "reason": "moving copies"}]}))
    (d / "bench").mkdir()
    (d / "bench" / "gpu-check.json").write_text(json.dumps({"gpu": {
        "conversions": {"skipped": False, "device": "NVIDIA H100 80GB HBM3", "elements": 16,
                        "repeat": 3, "pairs": [
                            {"pair": "cupy->torch", "native": "torch.from_dlpack(x)",
                             "native_us": {"median": 10.1}, "interop_us": {"median": 10.6},
                             "overhead_paired_us": 0.5},
                            {"pair": "numba->jax", "skipped": True, "reason": "no JAX GPU"}]}},
        "pool": {"skipped": True, "reason": "no CUDA device: rmm is not installed"}}))
    return d


def test_junit_counts_come_from_a_real_pytest_run(logs):
    r = gpu_report.junit(logs / "gpu.xml")
    assert (r["passed"], r["failed"], r["errors"], r["skipped"]) == (1, 1, 1, 3)
    assert any("test_fails" in f and "one is not two" in f for f in r["failures"])
    assert any("test_errors" in f for f in r["failures"])
    assert dict(r["skip_reasons"]) == {"needs a CUDA device: none here": 2,
                                       "cuDF is not installed": 1}


def test_report_names_device_versions_counts_cells_and_what_is_missing(logs):
    md = gpu_report.render(logs, "./scripts/gpu-check.sh (abc1234)", "2026-11-24T03:00:00Z")
    for needle in ("- Device: NVIDIA H100 80GB HBM3", "NVIDIA driver 580.159.04, CUDA 13.0",
                   "- Date: 2026-11-24T03:00:00Z", "`./scripts/gpu-check.sh (abc1234)`",
                   "| torch | 2.11.0+cu130 |", "Not installed: rmm, cudf.",
                   "| gpu | 1 | 1 | 1 | 3 | 1 |", "| core | not run |",
                   "| paddle | not run: paddle is not installed |",
                   "skipped (2): needs a CUDA device: none here",
                   "| cupy | torch-cuda | zero-copy |  |",
                   "| numpy | cupy | copy | moving copies |",
                   "| cupy->torch | `torch.from_dlpack(x)` | 10.1 | 10.6 | +0.5 |",
                   "| numba->jax | skipped: no JAX GPU |",
                   "no CUDA device: rmm is not installed",
                   "| table | 0 | `python3 -m interop table --save-gpu x` |"):
        assert needle in md, needle
    assert "FAILED" in md and "test_fails" in md
    summary = gpu_report.summary(logs)
    assert "gpu" in summary and "1 passed, 1 failed, 1 errors, 3 skipped" in summary


def test_report_says_what_did_not_run(tmp_path):
    md = gpu_report.render(tmp_path)
    assert "unknown (nvidia-smi gave nothing)" in md
    assert "Not probed in this run" in md and "Not run, or no results" in md
    assert all(f"| {run} | not run |" in md for run in gpu_report.RUNS)


def test_write_and_table_commands(tmp_path, logs):
    out = tmp_path / "gpu-report.md"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_report.py"), "write",
                        str(logs), str(out)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("# GPU report") and "gpu " in r.stdout
    from interop.cli import table

    md = tmp_path / "conversion_table.md"
    md.write_text((ROOT / "conversion_table.md").read_text())
    record = {"date": "2026-11-24", "versions": {"cupy": "14.2.0"}, "names": ["numpy", "cupy"],
              "device": {"name": "Stand-in GPU", "driver": "1", "cuda_driver": "13.0"},
              "pairs": [{"source": s, "target": t, "status": "zero-copy", "reason": None,
                         "hazards": []} for s, t in (("cupy", "numpy"), ("cupy", "cupy"),
                                                      ("numpy", "cupy"))]}
    (tmp_path / "cells.json").write_text(json.dumps(record))
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_report.py"), "table",
                        str(tmp_path / "cells.json"), str(md)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    cells = table.parse_markdown(md.read_text())
    assert cells[("GPU sources", "cupy", "numpy")] == "zero-copy"
    assert cells[("Into GPU targets", "numpy", "cupy")] == "zero-copy"
    assert "Verified on GPU: probed on Stand-in GPU" in md.read_text()


def test_on_a_gpu_host_the_cells_come_first_and_a_failed_probe_records_nothing(tmp_path):
    """The script's steps on a GPU host, with named stand-ins for ``nvidia-smi`` (one GPU)
    and for Python (records each call; the table probe fails): the GPU cells are probed
    first, then the gpu-marked tests, then the rest, each under a time limit; a failed probe
    leaves the recorded cells alone and the report is not handed stale cells."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Stand-in GPU (UUID: x)'\n")
    (bin_dir / "python-standin").write_text(
        f"#!/bin/sh\necho \"$*\" >> {calls}\n"
        "case \"$*\" in *--save-gpu*) exit 1 ;; esac\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    cells = ROOT / "docs" / "gpu-cells.json"
    before = cells.read_bytes() if cells.exists() else None
    out = tmp_path / "out"
    r = subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                            "PYTHON": str(bin_dir / "python-standin"), "OUT": str(out),
                            "STEP_LIMIT": "30"})
    assert (cells.read_bytes() if cells.exists() else None) == before
    steps = [line.split("\t")[0] for line in
             (out / "gpu-check" / "steps.tsv").read_text().splitlines()]
    assert steps[:3] == ["table", "gpu", "core"], steps
    assert "table-section" not in steps
    assert not (out / "gpu-check" / "gpu-cells.json").exists()
    pytest_calls = [c for c in calls.read_text().splitlines() if c.startswith("-m pytest")]
    assert all("--continue-on-collection-errors" in c for c in pytest_calls), pytest_calls
    assert r.returncode == 1  # the failed probe fails the check


@pytest.mark.parametrize("name", ["NVIDIA H100 80GB HBM3", b"NVIDIA H100 80GB HBM3"])
def test_report_reads_the_numba_device_name_as_str_or_bytes(monkeypatch, capsys, name):
    """numba-cuda 0.30 gives the device name as ``str`` (older Numba: ``bytes``): the probe
    the report runs, run here against a named stand-in ``numba`` module."""
    import types

    cuda = types.ModuleType("numba.cuda")
    cuda.get_current_device = lambda: types.SimpleNamespace(name=name)
    numba = types.ModuleType("numba")
    numba.cuda = cuda
    monkeypatch.setitem(sys.modules, "numba", numba)
    monkeypatch.setitem(sys.modules, "numba.cuda", cuda)
    exec(gpu_report.PROBES["numba"], {})  # noqa: S102 - the report's own probe
    assert capsys.readouterr().out.strip() == "NVIDIA H100 80GB HBM3"
