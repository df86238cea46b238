"""NVIDIA DALI: a pipeline's outputs as sources.

``pipe.run()`` returns a tuple of ``TensorListCPU`` / ``TensorListGPU`` (one batch each);
their samples (``tl[i]``) and dense views (``tl.as_tensor()``) are ``TensorCPU`` /
``TensorGPU``. Two adapters:

- ``dali``: a ``TensorCPU`` (``__array_interface__``, buffer protocol, DLPack) or ``TensorGPU``
  (DLPack with ``stream=``; its CUDA Array Interface is version 2, without the stream DALI
  worked on, so it is not used). DALI's ``__dlpack_device__`` gives an enum that is not an
  ``int``; the generic DLPack reading takes it, as the frameworks do.
- ``dali-batch``: a ``TensorList``. Dense (``is_dense_tensor()``: equal shapes packed in one
  buffer) -> one batch of the target over ``as_tensor()``; otherwise (ragged, or samples
  in separate buffers) -> a list of per-sample results, each zero-copy, or with
  ``ragged="pad"`` one batch padded with ``fill_value`` (a copy; ``copy=False`` refuses it).

Buffer reuse: DALI's default executor (``exec_dynamic``, on unless ``exec_dynamic=False``,
``exec_async=False``, ``exec_pipelined=False`` or a dict ``prefetch_queue_depth``) gives every
batch its own memory, which a zero-copy result keeps alive (it holds DALI's tensor). The
legacy executor rotates ``prefetch_queue_depth`` output buffers: the next ``run()`` (or
``outputs()`` / ``release_outputs()``) hands the batch's buffer back, and DALI writes a later
batch into it while the result still points there. A result cannot tell which executor made it
and DALI has no call that holds a buffer, so every zero-copy plan names the hazard.
"""

from __future__ import annotations

import sys
from typing import Any

from ..errors import InteropError, ZeroCopyError
from ..protocols import dlpack
from ..view import BufferView, c_strides
from .base import (
    Accepts,
    ArrayAdapter,
    CompositeAdapter,
    Edge,
    Parts,
    RegistryLike,
    fixed,
    instance_test,
    module,
)

_BACKEND = "nvidia.dali.backend_impl"

REUSE = ("DALI's legacy executor (exec_dynamic=False, exec_async=False, exec_pipelined=False "
         "or separate cpu/gpu prefetch queues) writes a later batch into this output buffer "
         "from the pipeline's next run() (or outputs()/release_outputs()) on, and the result "
         "then changes under you: pass copy=True there. The default executor (exec_dynamic) "
         "gives each batch its own memory, kept alive by the result")
"""The hazard of every zero-copy result of a DALI output (see the module's docstring)."""

RAGGED = ("list", "pad")
"""The values of the ``ragged=`` option: a list of per-sample results, or one padded batch."""
OPTIONS = ("ragged", "fill_value")
"""The options a batch takes (given to a structure of batches, they reach each batch)."""


def _types(*names: str) -> tuple[type, ...]:
    m = sys.modules.get(_BACKEND)
    return tuple(getattr(m, n) for n in names) if m is not None else ()


_is_tensor = instance_test(_BACKEND, "TensorCPU", "TensorGPU")
_is_node = instance_test("nvidia.dali.data_node", "DataNode")
_is_pipeline = instance_test("nvidia.dali.pipeline", "Pipeline")


def _is_symbolic(x: Any) -> bool:
    """A pipeline or a node of its graph: DALI objects that hold no data yet."""
    return _is_node(x) or _is_pipeline(x)


def _refuse(x: Any) -> str | None:
    if not _is_symbolic(x):
        return None
    what = type(x).__name__
    if what == "DataNode":
        return ("a DALI DataNode is a node of the pipeline's graph, not data: return it from "
                "the pipeline function, then convert the outputs of pipe.run()")
    return (f"a DALI {what} is not data: convert its outputs, "
            "interop.to_framework(pipe.run(), target) (or each TensorList of the tuple)")


