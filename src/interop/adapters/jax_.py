"""JAX: DLPack in and out; ``numpy.asarray`` for the zero-copy view back to NumPy.

On the CPU, XLA imports a DLPack buffer without copying only when it is compact
row-major and 64-byte aligned (it copies any other buffer itself), and only from legacy
capsules. With 64-bit types disabled (JAX's default) it narrows float64/int64 silently:
interop narrows as JAX would, in its copy route, and says so with a ``NarrowingWarning``
(:func:`narrows` decides, for every path into JAX).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from operator import attrgetter
from typing import Any

from ..errors import UnsupportedConversionError
from ..protocols import dlpack
from ..view import BufferView, c_strides
from . import numpy_
from . import sparse_parts as sparse
from .base import (
    C_CONTIGUOUS,
    NEEDS_COPY,
    STEP_COPIES,
    UNSUPPORTED,
    WRITEABLE,
    Accepts,
    ArrayAdapter,
    ConsumerRules,
    Edge,
    NeedsCopy,
    Parts,
    RegistryLike,
    instance_test,
    memo,
    memo_by,
    module,
    view_obstacle,
)

_WIDE = {"<i8": "int64", "<u8": "uint64", "<f8": "float64", "<c16": "complex128"}
_NARROWED = {"<i8": ("<i4", "int32"), "<u8": ("<u4", "uint32"), "<f8": ("<f4", "float32"),
             "<c16": ("<c8", "complex64")}
ML = frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3",
                "float8_e8m0fnu"})
"""The ml_dtypes types JAX holds (NumPy cannot export them over DLPack)."""
KEPT = frozenset(numpy_.DLPACK_DTYPES - set(_WIDE)) | ML
"""The dtype strings JAX holds as they are, whatever ``jax_enable_x64`` says."""


def _x64() -> bool:
    jax = sys.modules.get("jax")
    return bool(jax is not None and jax.config.jax_enable_x64)


def _accepts(ts: str) -> str | None:
    return None if ts in KEPT or ts in _WIDE else f"JAX has no dtype {ts}"


def narrows(ts: str) -> tuple[str, str] | None:
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
                      accepts=_accepts, narrows=narrows, name="JAX on the CPU",
                      misaligned=STEP_COPIES,
                      misaligned_why="copies it (XLA aliases 64-byte aligned buffers only)")
GPU_RULES = ConsumerRules(negative_strides=False, c_contiguous=True, alignment=16,
                          accepts=_accepts, narrows=narrows, name="JAX on a GPU",
                          own_stream=(
                              "JAX cannot import on a user's stream: jax.dlpack.from_dlpack "
                              "passes a stream of its own to __dlpack__, so the source's work "
                              "is ordered before JAX's stream instead"),
                          misaligned_why="refuses it when it runs (XLA's GPU entry parameters "
                          "must be 16-byte aligned)")
# From NumPy, a read-only array goes through a writable alias that only XLA holds: JAX never
# writes to its buffers, so the legacy capsule's missing read-only flag loses nothing.
_FROM_NUMPY = replace(RULES, versioned=True)


_is_value = instance_test("jax", "Array")


def _device(x: Any) -> tuple[str, int | None]:
    """``(kind, index)`` of the device holding the array; index ``None`` for an array
    sharded or replicated over several (it is on no one of them: ``device="cpu:N"`` moves
    it)."""
    devs = x.devices()
    dev = next(iter(devs))
    kind = "cuda" if dev.platform == "gpu" else dev.platform
    return kind, dev.id if len(devs) == 1 else None


def key_obstacle(x: Any) -> str | None:
    """Why the JAX array ``x`` holds no numbers to hand over: a typed PRNG key array
    (``jax.random.key``; its dtype is ``key<impl>``, no NumPy dtype), or ``None``."""
    np = sys.modules.get("numpy")
    dtype = getattr(x, "dtype", None)
    if np is None or dtype is None or isinstance(dtype, np.dtype):
        return None
    return (f"a typed JAX PRNG key array (dtype {x.dtype}) holds keys, not numbers: no other "
            "framework reads it, and interop copies numbers only (into JAX it is kept as it "
            "is unless copy=True); convert jax.random.key_data(x) (its uint32 words; "
            "jax.random.wrap_key_data turns them back into keys)")


def _refuse_key(x: Any) -> None:
    why = key_obstacle(x)
    if why:
        raise UnsupportedConversionError(why)


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of a single-device JAX array (of one shard's array)."""
    _refuse_key(x)
    dtype = x.dtype
    ts = dlpack.typestr_of(dtype)
    return BufferView(x.unsafe_buffer_pointer(), tuple(x.shape),
                      c_strides(tuple(x.shape), dtype.itemsize), dtype.itemsize, ts,
                      _device(x), True, x)


