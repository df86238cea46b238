"""The ``standin`` marker (``tests/conftest.py``) sees the stand-ins a test gets through its
fixtures and the helpers it calls, not only those its own body names."""

from __future__ import annotations

from types import SimpleNamespace

from conftest import _uses_stand_in


class ThingStandIn:
    """A named stand-in."""


def _helper_with_a_stand_in():
    return ThingStandIn()


def _plain_helper():
    return 1


def case_body():
    ThingStandIn()


def case_through_a_helper():
    _helper_with_a_stand_in()


def case_plain():
    _plain_helper()


def fixture_with_a_stand_in():
    return ThingStandIn()


def fixture_calling_a_helper():
    return _helper_with_a_stand_in()


def _item(fn, fixtures=()):
    defs = {f.__name__: (SimpleNamespace(func=f),) for f in fixtures}
    return SimpleNamespace(function=fn, fixturenames=[f.__name__ for f in fixtures],
                           _fixtureinfo=SimpleNamespace(name2fixturedefs=defs))


def test_a_stand_in_reached_through_fixtures_and_helpers_marks_the_test():
    assert _uses_stand_in(_item(case_body))
    assert _uses_stand_in(_item(case_through_a_helper))
    assert _uses_stand_in(_item(case_plain, [fixture_with_a_stand_in]))
    assert _uses_stand_in(_item(case_plain, [fixture_calling_a_helper]))
    assert not _uses_stand_in(_item(case_plain, [_plain_helper]))


def test_every_test_of_the_shared_pool_suite_is_marked(pytestconfig):
    """``test_mempool_shared.py`` runs every device call against stand-ins (its docstring):
    none of its tests may count as run against real frameworks."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--co",
         "-m", "not standin", "tests/mempool/test_mempool_shared.py"],
        cwd=pytestconfig.rootpath, capture_output=True, text=True)
    assert "no tests collected" in done.stdout or "deselected" in done.stdout, done.stdout
    assert "::test_" not in done.stdout, done.stdout
