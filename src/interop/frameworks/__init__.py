"""One module per framework; adding one is a module and a line in ``ADAPTERS``.

Order matters only for detection: specific frameworks first, the generic DLPack producer
and buffer readers last.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from . import (
    capsule,
    cudf_,
    cupy_,
    jax_,
    numba_,
    numpy_,
    paddle_,
    pandas_,
    polars_,
    producer,
    pyarrow_,
    tensorflow_,
    torch_,
)

ADAPTERS = [
    numpy_.ADAPTER,
    torch_.ADAPTER,
    jax_.ADAPTER,
    tensorflow_.ADAPTER,
    paddle_.ADAPTER,
    pyarrow_.ADAPTER,
    pandas_.ADAPTER,
    polars_.ADAPTER,
    cupy_.ADAPTER,
    numba_.ADAPTER,
    cudf_.ADAPTER,
    capsule.ADAPTER,
    *__import__("interop.tables.adapters", fromlist=["ADAPTERS"]).ADAPTERS,
    producer.CAI_PRODUCER,
    producer.PRODUCER,
    producer.BUFFER,
]


class _CallableModule(types.ModuleType):
    """``interop.frameworks()`` lists the frameworks; the package keeps its modules."""

    def __call__(self) -> list[dict[str, Any]]:
        from ..api import frameworks

        return frameworks()


sys.modules[__name__].__class__ = _CallableModule
