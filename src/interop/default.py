"""The default registry: every framework module listed in :mod:`interop.adapters`, the
table kinds, the generic producers, the structures and the pair-specific edges, in detection
order."""

from __future__ import annotations

from importlib import import_module

from . import adapters
from .registry import Registry
from .structures.adapter import STRUCTURES
from .tables import adapters as tables


def build() -> Registry:
    """A registry of everything interop knows."""
    reg = Registry()
    for name in adapters.FRAMEWORKS:
        module = import_module(f".adapters.{name}", __package__)
        for adapter in getattr(module, "ADAPTERS", None) or (module.ADAPTER,):
            reg.add(adapter)
    for table in tables.ADAPTERS:
        reg.add(table)
    for producer in import_module(f".adapters.{adapters.PRODUCERS}", __package__).ADAPTERS:
        reg.add(producer)
    reg.add(STRUCTURES)  # last: a value any other adapter owns is a leaf, not a node
    for edge in import_module(f".adapters.{adapters.PAIRS}", __package__).edges():
        reg.add_edge(edge)
    return reg


REGISTRY = build()
