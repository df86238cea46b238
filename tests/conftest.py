"""Shared test setup: the machine each test needs.

- ``@pytest.mark.gpu``: needs a CUDA device; skips, with the reason, on a machine without
  one.
- ``@pytest.mark.cpu_only``: asserts what happens on a machine *without* a CUDA device
  (a clear error, a "not probed" cell); skips on a GPU host, where its GPU twin runs.
- ``jax_cpu`` fixture: JAX arrays the test creates land on the CPU (on a GPU host JAX's
  default device is the GPU); the fixture's value is the CPU device.
- ``standin``: set on every test whose code, the code of a fixture it gets, or a helper of
  its module either calls, uses a stand-in (a ``...StandIn`` class, ``helpers.DLPackOnly``,
  a ``..._stand_in`` name, or says "stand-in"), so that the summary counts the tests against
  stand-ins apart from those against real frameworks.

Where a driver is installed but the device query fails (``tests/machine.py``), both markers
*fail* the test instead of skipping: a broken GPU host never passes as a CPU one.
"""

from __future__ import annotations

import inspect
import re

import pytest

from machine import machine

STAND_IN = re.compile(r"\w*StandIn\b|\bDLPackOnly\b|\w*stand_in\b|stand-in")
"""How a test's code names a stand-in."""


def _source(fn) -> str:
    try:
        return inspect.getsource(fn) if fn is not None else ""
    except (OSError, TypeError):
        return ""


def _names_stand_in(fn) -> bool:
    """``fn``'s code, or that of a function of its own module it calls by name, names a
    stand-in."""
    if fn is None:
        return False
    if STAND_IN.search(_source(fn)):
        return True
    code, scope = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    helpers = (scope.get(n) for n in (code.co_names if code is not None else ()))
    return any(inspect.isfunction(h) and h.__module__ == fn.__module__
               and STAND_IN.search(_source(h)) for h in helpers)


def _uses_stand_in(item) -> bool:
    """The test's own code, the code of any fixture it gets (directly or through other
    fixtures: ``item.fixturenames`` is the closure), or a helper either calls, names a
    stand-in."""
    if _names_stand_in(getattr(item, "function", None)):
        return True
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}) if info is not None else {}
    return any(_names_stand_in(d.func) for name in item.fixturenames
               for d in defs.get(name, ()))


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("standin") is None and _uses_stand_in(item):
            item.add_marker(pytest.mark.standin)


def pytest_terminal_summary(terminalreporter):
    ran = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
           if getattr(r, "when", "call") == "call"]
    standins = [r for r in ran if "standin" in r.keywords]
    if ran:
        terminalreporter.write_line(
            f"{len(standins)} of the {len(ran)} tests run use stand-ins (pytest -m standin), "
            f"{len(ran) - len(standins)} run against real frameworks only")


def pytest_runtest_setup(item):
    gpu, cpu_only = item.get_closest_marker("gpu"), item.get_closest_marker("cpu_only")
    if not (gpu or cpu_only):
        return
    m = machine()
    if m.broken:
        pytest.fail(f"the CUDA driver is installed but broken: {m.broken}", pytrace=False)
    if gpu and not m.count:
        pytest.skip(f"needs a CUDA device: {m.reason}")
    if cpu_only and m.count:
        pytest.skip(f"asserts the behaviour without a CUDA device; this machine has {m.reason}")


@pytest.fixture
def jax_cpu():
    """JAX's default device is the CPU for the test's duration; the CPU device."""
    from machine import jax_on_cpu

    with jax_on_cpu() as cpu:
        yield cpu


def pytest_collection_finish(session):
    """Ask the machine once, before any test's stand-in CuPy or torch can hide the real one
    from that answer (it is kept for the whole run).

    When paddle tests are selected, import paddle before anything imports tensorflow:
    importing paddle after tensorflow segfaults (paddlepaddle 3.3.1, tensorflow 2.21), which
    would kill a combined run (``pytest -m "tensorflow or paddle"``). The core run selects no
    paddle test and imports neither."""
    import sys

    machine()
    if "paddle" in sys.modules or "tensorflow" in sys.modules:
        return
    if any(item.get_closest_marker("paddle") for item in session.items):
        try:
            import paddle  # noqa: F401
        except ImportError:  # the paddle tests then fail on their own import, saying why
            pass
