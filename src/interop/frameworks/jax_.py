"""JAX: DLPack in and out; ``numpy.asarray`` for the zero-copy view back to NumPy.

On the CPU, XLA imports a DLPack buffer without copying only when it is compact
row-major and 64-byte aligned (it copies silently otherwise), and only from legacy
capsules. With 64-bit types disabled (JAX's default) it narrows float64/int64 silently:
interop narrows as JAX would, in its copy route, and says so with a ``NarrowingWarning``
(``_narrows`` decides, for every path into JAX).
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import replace
from typing import Any

from ..protocols import dlpack
from ..view import BufferView, c_strides
from . import torch_
from .base import (
    ARROW_TYPE_ID,
    COPIES,
    COPY_ROUTE,
    UNSUPPORTED,
    Adapter,
    ConsumerRules,
    Edge,
    NeedsCopy,
    dtype_obstacle,
    left_to_check,
    memo,
    memo_by,
    module,
)
from .numpy_ import DLPACK_DTYPES, ready
from .numpy_ import _check as _numpy_check

_WIDE = {"<i8": "int64", "<u8": "uint64", "<f8": "float64", "<c16": "complex128"}
_NARROWED = {"<i8": ("<i4", "int32"), "<u8": ("<u4", "uint32"), "<f8": ("<f4", "float32"),
             "<c16": ("<c8", "complex64")}
_ML = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
       "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu"}
_NARROW = frozenset(DLPACK_DTYPES - set(_WIDE)) | _ML


def _x64() -> bool:
    jax = sys.modules.get("jax")
    return bool(jax is not None and jax.config.jax_enable_x64)


def _accepts(ts: str) -> str | None:
    return None if ts in _NARROW or ts in _WIDE else f"JAX has no dtype {ts}"


def _narrows(ts: str) -> tuple[str, str] | None:
    """What JAX with 64-bit types off (its default) holds a 64-bit dtype as, and why: the one
    place that decides narrowing, on every path into JAX."""
    narrow = _NARROWED.get(ts)
    if narrow is None or _x64():
        return None
    return narrow[0], (
        f"JAX has 64-bit types disabled (jax_enable_x64 is off, its default), so {_WIDE[ts]} "
        f"is narrowed to {narrow[1]} with a copy, as JAX itself would do; to keep 64 bits, "
        "call jax.config.update('jax_enable_x64', True) before converting")


RULES = ConsumerRules(negative_strides=False, c_contiguous=True, alignment=64, versioned=False,
                      accepts=_accepts, narrows=_narrows, name="JAX on the CPU")
GPU_RULES = ConsumerRules(negative_strides=False, c_contiguous=True, alignment=16,
                          accepts=_accepts, narrows=_narrows, name="JAX on a GPU",
                          misaligned_why="refuses it when it runs (XLA's GPU entry parameters "
                          "must be 16-byte aligned)")
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
    verdict = dtype_obstacle(rules, dlpack.typestr_of(x.dtype))
    if verdict is None and x.size == 0 and _device(x)[0] != "cpu":
        return COPY_ROUTE, ("an empty JAX array on a GPU exports no buffer DLPack consumers "
                            "accept (BufferError: Unsupported device in DLTensor): a new empty "
                            "array is made instead")
    return verdict


_IMMUTABLE = ("JAX treats arrays as immutable, but the source stays writable: writing to it "
              "changes the JAX array behind XLA's back")


def _immutable_hazard(x: Any) -> str | None:
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray) and x.flags.writeable:
        return _IMMUTABLE
    return None


_NARROW_OK, _WIDE_DT, _ML_DT = "ok", "wide", "ml"


def _np_dtype_class(dt: Any) -> Any:
    ts = dlpack.typestr_of(dt)
    if ts in _ML:  # NumPy cannot export these over DLPack: jax.device_put aliases them
        return _ML_DT
    if ts in _NARROW and dt.isnative and ts in DLPACK_DTYPES:
        return _NARROW_OK
    return _WIDE_DT if ts in _WIDE and dt.isnative else None


_np_dtype = memo(_np_dtype_class)


def _np_to_jax_check(a: Any) -> tuple[str, str] | None:
    c = _np_dtype(a.dtype)
    if c is _NARROW_OK and type(a).__name__ == "ndarray" and ready(a, 64):
        return None  # the fast path: a pointer check
    if type(c) is tuple:  # a verdict on the dtype (COPIES)
        return c
    return _numpy_check(a, _FROM_NUMPY, dlpack_dtype=c is not _ML_DT)


class _Alias:
    """An ``__array_interface__`` (a writable one over read-only memory) keeping ``base``,
    the owner of that memory, alive."""

    __slots__ = ("__array_interface__", "base")

    def __init__(self, interface: dict, base: Any) -> None:
        self.__array_interface__ = interface
        self.base = base


def _writable_alias(a: Any, ai: dict | None = None) -> Any:
    """A writable NumPy array over read-only ``a``, for NumPy's legacy DLPack export: only XLA
    holds it, and JAX never writes to its buffers."""
    ai = dict(ai if ai is not None else a.__array_interface__)
    ai["data"] = (ai["data"][0], False)
    return module("numpy").asarray(_Alias(ai, a))


def _ml_dtype(name: str) -> Any:
    """The NumPy dtype of ``ml_dtypes.<name>``, or None (not installed, or an older one)."""
    ml_dtypes = sys.modules.get("ml_dtypes")  # JAX imports it
    t = getattr(ml_dtypes, name, None)
    return None if t is None else module("numpy").dtype(t)


def _host() -> Any:
    """Where host arrays go: JAX's default device, unless a GPU backend is the default."""
    jax = module("jax")
    return None if jax.default_backend() == "cpu" else jax.devices("cpu")[0]


