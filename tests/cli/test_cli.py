"""The ``python -m interop`` commands, run as a user runs them: in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("pyarrow")


# TensorFlow, PaddlePaddle and DALI are probed by their own suites (tests/optional/:
# test_tensorflow.py, test_paddle.py, test_dali.py, each in its own pytest process): the core
# run never imports them (the doctor has no DALI pitfall to skip).
SKIP = ("--skip", "tensorflow,paddle")
TABLE_SKIP = ("--skip", "tensorflow,paddle,dali")


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interop", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def table() -> dict:
    r = run("table", "--json", *TABLE_SKIP)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def doctor() -> dict:
    r = run("doctor", "--json", *SKIP)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def demo() -> subprocess.CompletedProcess:
    r = run("demo", "--rows", "20000")
    assert r.returncode == 0, r.stderr
    return r


def test_usage_and_unknown_command():
    r = run("--help")
    assert r.returncode == 0 and "table" in r.stdout and "doctor" in r.stdout
    r = run("nonsense")
    assert r.returncode == 2 and "unknown command" in r.stderr


def test_table_json_has_every_pair(table):
    names = table["sources"]
    assert {"numpy", "torch", "jax", "pyarrow", "pandas", "polars", "dlpack"} <= set(names)
    assert {"cupy", "numba", "cudf", "torch-cuda", "jax-gpu"} <= set(names)
    assert len(table["pairs"]) == len(names) * len(table["targets"])
    cells = {(c["source"], c["target"]): c for c in table["pairs"]}
    assert cells[("pyarrow", "torch")]["status"] == "zero-copy"
    assert cells[("numpy", "jax")]["status"] == "zero-copy"
    for c in table["pairs"]:
        assert c["status"] in ("zero-copy", "copy", "unsupported", "not probed", "not supported")
        if c["status"] != "zero-copy":
            assert c["reason"]


@pytest.mark.cpu_only
def test_table_gpu_cells_are_not_guessed(table):
    for c in table["pairs"]:
        if "mxnet" in (c["source"], c["target"]):  # retired: "not supported", with the reason
            assert c["status"] == "not supported" and "retired" in c["reason"]
        elif c["source"] in ("cupy", "torch-cuda") or c["target"] in ("cudf", "jax-gpu"):
            assert c["status"] == "not probed"
            assert "no CUDA device" in c["reason"]


def test_table_markdown_has_legend_and_notes(table):
    from interop.cli.table import markdown

    md = markdown(table)
    assert "Legend:" in md and "## Notes" in md and "[^1]:" in md
    assert "| **numpy** |" in md


def test_doctor_lists_frameworks_with_versions(doctor):
    """The version is the distribution's (``2.11.0`` on a GPU host where ``torch.__version__``
    reads ``2.11.0+cu130``): equal to the installed metadata, and to torch's own version
    without the local build suffix."""
    import importlib.metadata as md

    import torch

    fws = {f["name"]: f for f in doctor["frameworks"]}
    assert fws["torch"]["importable"] and fws["torch"]["version"] == md.version("torch")
    assert fws["torch"]["version"].split("+")[0] == torch.__version__.split("+")[0]
    assert "DLPack import" in fws["torch"]["protocols"]
    assert fws["numpy"]["version"]
    assert isinstance(doctor["gpus"]["count"], int)
    assert "active" in doctor["pool"]
    import importlib.util

    has_llvmlite = importlib.util.find_spec("llvmlite") is not None
    assert doctor["transpose"]["kernel"] == ("llvm" if has_llvmlite else "numpy")


def test_doctor_checks_the_known_pitfalls(doctor):
    pits = {p["id"]: p for p in doctor["pitfalls"]}
    assert {"torch-negative-strides", "torch-readonly", "jax-misaligned-copy",
            "jax-x64"} <= set(pits)
    neg = pits["torch-negative-strides"]
    assert neg["state"] in ("present", "absent")
    assert neg["interop"].startswith("guarded")
    assert pits["jax-misaligned-copy"]["interop"].startswith("guarded")
    assert pits["torch-readonly"]["interop"].startswith("reported")


def test_table_has_a_sparse_section_from_live_probes(table):
    cells = {(c["source"], c["target"]): c for c in table["sparse"]}
    zero = cells[("scipy csr", "torch")]
    assert zero["status"] == "zero-copy" and "data" in zero["proof"] and zero["plan_agrees"]
    refused = cells[("scipy csc", "jax")]  # JAX has no CSC: format= asks for another layout
    assert refused["status"] == "unsupported" and "format=" in refused["reason"]
    widened = cells[("jax BCOO", "torch")]  # int32 coordinates into torch COO: widened only
    assert widened["status"] == "copy" and "coo coords: copied" in widened["reason"]
    assert "coo data: copied" not in widened["reason"]  # the values are shared, and named so
    assert "shared with the source (no copy): coo data" in widened["reason"]
    assert all(c["plan_agrees"] for c in table["sparse"])
    assert cells[("tensorflow SparseTensor", "torch")]["status"] == "not probed"
    from interop.cli.table import markdown, text

    assert "## Sparse values" in markdown(table) and "| **scipy csr** |" in markdown(table)
    assert "sparse values" in text(table)


def test_skip_leaves_tensorflow_and_paddle_out(table, doctor):
    for c in table["pairs"]:
        names = {c["source"], c["target"]}
        if names & {"tensorflow", "paddle"} and names <= {"numpy", "tensorflow", "paddle"}:
            assert c["status"] == "not probed" and "skipped" in c["reason"], c
    pits = [p for p in doctor["pitfalls"] if p["id"].startswith(("tensorflow", "paddle"))]
    assert pits and all(p["state"] == "skipped" for p in pits), pits
    r = run("table", "--skip", "numpy")
    assert r.returncode == 2 and "--skip takes tensorflow, paddle, dali" in r.stderr


def test_doctor_text_is_readable(doctor):
    from interop.cli.doctor import render

    out = render(doctor)
    assert "frameworks:" in out and "GPUs:" in out and "RMM pool:" in out
    assert "AoS <-> SoA transpose:" in out
    assert "known pitfalls" in out


def test_demo_reports_each_handover(demo):
    out = demo.stdout
    assert "20,000 rows" in out
    # the torch step of a fixed-width Arrow column is zero-copy, checked by pointer
    torch_step = out.split("pyarrow columns -> torch")[1].split("\n[")[0]
    assert "x1: zero-copy (checked by pointer)" in torch_step
    assert "pyarrow -> torch: zero-copy" in torch_step
    assert "torch -> jax: zero-copy" in out
    assert "jax -> pyarrow: zero-copy" in out
    assert "hand-overs between frameworks were zero-copy" in out
    assert " ms)" in out  # per-step times


def test_demo_json():
    r = run("demo", "--rows", "5000", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["handovers"] >= 6 and d["zero_copy"] == d["handovers"]
    names = [s["step"] for s in d["steps"]]
    assert any("torch" in n for n in names) and any("JAX" in n for n in names)


@pytest.mark.cpu_only
def test_demo_cuda_says_no_device_without_faking_one():
    r = run("demo", "--device", "cuda", "--rows", "1000")
    assert r.returncode != 0
    assert "no CUDA device" in r.stderr
    assert "zero-copy" not in r.stdout
