"""The doctor's child-process probes (interop.cli.probes): importable without their
frameworks, run in a child as the doctor runs them, and read back as the doctor reads them."""

from __future__ import annotations

import importlib.util
import json
import pkgutil
import subprocess
import sys

import pytest

from interop.cli import pitfalls, probes
from interop.cli.pitfalls import ChildPitfall
from interop.cli.probes import ABSENT, PRESENT

MODULES = sorted(m.name for m in pkgutil.iter_modules(probes.__path__))
GUARDED = ("guarded", "avoided", "reported")


def _imported_after(code: str, frameworks: set[str]) -> set[str]:
    """Which of ``frameworks`` a fresh interpreter has imported after running ``code``."""
    code += ("\nimport json, sys\nprint(json.dumps(sorted({m.partition('.')[0] for m in "
             f"sys.modules}} & set({sorted(frameworks)!r}))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.strip().splitlines()[-1]))


def _reported_by(module: str) -> set[str]:
    """The pitfalls whose report the probe ``module`` prints."""
    return {p.id for p in pitfalls.PITFALLS if isinstance(p, ChildPitfall)
            and (p.reported_by or p.probe) == module and (p.reported_by or not p.fatal_call)}


def test_every_probe_module_imports_without_its_framework():
    """Each probe imports its framework in ``main()`` only (the doctor's own process never
    imports TensorFlow or paddle), and every child pitfall names a probe that exists."""
    code = (f"import importlib\nfor m in {MODULES!r}:\n"
            "    assert callable(importlib.import_module('interop.cli.probes.' + m).main), m")
    assert not _imported_after(code, {"torch", "tensorflow", "paddle", "jax"})
    named = {name for p in pitfalls.PITFALLS if isinstance(p, ChildPitfall)
             for name in (p.probe, p.reported_by) if name}
    assert named == set(MODULES)


def test_a_report_reads_back_as_it_was_written(capsys):
    report = probes.Report()
    report.add("a", True, "seen", "guarded: yes")
    report.add("b", False, "not seen", "")
    report.print()
    line = capsys.readouterr().out.strip()
    assert probes.read_report(line) == {"a": [PRESENT, "seen", "guarded: yes"],
                                        "b": [ABSENT, "not seen", ""]}
    assert probes.read_report("") == {} and probes.read_report("{not json") == {}


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_torch_probe_runs_in_a_child_and_reaches_torch():
    """The probe reaches ``torch.from_dlpack``: it aborts the child (the pitfall), returns,
    or fails inside torch, never on an error of its own (an import, a name)."""
    r = subprocess.run([sys.executable, "-m", "interop.cli.probes.torch_negative_strides"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode > 0 and r.returncode != 134:
        assert "torch.from_dlpack(numpy.arange(4.0)[::-1])" in r.stderr, r.stderr
        assert "in main" in r.stderr and "Error" in r.stderr.splitlines()[-1], r.stderr
    state, evidence = pitfalls._died(probes.run({"torch_negative_strides"})[
        "torch_negative_strides"][0], "doing it")
    assert (state == PRESENT) == (r.returncode < 0 or r.returncode == 134), (r, evidence)


def test_the_doctor_reads_dying_and_reporting_probes(monkeypatch):
    """Stand-in child outcomes (the protocol is under test, not TensorFlow): a probe that
    died is present with its exit code, a report gives state, evidence and guard, and a
    report that never came says so instead of guessing."""
    batch = {"tensorflow-numpy-copies": [PRESENT, "it copied", "avoided: view"],
             "tensorflow-string-dlpack": [PRESENT, "", "guarded: refused"]}
    outcomes = {"tensorflow_batch": (0, json.dumps(batch)), "tensorflow_string": (-6, ""),
                "tensorflow_misaligned": (0, ""), "paddle_after_tensorflow": (None, ""),
                "paddle_batch": (1, "")}
    asked = []
    monkeypatch.setattr(pitfalls, "installed", lambda name: True)
    monkeypatch.setattr(probes, "run", lambda names: asked.append(set(names)) or outcomes)
    wanted = [p for p in pitfalls.PITFALLS if p.framework in ("tensorflow", "paddle")]
    got = {e["id"]: e for e in pitfalls.check_pitfalls((), wanted)}
    assert asked == [set(outcomes)]
    assert got["tensorflow-string-dlpack"] == {
        "id": "tensorflow-string-dlpack", "framework": "tensorflow",
        "summary": "Tensor.__dlpack__ of a tf.string tensor aborts the interpreter",
        "state": PRESENT,
        "evidence": "a child process calling tf.constant(['a']).__dlpack__() died (exit -6)",
        "interop": "guarded: refused"}
    assert (got["tensorflow-numpy-copies"]["state"], got["tensorflow-numpy-copies"]["evidence"],
            got["tensorflow-numpy-copies"]["interop"]) == (PRESENT, "it copied", "avoided: view")
    assert got["tensorflow-misaligned-abort"]["state"] == ABSENT
    assert got["paddle-after-tensorflow"]["state"] == pitfalls.UNKNOWN
    assert got["paddle-after-tensorflow"]["interop"].startswith("could not check")
    bf16 = got["tensorflow-bfloat16-writable"]
    assert bf16["state"] == pitfalls.UNKNOWN and "exit 0" in bf16["evidence"]
    paddle = got["paddle-readonly"]
    assert paddle["state"] == pitfalls.UNKNOWN and "exit 1" in paddle["evidence"]
    assert paddle["interop"] == "could not check: the paddle_batch child probe failed (exit 1)"


def test_skipped_frameworks_start_no_child(monkeypatch):
    monkeypatch.setattr(probes, "run", lambda names: pytest.fail(f"ran {names}"))
    wanted = [p for p in pitfalls.PITFALLS if p.framework in ("tensorflow", "paddle")]
    got = pitfalls.check_pitfalls(("tensorflow", "paddle"), wanted)
    assert got and all(e["state"] == pitfalls.SKIPPED and "(--skip)" in e["evidence"]
                       for e in got)


def _batch(module: str) -> dict[str, list[str]]:
    rc, line = probes.run({module})[module]
    assert rc == 0, f"{module} exited {rc}"
    found = probes.read_report(line)
    assert set(found) == _reported_by(module), line
    for state, _, guard in found.values():
        assert state in (PRESENT, ABSENT) and guard.startswith(GUARDED), found
    return found


@pytest.mark.tensorflow
def test_the_tensorflow_batch_probe_reports_each_of_its_pitfalls():
    found = _batch("tensorflow_batch")
    assert found["tensorflow-non-compact"][1].startswith(
        ("tf.experimental.dlpack.from_dlpack of a strided view raised", "a strided view"))


@pytest.mark.paddle
def test_the_paddle_batch_probe_reports_each_of_its_pitfalls():
    found = _batch("paddle_batch")
    assert found["paddle-dlpack-device"][2] == "guarded: interop's producer reports (1, 0)"


def test_the_doctor_process_never_imports_tensorflow_or_paddle():
    """Everything TensorFlow or paddle runs in a probe's child, guards included (explaining a
    conversion to TensorFlow may import it): here the children are stand-ins that report
    nothing, and the doctor's own process must still not have imported either."""
    code = ("from interop.cli import doctor, probes\n"
            "probes.run = lambda names: {n: (0, '') for n in names}\n"
            "d = doctor.collect(())\n"
            "assert any(p['framework'] == 'tensorflow' for p in d['pitfalls'])")
    assert not _imported_after(code, {"tensorflow", "paddle"})