def _np_to_jax(a: Any) -> Any:
    jax = module("jax")
    if _np_dtype(a.dtype) is _ML_DT:  # in place when compact and 64-byte aligned (checked)
        return jax.device_put(a, _host(), may_alias=True)
    if not a.flags.writeable:
        a = _writable_alias(a)
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
                return module("jax").dlpack.from_dlpack(_writable_alias(a, ai))
    verdict = _np_to_jax_check(a)
    if verdict is None or verdict[0] == COPIES:
        return _np_to_jax(a)
    raise NeedsCopy(*verdict)


class _Import:
    """What the fast steps into JAX use, looked up once: the calls, the host device, the
    dtypes XLA takes over DLPack (``ok``) and ``other`` for every other dtype."""

    def __init__(self) -> None:
        np, jax = module("numpy"), module("jax")
        self.from_dlpack, self.device_put = jax.dlpack.from_dlpack, jax.device_put
        self.cpu = cpu = _host()
        self.ok = frozenset(dt for dt in (np.dtype(c) for c in np.typecodes["All"]
                                          if c not in "OSUVMm") if _np_dtype(dt) is _NARROW_OK)
        ml = frozenset(dt for dt in map(_ml_dtype, _ML) if dt is not None)
        device_put, ndarray = self.device_put, np.ndarray

        def other(a: Any) -> Any:  # outside ``ok``: bfloat16/float8 in place, if compact
            if a.dtype in ml and a.flags.c_contiguous and type(a) is ndarray:
                return device_put(a, cpu, may_alias=True)
            raise left_to_check()

        self.other = other


def _np_to_jax_fast(before: Any = None) -> Any:
    """The ``copy=None`` step: no pointer read (it slows JAX's own call by 1-2 us) since XLA
    copies a misaligned buffer itself, which ``copy=None`` allows and which takes half the
    time of interop's copy route; ``device_put`` for read-only arrays, which NumPy will not
    export as legacy DLPack, and for bfloat16/float8, which it cannot export at all.
    ``explain`` still reads the pointer and says which it is."""
    j = _Import()
    from_dlpack, device_put, cpu, ok, other = j.from_dlpack, j.device_put, j.cpu, j.ok, j.other
    ndarray = module("numpy").ndarray

    if getattr(before, "read_only_1d", False):  # after pandas or polars
        def fast_ro(x: Any) -> Any:
            a = before(x)
            if a.dtype in ok:
                return device_put(a, cpu, may_alias=True)
            return other(a)

        return fast_ro

    def fast(a: Any) -> Any:
        if before is not None:
            a = before(a)
        if type(a) is ndarray and a.dtype in ok:
            flags = a.flags  # XLA aliases a 64-byte aligned buffer and copies any other (as
            if not flags.writeable:  # copy=None allows), faster than interop would
                return device_put(a, cpu, may_alias=True)
            if flags.c_contiguous:  # column-major, XLA would alias with a layout of its own
                return from_dlpack(a)
            raise left_to_check()
        return other(a)

    return fast