def _on_gpu(x: Any) -> bool:
    return type(x).__name__.endswith("GPU")


def _device(x: Any) -> tuple[str, int]:
    return ("cuda", x.device_id()) if _on_gpu(x) else ("cpu", 0)


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of a ``TensorCPU`` (array interface) or ``TensorGPU`` (CUDA
    Array Interface). DALI's type strings are a byte order and a format character ('=f'),
    which NumPy reads: the dtype is taken through NumPy."""
    ai = x.__cuda_array_interface__ if _on_gpu(x) else x.__array_interface__
    dtype = module("numpy").dtype(ai["typestr"])
    shape = tuple(ai["shape"])
    strides = tuple(ai.get("strides") or c_strides(shape, dtype.itemsize))
    return BufferView(ai["data"][0], shape, strides, dtype.itemsize, dlpack.typestr_of(dtype),
                      _device(x), bool(ai["data"][1]), x)


def _to_numpy(x: Any) -> Any:
    """A host NumPy array: a view of a ``TensorCPU`` (its buffer protocol; the array keeps the
    tensor alive), DALI's own device-to-host copy of a ``TensorGPU``."""
    np = module("numpy")
    return np.asarray(x.as_cpu() if _on_gpu(x) else x)


def _reuse(x: Any) -> str:
    return REUSE


def _edges() -> list[Edge]:
    return [Edge("dali", "numpy", "numpy.asarray (buffer protocol)", fixed(_to_numpy),
                 hazard=_reuse, accepts=Accepts(lambda: _types("TensorCPU")))]


ADAPTER = ArrayAdapter(
    name="dali",
    modules=("nvidia",),
    package="nvidia.dali",
    install=('pip install "interop-mempool[dali]" (CUDA 12; '
             '"interop-mempool[dali-cu13]" for CUDA 13)'),
    devices=("cpu", "cuda"),
    target=False,
    is_value=lambda x: _is_tensor(x) or _is_symbolic(x),
    refuse=_refuse,
    view=view,
    device=_device,
    to_numpy=_to_numpy,
    export_dlpack=lambda x: x,
    export_hazard=_reuse,
    edges=_edges,
)


# ---- TensorList: a batch ------------------------------------------------------------------

_is_list = instance_test(_BACKEND, "TensorListCPU", "TensorListGPU")


def _options(options: dict[str, Any]) -> tuple[str, Any]:
    """``(ragged, fill_value)`` from the options of a batch; anything else is refused."""
    ragged = options.pop("ragged", "list")
    fill = options.pop("fill_value", 0)
    if options:
        raise InteropError(f"options {sorted(options)} do not apply to a DALI TensorList; it "
                           "takes ragged='list' (default) or ragged='pad' with fill_value=")
    if ragged not in RAGGED:
        raise InteropError(f"ragged={ragged!r}: use 'list' (a list of per-sample results, "
                           "each zero-copy) or 'pad' (one batch padded with fill_value, a copy)")
    if isinstance(fill, bool) or not isinstance(fill, (int, float)):
        raise InteropError(f"fill_value={fill!r}: the padding of a DALI batch is a number")
    return ragged, fill


def _dense_why(tl: Any) -> str:
    return (f"dense: {len(tl)} samples of shape {tuple(tl[0].shape())} in one buffer, viewed "
            "as one batch by TensorList.as_tensor()")


def _ragged_why(tl: Any) -> str:
    shapes = [tuple(s) for s in tl.shape()]
    kind = ("samples of different shapes" if len(set(shapes)) > 1
            else "samples of one shape in separate buffers")
    shown = ", ".join(map(str, shapes[:4])) + (", ..." if len(shapes) > 4 else "")
    return f"not dense: {len(tl)} {kind} ({shown})"


