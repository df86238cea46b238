"""TensorFlow: legacy DLPack capsules in and out; ``numpy.asarray`` for a read-only view.

What TensorFlow 2.21 does, probed on this project's machines (tests/optional/test_tensorflow.py
keeps each point honest):

- ``tf.experimental.dlpack.from_dlpack`` takes a legacy ``dltensor`` capsule only (neither a
  ``dltensor_versioned`` capsule nor an object with ``__dlpack__``) and compact row-major
  buffers only: strided, Fortran-order, broadcast and negative strides raise
  ``InvalidArgumentError``. It has no dtype for float8 (type codes 7-14).
- It imports a buffer that is not 64-byte aligned *in place*, and then nearly every kernel
  (add, reduce_sum, matmul, cast, slicing, concat ...) aborts the whole interpreter with
  ``Check failed: IsAligned()``. interop copies such buffers instead.
- ``Tensor.numpy()`` always copies. ``numpy.asarray(t)`` is a zero-copy, read-only view,
  except for bfloat16, where it is writable (interop marks it read-only); float8 and int4
  come back as a copy.
- ``Tensor.__dlpack__`` exists but ignores ``max_version`` (always a legacy capsule) and
  refuses any ``stream``; on a string tensor it aborts the interpreter, so interop never
  calls it for a dtype outside :data:`_TYPESTR`.
- TensorFlow never writes into an imported buffer (probed with element-wise ops, casts,
  ``tf.function`` and scatter updates), so a read-only NumPy array is handed over through a
  writable alias only TensorFlow holds, as for JAX.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from functools import cache
from typing import Any

from ..errors import FrameworkMissingError, UnsupportedConversionError
from ..protocols import dlpack
from ..protocols.array_interface import view_of_numpy
from ..view import BufferView
from . import numpy_
from . import sparse_parts as sparse
from .base import (
    NEEDS_COPY,
    STEP_COPIES,
    UNSUPPORTED,
    ArrayAdapter,
    ConsumerRules,
    Edge,
    NeedsCopy,
    Parts,
    RegistryLike,
    fixed,
    gpu_probe,
    installed,
    instance_test,
    view_obstacle,
    writable_source,
)

# TensorFlow dtype name -> type string, for every dtype TF exports and imports over DLPack.
_TYPESTR = dlpack.typestrs((*dlpack.NAMED, "bfloat16"))
_ACCEPTED = frozenset(_TYPESTR.values())
# Dtypes TensorFlow holds but exports over no zero-copy protocol: numpy.asarray copies them.
_HOST_ONLY = frozenset({"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                        "float8_e4m3b11fnuz", "float4_e2m1fn", "int4", "uint4", "int2", "uint2"})
ALIGNMENT = 64


def _tf() -> Any:
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        return tf
    try:
        import tensorflow as tf
    except ImportError as e:
        raise FrameworkMissingError(
            f"tensorflow is not importable ({e}): pip install tensorflow "
            "(or interop-mempool[tensorflow])"
        ) from e
    return tf


@cache
def _installed() -> bool:
    return installed("tensorflow")


def missing() -> str | None:
    """Why tensorflow cannot be a target here (``None``: it can); never imports it."""
    if "tensorflow" in sys.modules or _installed():
        return None
    return ("tensorflow is not installed: pip install tensorflow "
            "(or interop-mempool[tensorflow])")


def _accepts(ts: str) -> str | None:
    if ts in _ACCEPTED:
        return missing()
    if ts.startswith("float8"):
        return (f"TensorFlow's DLPack import has no {ts} (it refuses DLPack float8 type "
                "codes): convert to NumPy first, then to tensorflow (tf.convert_to_tensor "
                "copies it)")
    return f"TensorFlow has no dtype {ts}"


RULES = ConsumerRules(
    c_contiguous=True, alignment=ALIGNMENT, versioned=False, accepts=_accepts, name="TensorFlow",
    misaligned_why=("would import it in place, and its kernels abort the interpreter on "
                    "buffers that are not 64-byte aligned (Check failed: IsAligned())"))
# From NumPy, a read-only array goes through a writable alias that only TensorFlow holds:
# TensorFlow never writes to its inputs, so the legacy capsule's missing flag loses nothing.
_FROM_NUMPY = replace(RULES, versioned=True)


_is_value = instance_test("tensorflow", "Tensor")


def _eager(t: Any) -> bool:
    return hasattr(t, "_numpy")


_DEVICES: dict[str, tuple[str, int]] = {}


def _device(t: Any) -> tuple[str, int]:
    name = getattr(t, "device", "") or ""
    dev = _DEVICES.get(name)
    if dev is None:
        kind, _, index = name.rpartition("device:")[2].partition(":")
        kind = {"GPU": "cuda", "CPU": "cpu"}.get(kind.upper(), kind.lower() or "cpu")
        dev = _DEVICES[name] = (kind, int(index) if index.isdigit() else 0)
    return dev


def _symbolic(t: Any) -> tuple[str, str]:
    return UNSUPPORTED, (f"a symbolic {type(t).__name__} (inside tf.function or a Keras graph) "
                         "has no memory yet: convert eager tensors, outside the traced function")


def _tensor_verdict(t: Any, host_only: str) -> tuple[str, str] | None:
    """Whether ``t`` shares its buffer at all: a symbolic tensor has none, float8/int4 ones
    only through a copy (``host_only``: the verdict then), non-numeric ones never."""
    if not _eager(t):
        return _symbolic(t)
    name = t.dtype.name
    if name in _TYPESTR:
        return None
    if name in _HOST_ONLY:
        return host_only, (f"TensorFlow shares {name} tensors over no zero-copy protocol "
                           "(DLPack refuses it): numpy.asarray copies them")
    return UNSUPPORTED, (f"TensorFlow dtype {name} has no DLPack or NumPy buffer to share "
                         "(only numeric tensors convert)")


def export_check(t: Any) -> tuple[str, str] | None:
    """Whether ``t`` can be exported over DLPack at all (before any consumer rule)."""
    return _tensor_verdict(t, NEEDS_COPY)


def _capsule(t: Any) -> Any:
    """A legacy DLPack capsule of ``t``, after the dtype check TensorFlow itself lacks."""
    name = t.dtype.name
    if name not in _TYPESTR or not _eager(t):
        # tf.string (and other non-numeric dtypes) abort the interpreter in to_dlpack
        raise UnsupportedConversionError(
            f"TensorFlow cannot export a {name} tensor over DLPack" if _eager(t)
            else _symbolic(t)[1])
    return _tf().experimental.dlpack.to_dlpack(t)


def view(t: Any) -> BufferView:
    """The :class:`BufferView` of an eager tensor (read through a throw-away capsule)."""
    v = dlpack.inspect_capsule(_capsule(t)).view
    return BufferView(v.ptr, v.shape, v.strides, v.itemsize, v.dtype, v.device, True, t)


class _Producer:
    """A tensor as a DLPack producer: ``__dlpack__`` takes the standard keywords.

    TensorFlow's own ``__dlpack__`` raises on any ``stream`` argument; its ``to_dlpack``
    "ensures the underlying data memory is ready when it returns" (it synchronises), so a
    consumer's stream needs no further ordering and is not passed on.
    """

    __slots__ = ("tensor",)

    def __init__(self, t: Any) -> None:
        self.tensor = t

    def __dlpack_device__(self) -> tuple[int, int]:
        kind, index = _device(self.tensor)
        return (int(dlpack.Device.CUDA) if kind == "cuda" else int(dlpack.Device.CPU)), index

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: Any = None) -> Any:
        if copy:
            raise BufferError("TensorFlow's DLPack export cannot copy")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("TensorFlow's DLPack export cannot move data between devices")
        return _capsule(self.tensor)


def _export(t: Any) -> Any:
    return _Producer(t)


def _from_dlpack(producer: Any) -> Any:
    tf = _tf()
    capsule = dlpack.export(producer, versioned=False)
    v = dlpack.inspect_capsule(capsule).view
    if v.size and v.ptr % ALIGNMENT:  # the checks send these to a copy first: a safety net
        raise NeedsCopy(NEEDS_COPY, f"data pointer {v.ptr:#x} is not {ALIGNMENT}-byte aligned: "
                                    f"TensorFlow {RULES.misaligned_why}")
    return tf.experimental.dlpack.from_dlpack(capsule)


def _mutable_source_hazard(a: Any) -> str | None:
    """The hazard of a writable NumPy array into TensorFlow (a DLPack source's is derived
    from its own view by the routing: ``dlpack_hazard`` left unset)."""
    return writable_source(RULES.name) if a.flags.writeable else None


# ---- numpy <-> tensorflow ---------------------------------------------------------------

def _np_check(a: Any) -> tuple[str, str] | None:
    if "tensorflow" not in sys.modules and missing():
        return UNSUPPORTED, missing()
    ts = dlpack.typestr_of(a.dtype)
    if a.dtype.type.__module__ == "ml_dtypes":
        if ts in _HOST_ONLY:
            return STEP_COPIES, (f"TensorFlow's DLPack import has no {ts}: tf.convert_to_tensor "
                            "copies it")
        if ts != "bfloat16":
            return UNSUPPORTED, f"TensorFlow has no dtype {ts}"
        if not a.flags.aligned:
            return NEEDS_COPY, "the array is not aligned to its itemsize"
        return view_obstacle(view_of_numpy(a), _FROM_NUMPY)
    if not a.dtype.isnative:
        return UNSUPPORTED, (f"TensorFlow has no dtype {a.dtype} (byte order "
                             f"{a.dtype.byteorder!r}): convert to native byte order first")
    if ts not in _ACCEPTED:
        return UNSUPPORTED, f"TensorFlow has no dtype {a.dtype}"
    return numpy_.export_check(a) or view_obstacle(numpy_.view(a), _FROM_NUMPY)


def _np_capsule(a: Any) -> Any:
    """A legacy capsule of a compact array, bfloat16 included, read-only or not."""
    ml = a.dtype.type.__module__ == "ml_dtypes"
    bits = a.view(dlpack.carrier_dtype(a.itemsize)) if ml else a
    if not bits.flags.writeable:
        from ..host import writable_view

        bits = writable_view(bits)
    capsule = bits.__dlpack__()
    if ml:  # NumPy exported the bits as unsigned ints: name the real type in the capsule
        code, nbits, _ = dlpack.dtype_to_dl(dlpack.typestr_of(a.dtype))
        mt = dlpack._managed(capsule)[1]
        mt.dl_tensor.dtype.code, mt.dl_tensor.dtype.bits = code, nbits
    return capsule


def _np_to_tf(a: Any) -> Any:
    tf = _tf()
    ts = dlpack.typestr_of(a.dtype)
    if ts in _HOST_ONLY:  # float8: the check called this a copy
        return tf.convert_to_tensor(a)
    return tf.experimental.dlpack.from_dlpack(_np_capsule(a))


def _to_numpy_check(t: Any) -> tuple[str, str] | None:
    return _tensor_verdict(t, STEP_COPIES)  # numpy.asarray copies float8/int4 itself


def _tf_to_numpy(t: Any) -> Any:
    np = sys.modules.get("numpy")
    if np is None:  # pragma: no cover - numpy is loaded whenever tensorflow is
        import numpy as np
    if t.dtype.name == "bfloat16" and not t.shape.rank:
        # TF's __array__ fails on a 0-d bfloat16 tensor; its 1-element reshape (same buffer)
        # converts
        a = np.asarray(_tf().reshape(t, [1])).reshape(())
    else:
        a = np.asarray(t)
    if a.flags.writeable and t.dtype.name in _TYPESTR:
        # numpy.asarray gives a writable view for bfloat16 only: TF tensors are immutable
        a.flags.writeable = False
    return a


def _to_numpy(t: Any) -> Any:
    """Any tensor to host NumPy: a read-only view on the CPU, a (writable) copy from a GPU
    or for float8/int4."""
    verdict = _to_numpy_check(t)
    if verdict is not None and verdict[0] == UNSUPPORTED:
        raise UnsupportedConversionError(verdict[1])
    if _device(t)[0] != "cpu":
        import numpy as np

        return np.asarray(t)
    return _tf_to_numpy(t)


_gpu_present = gpu_probe("tensorflow", lambda tf: tf.config.list_physical_devices("GPU"))


def _to_device(arr: Any, index: int) -> Any:
    tf = _tf()
    with tf.device(f"/GPU:{index}"):
        return tf.identity(tf.constant(arr))


# For tensorflow <-> numpy itself these edges win over the generic DLPack edge (2.1), but a
# path through NumPy (1 + 1.25) loses to one direct DLPack step (2.2, routing.DLPACK_COST)
# between tensorflow and torch, JAX or paddle: one call, bfloat16 to JAX without a copy, and
# no read-only NumPy view handed to torch. tests/optional/test_tensorflow.py checks the routes.
_HOP = 1.25


def _edges() -> list[Edge]:
    return [
        Edge("numpy", "tensorflow", "tf.experimental.dlpack.from_dlpack", fixed(_np_to_tf),
             check=_np_check, hazard=_mutable_source_hazard, cost=_HOP),
        Edge("tensorflow", "numpy", "numpy.asarray (read-only view)", fixed(_tf_to_numpy),
             check=_to_numpy_check, cost=_HOP),
    ]


ADAPTER = ArrayAdapter(
    name="tensorflow",
    aliases=("tf",),
    modules=("tensorflow",),
    package="tensorflow",
    install='pip install tensorflow (or "interop-mempool[tensorflow]")',
    devices=("cpu", "cuda"),
    rules=RULES,
    gpu_rules=RULES,  # its DLPack import checks the same on a GPU
    holds_read_only=True,
    is_value=_is_value,
    view=view,
    device=_device,
    to_numpy=_to_numpy,
    export_dlpack=_export,
    export_check=export_check,
    from_dlpack=_from_dlpack,
    dlpack_call="tf.experimental.dlpack.from_dlpack",
    to_device=_to_device,
    gpu_present=_gpu_present,
    edges=_edges,
)


# ---- tf.sparse.SparseTensor --------------------------------------------------------------
_is_sparse = instance_test("tensorflow", "SparseTensor")


def _sparse_parts(st: Any) -> Parts:
    return sparse.coo(st.values, st.indices, [int(n) for n in st.dense_shape],
                      sparse.NNZ_FIRST)


def _sparse_rebuild(reg: RegistryLike, parts: Parts, target: str) -> Any:
    a = dict(parts.arrays)
    return _tf().sparse.SparseTensor(a["coords"], a["data"], list(sparse.shape(parts)))


def _sparse_reformat(st: Any, layout: str) -> Any:
    """Densified by ``tf.scatter_nd``, which sums duplicate entries and takes any order
    (``tf.sparse.to_dense`` raises on indices out of order, which TensorFlow's constructor
    accepts; found by the random search of sparse values); bools, which it cannot add, as
    the sums of their duplicates as integers that are not 0: the logical or, as SciPy sums
    them (``to_dense`` kept the last of them: found by the search at 4,000 cases)."""
    tf = _tf()
    if layout == "dense":
        if st.values.dtype == tf.bool:
            counts = tf.scatter_nd(st.indices, tf.cast(st.values, tf.int32), st.dense_shape)
            return tf.not_equal(counts, 0)
        return tf.scatter_nd(st.indices, st.values, st.dense_shape)
    if layout == "coo":
        return st
    raise UnsupportedConversionError(f"format={layout!r}: TensorFlow has COO sparse tensors "
                                     "only")


SPARSE = sparse.kind(
    name="tensorflow.sparse",
    modules=("tensorflow",),
    package="tensorflow",
    devices=("cpu", "cuda"),
    is_value=_is_sparse,
    parts=_sparse_parts,
    rebuild=_sparse_rebuild,
    of="tensorflow",
    layouts=("coo",),
    needs={"coo": sparse.Needs(index_dtypes=("int64",), coords=sparse.NNZ_FIRST, ndims=None,
                               canonical=True)},
    reformat=_sparse_reformat,
)
"""TensorFlow's sparse ops expect indices in row-major order without duplicates (its
``tf.sparse.reorder``); interop sorts and sums them first, saying so."""

ADAPTERS = (ADAPTER, SPARSE)