def _buffers(x: Any) -> list[BufferView]:
    """The view of each buffer of a JAX array: its one buffer, or each addressable shard's
    (an array sharded or replicated over several devices)."""
    if len(x.sharding.device_set) == 1:
        return [view(x)]
    return [view(s.data) for s in x.addressable_shards]


def _array_types() -> tuple[type, ...]:
    """JAX's concrete array class (``jax.Array`` is abstract)."""
    return tuple(c for c in module("jax").Array.__subclasses__() if c.__name__ == "ArrayImpl")


def _from_dlpack(producer: Any) -> Any:
    import jax

    return jax.dlpack.from_dlpack(producer)


def export_check(x: Any) -> tuple[str, str] | None:
    """Why ``jax.Array.__dlpack__`` cannot hand ``x`` over: a typed PRNG key array, or an
    empty array on a GPU."""
    why = key_obstacle(x)
    if why:
        return UNSUPPORTED, why
    if x.size == 0 and _device(x)[0] != "cpu":
        return NEEDS_COPY, ("an empty JAX array on a GPU exports no buffer DLPack consumers "
                            "accept (BufferError: Unsupported device in DLTensor): a new empty "
                            "array is made instead")
    return None


IMMUTABLE = ("JAX treats arrays as immutable, but the source stays writable: writing to it "
             "changes the JAX array behind XLA's back")


def _immutable_hazard(x: Any) -> str | None:
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray) and x.flags.writeable:
        return IMMUTABLE
    return None


def host() -> Any:
    """Where host arrays go: JAX's default device, unless a GPU backend is the default."""
    jax = module("jax")
    return None if jax.default_backend() == "cpu" else jax.devices("cpu")[0]


# ---- numpy <-> JAX ----------------------------------------------------------------------

def from_numpy_check(a: Any) -> tuple[str, str] | None:
    """Why JAX cannot take NumPy array ``a`` as it is (bfloat16/float8 go by
    ``jax.device_put``, every other dtype over NumPy's DLPack export)."""
    if dlpack.typestr_of(a.dtype) not in ML:
        verdict = numpy_.export_check(a)
        if verdict is not None:
            return verdict
    return view_obstacle(numpy_.view(a), _FROM_NUMPY)


def _numpy_dtypes(kept: frozenset[str]) -> frozenset[Any]:
    """The NumPy dtypes (ml_dtypes' ones too, where installed) of the dtype strings ``kept``."""
    np = module("numpy")
    out = {np.dtype(c) for c in np.typecodes["All"] if c not in "OSUVMm"}
    ml_dtypes = sys.modules.get("ml_dtypes")  # JAX imports it
    out.update(np.dtype(getattr(ml_dtypes, n)) for n in ML if hasattr(ml_dtypes, n))
    return frozenset(dt for dt in out if dt.isnative and dlpack.typestr_of(dt) in kept)


_CARRIER_BOUND = 256
_CARRIERS: dict[int, Any] = {}


class _Alias:
    """An ``__array_interface__`` over memory ``base`` owns, keeping ``base`` alive."""

    __slots__ = ("__array_interface__", "base")

    def __init__(self, interface: dict, base: Any) -> None:
        self.__array_interface__ = interface
        self.base = base


def writable_alias(ptr: int, n: int, dtype: Any, owner: Any) -> Any:
    """A writable 1-D NumPy array of ``n`` values of ``dtype`` at ``ptr``, keeping ``owner``
    alive: for XLA's legacy DLPack import of read-only memory (JAX never writes to its
    buffers, so the flag the legacy capsule cannot carry loses nothing). It is a ctypes
    array over the memory; ctypes makes one array type per byte length, so at most
    ``_CARRIER_BOUND`` of them are kept (other lengths go through an array interface)."""
    np = module("numpy")
    nbytes = n * dtype.itemsize
    carrier = _CARRIERS.get(nbytes)
    if carrier is None and len(_CARRIERS) < _CARRIER_BOUND:
        import ctypes

        carrier = _CARRIERS[nbytes] = ctypes.c_char * nbytes
    if carrier is None:
        return np.asarray(_Alias({"data": (ptr, False), "shape": (n,), "typestr": dtype.str,
                                  "version": 3}, owner))
    buf = carrier.from_address(ptr)
    buf.owner = owner
    return np.frombuffer(buf, dtype)


