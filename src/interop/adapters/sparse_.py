"""pydata ``sparse`` (``sparse.COO``, ``sparse.GCXS``) as composites
(:mod:`interop.adapters.sparse_parts`): COO of any number of dimensions, GCXS of two as CSR
(rows compressed) or CSC (columns), its NumPy buffers handed over one by one; built from any
framework's sparse parts on the target ``"sparse"``."""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedConversionError
from . import sparse_parts as sparse
from .base import Parts, RegistryLike, instance_test, module

_is_value = instance_test("sparse", "COO", "GCXS")
_AXES = {(0,): "csr", (1,): "csc"}


def _parts(x: Any) -> Parts:
    if type(x).__name__ == "COO":
        if x.fill_value != 0:
            return Parts(f"coo with fill value {x.fill_value}", (), (("shape", x.shape),))
        return sparse.coo(x.data, x.coords, x.shape)
    if x.fill_value != 0:
        return Parts(f"gcxs with fill value {x.fill_value}", (), (("shape", x.shape),))
    layout = _AXES.get(tuple(x.compressed_axes)) if x.ndim == 2 else None
    if layout is None:
        return Parts(f"gcxs compressed along {x.compressed_axes} of {x.ndim} dimensions", (),
                     (("shape", x.shape),))
    return sparse.compressed(layout, x.data, x.indices, x.indptr, x.shape)


def _rebuild(reg: RegistryLike, parts: Parts, target: str) -> Any:
    """Its constructors sort and sum an unsorted COO value themselves (a copy), so the
    value comes sorted (:attr:`~interop.adapters.sparse_parts.Needs.canonical`): interop
    does it, saying so."""
    pydata = module("sparse")
    a, shape, ok = dict(parts.arrays), sparse.shape(parts), sparse.canonical(parts)
    if parts.layout == "coo":
        return pydata.COO(a["coords"], a["data"], shape=shape, has_duplicates=not ok,
                          sorted=ok)
    axes = (0,) if parts.layout == "csr" else (1,)
    return pydata.GCXS((a["data"], a["indices"], a["indptr"]), shape=shape,
                       compressed_axes=axes)


def _reformat(x: Any, layout: str) -> Any:
    """``x`` in ``layout`` by pydata's own calls; a COO value is first made again as one that
    may hold duplicates (pydata keeps no flag: one built with ``has_duplicates=False`` that
    holds some has them overwritten by ``todense``/``asformat``, where interop checks and
    every other form sums them)."""
    if type(x).__name__ == "COO":
        x = module("sparse").COO(x.coords, x.data, shape=x.shape, has_duplicates=True,
                                 sorted=False, fill_value=x.fill_value)
    if layout == "dense":
        return x.todense()
    if layout == "coo":
        return x.asformat("coo")
    if layout in ("csr", "csc"):
        return x.asformat("gcxs", compressed_axes=(0,) if layout == "csr" else (1,))
    raise UnsupportedConversionError(f"format={layout!r}: pydata sparse builds 'coo', "
                                     "'csr' and 'csc' (GCXS) values")


_GCXS_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                "uint64", "float32", "float64", "complex64", "complex128")
"""The value dtypes pydata's GCXS builds (its numba kernels: no float16 (NotImplementedError),
no float128/complex256 (a typing error))."""

SPARSE = sparse.kind(
    name="sparse",
    aliases=("pydata-sparse",),
    modules=("sparse",),
    package="sparse",
    install="pip install sparse",
    is_value=_is_value,
    parts=_parts,
    rebuild=_rebuild,
    target=True,
    of="sparse",
    dense="numpy",
    layouts=("csr", "csc", "coo"),
    needs={"coo": sparse.Needs(ndims=None, canonical=True),
           **{layout: sparse.Needs(canonical=True, data_dtypes=_GCXS_DTYPES)
              for layout in ("csr", "csc")}},
    reformat=_reformat,
)

ADAPTERS = (SPARSE,)
