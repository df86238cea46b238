"""Routes: the edges between frameworks and the cheapest chain of them. Pure: no values.

Each framework module declares its own edges (mostly to and from NumPy), ``adapters.pairs``
the pair-specific ones, and every DLPack producer/consumer pair (and, on a GPU, every CUDA
Array Interface pair) gets a generic edge made here from the adapters' capabilities.
"""

from __future__ import annotations

import heapq
from typing import Any

from .adapters.base import ArrayAdapter, Edge, handover_check, writable_source
from .adapters.edge import CAI, DLPACK

DLPACK_COST = 2.2  # on the host, two NumPy steps (1.0 each) beat it
LEGACY_PENALTY = 2.5  # a versioned-only exporter to a consumer of legacy capsules
HUB_BONUS = 0.1  # paths through the hub (NumPy on the host, CuPy on a GPU) win ties
CAI_VIA = "CUDA Array Interface"  # how plans name a CUDA Array Interface step


class Routes:
    """The edges of a set of adapters, and the cheapest path between two of them."""

    def __init__(self, adapters: dict[str, Any]) -> None:
        self.adapters = adapters
        self.direct: list[Edge] = []
        self._cache: dict[tuple[str, str, str], list[Edge] | None] = {}
        self._edges_from: dict[tuple[str, str], list[Edge]] = {}

    def add(self, edges: list[Edge]) -> None:
        self.direct.extend(edges)
        self.changed()

    def changed(self) -> None:
        """Forget the paths and edges found (an adapter or an edge was added)."""
        self._cache.clear()
        self._edges_from.clear()

    def edges_from(self, source: str, device: str) -> list[Edge]:
        """The edges out of ``source`` on ``device``: its declared ones, and a generic DLPack
        (and, on a GPU, CUDA Array Interface) edge to every framework that imports them."""
        out = [e for e in self.direct if e.source == source and e.device == device]
        s = self.adapters.get(source)
        if not isinstance(s, ArrayAdapter) or device not in s.devices:
            return out
        for t in self.adapters.values():
            if t is s or not isinstance(t, ArrayAdapter) or not t.target \
                    or device not in t.devices:
                continue
            rules = t.rules if device == "cpu" else t.gpu_rules
            if s.export_dlpack is not None and t.from_dlpack is not None and rules:
                cost = DLPACK_COST
                if s.exports_versioned_only and not rules.versioned:
                    cost += LEGACY_PENALTY
                if s.hub or t.hub:
                    cost -= HUB_BONUS
                out.append(dlpack_edge(s, t, cost, device))
            if device != "cpu" and s.export_cai is not None and t.from_cai is not None:
                out.append(cai_edge(s, t, DLPACK_COST - HUB_BONUS * (s.hub or t.hub)))
        return out

    def route(self, source: str, target: str, device: str = "cpu") -> list[Edge] | None:
        """Cheapest chain of edges from ``source`` to ``target`` on ``device`` (``[]``: same;
        ``None``: no path). It needs no live value, so GPU routes can be read anywhere; the
        edges out of a framework are made when the search first leaves it."""
        key = (source, target, device)
        if key in self._cache:
            return self._cache[key]
        found = [] if source == target else self._shortest(source, target, device)
        self._cache[key] = found
        return found

    def _shortest(self, source: str, target: str, device: str) -> list[Edge] | None:
        best: dict[str, float] = {source: 0.0}
        queue: list[tuple[float, int, str, list[Edge]]] = [(0.0, 0, source, [])]
        counter = 1
        while queue:
            cost, _, node, path = heapq.heappop(queue)
            if node == target:
                return path
            if cost > best.get(node, float("inf")):
                continue
            for e in self._out(node, device):
                c = cost + e.cost
                if c < best.get(e.target, float("inf")):
                    best[e.target] = c
                    heapq.heappush(queue, (c, counter, e.target, path + [e]))
                    counter += 1
        return None

    def _out(self, node: str, device: str) -> list[Edge]:
        key = (node, device)
        out = self._edges_from.get(key)
        if out is None:
            out = self._edges_from[key] = self.edges_from(node, device)
        return out


def dlpack_edge(s: ArrayAdapter, t: ArrayAdapter, cost: float, device: str = "cpu") -> Edge:
    """The DLPack step from ``s`` to ``t``: ``t``'s import of ``s``'s export, after the
    hand-over check of ``t``'s rules on ``device``."""
    export, consume = s.export_dlpack, t.from_dlpack

    def convert(x: Any) -> Any:
        return consume(export(x))

    rules = t.rules if device == "cpu" else t.gpu_rules
    return Edge(s.name, t.name, f"DLPack: {t.dlpack_call}", lambda: convert,
                check=handover_check(s, rules, t.holds_read_only),
                hazard=_both(s.export_hazard,
                             t.dlpack_hazard or _writable_source_hazard(s, t, rules)),
                cost=cost, device=device, protocol=DLPACK)


def cai_edge(s: ArrayAdapter, t: ArrayAdapter, cost: float) -> Edge:
    """The CUDA Array Interface step from ``s`` to ``t`` (on a GPU)."""
    export, consume = s.export_cai, t.from_cai

    def convert(x: Any) -> Any:
        return consume(export(x))

    return Edge(s.name, t.name, CAI_VIA, lambda: convert,
                check=handover_check(s, t.gpu_rules, t.holds_read_only),
                hazard=_both(s.export_hazard, _cai_readonly_hazard(s, t)), cost=cost,
                device="cuda", protocol=CAI)


def _both(first: Any, second: Any) -> Any:
    """The hazard of an edge out of a source with an :attr:`~ArrayAdapter.export_hazard`
    (``first``) into a consumer with its own (``second``); either may be ``None``."""
    if first is None or second is None:
        return first or second

    def hazards(x: Any) -> tuple[str, ...]:
        return tuple(h for h in (first(x), second(x)) if h)

    return hazards


def _writable_source_hazard(s: ArrayAdapter, t: ArrayAdapter, rules: Any) -> Any:
    """A writable source handed to a consumer whose arrays are immutable (``t`` holds
    read-only memory and declares no DLPack hazard of its own): writable as the source's own
    view says (a NumPy array's flag, a torch, paddle or DALI tensor), never by its name."""
    if not t.holds_read_only or s.holds_read_only or s.view is None:
        return None
    view, who = s.view, rules.name if rules is not None and rules.name else t.name

    def hazard(x: Any) -> str | None:
        return None if view(x).readonly else writable_source(who)

    return hazard


def _cai_readonly_hazard(s: ArrayAdapter, t: ArrayAdapter) -> Any:
    """A read-only CAI source (``data[1]``) handed to a consumer that cannot say read-only."""
    if t.holds_read_only or s.view is None:
        return None
    view = s.view

    def hazard(x: Any) -> str | None:
        if view(x).readonly:
            return (f"the source is read-only (its CUDA Array Interface says so) and {t.name} "
                    "arrays cannot be: writes through the result change it")
        return None

    return hazard