def _from_numpy_converter() -> Any:
    """``jax.dlpack.from_dlpack`` of the array (of a writable alias of a read-only one, which
    NumPy will not export as the legacy DLPack XLA asks for); ``jax.device_put`` of
    bfloat16/float8 (NumPy cannot export them at all). Either aliases a compact 64-byte
    aligned buffer and copies any other; a buffer that is not row-major (XLA would take it
    with a layout of its own) is ``NeedsCopy``."""
    jax = module("jax")
    from_dlpack, device_put, cpu = jax.dlpack.from_dlpack, jax.device_put, host()
    ml = _numpy_dtypes(ML)

    def convert(a: Any) -> Any:
        flags = a.flags.num  # one read for both tests
        if not flags & C_CONTIGUOUS:
            raise NeedsCopy(NEEDS_COPY, "not a row-major buffer")
        if a.dtype in ml:
            return device_put(a, cpu, may_alias=True)
        if flags & WRITEABLE:
            return from_dlpack(a)
        if a.size:
            alias = writable_alias(a.ctypes.data, a.size, a.dtype, a)
            a = alias if a.ndim == 1 else alias.reshape(a.shape)
        else:  # empty: nothing to alias
            a = module("numpy").empty(a.shape, a.dtype)
        return from_dlpack(a)

    return convert


def _numpy_accepts() -> frozenset[Any]:
    return _numpy_dtypes(KEPT)


def _to_numpy(x: Any) -> Any:
    np = sys.modules.get("numpy")  # always loaded once jax is; no import statement per call
    if np is None:  # pragma: no cover
        import numpy as np
    _refuse_key(x)
    return np.asarray(x)


def _gather() -> Any:
    """``numpy.asarray`` of an array; a copy where that would view one replica only."""
    np = module("numpy")
    asarray, array, replica = np.asarray, np.array, _replica_view
    single = module("jax").sharding.SingleDeviceSharding  # one test for most arrays

    def gather(x: Any) -> Any:
        sh = x.sharding
        return asarray(x) if type(sh) is single or not replica(sh) else array(x)

    return gather


def _sharding_verdict(sh: Any) -> tuple[str, str] | None:
    devs = sh.device_set
    if len(devs) != 1:
        return STEP_COPIES, ("the array is sharded or replicated over several devices: "
                             "gathering it copies")
    if next(iter(devs)).platform != "cpu":
        return STEP_COPIES, "the array lives on a GPU; NumPy reads host memory"
    return None


_sharding = memo(_sharding_verdict, 64)  # arrays share a few shardings
_host_sharding = memo_by(attrgetter("sharding"),  # arrays share a few shardings
                         lambda x: all(d.platform == "cpu" for d in x.sharding.device_set))


def _on_host(x: Any) -> bool:
    """Whether ``x`` lives on the host: its client's platform (jaxlib's ``ArrayImpl.platform``,
    50 ns), else its sharding's devices."""
    try:
        return x.platform() == "cpu"
    except AttributeError:  # a jaxlib without it
        return _host_sharding(x)


def _views_a_replica(sh: Any) -> bool:
    """Whether ``numpy.asarray`` of an array of sharding ``sh`` views one replica's host
    buffer (replicated over several CPU devices) instead of gathering a copy: then the
    gather copies itself, as the plan says (a write through the result would change one
    replica of an immutable array)."""
    devs = sh.device_set
    return len(devs) > 1 and sh.is_fully_replicated and all(d.platform == "cpu" for d in devs)


_replica_view = memo(_views_a_replica, 64)


def _to_numpy_check(x: Any) -> tuple[str, str] | None:
    why = key_obstacle(x)
    return (UNSUPPORTED, why) if why else _sharding(x.sharding)


def _cpu_devices() -> int:
    return len(module("jax").devices("cpu"))


