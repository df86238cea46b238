"""PyTorch: ``torch.from_numpy`` / ``Tensor.numpy()`` fast paths, DLPack for the rest."""

from __future__ import annotations

import operator
import sys
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

from ..devices import DATALESS, no_data
from ..errors import MalformedError, UnsupportedConversionError
from ..protocols import dlpack
from ..view import BufferView
from . import sparse_parts as sparse
from .base import (
    C_CONTIGUOUS,
    NEEDS_COPY,
    UNSUPPORTED,
    Accepts,
    ArrayAdapter,
    CompositeAdapter,
    ConsumerRules,
    Edge,
    NeedsCopy,
    Parts,
    RegistryLike,
    instance_test,
    itemsize_aligned,
    misaligned_complex,
    module,
    readonly_source,
)

_NAMES = dlpack.typestrs((*dlpack.NAMED, "bfloat16", "float8_e4m3fn", "float8_e5m2",
                          "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"))
_BITS = {1: "|u1", 2: "<u2"}
_COMPLEX = frozenset({"<c8", "<c16"})
"""torch's complex kernels need elements at multiples of the itemsize (NumPy's ``aligned``
flag asks for the component's alignment only: a complex128 array 8 mod 16 is "aligned")."""


@cache
def _tables() -> tuple[dict, dict]:
    import torch

    to_ts = {getattr(torch, n): ts for n, ts in _NAMES.items() if hasattr(torch, n)}
    return to_ts, {ts: dt for dt, ts in to_ts.items()}


_is_value = instance_test("torch", "Tensor")


def _accepts(ts: str) -> str | None:
    if ts in _tables()[1]:
        return None
    return f"torch has no dtype {ts}"


def view(t: Any) -> BufferView:
    """The :class:`BufferView` of a tensor."""
    ts = _tables()[0].get(t.dtype)
    if ts is None:
        raise UnsupportedConversionError(f"torch dtype {t.dtype} has no buffer view")
    size = t.element_size()
    dev = t.device
    return BufferView(t.data_ptr(), tuple(t.shape), tuple(s * size for s in t.stride()), size,
                      ts, (dev.type, dev.index or 0), False, t)


def _device(t: Any) -> tuple[str, int]:
    dev = t.device
    return dev.type, dev.index or 0


def _detached(t: Any) -> Any:
    return t.detach() if t.requires_grad else t


def _export(t: Any) -> Any:
    """What is handed to a DLPack consumer: ``t`` (detached), or, for a CUDA tensor off the
    current device, :class:`_OnItsDevice`."""
    t = _detached(t)
    if t.is_cuda and t.device.index != module("torch").cuda.current_device():
        return _OnItsDevice(t)
    return t


class _OnItsDevice:
    """A CUDA tensor on a device other than the current one, exported under its own device.

    torch's ``Tensor.__dlpack__`` (``torch/_tensor.py``, torch 2.13) raises ``BufferError("Can't
    export tensors on a different CUDA device index")`` before it reads ``stream``; under
    ``torch.cuda.device(t.device)`` it exports, and orders the consumer's ``stream`` after
    torch's current stream of that device, as it does for a tensor on the current one."""

    __slots__ = ("tensor",)

    def __init__(self, t: Any) -> None:
        self.tensor = t

    def __dlpack_device__(self) -> Any:
        return self.tensor.__dlpack_device__()

    def __dlpack__(self, **kw: Any) -> Any:
        with module("torch").cuda.device(self.tensor.device):
            return self.tensor.__dlpack__(**kw)


def _layout_obstacle(t: Any) -> str | None:
    """Why ``t`` has no single strided buffer (sparse, MKL-DNN, nested), or ``None``."""
    if t.is_nested:  # strided layout (a jagged one is a composite of its own)
        return ("a torch nested tensor of the strided layout has no single dense buffer to "
                "hand over (and .to_dense() does not make one): rebuild it in the jagged "
                "layout, torch.nested.nested_tensor(list(t.unbind()), layout=torch.jagged) "
                "(a copy), which converts as values and offsets, or convert t.unbind()'s rows")
    if t.layout != module("torch").strided:
        return (f"a torch tensor with layout {t.layout} has no single dense buffer to hand "
                "over: call .to_dense() first")
    return None


def _dtype_obstacle(t: Any) -> str | None:
    if t.dtype in _tables()[0]:
        return None
    hint = " (call .dequantize() or .int_repr() first)" if t.is_quantized else ""
    return f"NumPy has no dtype for torch {t.dtype}{hint}"