def _padded(reg: RegistryLike, tl: Any, fill: Any) -> Any:
    """One batch of the samples padded to the largest extent of each dimension: a copy on the
    list's device (NumPy on the host, CuPy on a GPU), each sample read zero-copy. The samples
    are read without a stream (DALI's export then waits on the host), as the padding runs on
    CuPy's current stream, not on one the caller names."""
    hub = "cupy" if _on_gpu(tl) else "numpy"
    samples = [reg.convert(tl[i], hub) for i in range(len(tl))]
    shape = tuple(max(s.shape[d] for s in samples) for d in range(samples[0].ndim))
    out = module(hub).full((len(samples), *shape), fill, dtype=samples[0].dtype)
    for i, s in enumerate(samples):
        out[(i, *(slice(0, n) for n in s.shape))] = s
    return out


def _pad_refused(tl: Any) -> str:
    return (f"{_ragged_why(tl)}: ragged='pad' copies the samples into one padded batch; for "
            "zero-copy results drop ragged='pad' (a list of per-sample results)")


def _convert_batch(reg: RegistryLike, tl: Any, target: str, *, copy: bool | None = None,
                   device: Any = None, stream: Any = None, **options: Any) -> Any:
    ragged, fill = _options(options)
    if tl.is_dense_tensor():
        return reg.convert(tl.as_tensor(), target, copy=copy, device=device, stream=stream)
    if ragged == "list":
        return [reg.convert(tl[i], target, copy=copy, device=device, stream=stream)
                for i in range(len(tl))]
    if copy is False:
        raise ZeroCopyError(f"copy=False but {_pad_refused(tl)}")
    return reg.convert(_padded(reg, tl, fill), target, device=device, stream=stream)


def _explain_batch(reg: RegistryLike, tl: Any, target: str, *, copy: bool | None = None,
                   **options: Any) -> Any:
    from ..plan import Plan, Step, of_parts

    ragged, fill = _options(options)
    label = type(tl).__name__
    if tl.is_dense_tensor():
        inner = reg.explain(tl.as_tensor(), target, None, copy)
        return Plan("dali-batch", inner.target,
                    (Step(label, "dali", "TensorList.as_tensor() (a view)"), *inner.steps),
                    inner.zero_copy, (_dense_why(tl), *inner.reasons), inner.hazards,
                    inner.supported, inner.error)
    tgt = reg.target(target)
    if ragged == "pad":
        if copy is False:
            return Plan("dali-batch", tgt, (), False, (_pad_refused(tl),), supported=False,
                        error="zero-copy")
        hub = "cupy" if _on_gpu(tl) else "numpy"
        rest = [Step(e.source, e.target, e.via) for e in reg.routes.route(hub, tgt,
                                                                          _device(tl)[0]) or ()]
        return Plan("dali-batch", tgt, (Step(label, hub, f"pad to one batch with fill_value="
                                             f"{fill!r}", copies=True), *rest), False,
                    (f"{_ragged_why(tl)}: ragged='pad' copies them into one padded batch",))
    plans = [(i, reg.explain(tl[i], target, None, copy)) for i in range(len(tl))]
    return of_parts("dali-batch", tgt, "sample", plans,
                    (Step(label, "dali", f"TensorList[i] for each of {len(tl)} samples"),),
                    (f"{_ragged_why(tl)}: a list of {len(tl)} per-sample results, each its own "
                     "buffer (ragged='pad' gives one padded batch, a copy)",))


def _parts(tl: Any) -> Parts:
    return Parts("batch", tuple((i, tl[i]) for i in range(len(tl))))


BATCH = CompositeAdapter(
    name="dali-batch",
    modules=("nvidia",),
    package="nvidia.dali",
    devices=("cpu", "cuda"),
    is_value=_is_list,
    convert=_convert_batch,
    explain=_explain_batch,
    parts=_parts,
    options=OPTIONS,
    stream=True,
)

ADAPTERS = [ADAPTER, BATCH]
"""The DALI tensor (an array) and the DALI batch (a ``TensorList``), in detection order."""
