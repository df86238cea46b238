"""PaddlePaddle: DLPack in and out (``paddle.utils.dlpack``), strided views included.

What PaddlePaddle 3.3 does, probed on this project's machines (tests/optional/test_paddle.py keeps
each point honest):

- ``paddle.utils.dlpack.from_dlpack`` takes legacy and versioned capsules and producers,
  and imports strided, Fortran-order, broadcast and misaligned buffers in place (its
  kernels handle them). Negative strides are not: it asks for a ~16 EiB allocation and
  raises ``MemoryError``, or (seen with 2 elements, and not reproducibly with more) imports
  them reading memory *before* the buffer and returns wrong values. Its own slices
  (``t[::-1]``) do have negative strides, and it exports them correctly.
- It ignores the DLPack 1.x read-only flag: a read-only source comes back writable.
- It reads a uint16 buffer as **bfloat16** (its NumPy convention): the values change
  meaning, so interop refuses uint16 targets. float8_e4m3fn/e5m2 and bfloat16 work.
- ``Tensor.__dlpack_device__`` returns ``(kDLCPU, None)`` on the CPU: the spec (and JAX)
  want an int, so interop's producer says ``(1, 0)``.
- ``Tensor.__dlpack__`` refuses tensors that require grad; interop exports ``detach()``
  (same memory). ``Tensor.numpy()`` always copies, and gives bfloat16/float8 as raw bits.
- Importing paddle after tensorflow segfaults (both bundle protobuf; seen with
  paddlepaddle 3.3.1 and tensorflow 2.21): interop refuses to import paddle in a process
  that has imported tensorflow, and says so, instead of crashing.
"""

from __future__ import annotations

import sys
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
    UNSUPPORTED,
    ArrayAdapter,
    ConsumerRules,
    Edge,
    Parts,
    RegistryLike,
    fixed,
    gpu_probe,
    installed,
    instance_test,
    readonly_source,
    view_obstacle,
)

# paddle dtype name -> type string, for every dtype paddle exports and imports over DLPack.
_TYPESTR = dlpack.typestrs((*(n for n in dlpack.NAMED if n != "uint16"), "bfloat16",
                            "float8_e4m3fn", "float8_e5m2"))
_ACCEPTED = frozenset(_TYPESTR.values())
_ML = frozenset(ts for ts in _ACCEPTED if ts[0] not in "<>|")


@cache
def _installed() -> bool:
    return installed("paddle")


def blocked() -> str | None:
    """Why paddle cannot be imported into this process now (``None``: it can)."""
    if "paddle" in sys.modules:
        return None
    if not _installed():
        return "paddle is not installed: pip install paddlepaddle (or interop-mempool[paddle])"
    if "tensorflow" not in sys.modules:
        return None
    return ("paddle cannot be imported after tensorflow in one process: both bundle protobuf "
            "and importing paddle then segfaults (seen with paddlepaddle 3.3.1 and tensorflow "
            "2.21); import paddle before tensorflow")


def _paddle() -> Any:
    paddle = sys.modules.get("paddle")
    if paddle is not None:
        return paddle
    why = blocked()
    if why:
        raise UnsupportedConversionError(why)
    try:
        import paddle
        import paddle.utils.dlpack  # noqa: F401
    except ImportError as e:
        raise FrameworkMissingError(
            f"paddle is not importable ({e}): pip install paddlepaddle "
            "(or interop-mempool[paddle])"
        ) from e
    return paddle


def _accepts(ts: str) -> str | None:
    if ts in _ACCEPTED:
        return blocked()
    if ts == "<u2":
        return ("PaddlePaddle has no uint16 dtype: its DLPack import reads uint16 buffers as "
                "bfloat16, which changes what the values mean; cast to int32 first")
    return f"PaddlePaddle has no dtype {ts}"


RULES = ConsumerRules(
    negative_strides=False, accepts=_accepts, name="PaddlePaddle",
    negative_strides_why=("cannot import them (paddle.utils.dlpack.from_dlpack raises "
                          "MemoryError for a ~16 EiB allocation, or reads outside the buffer)"))


_is_value = instance_test("paddle", "Tensor")


def _name(t: Any) -> str:
    return str(t.dtype).rpartition(".")[2]


