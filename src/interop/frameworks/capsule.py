"""A raw DLPack capsule, as a source (consumed once) and as a target (``"dlpack"``)."""

from __future__ import annotations

import sys
from typing import Any

from ..protocols import dlpack
from . import torch_
from .base import UNSUPPORTED, Adapter, ConsumerRules, Edge, view_obstacle


def _is_value(x: Any) -> bool:
    return dlpack.is_capsule(x) and dlpack._capsule_name(x) in (
        b"dltensor", b"dltensor_versioned", b"used_dltensor", b"used_dltensor_versioned")


def _view(c: Any):
    return dlpack.inspect_capsule(c).view


def _check(c: Any, rules: ConsumerRules) -> tuple[str, str] | None:
    return view_obstacle(_view(c), rules)


def _preview(c: Any) -> Any:
    """A NumPy view of the capsule's memory for inspection only; the capsule stays unused."""
    import numpy as np

    v = _view(c)
    base = dlpack.carrier_dtype(v.itemsize)
    holder = type("_Peek", (), {})()
    holder.__array_interface__ = {"version": 3, "shape": v.shape, "typestr": base.str,
                                  "strides": v.strides, "data": (v.ptr, v.readonly)}
    arr = np.asarray(holder) if v.size else np.empty(v.shape, base)
    return arr.view(dlpack.numpy_dtype(v.dtype))


def _np_export_check(a: Any) -> tuple[str, str] | None:
    if dlpack.typestr_of(a.dtype) not in dlpack._TO_DL:
        return UNSUPPORTED, f"dtype {a.dtype} has no DLPack code"
    why = dlpack.byte_order_obstacle(a.dtype)
    if why:
        return UNSUPPORTED, why
    return None


def _to_capsule(x: Any) -> Any:
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray) and x.dtype.type.__module__ == "ml_dtypes":
        # bfloat16/float8 (ml_dtypes): NumPy exports the bits as unsigned ints of the same
        # width; the capsule is ours until handed out, so its dtype code is set here.
        code, bits, _ = dlpack.dtype_to_dl(dlpack.typestr_of(x.dtype))
        capsule = dlpack.export(x.view(dlpack.carrier_dtype(x.itemsize)))
        mt = dlpack._managed(capsule)[1]
        mt.dl_tensor.dtype.code, mt.dl_tensor.dtype.bits = code, bits
        return capsule
    return dlpack.export(x)


def _edges() -> list[Edge]:
    return [
        Edge("dlpack", "numpy", "DLPack: interop capsule reader", dlpack.to_numpy, cost=1.0),
        Edge("numpy", "dlpack", "ndarray.__dlpack__", _to_capsule, check=_np_export_check),
        Edge("torch", "dlpack", "Tensor.__dlpack__",
             lambda t: dlpack.export(t.detach() if t.requires_grad else t),
             check=torch_.export_check),
        # JAX's own __dlpack__ gives a legacy capsule, which cannot say its buffer is
        # immutable: JAX goes through NumPy's read-only view, whose capsule is flagged.
    ]


ADAPTER = Adapter(
    name="dlpack",
    aliases=("capsule", "dltensor"),
    modules=("builtins",),
    package="numpy",
    is_value=_is_value,
    view=_view,
    device=lambda c: _view(c).device,
    to_numpy=dlpack.to_numpy,
    export_dlpack=dlpack.CapsuleProducer,
    dlpack_check=_check,
    exports_versioned_only=True,
    per_value_kind=True,
    consumable=True,
    preview=_preview,
    edges=_edges,
)