def _lazy_bits(t: Any) -> tuple[str, str] | None:
    if t.is_conj() or t.is_neg():
        return NEEDS_COPY, "the tensor carries a lazy conjugate/negative bit; resolving it copies"
    return None


def export_check(t: Any) -> tuple[str, str] | None:
    """Why ``Tensor.__dlpack__`` cannot hand ``t`` over as it is: no single dense buffer, a
    dtype DLPack has no code for, or a lazy conjugate or negative bit (torch refuses the one
    and exports the other with its sign lost)."""
    why = _layout_obstacle(t)
    if why:
        return UNSUPPORTED, why
    if t.dtype not in _tables()[0]:
        return UNSUPPORTED, f"torch dtype {t.dtype} has no DLPack type code"
    return _lazy_bits(t)


def _from_dlpack(producer: Any) -> Any:
    import torch

    return torch.from_dlpack(producer)


def _gpu_present() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available())
    except Exception:
        return False


class _Writable:
    """A producer's CUDA Array Interface without the read-only flag, which torch refuses
    (the edge records the hazard); it keeps the producer alive."""

    __slots__ = ("__cuda_array_interface__", "owner")

    def __init__(self, interface: dict, owner: Any) -> None:
        self.__cuda_array_interface__ = interface
        self.owner = owner


def _from_cai(obj: Any, stream: int | None = None) -> Any:
    """A tensor over a CAI producer's memory, on the device that holds it, named explicitly:
    ``torch.as_tensor`` without ``device=`` takes torch's default device
    (``torch.set_default_device`` puts it into every ``as_tensor`` call,
    ``torch/utils/_device.py``) and ``.to()``s the data there (``tensor_new.cpp``,
    ``internal_new_from_data``): a copy to the host under ``"cpu"``, the data lost under
    ``"meta"``, another GPU's label or copy under ``"cuda:N"``. Then the producer's ``stream``
    (CAI v3), which torch itself does not wait on: the consumer's ``stream`` (a spec number;
    ``None``: torch's current stream on that device; ``-1``: no synchronisation) waits for
    it, both streams taken on the producer's device."""
    import torch

    from ..devices import pointer_device
    from ..protocols import cai

    interface = cai.interface_of(obj)
    view = cai.validate(interface, who=type(obj).__name__)
    if view.readonly:
        obj = _Writable(dict(interface, data=(view.ptr, False)), obj)
    t = torch.as_tensor(obj, device=torch.device("cuda", pointer_device(view.ptr)))
    produced = cai.stream_of(interface)
    if produced is not None and stream != -1 and not cai.sync_disabled():
        consumer = (torch.cuda.current_stream(t.device) if stream is None
                    else _stream(torch, stream, t.device))
        consumer.wait_stream(_stream(torch, produced, t.device))
    return t


def _stream(torch: Any, n: int, device: Any = None) -> Any:
    """The torch stream on ``device`` (``None``: the current one) for a stream the protocols
    number ``n``: 1 (legacy default) is torch's default stream, as ``Tensor.__dlpack__`` maps
    it; 2 (the per-thread default, whose handle ``cudaStreamPerThread`` is 2) and any
    ``cudaStream_t`` an external stream (torch reads an even id as a raw handle, an odd one
    as a stream of its own)."""
    if n == dlpack.STREAM_LEGACY:
        return torch.cuda.default_stream(device)
    return torch.cuda.ExternalStream(n, device=device)


def _export_stream(t: Any, stream: int) -> int:
    """What to pass to ``Tensor.__dlpack__`` for a consumer on ``stream``: ``stream`` itself
    (the export runs under the tensor's device, :class:`_OnItsDevice`, so torch orders it on
    that device's streams), or ``-1`` for the per-thread default stream (2), which torch
    refuses (``BufferError``, torch 2.13): here the consumer's stream, on the tensor's device,
    then waits for torch's current stream there."""
    if stream != dlpack.STREAM_PER_THREAD or t.device.type != "cuda":
        return stream
    import torch

    producer = torch.cuda.current_stream(t.device)
    consumer = _stream(torch, stream, t.device)
    if consumer != producer:
        consumer.wait_stream(producer)
    return -1


