"""Edges between two particular frameworks, beside each framework's edges to and from NumPy
and the DLPack/CAI edges the registry makes. They use the adapters' public functions only
(a test keeps every module off another adapter's private names)."""

from __future__ import annotations

from typing import Any

from ..protocols import dlpack
from . import capsule, jax_, numpy_, pyarrow_, torch_
from .base import (
    ARROW_TYPE_ID,
    NEEDS_COPY,
    STEP_COPIES,
    UNSUPPORTED,
    Accepts,
    Edge,
    NeedsCopy,
    dtype_obstacle,
    memo_by,
    module,
)

# ---- Arrow -> JAX: one step over the values buffer ---------------------------------------
# NumPy's view of an Arrow array is read-only, which NumPy will not export as the legacy
# DLPack JAX asks for, and pyarrow's own legacy export warns on every call: so the Arrow
# values buffer goes to JAX through a writable NumPy alias that only XLA holds
# (jax_.writable_alias).

def _arrow_kind_of(t: Any) -> tuple[str, int, Any] | None:
    """(NumPy typestr, itemsize, NumPy dtype) of an Arrow integer or floating type, else
    None."""
    types = module("pyarrow").types
    if not (types.is_integer(t) or types.is_floating(t)):
        return None
    n = t.bit_width // 8
    kind = "f" if types.is_floating(t) else "i" if types.is_signed_integer(t) else "u"
    ts = f"{'|' if n == 1 else '<'}{kind}{n}"
    return ts, n, module("numpy").dtype(ts)


_arrow_kind = memo_by(ARROW_TYPE_ID, _arrow_kind_of)


def _arrow_values(x: Any, k: tuple[str, int, Any]) -> Any:
    """A writable NumPy alias of the values of Arrow array ``x`` (one chunk, no nulls, not
    empty) of kind ``k``, which keeps ``x`` alive."""
    _, n, dtype = k
    return jax_.writable_alias(x.buffers()[1].address + x.offset * n, len(x), dtype, x)


def _arrow_to_jax_check(x: Any) -> tuple[str, str] | None:
    verdict = pyarrow_.check(x)
    if verdict is not None:
        if verdict[0] != STEP_COPIES:
            return verdict
        if not module("pyarrow").types.is_boolean(x.type):
            return UNSUPPORTED, f"JAX has no dtype for Arrow {x.type}"
        return NEEDS_COPY, verdict[1]
    k = _arrow_kind(x.type)
    if k is None:
        return UNSUPPORTED, f"JAX has no dtype for Arrow {x.type}"
    verdict = dtype_obstacle(jax_.RULES, k[0])
    if verdict is not None:
        return verdict
    x = pyarrow_.single_chunk(x)
    if len(x) and (x.buffers()[1].address + x.offset * k[1]) % 64:
        return STEP_COPIES, (f"the values of {pyarrow_.describe(x)} are not 64-byte aligned: "
                             f"{jax_.RULES.name} {jax_.RULES.misaligned_why}")
    return None


def _arrow_to_jax_converter() -> Any:
    """``jax.dlpack.from_dlpack`` of a writable alias of the values; an empty array made on
    the host, as the data was (JAX's default device may be a GPU). Anything but one dense
    chunk of integers or floats JAX holds as they are: ``NeedsCopy``."""
    jax, np = module("jax"), module("numpy")
    from_dlpack, device_put, cpu = jax.dlpack.from_dlpack, jax.device_put, jax_.host()
    chunked, kept, narrows = module("pyarrow").ChunkedArray, jax_.KEPT, jax_.narrows

    def convert(x: Any) -> Any:
        if type(x) is chunked:  # a table column: its one chunk
            if x.num_chunks != 1:
                raise NeedsCopy(NEEDS_COPY, "several chunks")
            x = x.chunk(0)
        k = _arrow_kind(x.type)
        if k is None or x.null_count or (k[0] not in kept and narrows(k[0])):
            raise NeedsCopy(NEEDS_COPY, "not a dense array of a dtype JAX holds as it is")
        if not len(x):
            return device_put(np.zeros(0, dtype=k[2]), cpu)
        return from_dlpack(_arrow_values(x, k))

    return convert


# ---- to a raw DLPack capsule ---------------------------------------------------------------

def _to_capsule_check(a: Any) -> tuple[str, str] | None:
    if dlpack.typestr_of(a.dtype) not in dlpack.DL_TYPESTRS:
        return UNSUPPORTED, f"dtype {a.dtype} has no DLPack code"
    why = dlpack.byte_order_obstacle(a.dtype)
    return (UNSUPPORTED, why) if why else numpy_.element_strides(a)


def _tensor_to_capsule(t: Any) -> Any:
    return dlpack.export(t.detach() if t.requires_grad else t)


def edges() -> list[Edge]:
    return [
        Edge("pyarrow", "jax", "jax.dlpack.from_dlpack (a NumPy alias of the Arrow values)",
             _arrow_to_jax_converter, check=_arrow_to_jax_check, cost=1.5,
             accepts=Accepts(pyarrow_.numeric_array_types)),
        Edge("numpy", "dlpack", "ndarray.__dlpack__", lambda: capsule.to_capsule,
             check=_to_capsule_check),
        # JAX's own __dlpack__ gives a legacy capsule, which cannot say its buffer is
        # immutable: JAX goes through NumPy's read-only view, whose capsule is flagged.
        Edge("torch", "dlpack", "Tensor.__dlpack__", lambda: _tensor_to_capsule,
             check=torch_.export_check, hazard=torch_.grad_hazard),
    ]