def _device(t: Any) -> tuple[str, int]:
    place = t.place
    if place.is_gpu_place():
        return "cuda", place.gpu_device_id()
    return "cpu", 0


def view(t: Any) -> BufferView:
    """The :class:`BufferView` of a tensor (strides may be negative or zero)."""
    ts = _TYPESTR.get(_name(t))
    if ts is None:
        raise UnsupportedConversionError(f"paddle dtype {_name(t)} has no buffer view")
    size = t.element_size()
    return BufferView(t.data_ptr(), tuple(t.shape), tuple(s * size for s in t.strides), size,
                      ts, _device(t), False, t)


class _Producer:
    """A tensor as a DLPack producer: a detached tensor and an integer device id."""

    __slots__ = ("tensor",)

    def __init__(self, t: Any) -> None:
        self.tensor = t if t.stop_gradient else t.detach()

    def __dlpack_device__(self) -> tuple[int, int]:
        kind, index = _device(self.tensor)
        return (int(dlpack.Device.CUDA) if kind == "cuda" else int(dlpack.Device.CPU)), index

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: Any = None) -> Any:
        if self.tensor.place.is_cpu_place():
            stream = None  # paddle asserts that a CPU export gets no stream
        return self.tensor.__dlpack__(stream=stream, max_version=max_version,
                                      dl_device=dl_device, copy=copy)


def _export(t: Any) -> Any:
    return _Producer(t)


def export_check(t: Any) -> tuple[str, str] | None:
    if _name(t) not in _TYPESTR:
        return UNSUPPORTED, f"PaddlePaddle cannot export dtype {_name(t)} over DLPack"
    return None


def _from_dlpack(producer: Any) -> Any:
    return _paddle().utils.dlpack.from_dlpack(producer)


def _readonly_hazard(x: Any) -> str | None:
    if readonly_source(x):
        return ("PaddlePaddle tensors cannot be read-only (its DLPack import ignores the "
                "read-only flag): writes through the result change memory the source treats "
                "as read-only/immutable")
    return None


# ---- numpy <-> paddle -------------------------------------------------------------------

def _np_check(a: Any) -> tuple[str, str] | None:
    ts = dlpack.typestr_of(a.dtype)
    if a.dtype.type.__module__ == "ml_dtypes":
        why = _accepts(ts)
        if why:
            return UNSUPPORTED, why
        if not a.flags.aligned:
            return NEEDS_COPY, "the array is not aligned to its itemsize"
        return view_obstacle(view_of_numpy(a), RULES)
    return numpy_.export_check(a) or view_obstacle(numpy_.view(a), RULES)


def _np_to_paddle(a: Any) -> Any:
    paddle = _paddle()
    if a.dtype.type.__module__ == "ml_dtypes":  # bfloat16/float8: NumPy cannot export them
        from .capsule import to_capsule

        return paddle.utils.dlpack.from_dlpack(to_capsule(a))
    return paddle.utils.dlpack.from_dlpack(a)


def _to_numpy(t: Any) -> Any:
    """Any tensor to host NumPy (a view on the CPU, a copy from a GPU)."""
    if _name(t) not in _TYPESTR:
        raise UnsupportedConversionError(f"NumPy has no dtype for paddle {_name(t)}")
    t = t if t.stop_gradient else t.detach()
    if not t.place.is_cpu_place():
        t = t.cpu()
    return dlpack.to_numpy(t.__dlpack__(max_version=dlpack.MAX_VERSION))


def _to_capsule(t: Any) -> Any:
    return dlpack.export(_Producer(t))


_gpu_present = gpu_probe("paddle", lambda paddle: paddle.is_compiled_with_cuda()
                         and paddle.device.cuda.device_count())


def _to_device(arr: Any, index: int) -> Any:
    return _np_to_paddle(arr).cuda(index)


# numpy -> paddle wins over the generic DLPack edge (2.1), but a path through NumPy
# (1 + 1.25) loses to one direct DLPack step (2.2, routing.DLPACK_COST) from torch, JAX or
# tensorflow. tests/optional/test_paddle.py checks the routes.
def _edges() -> list[Edge]:
    return [
        Edge("numpy", "paddle", "paddle.utils.dlpack.from_dlpack", fixed(_np_to_paddle),
             check=_np_check, hazard=_readonly_hazard, cost=1.25),
        Edge("paddle", "dlpack", "Tensor.__dlpack__", fixed(_to_capsule)),
    ]