class _Streamed:
    """A CUDA tensor's CUDA Array Interface as version 3, naming the stream its data is
    ordered on (torch's current stream), which torch's own (version 2) leaves out: a CAI
    consumer then synchronises on it, as the spec asks. It keeps the tensor alive."""

    __slots__ = ("__cuda_array_interface__", "owner")

    def __init__(self, t: Any) -> None:
        import torch

        handle = torch.cuda.current_stream(t.device).cuda_stream
        self.__cuda_array_interface__ = dict(
            t.__cuda_array_interface__, version=3,
            stream=handle or dlpack.STREAM_LEGACY)  # 0: torch's default (legacy) stream
        self.owner = t


def _export_cai(t: Any) -> Any:
    return _Streamed(_detached(t))


def _device_copy(t: Any, ts: str | None) -> Any:
    """A fresh compact copy of a CUDA tensor on its device (cast to ``ts`` if given);
    ``copy_`` resolves a lazy conjugate or negative bit (the caching allocator's blocks are
    512-byte aligned)."""
    import torch

    dtype = t.dtype if ts is None else _tables()[1][ts]
    return torch.empty(tuple(t.shape), dtype=dtype, device=t.device).copy_(t.detach())


def _to_device(arr: Any, index: int) -> Any:
    return _from_numpy_view(arr).to(f"cuda:{index}")


def _readonly_hazard(x: Any) -> str | None:
    if readonly_source(x):
        return ("torch tensors cannot be read-only: writes through the result change memory "
                "the source treats as read-only/immutable")
    return None


# ---- numpy <-> torch -----------------------------------------------------------------

def from_numpy_check(a: Any) -> tuple[str, str] | None:
    """Why ``torch.from_numpy`` cannot take NumPy array ``a`` as it is."""
    if a.dtype.type.__module__ == "ml_dtypes":  # bfloat16/float8: strides checked below
        ts = dlpack.typestr_of(a.dtype)
        if ts not in _tables()[1]:
            return UNSUPPORTED, f"torch has no dtype {a.dtype}"
    elif a.dtype.char not in "?bBhHiIlLqQefdFD" or not a.dtype.isnative:
        return UNSUPPORTED, f"torch has no dtype {a.dtype} (byte order {a.dtype.byteorder!r})"
    if _complex_misaligned(a):
        return NEEDS_COPY, misaligned_complex(a.ctypes.data, a.strides, a.itemsize, "torch")
    flags = a.flags
    if flags.c_contiguous:  # misaligned too: torch takes it and its CPU kernels load unaligned
        return None
    for n, s in zip(a.shape, a.strides):
        if s < 0 and n > 1:
            return NEEDS_COPY, (f"negative strides {a.strides}: torch has none "
                                "(torch.from_dlpack aborts the interpreter on them)")
    if not flags.aligned:
        return NEEDS_COPY, "the array is not aligned to its itemsize"
    return None


def _complex_misaligned(a: Any) -> bool:
    """Whether ``a`` is complex with elements off multiples of its itemsize (see _COMPLEX)."""
    return a.dtype.char in "FD" and bool(a.size) and not itemsize_aligned(
        a.ctypes.data, a.shape, a.strides, a.itemsize)


def _from_numpy_converter() -> Any:
    """``torch.from_numpy`` of a writable array; :func:`_from_read_only` of a read-only
    C-contiguous one of a plain dtype (the common read-only source: pandas, JAX, Arrow);
    :func:`_from_numpy_view` of any other it refuses as it is or warns on. Not declared as
    the edge's native call, which the fast form would hand read-only arrays to."""
    torch = module("torch")
    from_numpy, plain = torch.from_numpy, _plain_numpy_dtypes()

    def convert(a: Any) -> Any:
        if a.flags.writeable:
            try:
                return from_numpy(a)
            except (TypeError, ValueError):  # bfloat16/float8, or a negative stride it ignores
                pass
        elif a.flags.c_contiguous and a.dtype in plain:
            return _from_read_only(torch, a)
        return _from_numpy_view(a)

    return convert


