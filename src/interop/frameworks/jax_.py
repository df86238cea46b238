"""JAX: DLPack in and out; ``numpy.asarray`` for the zero-copy view back to NumPy.

On the CPU, XLA imports a DLPack buffer without copying only when it is compact
row-major and 64-byte aligned (it copies silently otherwise), and only from legacy
capsules. With 64-bit types disabled (JAX's default) it narrows float64/int64 silently:
interop refuses that instead.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from ..protocols import dlpack
from ..view import BufferView, c_strides
from .base import (
    COPIES,
    UNSUPPORTED,
    Adapter,
    ConsumerRules,
    Edge,
    NeedsCopy,
    left_to_check,
    memo,
    module,
)
from .numpy_ import DLPACK_DTYPES, ready
from .numpy_ import _check as _numpy_check

_WIDE = {"<i8": "int64", "<u8": "uint64", "<f8": "float64", "<c16": "complex128"}
_ML = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
       "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu"}
_NARROW = frozenset(DLPACK_DTYPES - set(_WIDE)) | _ML


def _x64() -> bool:
    jax = sys.modules.get("jax")
    return bool(jax is not None and jax.config.jax_enable_x64)


def _accepts(ts: str) -> str | None:
    if ts in _NARROW:
        return None
    if ts in _WIDE:
        if _x64():
            return None
        return (f"JAX has 64-bit types disabled, so {_WIDE[ts]} would be narrowed to 32 bits "
                "with a silent copy; enable them with jax.config.update('jax_enable_x64', True) "
                "or cast the source first")
    return f"JAX has no dtype {ts}"


RULES = ConsumerRules(negative_strides=False, c_contiguous=True, alignment=64, versioned=False,
                      accepts=_accepts, name="JAX on the CPU")
# From NumPy, a read-only array goes through a writable alias that only XLA holds: JAX
# never writes to its buffers, so the legacy capsule's missing read-only flag loses nothing.
_FROM_NUMPY = replace(RULES, versioned=True)


def _is_value(x: Any) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.Array)


def _device(x: Any) -> tuple[str, int]:
    dev = next(iter(x.devices()))
    kind = "cuda" if dev.platform == "gpu" else dev.platform
    return kind, dev.id


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of a single-device JAX array."""
    dtype = x.dtype
    ts = dlpack.typestr_of(dtype)
    return BufferView(x.unsafe_buffer_pointer(), tuple(x.shape),
                      c_strides(tuple(x.shape), dtype.itemsize), dtype.itemsize, ts,
                      _device(x), True, x)


def _from_dlpack(producer: Any) -> Any:
    import jax

    return jax.dlpack.from_dlpack(producer)


def _jax_check(x: Any, rules: ConsumerRules) -> tuple[str, str] | None:
    if rules.accepts is not None:
        why = rules.accepts(dlpack.typestr_of(x.dtype))
        if why:
            return UNSUPPORTED, why
    return None


def _immutable_hazard(x: Any) -> str | None:
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray) and x.flags.writeable:
        return ("JAX treats arrays as immutable, but the source stays writable: writing to it "
                "changes the JAX array behind XLA's back")
    return None


_NARROW_OK, _WIDE_DT = "ok", "wide"


def _np_dtype_class(dt: Any) -> Any:
    ts = dlpack.typestr_of(dt)
    if ts in _ML:
        return COPIES, f"NumPy cannot export {ts} over DLPack; jax.numpy.asarray copies it"
    if ts in _NARROW and dt.isnative and ts in DLPACK_DTYPES:
        return _NARROW_OK
    return _WIDE_DT if ts in _WIDE and dt.isnative else None


_np_dtype = memo(_np_dtype_class)


def _np_to_jax_check(a: Any) -> tuple[str, str] | None:
    c = _np_dtype(a.dtype)
    if c is _NARROW_OK and type(a).__name__ == "ndarray":  # the fast path: a pointer check
        if ready(a, 64):
            return None
    elif c is not None and c is not _WIDE_DT:
        return c
    return _numpy_check(a, _FROM_NUMPY)


class _Alias:
    """A writable ``__array_interface__`` over a read-only array, keeping it alive."""

    __slots__ = ("__array_interface__", "base")

    def __init__(self, a: Any, ai: dict | None = None) -> None:
        ai = dict(ai if ai is not None else a.__array_interface__)
        ai["data"] = (ai["data"][0], False)
        self.__array_interface__ = ai
        self.base = a