# ---- Arrow -> JAX: one step over the values buffer --------------------------------------
# NumPy's view of an Arrow array is read-only, which NumPy will not export as the legacy
# DLPack JAX asks for, and pyarrow's own legacy export warns on every call: so the Arrow
# values buffer goes to JAX through a writable NumPy alias that only XLA holds. The alias
# is a ctypes array over the buffer (a third of the cost of an __array_interface__ alias);
# ctypes makes one array type per byte length, so at most _CARRIER_BOUND of them are made.

_CARRIER_BOUND = 256
_CARRIERS: dict[int, Any] = {}
def _arrow_kind_of(t: Any) -> tuple[str, int, Any, bool] | None:
    """(NumPy typestr, itemsize, NumPy dtype, JAX takes it whatever x64 says) for an Arrow
    integer or floating type, else None."""
    types = module("pyarrow").types
    if not (types.is_integer(t) or types.is_floating(t)):
        return None
    n = t.bit_width // 8
    kind = "f" if types.is_floating(t) else "i" if types.is_signed_integer(t) else "u"
    ts = f"{'|' if n == 1 else '<'}{kind}{n}"
    return ts, n, module("numpy").dtype(ts), ts in _NARROW


_arrow_kind = memo_by(ARROW_TYPE_ID, _arrow_kind_of)


def _carrier(nbytes: int) -> Any:
    """``ctypes.c_char * nbytes``, or ``None`` once ``_CARRIER_BOUND`` lengths have one."""
    c = _CARRIERS.get(nbytes)
    if c is None and len(_CARRIERS) < _CARRIER_BOUND:
        c = _CARRIERS[nbytes] = ctypes.c_char * nbytes
    return c


def _arrow_values(x: Any, k: tuple[str, int, Any, bool]) -> Any:
    """A writable NumPy alias of the values of Arrow array ``x`` (one chunk, no nulls, not
    empty) of kind ``k``, which keeps ``x`` alive."""
    ts, n, dtype, _ = k
    ptr = x.buffers()[1].address + x.offset * n
    carrier = _carrier(len(x) * n)
    if carrier is None:
        return module("numpy").asarray(
            _Alias({"data": (ptr, False), "shape": (len(x),), "typestr": ts, "version": 3}, x))
    buf = carrier.from_address(ptr)
    buf.owner = x
    return module("numpy").frombuffer(buf, dtype)


def _arrow_check(x: Any) -> tuple[str, str] | None:
    from .pyarrow_ import _chunk, check, describe

    verdict = check(x)
    if verdict is not None:
        if verdict[0] != COPIES:
            return verdict
        if not module("pyarrow").types.is_boolean(x.type):
            return UNSUPPORTED, f"JAX has no dtype for Arrow {x.type}"
        return COPY_ROUTE, verdict[1]
    k = _arrow_kind(x.type)
    if k is None:
        return UNSUPPORTED, f"JAX has no dtype for Arrow {x.type}"
    verdict = dtype_obstacle(RULES, k[0])
    if verdict is not None:
        return verdict
    x = _chunk(x)
    if len(x) and (x.buffers()[1].address + x.offset * k[1]) % 64:
        return COPY_ROUTE, (f"the values of {describe(x)} are not 64-byte aligned: "
                            f"{RULES.name} {RULES.misaligned_why}")
    return None


