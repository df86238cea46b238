"""scripts/setup.sh: one progress line per install step; other libraries' output (pip, the
TensorFlow/absl/paddle lines printed on import) only when a step fails. Run against a stand-in
``.venv/bin/python`` that prints such noise, so nothing is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOISE = ("I0000 00:00:1700000000.000000 oneDNN custom operations are on",
         "W absl::InitializeLog() ccache: not found, paddle build may be slow")
FAKE_PYTHON = """#!/usr/bin/env bash
echo "{}"
echo "{}" >&2
case "$*" in *"import interop"*) exit "${{FAIL_IMPORT:-0}}" ;; esac
exit 0
""".format(*NOISE)


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    (tmp_path / "pyproject.toml").write_text("")
    py = tmp_path / ".venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text(FAKE_PYTHON)
    py.chmod(0o755)
    return subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **env})


def test_each_install_step_is_one_line_and_the_noise_is_hidden(tmp_path):
    out = _run(tmp_path)
    assert out.returncode == 0, out.stderr
    lines = (out.stdout + out.stderr).splitlines()
    assert lines == [
        "[setup] installing torch 2.13.0 (CPU) ... ok",
        "[setup] installing tensorflow-cpu 2.21.0 and paddlepaddle 3.3.1 ... ok",
        "[setup] installing nvidia-dali-cuda120 2.4.0 ... ok",
        "[setup] installing interop-mempool[all,test,docs] and the CUDA 12 GPU packages ... ok",
        "[setup] installing ray[data] 2.60.0, datasets 5.2.0, daft 0.7.26 and pylance 14.0.2"
        " ... ok",
        "[setup] checking every framework imports ... ok",
    ], lines
    assert (tmp_path / ".venv" / ".interop-installed").exists()
    again = _run_again(tmp_path)
    assert again.stdout + again.stderr == ""  # installed: nothing to say


def _run_again(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], capture_output=True,
                          text=True, timeout=60)


def test_a_failing_step_shows_its_output_and_fails(tmp_path):
    out = _run(tmp_path, FAIL_IMPORT="3")
    assert out.returncode == 3
    assert "[setup] checking every framework imports ... FAILED (exit 3)" in out.stderr
    assert all(n in out.stderr for n in NOISE)  # now the libraries' own lines help
    assert not (tmp_path / ".venv" / ".interop-installed").exists()