ADAPTER = ArrayAdapter(
    name="paddle",
    aliases=("paddlepaddle",),
    modules=("paddle",),
    package="paddle",
    install='pip install paddlepaddle (or "interop-mempool[paddle]")',
    devices=("cpu", "cuda"),
    rules=RULES,
    gpu_rules=RULES,  # its DLPack import is the same on a GPU
    is_value=_is_value,
    view=view,
    device=_device,
    to_numpy=_to_numpy,
    export_dlpack=_export,
    export_check=export_check,
    from_dlpack=_from_dlpack,
    dlpack_call="paddle.utils.dlpack.from_dlpack",
    dlpack_hazard=_readonly_hazard,
    to_device=_to_device,
    gpu_present=_gpu_present,
    edges=_edges,
)


# ---- sparse tensors (paddle.Tensor of a sparse COO or CSR layout: the kind within paddle) ----
def _is_sparse(t: Any) -> bool:
    return t.is_sparse()


def _sparse_parts(t: Any) -> Parts:
    shape = tuple(t.shape)
    if t.is_sparse_coo():
        if t.sparse_dim() != len(shape):
            return Parts(f"coo with {len(shape) - t.sparse_dim()} dense dimensions", (),
                         (("shape", shape),))
        return sparse.coo(t.values(), t.indices(), shape)
    return sparse.compressed("csr", t.values(), t.cols(), t.crows(), shape)


def _sparse_rebuild(reg: RegistryLike, parts: Parts, target: str) -> Any:
    import paddle

    a, shape = dict(parts.arrays), list(sparse.shape(parts))
    if parts.layout == "coo":
        return paddle.sparse.sparse_coo_tensor(a["coords"], a["data"], shape)
    return paddle.sparse.sparse_csr_tensor(a["indptr"], a["indices"], a["data"], shape)


def _sparse_reformat(t: Any, layout: str) -> Any:
    """``t`` in ``layout`` by paddle's own calls, a COO tensor coalesced first: its dense
    form overwrites a duplicate entry where every other form sums it (found by the random
    search of sparse values)."""
    if t.is_sparse_coo():
        t = t.coalesce()
    if layout == "dense":
        return t.to_dense()
    if layout == "coo":
        return t.to_sparse_coo(len(t.shape)) if t.is_sparse_csr() else t
    if layout == "csr":
        return t.to_sparse_csr() if t.is_sparse_coo() else t
    raise UnsupportedConversionError(f"format={layout!r}: paddle has 'coo' and 'csr' only")


# paddle 3.3 builds no COO tensor without entries (its shape inference reduces over the empty
# axis and raises; an empty CSR works), and its dense form of a COO tensor overwrites a
# duplicate entry (SciPy, torch and JAX sum them): duplicates are summed first.
_PADDLE_DTYPES = ("uint8", "int16", "int32", "int64", "float16", "float32", "float64",
                  "complex64", "complex128")
"""The value dtypes paddle's sparse kernels are registered for (its ``sparse_coo_tensor``
kernel's own list, in its NotFound error: no bool, no int8)."""
SPARSE = sparse.kind(
    name="paddle.sparse",
    modules=("paddle",),
    package="paddle",
    devices=("cpu", "cuda"),
    is_value=_is_sparse,
    parts=_sparse_parts,
    rebuild=_sparse_rebuild,
    of="paddle",
    layouts=("csr", "coo"),
    needs={"coo": sparse.Needs(index_dtypes=("int64",), ndims=None, empty=False,
                               canonical=True, strided=False, data_dtypes=_PADDLE_DTYPES,
                               max_dim=2**31 - 1),
           # sparse_csr_tensor copies a strided values tensor (it shares a compact one)
           "csr": sparse.Needs(canonical=True, batched=True, strided=False,
                               data_dtypes=_PADDLE_DTYPES, max_dim=2**31 - 1)},
    reformat=_sparse_reformat,
    within=True,
)

ADAPTERS = (ADAPTER, SPARSE)
