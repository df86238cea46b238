"""Shared test helpers: GPU detection (gpu-marked tests skip without a device)."""

from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=1)
def cuda_device_count() -> int:
    """Number of CUDA devices CuPy can see (0 when CuPy or a driver is missing)."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def pytest_collection_modifyitems(config, items):
    if cuda_device_count():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none is present on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
