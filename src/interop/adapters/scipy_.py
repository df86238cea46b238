"""SciPy's sparse arrays and matrices (``csr``, ``csc``, ``coo``, ``bsr``; ``*_array`` and
``*_matrix``) as composites (:mod:`interop.adapters.sparse_parts`): their NumPy buffers
handed over one by one, and built from any framework's sparse parts (as ``*_array``) on the
target ``"scipy"``.

SciPy keeps a COO value's coordinates as one array per dimension: they are one ``(ndim,
nnz)`` buffer only when they are rows of one (as interop builds them); otherwise taking them
apart stacks them (a copy of the coordinates, named in the plan).
"""

from __future__ import annotations

from typing import Any

from . import sparse_parts as sparse
from .base import Parts, RegistryLike, instance_test, module
from .index_kernel import csr_checker

_is_value = instance_test("scipy.sparse", "sparray", "spmatrix")
_BUILT = ("csr", "csc", "coo", "bsr")


def _parts(m: Any) -> Parts:
    fmt = m.format
    if fmt in ("csr", "csc", "bsr"):
        return sparse.compressed(fmt, m.data, m.indices, m.indptr, m.shape)
    if fmt == "coo":
        coords, stacked = _coords(m.coords)
        parts = sparse.coo(m.data, coords, m.shape)
        if stacked:
            parts = parts.replace(copied=(("coords", "SciPy keeps one coordinate array per "
                                           "dimension: stacked into one (ndim, nnz) array"),))
        return parts
    return Parts(fmt, (), (("shape", tuple(m.shape)),))  # dia, lil, dok: format= converts


def _coords(rows: tuple[Any, ...]) -> tuple[Any, bool]:
    """One ``(ndim, nnz)`` array of SciPy's per-dimension coordinate arrays: a view where
    they are evenly spaced rows of one buffer (views of one base array: arrays of their own
    that merely lie evenly spaced in memory are not, a view over them would outlive them),
    else a stacked copy (``True``)."""
    np = module("numpy")
    first = rows[0]
    step = (rows[1].ctypes.data - first.ctypes.data) if len(rows) > 1 else 0
    if all(r.dtype == first.dtype and r.strides == first.strides for r in rows) and all(
            r.ctypes.data == first.ctypes.data + i * step for i, r in enumerate(rows)) and (
            first.base is not None and step > 0
            and all(r.base is first.base for r in rows)):  # rows of one buffer, kept alive
        view = np.lib.stride_tricks.as_strided(first, (len(rows), first.size),
                                               (step, first.strides[0]), writeable=False)
        return view, False
    from ..host import fresh_buffer  # loaded by the first stacking, not by a first call

    out = fresh_buffer((len(rows), first.size), first.dtype)
    for i, r in enumerate(rows):
        out[i] = r
    return out, True


def _rebuild(reg: RegistryLike, parts: Parts, target: str) -> Any:
    """A ``*_array`` holding the parts' buffers, built empty and handed its buffers after:
    SciPy's constructors copy an array that is a view of a base more than twice its size
    (``_prune_array``: an aligned view, a slice of Arrow's buffer), and COO coordinates to
    the index dtype its shape asks for (``_get_index_dtype(maxval=max(shape))``: int64 for a
    dimension past int32, however small the coordinates)."""
    sp = module("scipy.sparse")
    a = dict(parts.arrays)
    shape = sparse.shape(parts)
    if parts.layout == "coo":
        data, coords = a["data"], a["coords"]
        m = sp.coo_array((data[:0], tuple(c[:0] for c in coords)), shape=shape)
        m.coords, m.data = tuple(coords), data
    else:
        build = {"csr": sp.csr_array, "csc": sp.csc_array, "bsr": sp.bsr_array}[parts.layout]
        data, indices, indptr = a["data"], a["indices"], a["indptr"]
        m = build((data[:0], indices[:0], module("numpy").zeros_like(indptr)), shape=shape)
        m.data, m.indices, m.indptr = data, indices, indptr
    m.has_canonical_format = sparse.canonical(parts)
    return m


def _reader(m: Any, parts: Parts) -> Any:
    """The fast reader of CSR and CSC values of ``m``'s type, shape and dtypes
    (:attr:`~interop.adapters.base.CompositeAdapter.reader`): ``(data, indices, indptr)`` of a
    value whose compiled check (:func:`~interop.adapters.index_kernel.csr_checker`) passes and
    finds what the walk's check found in ``m`` (``parts``: sorted and distinct indices, or
    not), with entries, compact buffers and indices below 2**31 (a narrowing target's limit);
    any other value takes the walk, which checks, decides and names what it finds."""
    fmt, kind, shape = m.format, type(m), tuple(m.shape)
    if fmt not in ("csr", "csc") or len(shape) != 2 or (parts.get("index_max") or 0) >= _INT32:
        return None
    cols, ptrs = (shape[1], (shape[0] + 1,)) if fmt == "csr" else (shape[0], (shape[1] + 1,))
    dtypes = (m.data.dtype, m.indices.dtype, m.indptr.dtype)
    check = csr_checker(m.indptr, m.indices)
    if check is None:
        return None
    canonical = sparse.canonical(parts)

    def read(v: Any) -> tuple[Any, ...] | None:
        if type(v) is not kind or v.shape != shape:  # (SciPy's type is its format)
            return None
        data, indices, indptr = v.data, v.indices, v.indptr
        nnz = indices.shape[0]
        if ((data.dtype, indices.dtype, indptr.dtype) != dtypes or not nnz
                or indptr.shape != ptrs or data.shape != (nnz,) or indices.ndim != 1
                or not data.flags.c_contiguous or nnz >= _INT32):
            return None
        found = check(indptr, indices, cols)
        if found is None or found[0] != canonical or found[1] >= _INT32:
            return None
        return data, indices, indptr

    return read


_INT32 = 2**31 - 1
_SCIPY_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                 "uint64", "float32", "float64", "float128", "complex64", "complex128",
                 "complex256")
"""The value dtypes SciPy's sparse arrays hold (``scipy.sparse._sputils.supported_dtypes``:
no float16, no bfloat16)."""

SPARSE = sparse.kind(
    name="scipy",
    modules=("scipy",),
    package="scipy",
    install="pip install scipy",
    is_value=_is_value,
    parts=_parts,
    rebuild=_rebuild,
    reader=_reader,
    target=True,
    of="scipy",
    dense="numpy",
    layouts=_BUILT,
    needs={layout: sparse.Needs(ndims=None if layout == "coo" else (2,),
                                nd_index_dtypes=("int64",) if layout == "coo" else None,
                                data_dtypes=_SCIPY_DTYPES) for layout in _BUILT},
    reformat=sparse.asformat,
    serves=("numpy",),
)

ADAPTERS = (SPARSE,)
