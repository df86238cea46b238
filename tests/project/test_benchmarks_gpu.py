"""The GPU benchmark's harness, on the CPU: without a device it skips saying why; each pair is
timed only when both sides share the pointer; its rows render (timings are never asserted)."""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks import gpu, report

torch = pytest.importorskip("torch")


@pytest.mark.cpu_only
def test_without_a_device_every_conversion_is_skipped_with_the_reason():
    out = gpu.run(quick=True)
    assert out["conversions"]["skipped"] is True and out["conversions"]["reason"]
    assert any("skipped: " in line for line in report.gpu_lines(out))


def test_every_ordered_pair_of_the_four_gpu_frameworks_has_a_native_call():
    pairs = {(s, t) for s in gpu.FRAMEWORKS for t in gpu.FRAMEWORKS if s != t}
    assert set(gpu.NATIVE) == pairs and all(gpu.NATIVE[p] for p in pairs)


def test_pointer_reads_each_framework_own_accessor():
    t = torch.arange(4.0)
    assert gpu.pointer(t) == t.data_ptr()
    with pytest.raises(TypeError, match="no pointer accessor"):
        gpu.pointer(np.arange(3))


def _env(convert):
    return {"torch": torch, "f": convert, "sync": lambda: None}


def test_a_pair_is_timed_against_its_native_call_when_both_share_memory(monkeypatch):
    """torch (CPU) stands in for a device framework: the harness is the same."""
    monkeypatch.setattr(gpu, "NATIVE", {("torch", "torch"): ["x.clone()", "x.view(-1)"]})
    monkeypatch.setattr(gpu, "calibrate", lambda t, s: 5)
    row = gpu._pair("torch", "torch", torch.arange(8.0), _env(lambda x, tgt: x[:]), repeat=3)
    assert row["native"] == "x.view(-1)" and row["zero_copy"], row  # clone() copies: passed over
    assert row["interop_us"]["n"] == row["native_us"]["n"] == 3
    conv = {"skipped": False, "device": "stand-in", "elements": 8, "repeat": 3, "pairs": [row]}
    text = "\n".join(report.gpu_lines({"conversions": conv}))
    assert "| torch->torch | `x.view(-1)` |" in text


def test_a_pair_interop_copies_is_not_timed(monkeypatch):
    monkeypatch.setattr(gpu, "NATIVE", {("torch", "torch"): ["x.view(-1)"]})
    row = gpu._pair("torch", "torch", torch.arange(8.0), _env(lambda x, tgt: x.clone()), 3)
    assert row["skipped"] and "interop copied" in row["reason"]


def test_a_pair_without_a_zero_copy_native_call_says_why(monkeypatch):
    monkeypatch.setattr(gpu, "NATIVE", {("torch", "torch"): ["x.clone()", "nonsense(x)"]})
    row = gpu._pair("torch", "torch", torch.arange(8.0), _env(lambda x, tgt: x), 3)
    assert row["skipped"] and "NameError" in row["reason"]