def _np_to_jax(a: Any) -> Any:
    jax = module("jax")
    if dlpack.typestr_of(a.dtype) in _ML:
        return jax.numpy.asarray(a)
    if not a.flags.writeable:
        a = module("numpy").asarray(_Alias(a))
    return jax.dlpack.from_dlpack(a)


def _np_to_jax_checked(a: Any) -> Any:
    """The fast path of :func:`_np_to_jax_check` then the import; the rest via the check
    (an ``eafp`` converter: ``COPIES`` done here, other obstacles raised as ``NeedsCopy``)."""
    if _np_dtype(a.dtype) is _NARROW_OK and type(a).__name__ == "ndarray":
        if ready(a, 64):
            return module("jax").dlpack.from_dlpack(a)
        flags = a.flags
        if not flags.writeable and flags.c_contiguous and flags.aligned:
            ai = a.__array_interface__  # read-only: one read gives the pointer and the alias
            if not a.size or ai["data"][0] % 64 == 0:
                alias = module("numpy").asarray(_Alias(a, ai))
                return module("jax").dlpack.from_dlpack(alias)
    verdict = _np_to_jax_check(a)
    if verdict is None or verdict[0] == COPIES:
        return _np_to_jax(a)
    raise NeedsCopy(*verdict)


def _np_to_jax_fast() -> Any:
    """The ``copy=None`` step: XLA's own alignment check instead of reading the pointer
    (``copy=False`` makes JAX raise where it would copy a misaligned buffer), and
    ``device_put`` for read-only arrays, which NumPy will not export as legacy DLPack."""
    np, jax = module("numpy"), module("jax")
    from_dlpack, device_put, ndarray = jax.dlpack.from_dlpack, jax.device_put, np.ndarray
    cpu = jax.devices("cpu")[0]
    ok = frozenset(dt for dt in (np.dtype(c) for c in np.typecodes["All"] if c not in "OSUVMm")
                   if _np_dtype(dt) is _NARROW_OK)

    def fast(a: Any) -> Any:
        if type(a) is ndarray and a.dtype in ok:
            flags = a.flags
            if flags.c_contiguous:
                if flags.writeable:
                    try:
                        return from_dlpack(a, copy=False)
                    except ValueError:  # not 64-byte aligned: the checked plan copies
                        pass
                else:  # XLA aliases an aligned host buffer, and copies any other
                    return device_put(a, cpu, may_alias=True)
        raise left_to_check()

    return fast


def _to_numpy(x: Any) -> Any:
    np = sys.modules.get("numpy")  # always loaded once jax is; no import statement per call
    if np is None:  # pragma: no cover
        import numpy as np
    return np.asarray(x)


def _sharding_verdict(sh: Any) -> tuple[str, str] | None:
    devs = sh.device_set
    if len(devs) != 1:
        return COPIES, "the array is sharded over several devices: gathering it copies"
    if next(iter(devs)).platform != "cpu":
        return COPIES, "the array lives on a GPU; NumPy reads host memory"
    return None


_sharding = memo(_sharding_verdict, 64)  # arrays share a few shardings


def _jax_np_check(x: Any) -> tuple[str, str] | None:
    return _sharding(x.sharding)


def _gpu_present() -> bool:
    jax = sys.modules.get("jax")
    try:
        return bool(jax is not None and jax.devices()[0].platform != "cpu")
    except Exception:
        return False


def _to_device(arr: Any, index: int) -> Any:
    import jax

    return jax.device_put(arr, jax.devices("gpu")[index])


def _edges() -> list[Edge]:
    return [
        Edge("numpy", "jax", "jax.dlpack.from_dlpack", _np_to_jax_checked,
             check=_np_to_jax_check, hazard=_immutable_hazard, eafp=True, fast=_np_to_jax_fast),
        # the check's only verdict is COPIES (sharded, or on a GPU): numpy.asarray copies then
        Edge("jax", "numpy", "numpy.asarray (__array__)", _to_numpy, check=_jax_np_check,
             fast=lambda: module("numpy").asarray),
    ]


ADAPTER = Adapter(
    name="jax",
    aliases=("jnp", "jax.numpy"),
    modules=("jax", "jaxlib"),
    package="jax",
    devices=("cpu", "cuda"),
    rules=RULES,
    is_value=_is_value,
    view=view,
    device=_device,
    to_numpy=_to_numpy,
    export_dlpack=lambda x: x,
    dlpack_check=_jax_check,
    from_dlpack=_from_dlpack,
    dlpack_call="jax.dlpack.from_dlpack",
    dlpack_hazard=_immutable_hazard,
    to_device=_to_device,
    gpu_present=_gpu_present,
    edges=_edges,
)
