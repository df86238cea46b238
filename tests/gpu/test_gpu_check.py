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

ROOT = Path(__file__).resolve().parents[2]
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
        "gpu-check: no CUDA device on this machine (nvidia-smi lists no GPU); nothing to check"]
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


def _stand_ins(tmp_path: Path, steps: str = "exit 0") -> tuple[Path, Path]:
    """Named stand-ins on a GPU host: ``nvidia-smi`` listing one GPU, and a Python that
    records every call, hands the report writer (``scripts/gpu_report.py``) to the real
    interpreter, answers ``versions`` with nothing, and runs ``steps`` (shell) for the rest."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Stand-in GPU (UUID: x)'\n")
    (bin_dir / "python-standin").write_text(
        f"#!/bin/bash\necho \"$*\" >> {calls}\n"
        "case \"$*\" in *gpu_report.py\\ versions*) echo '{}'; exit 0 ;; esac\n"
        f"case \"$1\" in scripts/gpu_report.py) exec {sys.executable} \"$@\" ;; esac\n"
        f"case \"$*\" in *find_spec*) exec {sys.executable} \"$@\" ;; esac\n"
        f"{steps}\n")
    for f in bin_dir.iterdir():
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return bin_dir, calls


def _env(bin_dir: Path, out: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "PYTHON": str(bin_dir / "python-standin"), "OUT": str(out), "WRITE_DOCS": "0",
            "TMPDIR": str(out.parent), **extra}


def _steps(out: Path) -> list[dict]:
    return json.loads((out / "gpu-check.json").read_text())["steps"]


def test_on_a_gpu_host_the_cells_come_first_and_a_failed_probe_records_nothing(tmp_path):
    """The script's steps on a GPU host, with the stand-ins (the table probe fails): the gpu
    tests that settle what the sources predicted first, then the GPU cells are probed, then
    the other gpu-marked tests, the shared pool, the core suite, each
    under a time limit; a failed probe leaves the recorded cells alone and the report is not
    handed stale cells."""
    bin_dir, calls = _stand_ins(tmp_path, 'case "$*" in *--save-gpu*) exit 1 ;; esac\nexit 0')
    tracked = [ROOT / "docs" / "gpu-cells.json", ROOT / "docs" / "gpu-report.md",
               ROOT / "conversion_table.md"]
    before = [p.read_bytes() if p.exists() else None for p in tracked]
    out = tmp_path / "out"
    r = subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True, timeout=300,
                       env=_env(bin_dir, out, STEP_LIMIT="30"))
    assert [p.read_bytes() if p.exists() else None for p in tracked] == before
    steps = [s["name"] for s in _steps(out)]
    assert steps[:5] == ["sources", "table", "gpu", "pool", "core"], steps
    assert "table-section" not in steps
    assert not (out / "gpu-cells.json").exists()
    pytest_calls = [c for c in calls.read_text().splitlines() if c.startswith("-m pytest")]
    assert all("--continue-on-collection-errors" in c for c in pytest_calls), pytest_calls
    sources_call, gpu_call, pool_call = pytest_calls[:3]
    assert sources_call.endswith("-m gpu tests/gpu/test_gpu_sources_third.py "
                                 "tests/tables/test_tables_gpu.py "
                                 "tests/mempool/test_mempool_gpu_sources.py")
    assert "--ignore=tests/mempool/test_mempool_gpu.py" in gpu_call
    assert "--ignore=tests/gpu/test_gpu_sources_third.py" in gpu_call
    assert pool_call.endswith("-m gpu tests/mempool/test_mempool_gpu.py "
                              "tests/mempool/test_mempool_auto.py")
    assert "Not probed in this run" in (out / "gpu-report.md").read_text()
    assert r.returncode == 1  # the failed probe fails the check


def test_a_dry_run_shows_the_deadline_the_order_a_report_per_step_and_few_files(tmp_path):
    """``DRY_RUN=1`` with a stand-in ``nvidia-smi`` (and the real Python): the deadline, the
    steps in order of value with their budgets, the report rewritten after each, and at most
    5 files for the output folder (a lent machine returns 8); nothing written into the
    tree."""
    bin_dir, _ = _stand_ins(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OUT": str(out),
           "DRY_RUN": "1", "DEADLINE": "300", "PYTHON": sys.executable,
           "TMPDIR": str(tmp_path)}
    tracked = [ROOT / "docs" / "gpu-report.md", ROOT / "conversion_table.md"]
    before = [p.read_bytes() if p.exists() else None for p in tracked]
    r = subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [p.read_bytes() if p.exists() else None for p in tracked] == before
    lines = r.stdout.splitlines()
    assert "deadline 300s, at most 540s a step" in lines[0]
    started = [ln.split()[1] for ln in lines if ln.startswith("== ") and "(at most" in ln]
    suites = [fw for fw in ("tensorflow", "paddle") if fw in started]  # where installed
    assert started == ["sources", "table", "gpu", "pool", "core", *suites, "benchmarks"], started
    rewritten = [ln.split("after ")[1].split()[0] for ln in lines if "report rewritten" in ln]
    assert rewritten == ["versions", *started, "end"]
    files = sorted(p.name for p in out.iterdir())
    assert files == ["gpu-check-logs.tar.gz", "gpu-check.json", "gpu-report.md"]
    assert len(files) <= 5 and all(p.is_file() for p in out.iterdir())
    facts = json.loads((out / "gpu-check.json").read_text())
    assert facts["deadline_s"] == "300" and [s["name"] for s in facts["steps"]][:5] == [
        "sources", "table", "gpu", "pool", "core"]
    assert "- Deadline: 300 s for the whole check" in (out / "gpu-report.md").read_text()
    assert not list(tmp_path.glob("gpu-check.*"))  # the log folder is gone, archived


def test_steps_picks_the_steps_a_second_check_runs(tmp_path):
    """``STEPS=core,benchmarks``: the other steps are reported "not run", not started."""
    bin_dir, calls = _stand_ins(tmp_path)
    out = tmp_path / "out"
    subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True, timeout=300,
                   env=_env(bin_dir, out, STEPS="core,benchmarks"))
    steps = {s["name"]: s for s in _steps(out)}
    assert [n for n, s in steps.items() if s["rc"] == 0] == ["core", "benchmarks"]
    assert steps["gpu"]["command"] == "not run: not in STEPS=core,benchmarks"
    started = [c.split()[1] for c in calls.read_text().splitlines() if c.startswith("-m ")]
    assert [m for m in started if m != "pip"] == ["pytest", "benchmarks"], started  # pip: .whl/


def test_the_deadline_bounds_the_check_and_a_kill_leaves_a_report(tmp_path):
    """Each step takes 4 s (a stand-in pytest); with ``DEADLINE=50`` (15 s kept for the last
    report, steps under 20 s not started) the later steps are reported "not run" and the
    check ends in time; a check killed after its first report still leaves one."""
    bin_dir, _ = _stand_ins(tmp_path, "sleep 4; exit 0")
    out = tmp_path / "out"
    r = subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True, timeout=300,
                       env=_env(bin_dir, out, DEADLINE="50"))
    steps = _steps(out)
    ran = [s["name"] for s in steps if s["rc"] == 0]
    not_run = [s["name"] for s in steps if s["command"].startswith("not run: deadline")]
    assert ran and not_run and ran + not_run == [
        s["name"] for s in steps if s["command"] != "not installed"], steps
    assert ran[0] == "sources" and not_run[-1] == "benchmarks"
    assert "| benchmarks | - | not run: deadline" in (out / "gpu-report.md").read_text()
    assert r.returncode == 0  # what ran passed
    killed = tmp_path / "killed"
    p = subprocess.Popen(["/bin/bash", str(SCRIPT)], stdout=subprocess.PIPE, text=True,
                         env=_env(bin_dir, killed, DEADLINE="300"), start_new_session=True)
    for line in p.stdout:
        if "report rewritten after table" in line:
            os.killpg(p.pid, 9)
            break
    p.wait(timeout=60)
    assert "| gpu | not run |" in (killed / "gpu-report.md").read_text()
    assert (killed / "gpu-check-logs.tar.gz").exists()


def test_wheels_are_installed_offline_before_anything_else(tmp_path):
    """A folder of wheels (the lent image lacks optree and RMM) is installed first, with
    pip offline (``--no-index``), into a folder put on every later step's PYTHONPATH."""
    bin_dir, calls = _stand_ins(tmp_path, 'echo "PYTHONPATH=$PYTHONPATH" >> '
                                f'{tmp_path / "paths.txt"}; exit 0')
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "optree-0.0-py3-none-any.whl").write_text("")
    out = tmp_path / "out"
    subprocess.run(["/bin/bash", str(SCRIPT), str(wheels)], capture_output=True, text=True,
                   timeout=300, env=_env(bin_dir, out, SKIP_BENCHMARKS="1"))
    first = calls.read_text().splitlines()[0]
    assert first.startswith("-m pip install -q --no-index --no-deps") and str(wheels) in first
    site = first.split("--target ")[1].split()[0]
    paths = (tmp_path / "paths.txt").read_text().splitlines()[1:]  # after pip's own call
    assert paths and all(p.endswith(":" + site) for p in paths)
    steps = {s["name"]: s for s in _steps(out)}
    assert steps["benchmarks"]["command"] == "not run: SKIP_BENCHMARKS=1"


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