def _from_numpy_view(a: Any) -> Any:
    """A tensor over an array ``torch.from_numpy`` refuses or warns on as it is: bfloat16/
    float8 through their bits, ``numpy.ulonglong`` as uint64; negative strides, or strides off
    the itemsize, on dimensions of extent <= 1 (never used: NumPy calls such an array
    contiguous) set to 0; a read-only array by :func:`_from_read_only` (``torch.from_numpy``
    warns, and raises under ``-W error``, that a tensor cannot be read-only: the edge records
    that hazard)."""
    import torch

    if any(s < 0 or s % a.itemsize for s in a.strides):
        import numpy as np

        strides = [0 if n <= 1 or not a.size else s for n, s in zip(a.shape, a.strides)]
        a = np.lib.stride_tricks.as_strided(a, a.shape, strides, writeable=a.flags.writeable)
    ml = a.dtype.type.__module__ == "ml_dtypes"
    if ml:
        bits = a.view(_BITS[a.itemsize])
    elif a.dtype.char == "Q":  # numpy.ulonglong: torch refuses its type, NumPy calls it equal
        bits = a.view(a.dtype.str)  # to uint64 ('L'), which its type string names
    else:
        bits = a
    t = torch.from_numpy(bits) if bits.flags.writeable else _from_read_only(torch, bits)
    return t.view(_tables()[1][dlpack.typestr_of(a.dtype)]) if ml else t


def _from_read_only(torch: Any, a: Any) -> Any:
    """A tensor over the read-only array ``a`` without ``torch.from_numpy``'s warning: the
    array's DLPack 1.x capsule, flagged read-only (NumPy >= 2.1 exports one), which
    ``torch.from_dlpack`` takes silently (and faster); where NumPy or torch cannot, a
    writable view of the array."""
    try:
        return torch.from_dlpack(a.__dlpack__(max_version=(1, 0)))
    except (TypeError, BufferError, RuntimeError):  # an older NumPy or torch
        from ..host import writable_view

        return torch.from_numpy(writable_view(a))


def _plain_numpy_dtypes() -> frozenset[Any]:
    """The NumPy dtypes ``torch.from_numpy`` takes as they are (complex ones need their
    alignment checked, so the check decides them)."""
    np = module("numpy")
    return frozenset(np.dtype(c) for c in "?bBhHiIlLqQefd")


def _refuse(t: Any) -> str | None:
    """Why ``t`` goes to no other framework: a meta tensor has no data (the adapter's
    ``refuse``, judged by the route before any plan, and by :func:`tensor_check` in the
    plans kept for tensors)."""
    return no_data("torch") if t.device.type == DATALESS else None


def tensor_check(t: Any) -> tuple[str, str] | None:
    """Why ``Tensor.numpy()`` cannot view ``t`` as it is."""
    why = _layout_obstacle(t)
    if why:
        return UNSUPPORTED, why
    if t.device.type != "cpu":
        why = _refuse(t)
        return (UNSUPPORTED, why) if why else (
            NEEDS_COPY, f"the tensor lives on {t.device}; NumPy reads host memory")
    lazy = _lazy_bits(t)
    if lazy:
        return lazy
    why = _dtype_obstacle(t)
    return (UNSUPPORTED, why) if why else None


def _to_numpy_converter() -> Any:
    """``Tensor.numpy()`` of the tensor (detached if it requires grad); bfloat16/float8 as
    an ml_dtypes view of their bits; where torch refuses (GPU, lazy bits), ``NeedsCopy``."""
    numpy = module("torch").Tensor.numpy
    ml = _ml_dtypes()

    def convert(t: Any) -> Any:
        if t.requires_grad:
            t = t.detach()
        if t.dtype in ml:
            return _ml_numpy(t)
        try:
            return numpy(t)
        except (RuntimeError, TypeError) as e:
            raise NeedsCopy(NEEDS_COPY, f"Tensor.numpy() refuses it ({e})") from None

    return convert


def _ml_dtypes() -> frozenset[Any]:
    """The torch dtypes NumPy has only through ml_dtypes (bfloat16, float8)."""
    return frozenset(dt for dt, ts in _tables()[0].items() if ts.startswith(("bfloat", "float8")))


def _numpy_view_dtypes() -> frozenset[Any]:
    """The torch dtypes ``Tensor.numpy()`` itself may view (the others, and a tensor of them
    that requires grad, go to the conversion)."""
    return frozenset(_tables()[0]) - _ml_dtypes()


def _native_numpy() -> tuple[Any, tuple[type[BaseException], ...]]:
    """``Tensor.numpy`` and what it raises where it refuses (lazy bits, a GPU tensor)."""
    return module("torch").Tensor.numpy, (RuntimeError, TypeError)


