"""The suite's one answer to "which machine is this?" (tests/machine.py, tests/conftest.py):
no device skips, a broken driver fails, JAX's default device can be pinned to the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import conftest
from machine import Machine, absent_cuda_device, classify, jax_on_cpu, machine


class CudaError(Exception):
    """A stand-in for CuPy's CUDARuntimeError: a message and a CUDA status code."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


class Item:
    def __init__(self, *markers: str) -> None:
        self.markers = markers

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None


def test_this_machine_is_not_broken():
    """Fails on a host whose driver is installed but whose device query errs."""
    m = machine()
    assert m.broken is None, m
    assert m.count >= 0 and m.reason


@pytest.mark.parametrize(("status", "driver", "broken"), [
    (100, True, False),   # cudaErrorNoDevice: a driver, no device
    (100, False, False),
    (35, False, False),   # cudaErrorInsufficientDriver with no driver installed: a CPU host
    (35, True, True),     # ... with a driver installed: it is too old for this CUDA runtime
    (999, True, True),    # cudaErrorUnknown
    (3, False, True),     # cudaErrorInitializationError
])
def test_device_query_errors_are_classified(status, driver, broken):
    m = classify(CudaError(status, f"status {status}"), driver)
    assert m.count == 0 and f"status {status}" in m.reason
    assert (m.broken is not None) is broken


def test_an_error_without_a_status_is_broken():
    assert classify(RuntimeError("driver crashed"), driver=True).broken == (
        "RuntimeError: driver crashed")


@pytest.mark.parametrize(("markers", "m", "outcome"), [
    (("gpu",), Machine(0, "no CUDA device"), "skip"),
    (("gpu",), Machine(1, "1 CUDA device(s)"), "run"),
    (("cpu_only",), Machine(0, "no CUDA device"), "run"),
    (("cpu_only",), Machine(2, "2 CUDA device(s)"), "skip"),
    (("gpu",), Machine(0, "query failed", broken="CUDARuntimeError: boom"), "fail"),
    (("cpu_only",), Machine(0, "query failed", broken="CUDARuntimeError: boom"), "fail"),
    ((), Machine(0, "query failed", broken="CUDARuntimeError: boom"), "run"),
])
def test_markers_skip_run_or_fail(monkeypatch, markers, m, outcome):
    monkeypatch.setattr(conftest, "machine", lambda: m)
    item = Item(*markers)
    if outcome == "run":
        conftest.pytest_runtest_setup(item)
        return
    exc = pytest.skip.Exception if outcome == "skip" else pytest.fail.Exception
    with pytest.raises(exc) as info:
        conftest.pytest_runtest_setup(item)
    if outcome == "fail":
        assert "broken: CUDARuntimeError: boom" in str(info.value)
    else:
        assert m.reason in str(info.value)


def test_absent_cuda_device_names_the_count():
    assert absent_cuda_device() == f"cuda:{machine().count}"


def test_jax_on_cpu_places_new_arrays_on_the_cpu():
    jnp = pytest.importorskip("jax.numpy")
    with jax_on_cpu() as cpu:
        x = jnp.arange(4.0)
    assert cpu.platform == "cpu" and x.devices() == {cpu}
    np.testing.assert_array_equal(np.asarray(x), np.arange(4.0))


def test_jax_cpu_fixture_is_the_cpu_device(jax_cpu):
    jnp = pytest.importorskip("jax.numpy")
    assert jax_cpu.platform == "cpu" and jnp.zeros(2).devices() == {jax_cpu}
