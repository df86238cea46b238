"""pyarrow ``Array`` and ``ChunkedArray``: zero-copy for fixed-width data without nulls."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import NullsError, UnsupportedConversionError
from ..view import BufferView
from . import arrow_extensions
from . import sparse_parts as sparse
from .arrow_chunks import ARROW_CHUNKS
from .arrow_nested import ARROW_NESTED, levels
from .base import (
    ALIGNED,
    ARROW_TYPE_ID,
    NEEDS_COPY,
    NULLS,
    STEP_COPIES,
    UNSUPPORTED,
    Accepts,
    ArrayAdapter,
    Edge,
    NeedsCopy,
    Parts,
    RegistryLike,
    instance_test,
    memo,
    memo_by,
    module,
    series_check,
)

# NumPy type strings pyarrow stores as plain fixed-width buffers.
_ARROW_NUMERIC = set("bBhHiIlLqQefd")


_is_value = instance_test("pyarrow", "Array", "ChunkedArray")


def describe(x: Any) -> str:
    """A short name for an array in messages: its type and length."""
    return f"pyarrow {type(x).__name__}<{x.type}> of length {len(x)}"


def _kind_of(t: Any) -> str:
    """"n" (a NumPy view exists), "b" (bit-packed bool), "c" (a date: NumPy's datetime64
    needs a conversion, so a copy), "x" (no fixed-width NumPy dtype holds it)."""
    types = sys.modules["pyarrow"].types
    return ("n" if (types.is_integer(t) or types.is_floating(t) or types.is_timestamp(t)
                    or types.is_duration(t))
            else "b" if types.is_boolean(t) else "c" if types.is_date(t) else "x")


_kind = memo_by(ARROW_TYPE_ID, _kind_of)


def single_chunk(x: Any) -> Any:
    """A ChunkedArray of one chunk as that chunk; any other value as it is."""
    return x.chunk(0) if type(x).__name__ == "ChunkedArray" and x.num_chunks == 1 else x


def check(x: Any) -> tuple[str, str] | None:
    """Why ``x`` cannot be viewed by NumPy without copying (``None``: it can)."""
    k = _kind(x.type)
    if k == "x":
        return UNSUPPORTED, (f"{describe(x)}: type {x.type} is not fixed-width numeric; select "
                             "numeric columns or cast first")
    if x.null_count:
        return NULLS, (f"{describe(x)} holds {x.null_count} nulls, which a dense buffer cannot "
                       "represent: fill them first (x.fill_null(value)) or pass copy=True "
                       "(floating types get NaN)")
    if type(x).__name__ == "ChunkedArray" and x.num_chunks != 1:
        return NEEDS_COPY, (f"{describe(x)} is split into {x.num_chunks} chunks; joining them "
                            "copies")
    if k == "b":
        return STEP_COPIES, "Arrow packs booleans into bits; unpacking them to bytes copies"
    if k == "c":
        return STEP_COPIES, (f"Arrow {x.type} counts days or milliseconds in its own width; "
                             "NumPy's datetime64 needs a converted copy")
    return None


def _to_numpy_converter() -> Any:
    """The NumPy view of an array (of a ChunkedArray's one chunk); where Arrow would copy,
    the check decides: booleans unpacked and dates converted (its ``STEP_COPIES`` verdict),
    anything else ``NeedsCopy`` with its verdict (nulls, chunks, no NumPy dtype)."""
    chunked = module("pyarrow").ChunkedArray

    def checked(x: Any, e: Exception | None) -> Any:
        verdict = check(x)
        if verdict is not None and verdict[0] == STEP_COPIES:
            return x.to_numpy(zero_copy_only=False)
        raise NeedsCopy(*(verdict or (NEEDS_COPY, f"{describe(x)}: Arrow cannot give a "
                                      f"NumPy view without copying ({e})")))

    def convert(x: Any) -> Any:
        if type(x) is chunked:  # of any type (the plain arrays the fast form takes are
            if x.num_chunks == 1:  # numbers): any other goes to the check, never to its
                x = x.chunk(0)     # to_numpy (an extension array's own reads it its way)
            if _kind(x.type) != "n":
                return checked(x, None)
        try:
            return x.to_numpy(zero_copy_only=True)
        except (ValueError, TypeError, NotImplementedError) as e:  # Arrow would copy
            return checked(x, e)

    return convert


def numeric_array_types() -> tuple[type, ...]:
    """The Arrow array classes a NumPy view exists for (numbers, timestamps, durations)."""
    lib = module("pyarrow").lib
    return tuple(getattr(lib, n) for n in (
        "Int8Array", "Int16Array", "Int32Array", "Int64Array", "UInt8Array", "UInt16Array",
        "UInt32Array", "UInt64Array", "HalfFloatArray", "FloatArray", "DoubleArray",
        "TimestampArray", "DurationArray", "ChunkedArray") if hasattr(lib, n))


def to_numpy(x: Any) -> Any:
    """A NumPy array of ``x``, copying when it must; nulls only for floating types (NaN)."""
    pa = sys.modules["pyarrow"]
    if x.null_count and not pa.types.is_floating(x.type):
        raise NullsError(f"{describe(x)} holds {x.null_count} nulls and has no NaN to stand for "
                         "them: fill them first (x.fill_null(value))")
    verdict = check(x)
    if verdict is not None and verdict[0] == UNSUPPORTED:
        from ..errors import UnsupportedConversionError

        raise UnsupportedConversionError(verdict[1])
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks() if x.num_chunks else pa.array([], type=x.type)
    return x.to_numpy(zero_copy_only=False)


def view(x: Any) -> BufferView:
    """The :class:`BufferView` of the values buffer of a fixed-width array."""
    if sys.modules["pyarrow"].types.is_boolean(x.type):
        # unpacking bits makes a temporary copy: its pointer says nothing about x's memory
        from ..errors import UnsupportedConversionError

        raise UnsupportedConversionError(f"{describe(x)}: booleans are bit-packed, no byte view")
    arr = _to_numpy_converter()(x)
    from ..protocols.array_interface import view_of_numpy

    v = view_of_numpy(arr)
    return BufferView(v.ptr, v.shape, v.strides, v.itemsize, v.dtype, v.device, True, x)


def buffers(x: Any) -> list[BufferView]:
    """Every byte range the elements of an array (of a ChunkedArray's one chunk) occupy, as
    byte views: the validity bitmap's bits, the values (bit-packed booleans too), a string
    or binary array's offsets and data, a dictionary's indices and dictionary; the whole
    buffers of other nested types. Empty ranges are left out."""
    x = single_chunk(x)
    if type(x).__name__ == "ChunkedArray":  # no chunks (several: ADAPTER.chunks)
        return []
    return [BufferView(lo, (hi - lo,), (1,), 1, "|u1", ("cpu", 0), True, x)
            for lo, hi in _ranges(x) if hi > lo]


def _ranges(x: Any) -> list[tuple[int, int]]:
    types = sys.modules["pyarrow"].types
    t, n, o = x.type, len(x), x.offset
    if types.is_dictionary(t):
        return _ranges(x.indices) + _ranges(x.dictionary)
    bufs = x.buffers()
    out = [_bits(bufs[0], o, n)] if bufs and bufs[0] is not None else []
    if types.is_string(t) or types.is_binary(t) or types.is_large_string(t) \
            or types.is_large_binary(t):
        large = types.is_large_string(t) or types.is_large_binary(t)
        width = 8 if large else 4
        raw = memoryview(bufs[1])  # the offsets, as Arrow stores them (little-endian)

        def at(i: int) -> int:
            return int.from_bytes(raw[i * width:(i + 1) * width], "little", signed=True)

        out.append((bufs[1].address + o * width, bufs[1].address + (o + n + 1) * width))
        if bufs[2] is not None:
            out.append((bufs[2].address + at(o), bufs[2].address + at(o + n)))
        return out
    try:
        width = t.bit_width
    except ValueError:  # variable width or nested: every buffer, whole (empty: none)
        return out + [(b.address, b.address + b.size) for b in bufs[1:] if b is not None and n]
    if not width or len(bufs) < 2 or bufs[1] is None:  # the null type: no values
        return out
    if width == 1:
        return out + [_bits(bufs[1], o, n)]
    size = width // 8
    return out + [(bufs[1].address + o * size, bufs[1].address + (o + n) * size)]


def _bits(buf: Any, offset: int, n: int) -> tuple[int, int]:
    """The bytes holding bits ``[offset, offset + n)`` of a bitmap buffer."""
    if not n:
        return buf.address, buf.address
    return buf.address + offset // 8, buf.address + (offset + n + 7) // 8


def _dtype_verdict(dt: Any) -> tuple[str, str] | None:
    if dt.char == "?":
        return STEP_COPIES, "Arrow packs booleans into bits; packing them copies"
    if dt.char not in _ARROW_NUMERIC and dt.kind not in "mM" or not dt.isnative:
        return UNSUPPORTED, f"Arrow has no type for dtype {dt}"
    return None


_np_check = series_check("pyarrow Array", memo(_dtype_verdict), strided="pyarrow.array",
                         item_strides=True,
                         misaligned=(NEEDS_COPY, "pyarrow.array would wrap it as it is, and "
                                     "Arrow buffers are aligned"))


def _np_check_any(a: Any) -> tuple[str, str] | None:
    """The check of a NumPy array becoming Arrow: one dimension, a ``pyarrow.array``; more,
    an ``arrow.fixed_shape_tensor`` array of its rows (the same buffer where it is
    C-contiguous)."""
    if a.ndim < 2:
        return _np_check(a)
    if a.dtype.kind not in "iuf":
        return UNSUPPORTED, (f"an Arrow fixed_shape_tensor holds numbers only, not {a.dtype}; "
                             f"the array has shape {a.shape}: cast it first (booleans: "
                             "a.astype(numpy.uint8)), or convert it as a 1-D array")
    v = _dtype_verdict(a.dtype)
    if v is not None:
        return v
    if 0 in a.shape[1:]:
        return UNSUPPORTED, (f"an array of shape {a.shape} has rows of no elements, which an "
                             "Arrow fixed_shape_tensor cannot hold")
    if not a.flags.c_contiguous and not _permuted(a):
        return STEP_COPIES, (f"strides {a.strides} are neither C-contiguous nor a permutation "
                             "of C-contiguous rows (Arrow's fixed_shape_tensor permutation): "
                             "the rows are copied into C order")
    if not a.flags.aligned:
        return NEEDS_COPY, "the array is not aligned to its itemsize, and Arrow buffers are"
    return None


def _permuted(a: Any) -> bool:
    """Whether N-D ``a`` is C-contiguous rows (axis 0 outermost) whose other dimensions are
    a permutation of a C-contiguous layout that is its own inverse (two dimensions swapped,
    ``[0, 2, 1]``): an ``arrow.fixed_shape_tensor`` with that ``permutation`` holds the
    buffer as it is (``from_numpy_ndarray``). Other permutations are copied into C order:
    pyarrow's ``from_numpy_ndarray`` writes them inverted from how its
    ``to_numpy_ndarray`` (and interop) read them, so their meaning is not agreed."""
    if a.ndim < 3 or min(a.shape) < 2 or a.strides[0] < max(a.strides[1:]):
        return False  # (a dimension of 1 has any stride: its order is not read)
    order = sorted(range(1, a.ndim), key=lambda d: -a.strides[d])
    perm = [d - 1 for d in order]
    return (all(perm[p] == i for i, p in enumerate(perm))
            and bool(a.transpose(0, *order).flags.c_contiguous))


def _from_numpy() -> Any:
    """NumPy to Arrow: ``pyarrow.array`` of a 1-D array, a ``FixedShapeTensorArray`` of the
    rows of an N-D one."""
    pa, np = module("pyarrow"), module("numpy")
    array = pa.array

    def convert(a: Any) -> Any:
        if a.ndim < 2:
            return array(a)
        if not a.flags.c_contiguous:
            if _permuted(a):  # the same buffer, the order of its dimensions as permutation
                return pa.FixedShapeTensorArray.from_numpy_ndarray(a)
            a = np.ascontiguousarray(a)
        flat = array(a.reshape(-1))
        rows = pa.FixedSizeListArray.from_arrays(flat, a[0].size if len(a) else
                                                 int(np.prod(a.shape[1:])))
        return pa.ExtensionArray.from_storage(
            pa.fixed_shape_tensor(flat.type, list(a.shape[1:])), rows)

    return convert


def _jagged(parts: Any) -> Any:
    """An Arrow list array over converted ``values`` and ``offsets`` (int64 offsets: a
    ``large_list``); values of a fixed_shape_tensor type (items of 1+ dimensions, C order)
    become ``fixed_size_list`` levels, one per dimension, over the same buffer."""
    pa = module("pyarrow")
    arrays = dict(parts.arrays)
    values, offsets = arrays["values"], arrays["offsets"]
    if isinstance(values, pa.FixedShapeTensorArray):  # items of 2+ dimensions: one
        values = levels(values.storage.flatten(), tuple(values.type.shape))  # level each
    kind = pa.LargeListArray if offsets.type == pa.int64() else pa.ListArray
    return kind.from_arrays(offsets, values)


def _tensor(parts: Any) -> Any:
    """An Arrow list or tensor value rebuilt as its kind from its converted ``values``: a
    ``fixed_size_list`` source its levels again (``levels``), a tensor its ``dim_names``
    (named by the physical dimensions, C order here: the logical ones, permuted)."""
    pa = module("pyarrow")
    values = parts.array("values")
    if not isinstance(values, pa.FixedShapeTensorArray):
        return values
    t = values.type
    if parts.get("levels") and not t.permutation:
        return levels(values.storage.flatten(), tuple(t.shape))
    names = parts.get("dim_names")
    if not names:
        return values
    logical = [names[p] for p in (parts.get("permutation") or range(len(names)))]
    physical = [logical[q] for q in (t.permutation or range(len(names)))]
    return pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(
        t.value_type, t.shape, dim_names=physical, permutation=t.permutation), values.storage)


def _arrow_dtypes() -> frozenset[Any]:
    np = module("numpy")
    return frozenset(np.dtype(c) for c in _ARROW_NUMERIC)


def _edges() -> list[Edge]:
    return [
        Edge("pyarrow", "numpy", "Array.to_numpy(zero_copy_only=True)", _to_numpy_converter,
             check=check, accepts=Accepts(numeric_array_types)),
        Edge("numpy", "pyarrow", "pyarrow.array", _from_numpy,
             check=_np_check_any, accepts=Accepts(lambda: (module("numpy").ndarray,),
                                              _arrow_dtypes, flags=ALIGNED, ndim=1)),
    ]


ADAPTER = ArrayAdapter(
    name="pyarrow",
    aliases=("arrow", "pa"),
    modules=("pyarrow",),
    subclassed=True,
    package="pyarrow",
    chunks=lambda x: x.chunks if type(x).__name__ == "ChunkedArray" and x.num_chunks > 1 else None,
    install='pip install "interop-mempool[arrow]"',
    is_value=_is_value,
    view=view,
    buffers=buffers,
    to_numpy=to_numpy,
    edges=_edges,
    assemble=(("jagged", "pyarrow.ListArray.from_arrays(offsets, values)", _jagged),
              ("tensor", "its fixed_size_list levels or tensor type (dim_names kept)",
               _tensor)),
)





# ---- sparse tensors: SparseCSRMatrix, SparseCSCMatrix, SparseCOOTensor --------------------
_SPARSE_TYPES = {"SparseCSRMatrix": "csr", "SparseCSCMatrix": "csc", "SparseCOOTensor": "coo"}
_is_sparse = instance_test("pyarrow", *_SPARSE_TYPES)


def _sparse_parts(x: Any) -> Parts:
    """The buffers of an Arrow sparse tensor, as read-only NumPy views: Arrow's buffers are
    immutable (a memory-mapped IPC file's may not even be writable), though ``to_numpy``
    hands them out writable."""
    layout = _SPARSE_TYPES[type(x).__name__]
    arrays = x.to_numpy()  # views of its buffers: (data, coords) or (data, indptr, indices)
    for a in arrays:
        a.flags.writeable = False
    if layout == "coo":
        data, coords = arrays  # data is (nnz, 1)
        return sparse.coo(data.reshape(-1), coords, x.shape, sparse.NNZ_FIRST)
    data, indptr, indices = arrays
    return sparse.compressed(layout, data.reshape(-1), indices, indptr, x.shape)


def _sparse_rebuild(reg: RegistryLike, parts: Parts, target: str) -> Any:
    pa = module("pyarrow")
    a, shape = dict(parts.arrays), list(sparse.shape(parts))
    if parts.layout == "coo":
        return pa.SparseCOOTensor.from_numpy(a["data"], a["coords"], shape=shape)
    build = pa.SparseCSRMatrix if parts.layout == "csr" else pa.SparseCSCMatrix
    return build.from_numpy(a["data"], a["indptr"], a["indices"], shape=shape)


def _summed_dense(x: Any) -> Any:
    """The dense form of an Arrow sparse tensor, duplicate entries summed as SciPy, torch and
    JAX (and interop's other formats of it) sum them: Arrow's own ``to_tensor`` keeps one of
    them (found by the random search of sparse values)."""
    np = module("numpy")
    arrays = x.to_numpy()
    data = arrays[0].reshape(-1)
    out = np.zeros(tuple(x.shape), data.dtype)
    if type(x).__name__ == "SparseCOOTensor":
        where = tuple(arrays[1].T)
    else:
        indptr, indices = arrays[1], arrays[2]
        major = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        where = (major, indices) if type(x).__name__ == "SparseCSRMatrix" else (indices, major)
    np.add.at(out, where, data)
    return out


def _sparse_reformat(x: Any, layout: str) -> Any:
    """Densified by Arrow itself; another layout through its own ``to_scipy`` (Arrow has no
    conversion between sparse formats), as a SciPy value."""
    if layout == "dense":
        return _summed_dense(x)
    if layout not in ("csr", "csc", "coo", "bsr"):
        raise UnsupportedConversionError(f"format={layout!r}: not a sparse layout (csr, csc, "
                                         "coo, bsr or dense)")
    if len(x.shape) != 2:  # to_scipy reads a matrix (an IndexError of another shape)
        raise UnsupportedConversionError(
            f"format={layout!r}: Arrow changes a sparse layout through SciPy's matrices "
            f"(to_scipy), of 2 dimensions; this {type(x).__name__} has shape "
            f"{tuple(x.shape)}: convert it as it is, or format='dense'")
    m = x.to_scipy().asformat(layout)
    if m.dtype != x.to_numpy()[0].dtype:
        raise UnsupportedConversionError(
            f"format={layout!r}: Arrow changes a sparse layout through SciPy (to_scipy), "
            f"which turns {x.to_numpy()[0].dtype} values into {m.dtype}; format='dense' keeps "
            "them, or convert to a framework that holds them first")
    return m


_INT64 = ("int64",)
_ARROW_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                 "float16", "float32", "float64")
"""The value dtypes Arrow's sparse tensors hold (``from_numpy``: no complex (Arrow's
``ArrowNotImplementedError``), and bool comes back as uint8)."""
_CANONICAL = sparse.Needs(index_dtypes=_INT64, canonical=True, strided=False,
                          data_dtypes=_ARROW_DTYPES)
"""Arrow's dense form of a value overwrites a duplicate entry (SciPy, torch and JAX sum
them): duplicates are summed, and the entries sorted, before Arrow sees them. Its
``from_numpy`` reads every buffer as compact (a strided view would be read wrong)."""
SPARSE = sparse.kind(
    name="pyarrow.sparse",
    modules=("pyarrow",),
    package="pyarrow",
    is_value=_is_sparse,
    parts=_sparse_parts,
    rebuild=_sparse_rebuild,
    of="pyarrow",
    dense="numpy",
    layouts=("csr", "csc", "coo"),
    needs={"coo": sparse.Needs(index_dtypes=_INT64, coords=sparse.NNZ_FIRST, ndims=None,
                               strided=False, canonical=True, empty=False,
                               data_dtypes=_ARROW_DTYPES),
           "csr": _CANONICAL, "csc": _CANONICAL},
    reformat=_sparse_reformat,
)

ADAPTERS = (ARROW_NESTED, arrow_extensions.ARROW_EXTENSIONS, ADAPTER, SPARSE, ARROW_CHUNKS)
"""Arrow's list and tensor arrays (:mod:`interop.adapters.arrow_nested`), the ML data libraries'
extension arrays (:mod:`interop.adapters.arrow_extensions`), then its arrays of one buffer, then
its sparse tensors, then list, tensor and extension columns in chunks
(:mod:`interop.adapters.arrow_chunks`, a kind within ``ChunkedArray``)."""