def _ml_numpy(t: Any) -> Any:
    """A CPU bfloat16/float8 tensor as a NumPy (ml_dtypes) view of its bits."""
    verdict = tensor_check(t)
    if verdict is not None:
        raise NeedsCopy(*verdict)
    import torch

    bits = torch.int16 if t.element_size() == 2 else torch.uint8
    return t.view(bits).numpy().view(dlpack.numpy_dtype(_tables()[0][t.dtype]))


def _to_numpy(t: Any) -> Any:
    """Any tensor as host NumPy, copying if it must (the copy route's first half). On the
    CPU, NumPy resolves a lazy conjugate/negative bit: torch's own kernels crash on complex
    buffers off multiples of the itemsize, which NumPy reads safely."""
    why = _layout_obstacle(t) or _dtype_obstacle(t) or _refuse(t)
    if why:
        raise UnsupportedConversionError(why)
    t = t.detach()
    if t.device.type != "cpu":
        return _to_numpy_converter()(t.resolve_conj().resolve_neg().cpu())
    if not (t.is_conj() or t.is_neg()):
        return _to_numpy_converter()(t)
    np = module("numpy")
    arr = _raw_numpy(t)
    if t.is_conj():
        arr = np.conjugate(arr)
    if t.is_neg():
        arr = np.negative(arr)
    return arr


class _Raw:
    """Holds a tensor and its memory's ``__array_interface__`` (no torch call reads it)."""

    def __init__(self, t: Any, interface: dict) -> None:
        self.tensor, self.__array_interface__ = t, interface


def _raw_numpy(t: Any) -> Any:
    """A NumPy view of a CPU tensor's stored memory, its lazy bits ignored."""
    np = module("numpy")
    v = view(t)
    dt = dlpack.numpy_dtype(v.dtype)
    if not v.size:
        return np.empty(v.shape, dt)
    base = dt if v.dtype[0] in "<|" else dlpack.carrier_dtype(v.itemsize)
    raw = np.asarray(_Raw(t, {"version": 3, "shape": v.shape, "typestr": base.str,
                              "strides": v.strides, "data": (v.ptr, False)}))
    return raw if base == dt else raw.view(dt)


def grad_hazard(t: Any) -> str | None:
    if getattr(t, "requires_grad", False):
        return "the tensor requires grad: the result shares its memory but not its autograd graph"
    return None


def _edges() -> list[Edge]:
    return [
        Edge("numpy", "torch", "torch.from_numpy", _from_numpy_converter,
             check=from_numpy_check, hazard=_readonly_hazard,
             accepts=Accepts(lambda: (module("numpy").ndarray,), _plain_numpy_dtypes,
                             flags=C_CONTIGUOUS)),
        Edge("torch", "numpy", "Tensor.numpy()", _to_numpy_converter, check=tensor_check,
             hazard=grad_hazard,
             accepts=Accepts(lambda: (module("torch").Tensor,), _numpy_view_dtypes,
                             unset=("requires_grad",), native=_native_numpy)),
    ]


ADAPTER = ArrayAdapter(
    name="torch",
    aliases=("pytorch", "pt"),
    modules=("torch",),
    package="torch",
    devices=("cpu", "cuda"),
    rules=ConsumerRules(negative_strides=False, accepts=_accepts, name="torch",
                        itemsize_aligned=_COMPLEX),
    gpu_rules=ConsumerRules(negative_strides=False, accepts=_accepts, name="torch on CUDA",
                            itemsize_aligned=_COMPLEX,
                            negative_strides_why="aborts the interpreter on them (c10::Error "
                            "from torch.from_dlpack, seen on an H100)"),
    is_value=_is_value,
    view=view,
    device=_device,
    on_host=operator.attrgetter("is_cpu"),
    to_numpy=_to_numpy,
    export_dlpack=_export,
    export_stream=_export_stream,
    export_check=export_check,
    from_dlpack=_from_dlpack,
    dlpack_call="torch.from_dlpack",
    dlpack_hazard=_readonly_hazard,
    export_cai=_export_cai,
    from_cai=_from_cai,
    device_copy=_device_copy,
    to_device=_to_device,
    gpu_present=_gpu_present,
    edges=_edges,
    assemble=(("jagged", "torch.nested.nested_tensor_from_jagged(values, offsets)",
               lambda p: module("torch").nested.nested_tensor_from_jagged(
                   *(dict(p.arrays)[k] for k in ("values", "offsets")))),),
    refuse=_refuse,
)