def _arrow_to_jax(x: Any) -> Any:
    from .pyarrow_ import _chunk

    x = _chunk(x)
    k = _arrow_kind(x.type)
    if not len(x):  # on the host, as the data was (JAX's default device may be a GPU)
        return module("jax").device_put(module("numpy").zeros(0, dtype=k[2]), _host())
    jax = module("jax")
    return jax.dlpack.from_dlpack(_arrow_values(x, k), copy=False)


def _arrow_to_jax_fast() -> Any:
    from_dlpack = module("jax").dlpack.from_dlpack
    chunked = module("pyarrow").ChunkedArray

    def fast(x: Any) -> Any:
        if type(x) is chunked:  # a table column: its one chunk
            if x.num_chunks != 1:
                raise left_to_check()
            x = x.chunk(0)
        k = _arrow_kind(x.type)
        if k is not None and k[3] and not x.null_count and len(x):
            # XLA aliases a 64-byte aligned buffer and copies any other (copy=None)
            return from_dlpack(_arrow_values(x, k))
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


# ---- torch -> JAX: through NumPy, or torch's own DLPack for the dtypes NumPy lacks ---------
# A bfloat16/float8 tensor reaches NumPy only as a fresh ml_dtypes view, which
# jax.device_put takes in about 45 us; torch's DLPack export takes about 32. Every other
# dtype is faster through NumPy (Tensor.numpy() then NumPy's C DLPack export).

def _torch_ml(t: Any) -> bool:
    return torch_._tables()[0].get(t.dtype) in _ML


def _torch_check(t: Any) -> tuple[str, str] | None:
    if _torch_ml(t):
        return torch_.ADAPTER.dlpack_check(t, RULES)
    verdict = torch_._tensor_check(t)
    return verdict if verdict is not None else _np_to_jax_check(torch_._to_numpy_view(t))


def _torch_to_jax(t: Any) -> Any:
    """The checked step (``eafp``: obstacles raised as ``NeedsCopy``)."""
    if _torch_ml(t):  # the DLPack edge torch -> JAX, from the two adapters' parts
        verdict = torch_.ADAPTER.dlpack_check(t, RULES)
        if verdict is not None:
            raise NeedsCopy(*verdict)
        return _from_dlpack(torch_.ADAPTER.export_dlpack(t))
    return _np_to_jax_checked(torch_._to_numpy_view(t))


def _torch_hazard(t: Any) -> tuple[str, ...]:
    grad = torch_._grad_hazard(t)  # a tensor is always writable: JAX's hazard always holds
    return (grad, _IMMUTABLE) if grad else (_IMMUTABLE,)


def _torch_to_jax_fast() -> Any:
    """The ``copy=None`` step: torch's fast step (``Tensor.numpy()``) and NumPy's into JAX
    in one call. ``Tensor.numpy()`` gives writable arrays only: an aligned compact one goes
    over NumPy's DLPack, as from NumPy."""
    j = _Import()
    from_dlpack, ok, other = j.from_dlpack, j.ok, j.other
    numpy = module("torch").Tensor.numpy

    def fast(t: Any) -> Any:
        a = numpy(t.detach() if t.requires_grad else t)
        if a.dtype in ok:
            if a.flags.c_contiguous:
                return from_dlpack(a)
            raise left_to_check()
        return other(a)

    return fast


def _edges() -> list[Edge]:
    return [
        Edge("numpy", "jax", "jax.dlpack.from_dlpack, or jax.device_put for bfloat16/float8",
             _np_to_jax_checked,
             check=_np_to_jax_check, hazard=_immutable_hazard, eafp=True, fast=_np_to_jax_fast),
        Edge("torch", "jax", "Tensor.numpy() + jax.dlpack.from_dlpack (bfloat16/float8: DLPack)",
             _torch_to_jax, check=_torch_check, hazard=_torch_hazard,
             eafp=True, fast=_torch_to_jax_fast, cost=1.9),
        Edge("pyarrow", "jax", "jax.dlpack.from_dlpack (a NumPy alias of the Arrow values)",
             _arrow_to_jax, check=_arrow_check, fast=_arrow_to_jax_fast, cost=1.5),
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
    gpu_rules=GPU_RULES,
    holds_read_only=True,
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
