"""CuPy: the GPU hub. It consumes and produces both DLPack and the CUDA Array Interface."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..protocols import cai, dlpack
from ..view import BufferView
from . import sparse_parts as sparse
from .base import (
    ArrayAdapter,
    ConsumerRules,
    Parts,
    RegistryLike,
    instance_test,
    module,
    readonly_source,
)

_DTYPES = frozenset((*dlpack.NAMED.values(), "bfloat16"))
"""The dtype strings CuPy 14 holds (bfloat16 through ml_dtypes, as its DLPack import)."""


_is_value = instance_test("cupy", "ndarray")


def _device(x: Any) -> tuple[str, int]:
    return "cuda", x.device.id


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of a CuPy array, from its CUDA Array Interface; the dtype of an
    ml_dtypes array (bfloat16) by its name, as CuPy's DLPack export names it (``kDLBfloat``),
    not by the interface's ``<V2``."""
    v = cai.validate(x.__cuda_array_interface__, who="cupy.ndarray", device=x.device.id)
    dtype = x.dtype
    if dtype.type.__module__ == "ml_dtypes":
        return replace(v, dtype=dlpack.typestr_of(dtype))
    return v


def accepts(ts: str) -> str | None:
    """Why CuPy cannot hold dtype string ``ts`` (``None``: it can)."""
    return None if ts in _DTYPES else f"CuPy has no dtype {ts}"


def _from_dlpack(producer: Any) -> Any:
    import cupy

    return cupy.from_dlpack(producer)


def from_cai(obj: Any, stream: int | None = None) -> Any:
    """Wrap any CAI producer as a CuPy array (CuPy waits on the producer's stream)."""
    import cupy

    cai.validate(cai.interface_of(obj), who=type(obj).__name__)
    return cupy.asarray(obj)


def _readonly_hazard(x: Any) -> str | None:
    if readonly_source(x):
        return ("CuPy arrays cannot be read-only: writes through the result change memory the "
                "source treats as read-only/immutable")
    return None


def device_copy(x: Any, ts: str | None) -> Any:
    """A fresh compact row-major copy of ``x`` on its device (cast to ``ts`` if given)."""
    import cupy

    return cupy.array(x, dtype=None if ts is None else dlpack.numpy_dtype(ts), copy=True,
                      order="C")


def to_device(arr: Any, index: int) -> Any:
    """A host NumPy array copied to CUDA device ``index``."""
    import cupy

    with cupy.cuda.Device(index):
        return cupy.asarray(arr)


ADAPTER = ArrayAdapter(
    name="cupy",
    aliases=("cp",),
    modules=("cupy",),
    package="cupy",
    install='pip install "interop-mempool[gpu-cu12]" or "interop-mempool[gpu-cu13]"',
    devices=("cuda",),
    hub=True,
    rules=ConsumerRules(name="CuPy"),
    gpu_rules=ConsumerRules(name="CuPy", accepts=accepts),
    is_value=_is_value,
    view=view,
    device=_device,
    to_numpy=lambda x: x.get(),
    export_dlpack=lambda x: x,
    from_dlpack=_from_dlpack,
    dlpack_call="cupy.from_dlpack",
    dlpack_hazard=_readonly_hazard,
    export_cai=lambda x: x,
    from_cai=from_cai,
    device_copy=device_copy,
    to_device=to_device,
)


# ---- cupyx.scipy.sparse (csr, csc, coo; arrays and matrices) ------------------------------
# Written by reading cupyx 14's source; no GPU has run it yet (tests: stand-ins). Its
# ``*_matrix`` constructors narrow int64 indices that fit to int32 (``check_contents``), its
# ``*_array`` ones keep the dtype given: interop builds ``*_array``. Its values are bool,
# float32/64 or complex64/128 only. It keeps a COO value's coordinates one array per
# dimension (stacked when taken apart: a copy, named), and computes ``has_canonical_format``
# itself, with a kernel and a synchronisation, when it needs it, unless told: a rebuilt value
# whose indices interop checked sorted and distinct is told (the property's setter,
# ``_compressed.py``; a plain attribute of COO, ``_coo.py``), so cupyx does not sort again.
_is_sparse = instance_test("cupyx.scipy.sparse", "spmatrix", "sparray")


def _sparse_parts(m: Any) -> Parts:
    fmt = m.format
    if fmt in ("csr", "csc"):
        return sparse.compressed(fmt, m.data, m.indices, m.indptr, m.shape)
    if fmt == "coo" and len(m.shape) == 1:
        # a 1-D coo_array keeps an all-zeros ``row`` and its coordinate in ``col``
        # (cupyx/scipy/sparse/_coo.py, coo_matrix.__init__ and the ``coords`` property)
        return sparse.coo(m.data, m.col.reshape(1, -1), m.shape)
    if fmt == "coo":
        coords = module("cupy").stack((m.row, m.col))
        return sparse.coo(m.data, coords, m.shape).replace(copied=((
            "coords", "CuPy keeps one coordinate array per dimension: stacked into one "
            "(ndim, nnz) array"),))
    return Parts(fmt, (), (("shape", tuple(m.shape)),))  # dia: format= converts


def _sparse_rebuild(reg: RegistryLike, parts: Parts, target: str) -> Any:
    cs = module("cupyx.scipy.sparse")
    a, shape = dict(parts.arrays), sparse.shape(parts)
    if parts.layout == "coo":
        m = cs.coo_array((a["data"], tuple(a["coords"])), shape=shape)  # (col,) for 1-D
    else:
        build = cs.csr_array if parts.layout == "csr" else cs.csc_array
        m = build((a["data"], a["indices"], a["indptr"]), shape=shape)
    if sparse.canonical(parts):
        m.has_canonical_format = True
    return m


SPARSE = sparse.kind(
    name="cupyx.sparse",
    modules=("cupyx",),
    package="cupyx",
    devices=("cuda",),
    is_value=_is_sparse,
    parts=_sparse_parts,
    rebuild=_sparse_rebuild,
    of="cupy",
    layouts=("csr", "csc", "coo"),
    needs={layout: sparse.Needs(data_dtypes=("bool", "float32", "float64", "complex64",
                                              "complex128"))
           for layout in ("csr", "csc", "coo")},
    reformat=sparse.asformat,
)

ADAPTERS = (ADAPTER, SPARSE)