# ---- sparse tensors (torch.Tensor of a sparse layout: the composite kind within torch) ----
@cache
def _sparse_layouts() -> dict[Any, str]:
    import torch

    return {torch.sparse_coo: "coo", torch.sparse_csr: "csr", torch.sparse_csc: "csc",
            torch.sparse_bsr: "bsr", torch.sparse_bsc: "bsc"}


def _is_sparse(t: Any) -> bool:
    return t.layout is not module("torch").strided and t.layout in _sparse_layouts()


def _sparse_parts(t: Any) -> Parts:
    layout = _sparse_layouts()[t.layout]
    if t.dense_dim():
        return Parts(f"{layout} with {t.dense_dim()} dense dimensions", (),
                     (("shape", tuple(t.shape)),))
    if layout == "coo":
        return sparse.coo(t._values(), t._indices(), t.shape)
    if layout == "csc":
        return sparse.compressed(layout, t.values(), t.row_indices(), t.ccol_indices(), t.shape)
    if layout in ("csr", "bsr"):
        return sparse.compressed(layout, t.values(), t.col_indices(), t.crow_indices(), t.shape)
    return Parts(layout, (), (("shape", tuple(t.shape)),))  # bsc: format= converts


def _sparse_rebuild(reg: RegistryLike, parts: Parts, target: str) -> Any:
    """torch's constructor over the parts (:func:`_sparse_rebuilder`)."""
    return _sparse_rebuilder(reg, parts, target)(tuple(a for _, a in parts.arrays))


def _sparse_rebuilder(reg: RegistryLike, parts: Parts,
                      target: str) -> Callable[[tuple[Any, ...]], Any]:
    """torch's constructor of ``parts``' layout and shape, its own invariant checks off:
    interop checked the parts (:func:`~interop.adapters.sparse_parts.prepare`), as a function
    of the converted arrays. torch's notice that compressed layouts are in beta is about the
    constructor interop calls for the user, not about anything the user did: it is not passed
    on (issue 36: no framework warning reaches a user through interop; see
    :func:`_without_notice`)."""
    import torch

    roles = tuple(r for r, _ in parts.arrays)
    size = sparse.shape(parts)
    if parts.layout == "coo":
        c, d, coalesced = roles.index("coords"), roles.index("data"), sparse.canonical(parts)
        coo = torch.sparse_coo_tensor
        return lambda a: coo(a[c], a[d], size, check_invariants=False, is_coalesced=coalesced)
    build = {"csr": torch.sparse_csr_tensor, "csc": torch.sparse_csc_tensor,
             "bsr": torch.sparse_bsr_tensor}[parts.layout]
    p, i, d = roles.index("indptr"), roles.index("indices"), roles.index("data")
    return lambda a: _without_notice(build, a[p], a[i], a[d], size, check_invariants=False)


_BETA_NOTICE = threading.Lock()
_beta_notice_taken = False


