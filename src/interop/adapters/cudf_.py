"""cuDF ``Series``/``Index`` columns, through their CUDA Array Interface; nulls refused."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import NullsError
from ..protocols import cai
from ..view import BufferView
from .base import NULLS, ArrayAdapter, ConsumerRules, module


def _is_value(x: Any) -> bool:
    cudf = sys.modules.get("cudf")
    return cudf is not None and isinstance(x, (cudf.Series, cudf.Index))


def export_check(s: Any) -> tuple[str, str] | None:
    """``NULLS`` for a column holding nulls, which a dense device buffer cannot represent:
    the verdict every hand-over of the column (and ``explain``) gives."""
    if s.null_count:
        return NULLS, (f"cuDF column {s.name!r} holds {s.null_count} nulls, which a dense "
                       "device buffer cannot represent: s.fillna(value) first")
    return None


def _export_cai(s: Any) -> Any:
    verdict = export_check(s)
    if verdict is not None:
        raise NullsError(verdict[1])
    return s


def view(s: Any) -> BufferView:
    """The :class:`BufferView` of the column's values."""
    return cai.validate(_export_cai(s).__cuda_array_interface__, who="cudf.Series")


def from_cai(obj: Any) -> Any:
    """A cuDF Series over a CAI producer's memory."""
    import cudf

    cai.validate(cai.interface_of(obj), who=type(obj).__name__)
    return cudf.Series(obj, nan_as_null=False)  # NaN is a value, not a null


def to_device(arr: Any, index: int) -> Any:
    """A host NumPy array copied into a cuDF Series on the current device."""
    import cudf

    with module("cupy").cuda.Device(index):
        return cudf.Series(arr, nan_as_null=False)  # NaN is a value, not a null


ADAPTER = ArrayAdapter(
    name="cudf",
    aliases=("cudf.series",),
    modules=("cudf",),
    package="cudf",
    install="pip install cudf-cu12 or cudf-cu13 (RAPIDS)",
    devices=("cuda",),
    gpu_rules=ConsumerRules(c_contiguous=True, name="cuDF"),
    is_value=_is_value,
    view=view,
    device=lambda s: ("cuda", 0),
    to_numpy=lambda s: _export_cai(s).to_numpy(),
    export_check=export_check,
    export_cai=_export_cai,
    from_cai=from_cai,
    to_device=to_device,
)
