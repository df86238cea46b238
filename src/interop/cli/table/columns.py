"""The table's rows and columns: which frameworks are probed, and what each needs.

A name here is a table name: a framework, or a framework on a device (``torch-cuda``,
``jax-gpu``), or ``dlpack`` (a raw DLPack capsule); :data:`PACKAGES` maps it to the package
that must be installed.
"""

from __future__ import annotations

from typing import Any

from ...adapters.base import installed

CPU = ["numpy", "torch", "jax", "tensorflow", "paddle", "pyarrow", "pandas", "polars", "dlpack"]
GPU = ["cupy", "numba", "cudf", "torch-cuda", "jax-gpu", "tensorflow-gpu", "paddle-gpu"]
OPTIONAL = ("tensorflow", "paddle", "dali")
"""Frameworks whose tests run in their own pytest process (``-m tensorflow``, ``-m paddle``,
``-m dali``); ``--skip`` leaves them out of a probe. DALI is a source only: its samples are
rows of the layouts section (:data:`~.samples.LAYOUTS`)."""
RETIRED = {"mxnet": "MXNet is retired upstream (Apache attic, 2023) and needs NumPy < 2"}
"""Frameworks interop deliberately has no adapter for, and why."""

PACKAGES = {"numpy": "numpy", "torch": "torch", "jax": "jax", "pyarrow": "pyarrow",
            "pandas": "pandas", "polars": "polars", "dlpack": "numpy", "cupy": "cupy",
            "numba": "numba", "cudf": "cudf", "torch-cuda": "torch", "jax-gpu": "jax",
            "tensorflow": "tensorflow", "paddle": "paddle", "tensorflow-gpu": "tensorflow",
            "paddle-gpu": "paddle", "dali": "nvidia.dali"}


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