def _without_notice(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` (a compressed-layout constructor, or torch's own layout
    change ``to_sparse_csr()`` ...) without torch's beta notice. torch gives that notice once
    per process, or on every call once ``torch.set_warn_always(True)`` is on: those calls
    run under ``warnings.catch_warnings`` (process-wide), under a lock, so that no two
    threads interleave their filter changes; once the notice is taken, and warn-always is
    off, no call touches the filters."""
    global _beta_notice_taken
    torch = module("torch")
    if _beta_notice_taken and not torch.is_warn_always_enabled():
        return call(*args, **kwargs)
    import warnings

    with _BETA_NOTICE, warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"Sparse (CSR|CSC|BSR|BSC) tensor support is in beta",
                                UserWarning)
        out = call(*args, **kwargs)
        _beta_notice_taken = True
        return out


def _sparse_reformat(t: Any, layout: str) -> Any:
    """``t`` in ``layout`` by torch's own call; a COO tensor is first rebuilt over compact
    copies of its indices and values (none where they are compact already), its
    ``is_coalesced`` flag off: torch's ``to_sparse_csr()`` of a tensor flagged coalesced reads
    its indices as compact and trusts the flag, so a transposed index view (what
    ``torch.from_numpy`` of a column-major array gives) came out another matrix, or written
    past its buffer (a heap corruption); the flag is the user's word, which interop checks
    and torch trusts."""
    if layout == "dense":
        return t.to_dense()
    if layout in ("bsr", "bsc"):
        raise UnsupportedConversionError(
            f"format={layout!r}: torch needs a block size: call t.to_sparse_{layout}(blocksize)")
    if t.layout is module("torch").sparse_coo:
        t = module("torch").sparse_coo_tensor(t._indices().contiguous(),
                                              t._values().contiguous(), t.shape,
                                              check_invariants=False, is_coalesced=False)
    return _without_notice(getattr(t, f"to_sparse_{layout}"))


_COMPRESSED_NEEDS = sparse.Needs(canonical=True, batched=True, strided=False)
"""torch's constructors, their invariant checks off, keep a strided buffer as it is, which its
kernels read as compact: every buffer is handed over compact."""
SPARSE = sparse.kind(
    name="torch.sparse",
    modules=("torch",),
    package="torch",
    devices=("cpu", "cuda"),
    is_value=_is_sparse,
    parts=_sparse_parts,
    rebuild=_sparse_rebuild,
    rebuilder=_sparse_rebuilder,
    of="torch",
    layouts=("csr", "csc", "bsr", "coo"),
    needs={"coo": sparse.Needs(index_dtypes=("int64",), ndims=None, strided=False),
           "csr": _COMPRESSED_NEEDS, "csc": _COMPRESSED_NEEDS,
           "bsr": sparse.Needs(canonical=True, strided=False)},
    reformat=_sparse_reformat,
    within=True,
)



def _jagged_parts(t: Any) -> Parts:
    """A jagged nested tensor taken apart: its ``values`` and ``offsets`` (no copy), checked;
    one with holes (``lengths``: built with ``lengths=`` or by ``torch.nested.narrow``) has
    its rows gathered into one run (a copy). Its ragged dimension must be the first of each
    component (``_ragged_idx`` 1): the rows of values and offsets run along it."""
    from .ragged import check_offsets

    what = f"a torch jagged nested tensor of {t.size(0)} rows"
    ragged = getattr(t, "_ragged_idx", 1)
    if ragged != 1:
        raise UnsupportedConversionError(
            f"{what} is ragged in dimension {ragged}, not 1: values and offsets (an Arrow "
            "list, interop.Jagged) hold rows ragged in their first dimension; move it there "
            f"first (t.transpose(1, {ragged}), then .contiguous() if you need the values "
            "compact) or unbind() the rows")
    values, offsets, lengths = t.values(), t.offsets(), t.lengths()
    if lengths is None:
        check_offsets(offsets, values.shape[0], what)
        return Parts("jagged", (("values", values), ("offsets", offsets)))
    import torch

    starts = offsets[:-1]
    if lengths.shape != starts.shape or bool((lengths < 0).any()) or (
            len(starts) and (bool((starts < 0).any())
                             or bool((starts + lengths > values.shape[0]).any()))):
        raise MalformedError(f"{what}: its starts {starts.tolist()} and lengths "
                             f"{lengths.tolist()} lie outside its {values.shape[0]} values")
    dense = torch.zeros(len(lengths) + 1, dtype=offsets.dtype, device=offsets.device)
    torch.cumsum(lengths, 0, out=dense[1:])
    index = torch.arange(int(dense[-1]), device=offsets.device) - torch.repeat_interleave(
        dense[:-1] - starts, lengths)
    return Parts("jagged", (("values", values[index]), ("offsets", dense)),
                 copied=(f"{what} has holes (lengths {lengths.tolist()[:8]}"
                         f"{'...' if len(lengths) > 8 else ''}): its rows are gathered into "
                         "one run of values (a copy of the values and offsets)",))


def _jagged_describe(reg: RegistryLike, p: Parts, tgt: str) -> str:
    from .ragged import describe_jagged

    return describe_jagged(reg, p, tgt, "torch jagged nested tensor")


def _jagged_rebuild(reg: RegistryLike, p: Parts, tgt: str) -> Any:
    from .ragged import rebuild_jagged

    return rebuild_jagged(reg, p, tgt)


JAGGED = CompositeAdapter(
    name="torch-jagged",
    modules=("torch",),
    package="torch",
    devices=("cpu", "cuda"),
    is_value=instance_test("torch.nested._internal.nested_tensor", "NestedTensor"),
    parts=_jagged_parts,
    rebuild=_jagged_rebuild,
    describe=_jagged_describe,
    home="torch",
)
"""torch's jagged nested tensors (``torch.nested.nested_tensor_from_jagged``): values plus
offsets, detected before torch's strided tensors."""


ADAPTERS = (JAGGED, ADAPTER, SPARSE)
