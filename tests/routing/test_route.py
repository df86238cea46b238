"""One route per call: decided once (interop.route.decide), compiled by the runner, rendered
by explain; a step's protocol is a field of its edge; one promoter; the plans behind one
object."""

from __future__ import annotations

import numpy as np
import pytest

import interop
import interop.registry as registry
from helpers import aligned, data_pointer
from interop.adapters.edge import CAI, DLPACK, Edge, fixed
from interop.api import REGISTRY
from interop.errors import InteropError
from interop.route import EDGES, decide
from interop.runner import promoting


def test_explain_and_to_framework_agree_on_options_an_array_takes_none_of():
    """An option no array takes is refused by the conversion, by explain and by can_convert
    alike (explain used to plan the array and drop the option)."""
    a = np.arange(3.0)
    with pytest.raises(InteropError, match=r"options \['nulls'\] apply to tables"):
        interop.to_framework(a, "torch", nulls="mask")
    with pytest.raises(InteropError, match=r"options \['nulls'\] apply to tables"):
        interop.explain(a, "torch", nulls="mask")
    assert interop.can_convert(a, "torch", nulls="mask") is False


def test_explain_renders_the_edges_of_the_route_the_runner_compiles(monkeypatch):
    a = aligned(np.arange(4, dtype=np.float32))
    route = decide(REGISTRY, a, "jax")
    assert route.kind == EDGES and route.edges
    assert interop.explain(a, "jax").protocols == tuple(e.via for e in route.edges)
    compiled = []
    real = REGISTRY.runner.compile

    def spy(src, tgt, copy, device="cpu", stream=None, source_type=None, edges=None):
        compiled.append(edges)
        return real(src, tgt, copy, device, stream, source_type, edges)

    REGISTRY.clear_plans()
    monkeypatch.setattr(REGISTRY.runner, "compile", spy)
    interop.to_framework(a, "jax")
    assert compiled == [route.edges]  # the runner compiled the very edges explain walks


def test_a_step_is_ordered_on_a_stream_by_its_protocol_not_its_display_text():
    runner = REGISTRY.runner
    named_like_dlpack = Edge("numpy", "torch", "DLPack: my own call", fixed(lambda x: x))
    assert runner._with_stream(named_like_dlpack, 7) is named_like_dlpack
    for protocol in (DLPACK, CAI):
        speaks = Edge("cupy", "torch", "my call", fixed(lambda x: x), device="cuda",
                      protocol=protocol)
        ordered = runner._with_stream(speaks, 7)
        assert ordered is not speaks and ordered.protocol == protocol
        assert ordered.converter() is not speaks.converter()


def test_the_one_promoter_runs_the_checked_plan_first_then_the_fast_form():
    kept, made, runs = [], [], []

    def checked(x):
        runs.append(("checked", x))
        return x

    def fast(x):
        runs.append(("fast", x))
        return x

    def make():
        made.append(1)
        return fast

    plan = promoting(checked, make, kept.append)
    plan(1)
    assert runs == [("checked", 1)] and not made and len(kept) == 1
    kept[-1](2)  # what was kept for the next value makes the fast form, keeps it, runs it
    assert runs[-1] == ("fast", 2) and made == [1] and kept[-1] is fast
    assert plan.settle() is fast and kept[-1] is fast


def test_the_plans_live_behind_one_object_whose_dicts_cannot_be_replaced(monkeypatch):
    with pytest.raises(AttributeError):
        REGISTRY.cache.plain = {}  # type: ignore[misc]
    REGISTRY.clear_plans()
    decided = []
    real = registry.decide

    def spy(*args, **kwargs):
        decided.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(registry, "decide", spy)
    a = aligned(np.arange(3.0))
    for _ in range(3):  # cleared, not replaced: the converter still finds what is kept
        t = interop.to_framework(a, "torch")
    assert decided == [1] and data_pointer(t) == data_pointer(a)
