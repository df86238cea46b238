"""A raw DLPack capsule, as a source (consumed once) and as a target (``"dlpack"``), on the
host and on a GPU (a CUDA capsule goes to the GPU consumers, any GPU exporter to a capsule)."""

from __future__ import annotations

import sys
from typing import Any

from ..protocols import dlpack
from .base import DLPACK, ArrayAdapter, ConsumerRules, Edge, fixed


def _is_value(x: Any) -> bool:
    return dlpack.is_capsule(x) and dlpack._capsule_name(x) in (
        b"dltensor", b"dltensor_versioned", b"used_dltensor", b"used_dltensor_versioned")


def _view(c: Any):
    return dlpack.inspect_capsule(c).view


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


def to_capsule(x: Any) -> Any:
    """A NumPy array as a DLPack capsule; bfloat16/float8 (ml_dtypes) with their own type
    code (NumPy exports their bits as unsigned integers of the same width)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray) and x.dtype.type.__module__ == "ml_dtypes":
        code, bits, _ = dlpack.dtype_to_dl(dlpack.typestr_of(x.dtype))
        capsule = dlpack.export(x.view(dlpack.carrier_dtype(x.itemsize)))
        mt = dlpack._managed(capsule)[1]
        mt.dl_tensor.dtype.code, mt.dl_tensor.dtype.bits = code, bits
        return capsule
    return dlpack.export(x)


def _from_producer(producer: Any) -> Any:
    """The capsule of a device DLPack producer (its ``__dlpack__``, as asked for)."""
    return dlpack.export(producer)


def _edges() -> list[Edge]:
    return [Edge("dlpack", "numpy", "DLPack: interop capsule reader", fixed(dlpack.to_numpy),
                 protocol=DLPACK)]


ADAPTER = ArrayAdapter(
    name="dlpack",
    aliases=("capsule", "dltensor"),
    modules=("builtins",),
    package="numpy",
    devices=("cpu", "cuda"),
    # on the host the declared edges make capsules (NumPy's, torch's); on a GPU any exporter
    # hands its own capsule over
    gpu_rules=ConsumerRules(name="a DLPack capsule"),
    from_dlpack=_from_producer,
    dlpack_call="__dlpack__",
    is_value=_is_value,
    view=_view,
    device=lambda c: _view(c).device,
    to_numpy=dlpack.to_numpy,
    export_dlpack=dlpack.CapsuleProducer,
    exports_versioned_only=True,
    per_value_owner=True,
    consumable=True,
    preview=_preview,
    edges=_edges,
)
