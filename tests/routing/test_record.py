"""interop.record: the registry's classes behave as the dataclasses they replace."""

from __future__ import annotations

import dataclasses

import pytest

from interop.adapters.base import Adapter, ConsumerRules, Edge
from interop.record import record


@record(frozen=True)
class _Point:
    x: int
    y: int = 0
    tags: tuple = dataclasses.field(default=())


@record
class _Box:
    name: str
    items: list = dataclasses.field(default_factory=list)


def test_init_defaults_keywords_and_errors_match_a_dataclass():
    got = (_Point(1).x, _Point(1).y, _Point(1, 2).y, _Point(x=3, tags=(1,)).tags)
    assert got == (1, 0, 2, (1,))
    with pytest.raises(TypeError, match="missing required argument: 'x'"):
        _Point()
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        _Point(1, z=2)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        _Point(1, x=2)
    with pytest.raises(TypeError, match="takes 3 positional arguments but 4"):
        _Point(1, 2, (), 4)
    a, b = _Box("a"), _Box("b")
    a.items.append(1)
    assert b.items == []  # a fresh default per instance


def test_frozen_equality_hash_repr_and_replace():
    p = _Point(1, 2)
    assert p == _Point(1, 2) and p != _Point(1, 3) and hash(p) == hash(_Point(1, 2))
    assert repr(p) == "_Point(x=1, y=2, tags=())"
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y
    q = dataclasses.replace(p, y=7)
    assert (q.x, q.y, p.y) == (1, 7, 2)
    assert [f.name for f in dataclasses.fields(p)] == ["x", "y", "tags"]
    box = _Box("a")
    box.name = "b"  # not frozen: assignable, and unhashable as an eq dataclass is
    assert box.name == "b" and _Box.__hash__ is None


def test_the_registry_classes_are_records():
    e = Edge("a", "b", "via", lambda: len)
    assert (e.cost, e.device, e.check, e.accepts) == (1.0, "cpu", None, None)
    assert e.convert([1, 2]) == 2
    r = ConsumerRules(name="x")
    assert dataclasses.replace(r, versioned=False).versioned is False and r.versioned
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.cost = 2.0
    a = Adapter(name="n")
    assert a.is_value(object()) is False and a.edges() == [] and a.device(1) == ("cpu", 0)
