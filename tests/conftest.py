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


def pytest_collection_finish(session):
    """When paddle tests are selected, import paddle before anything imports tensorflow:
    importing paddle after tensorflow segfaults (paddlepaddle 3.3.1, tensorflow 2.21), which
    would kill a combined run (``pytest -m "tensorflow or paddle"``). The core run selects no
    paddle test and imports neither."""
    import sys

    if "paddle" in sys.modules or "tensorflow" in sys.modules:
        return
    if any(item.get_closest_marker("paddle") for item in session.items):
        try:
            import paddle  # noqa: F401
        except ImportError:  # the paddle tests then fail on their own import, saying why
            pass
