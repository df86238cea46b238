"""Each framework's knowledge in one place: one cached type test, framework lists read from
the adapters, one answer to "is it installed", the mempool adapters' interface a Protocol."""

from __future__ import annotations

import inspect
import sys
import types

import pytest

from interop.adapters.base import ArrayAdapter, installed, instance_test
from interop.api import REGISTRY
from interop.cli.table import columns
from mempool import adapters as pool_adapters
from mempool.adapters import FrameworkAdapter
from mempool.adapters._base import is_installed


def test_the_type_test_imports_nothing_reads_the_classes_once_imported_and_caches(monkeypatch):
    class Thing:
        pass

    class Other:
        pass

    is_thing = instance_test("fake_framework_for_a_test", "Thing", "Missing")
    assert not is_thing(Thing())  # the module is not imported: no value of it
    assert "fake_framework_for_a_test" not in sys.modules
    fake = types.ModuleType("fake_framework_for_a_test")
    fake.Thing = Thing
    monkeypatch.setitem(sys.modules, "fake_framework_for_a_test", fake)
    assert is_thing(Thing()) and not is_thing(Other())

    class Sub(Thing):
        pass

    assert is_thing(Sub())
    again = types.ModuleType("fake_framework_for_a_test")  # a module put in its place
    again.Thing = Other
    monkeypatch.setitem(sys.modules, "fake_framework_for_a_test", again)
    assert is_thing(Other()) and not is_thing(Thing())

    class Swapped:
        pass

    monkeypatch.setattr(again, "Thing", Swapped)  # a class swapped in (a test's stand-in)
    assert is_thing(Swapped())
    monkeypatch.setitem(sys.modules, "fake_framework_for_a_test", None)
    assert not is_thing(Other())


@pytest.mark.parametrize("package", ["numpy", "surely_not_a_package_here_x"])
def test_interop_and_mempool_agree_on_what_is_installed(package, monkeypatch):
    assert installed(package) == is_installed(package)
    monkeypatch.setitem(sys.modules, package, None)  # imports refused: not installed
    assert installed(package) is False and is_installed(package) is False


def test_the_table_names_its_frameworks_from_the_adapters():
    targets = [a for a in REGISTRY.adapters.values() if isinstance(a, ArrayAdapter) and a.target]
    assert set(columns.CPU) == {a.name for a in targets if "cpu" in a.devices}
    for name in columns.GPU:
        framework = columns.ON_GPU.get(name, name)
        assert "cuda" in REGISTRY.adapters[framework].devices
        assert columns.PACKAGES[name] == REGISTRY.adapters[framework].package


@pytest.mark.parametrize("name", pool_adapters.ADAPTERS)
def test_every_mempool_adapter_is_the_protocol_and_takes_the_options_it_declares(name):
    module = pool_adapters.load(name)
    assert isinstance(module, FrameworkAdapter)
    assert module.NAME == name
    for fn in (module.check, module.install):
        keywords = [p.name for p in list(inspect.signature(fn).parameters.values())[1:]]
        assert keywords == list(module.OPTIONS), (name, fn.__name__)
