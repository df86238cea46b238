"""The table's rows and columns: which frameworks are probed, and what each needs.

A name here is a table name: a framework, or a framework on a device (``torch-cuda``,
``jax-gpu``), or ``dlpack`` (a raw DLPack capsule); :data:`PACKAGES` maps it to the package
that must be installed. The names are read from the registry's adapters (their names,
devices and packages), never written here again.
"""

from __future__ import annotations

from typing import Any

from ...adapters.base import ArrayAdapter, installed
from ...default import REGISTRY

_TARGETS = [a for a in REGISTRY.adapters.values() if isinstance(a, ArrayAdapter) and a.target]
_DEVICE_WORD = {"torch": "cuda"}
"""What a framework calls its GPU in a table name (``torch-cuda``); ``gpu`` otherwise."""

CPU = [a.name for a in _TARGETS if "cpu" in a.devices]
"""The host frameworks, in detection order (``dlpack``: a raw capsule, read with NumPy)."""
ON_GPU = {f"{a.name}-{_DEVICE_WORD.get(a.name, 'gpu')}": a.name for a in _TARGETS
          if "cpu" in a.devices and "cuda" in a.devices and a.package == a.name}
"""The GPU rows of frameworks of both devices (each its own package; not the capsule), by
the framework they are of."""
GPU = [a.name for a in _TARGETS if a.devices == ("cuda",)] + list(ON_GPU)
OPTIONAL = ("tensorflow", "paddle", "dali")
"""Frameworks whose tests run in their own pytest process (``-m tensorflow``, ``-m paddle``,
``-m dali``); ``--skip`` leaves them out of a probe. DALI is a source only: its samples are
rows of the layouts section (:data:`~.samples.LAYOUTS`)."""
RETIRED = {"mxnet": "MXNet is retired upstream (Apache attic, 2023) and needs NumPy < 2"}
"""Frameworks interop deliberately has no adapter for, and why."""

PACKAGES = {**{a.name: a.package for a in REGISTRY.adapters.values()
               if isinstance(a, ArrayAdapter) and (a.target or a.name in OPTIONAL)},
            **{row: REGISTRY.adapters[name].package for row, name in ON_GPU.items()}}
"""The package each table name needs."""


def package_installed(name: str) -> bool:
    """Whether the package behind table name ``name`` is installed (never imports it)."""
    return installed(PACKAGES[name])


def host_side(names: list[str]) -> list[str]:
    """``names`` without the GPU ones."""
    return [n for n in names if n not in GPU]


def is_gpu_pair(cell: dict[str, Any]) -> bool:
    """Whether ``cell`` pairs a GPU name with a supported one (its outcome needs a device)."""
    names = {cell["source"], cell["target"]}
    return bool(names & set(GPU)) and not names & set(RETIRED)
