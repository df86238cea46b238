"""cuDF ``Series``/``Index`` columns, through their CUDA Array Interface; nulls refused.

As a consumer (the issue-28 reading of cuDF 26, unverified on a device here): a column is
1-D, dense, of a dtype cuDF has (no float16, no complex), and cuDF reads the interface's
``strides`` key, which the CAI lets a producer leave out: interop names them.
"""

from __future__ import annotations

from typing import Any

from .. import devices
from ..errors import NullsError
from ..protocols import cai, dlpack
from ..view import BufferView
from .base import NULLS, ArrayAdapter, ConsumerRules, instance_test, module

_DTYPES = frozenset(dlpack.NAMED.values()) - {"<f2", "<c8", "<c16"}


def _accepts(ts: str) -> str | None:
    if ts in _DTYPES:
        return None
    return f"cuDF has no {ts} columns (no float16, complex, bfloat16 or float8)"


_is_value = instance_test("cudf", "Series", "Index")


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


class _Strided:
    """A producer's CUDA Array Interface with its ``strides`` written out (the CAI lets a
    compact producer omit them or give ``None``); it keeps the producer alive."""

    __slots__ = ("__cuda_array_interface__", "owner")

    def __init__(self, interface: dict, strides: tuple[int, ...], owner: Any) -> None:
        self.__cuda_array_interface__ = dict(interface, strides=strides)
        self.owner = owner


def from_cai(obj: Any, stream: int | None = None) -> Any:
    """A cuDF Series over a CAI producer's memory."""
    import cudf

    interface = cai.interface_of(obj)
    view = cai.validate(interface, who=type(obj).__name__)
    if interface.get("strides") is None:
        obj = _Strided(interface, view.strides, obj)
    return cudf.Series(obj, nan_as_null=False)  # NaN is a value, not a null


def _device(s: Any) -> tuple[str, int]:
    """The device holding the column's values (the runtime's answer for its pointer)."""
    v = view(s)
    return "cuda", devices.pointer_device(v.ptr) if v.ptr else v.device[1]


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
    gpu_rules=ConsumerRules(c_contiguous=True, ndim=1, accepts=_accepts, name="cuDF"),
    is_value=_is_value,
    view=view,
    device=_device,
    to_numpy=lambda s: _export_cai(s).to_numpy(),
    export_check=export_check,
    export_cai=_export_cai,
    from_cai=from_cai,
    to_device=to_device,
)