def _place(arr: Any, where: Any) -> Any:
    """Host array ``arr`` on JAX's CPU device ``where`` (an int), or where JAX array
    ``where`` lives (its sharding: one device, or shards and replicas over several)."""
    jax = module("jax")
    to = jax.devices("cpu")[where] if isinstance(where, int) else where.sharding
    return jax.device_put(arr, to, may_alias=True)


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
        Edge("numpy", "jax", "jax.dlpack.from_dlpack (jax.device_put for bfloat16/float8)",
             _from_numpy_converter, check=from_numpy_check,
             hazard=_immutable_hazard,
             accepts=Accepts(lambda: (module("numpy").ndarray,), _numpy_accepts)),
        # the check's only verdict is STEP_COPIES (sharded, or on a GPU): numpy.asarray copies
        Edge("jax", "numpy", "numpy.asarray (__array__)", _gather,
             check=_to_numpy_check, accepts=Accepts(_array_types)),
    ]


ADAPTER = ArrayAdapter(
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
    buffers=_buffers,
    device=_device,
    on_host=_on_host,
    to_numpy=_to_numpy,
    export_dlpack=lambda x: x,
    export_check=export_check,
    from_dlpack=_from_dlpack,
    dlpack_call="jax.dlpack.from_dlpack",
    dlpack_hazard=_immutable_hazard,
    to_device=_to_device,
    cpu_devices=_cpu_devices,
    place=_place,
    gpu_present=_gpu_present,
    edges=_edges,
)


# ---- sparse arrays: jax.experimental.sparse BCOO and BCSR --------------------------------
_is_sparse = instance_test("jax.experimental.sparse", "BCOO", "BCSR")


def _sparse_parts(x: Any) -> Parts:
    bcoo = type(x).__name__ == "BCOO"
    if x.n_dense or (bcoo and x.n_batch):
        return Parts(f"{type(x).__name__} with n_batch={x.n_batch}, n_dense={x.n_dense}", (),
                     (("shape", tuple(x.shape)),))
    if bcoo:
        return sparse.coo(x.data, x.indices, x.shape, sparse.NNZ_FIRST)
    return sparse.compressed("csr", x.data, x.indices, x.indptr, x.shape)


def _sparse_rebuild(reg: RegistryLike, parts: Parts, target: str) -> Any:
    js = module("jax.experimental.sparse")
    a, ok = dict(parts.arrays), sparse.canonical(parts)
    if parts.layout == "coo":
        return js.BCOO((a["data"], a["coords"]), shape=sparse.shape(parts),
                       indices_sorted=ok, unique_indices=ok)
    return js.BCSR((a["data"], a["indices"], a["indptr"]), shape=sparse.shape(parts),
                   indices_sorted=ok, unique_indices=ok)


def _sparse_reformat(x: Any, layout: str) -> Any:
    """``x`` in ``layout`` by JAX's own calls, over the same buffers with its flags off
    (``indices_sorted``/``unique_indices`` are the user's word, which interop checks and
    JAX trusts: ``BCSR.from_bcoo`` of unsorted indices claimed sorted is another matrix)."""
    js = module("jax.experimental.sparse")
    if type(x).__name__ == "BCOO":
        x = js.BCOO((x.data, x.indices), shape=x.shape).sort_indices()
    else:
        x = js.BCSR((x.data, x.indices, x.indptr), shape=x.shape)
    if layout == "dense":
        return x.todense()
    if layout == "coo":
        return x.to_bcoo() if type(x).__name__ == "BCSR" else x
    if layout == "csr":
        return js.BCSR.from_bcoo(x if type(x).__name__ == "BCOO" else x.to_bcoo())
    raise UnsupportedConversionError(f"format={layout!r}: JAX has BCOO ('coo') and BCSR "
                                     "('csr') only")


SPARSE = sparse.kind(
    name="jax.sparse",
    modules=("jax",),
    package="jax",
    devices=("cpu", "cuda"),
    is_value=_is_sparse,
    parts=_sparse_parts,
    rebuild=_sparse_rebuild,
    of="jax",
    layouts=("csr", "coo"),
    needs={"coo": sparse.Needs(coords=sparse.NNZ_FIRST, ndims=None),
           "csr": sparse.Needs(batched=True, padded=True)},
    reformat=_sparse_reformat,
)

ADAPTERS = (ADAPTER, SPARSE)
