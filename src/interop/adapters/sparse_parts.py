"""Sparse values as composites: their parts, their invariants, and the copies a target needs.

A sparse value is a few dense arrays and a layout (:class:`~interop.adapters.base.Parts`):

- ``"csr"``, ``"csc"``: ``data`` (``(*batch, nnz)``), ``indices`` (``(*batch, nnz)``) and
  ``indptr`` (``(*batch, n + 1)``, ``n`` the rows of CSR, the columns of CSC);
- ``"bsr"``: the same over blocks (``data`` of shape ``(nblocks, r, c)``);
- ``"coo"``: ``data`` (``(nnz,)``) and ``coords``, laid out ``(ndim, nnz)`` (torch, SciPy,
  pydata ``sparse``, paddle) or ``(nnz, ndim)`` (JAX, TensorFlow, Arrow) as ``meta["coords"]``
  says;

with ``meta``: ``shape``, and, once checked, ``canonical`` (indices sorted and distinct).
Each framework's module reads and builds its own sparse type; this module is what they share:
:func:`prepare` checks a value's invariants (never trusted: a bad index handed to torch
crashes it later) and lists the :class:`~interop.adapters.base.Fix` es the target's
:class:`Needs` ask for, each the cheapest honest copy (indices widened to int64, indices
sorted within rows), never of the values unless they must move with their indices.

Checks and fixes run where the value lives (:func:`_local`): on the host with NumPy, on a
CUDA device with CuPy (the GPU hub: a torch or JAX device array is handed to CuPy zero-copy),
whose API is NumPy's, so one code serves both and no index array crosses to the host (a few
scalars are read: whether the indices are sorted, their extremes). What a fix makes on a
device stays there, for the target's dense route to take zero-copy.
"""

from __future__ import annotations

from typing import Any

from ..errors import FrameworkMissingError, MalformedError, UnsupportedConversionError
from ..memo import memo
from ..record import record
from .base import CompositeAdapter, Fix, Parts, RegistryLike, module
from .index_kernel import check_csr

COMPRESSED = {"csr": -2, "csc": -1, "bsr": -2}
"""The compressed layouts, and the axis of the shape their ``indptr`` runs over."""
LAYOUTS = ("csr", "csc", "bsr", "coo")
NDIM_FIRST, NNZ_FIRST = "ndim,nnz", "nnz,ndim"
"""How ``coords`` of a COO value are laid out."""
INDEX_ROLES = ("indices", "indptr", "coords")


@record(frozen=True)
class Needs:
    """What a framework's sparse constructor requires of a layout's parts."""

    index_dtypes: tuple[str, ...] = ("int32", "int64")
    """The index dtypes it takes (others are widened to int64)."""
    same_index_dtype: bool = True
    """``indices`` and ``indptr`` of one dtype (the narrower is widened otherwise)."""
    coords: str = NDIM_FIRST
    """How it lays out COO coordinates; the other layout is handed over as a transposed
    view, which the dense route takes as it is or copies (the index array only)."""
    strided: bool = True
    """It takes strided buffers (a view, COO coordinates laid out the other way); otherwise
    each buffer that is not compact is copied compact (Arrow reads every buffer as compact;
    torch's own layout changes misread transposed COO coordinates)."""
    nd_index_dtypes: tuple[str, ...] | None = None
    """The index dtypes it keeps for COO values of more than two dimensions, where they
    differ (SciPy copies n-D coordinates to int64)."""
    canonical: bool = False
    """It requires sorted, distinct indices (torch's CSR, TensorFlow): others are sorted,
    duplicates summed (a copy of data and indices)."""
    ndims: tuple[int, ...] | None = (2,)
    """The numbers of dimensions it builds (``None``: any)."""
    batched: bool = False
    """It builds CSR/CSC with leading batch dimensions."""
    padded: bool = False
    """It builds a batch whose matrices hold fewer entries than the batch's nnz, padded
    after their last row (JAX's BCSR; torch needs the same count in every matrix)."""
    empty: bool = True
    """It builds a value with no stored entries (Arrow's COO tensor refuses an empty index)."""
    data_dtypes: tuple[str, ...] | None = None
    """The value dtypes it holds (``None``: any its dense arrays hold)."""
    max_dim: int | None = None
    """The longest dimension its shapes hold (paddle's are int32); ``None``: any."""


def kind(**fields: Any) -> CompositeAdapter:
    """A framework's sparse kind: a :class:`CompositeAdapter` of ``fields`` with what every
    sparse kind shares: its parts checked by :func:`check` before any framework call
    (``format=`` included) and fitted to the target by :func:`prepare`, the ``format=``
    option, and, for a kind ``within`` its framework's array type, plans made per value."""
    return CompositeAdapter(check=check, prepare=prepare, options=("format",),
                            reformat_bytes=layout_bytes,
                            per_value_owner=fields.get("within", False), **fields)


def asformat(m: Any, layout: str) -> Any:
    """``format=`` for SciPy's API (SciPy, and cupyx which mirrors it): ``m.toarray()`` for
    ``"dense"``, else ``m.asformat(layout)``."""
    return m.toarray() if layout == "dense" else m.asformat(layout)


def compressed(layout: str, data: Any, indices: Any, indptr: Any, shape: Any,
               canonical: bool | None = None) -> Parts:
    """The parts of a CSR, CSC or BSR value (``canonical``: what the framework knows)."""
    return Parts(layout, (("data", data), ("indices", indices), ("indptr", indptr)),
                 (("shape", tuple(int(n) for n in shape)), ("canonical", canonical)))


def coo(data: Any, coords: Any, shape: Any, layout: str = NDIM_FIRST,
        canonical: bool | None = None) -> Parts:
    """The parts of a COO value whose ``coords`` are laid out as ``layout``."""
    return Parts("coo", (("data", data), ("coords", coords)),
                 (("shape", tuple(int(n) for n in shape)), ("coords", layout),
                  ("canonical", canonical)))


def layout_bytes(parts: Parts, layout: str) -> int:
    """The bytes ``parts``' value needs at least in ``layout``: its dense form for
    ``"dense"``, its int64 index pointers for a compressed layout (one per row of CSR and
    BSR, per column of CSC), none for COO."""
    dims = shape(parts)
    if layout == "dense":
        kind = parts.array("data").dtype if parts.arrays else None  # (TensorFlow: .size)
        size = getattr(kind, "itemsize", None) or getattr(kind, "size", None) or 16
        for n in dims:
            size *= int(n)
        return size
    if layout in COMPRESSED and len(dims) >= 2:
        return (int(dims[COMPRESSED[layout]]) + 1) * 8
    return 0


def shape(parts: Parts) -> tuple[int, ...]:
    return parts.get("shape")


def canonical(parts: Parts) -> bool:
    """Whether the checked indices are sorted and distinct."""
    return bool(parts.get("canonical"))


# ---- checking ----------------------------------------------------------------------------
def check(reg: RegistryLike, parts: Parts) -> Parts:
    """``parts`` checked (:class:`MalformedError` for a broken invariant), with what was found:
    ``canonical`` (indices sorted and distinct) and ``index_max`` (the largest index value,
    index pointers included). Runs before any framework is handed the value, its own layout
    change (``format=``) included. The index arrays are read where they live
    (:func:`_local`: a device value's on its device). A layout of no index arrays (SciPy's
    dia, lil) goes as it is: only ``format=`` takes it on."""
    if parts.layout not in LAYOUTS or parts.get("checked"):
        return parts
    dims = shape(parts)
    host = _index_arrays(reg, parts)
    np = _xp(next(iter(host.values())))
    if parts.layout == "coo":
        coords = host["coords"].T if parts.get("coords") == NNZ_FIRST else host["coords"]
        found, top = _check_coo(np, dims, parts.array("data"), coords)
        padded = False
    else:
        found, top, padded = _check_compressed(np, parts.layout, dims, parts.array("data"),
                                               host["indices"], host["indptr"])
    return parts.replace(canonical=found, index_max=top, padded=padded, checked=True)


def prepare(reg: RegistryLike, parts: Parts, builder: Any) -> tuple[Parts, tuple[Fix, ...]]:
    """``parts`` (checked by :func:`check`) as ``builder`` takes them: COO coordinates as it
    lays them out, what it cannot hold refused (:class:`UnsupportedConversionError`), and the
    fixes its :class:`Needs` ask for."""
    parts = check(reg, parts)
    np = module("numpy")  # dtype names only
    needs: Needs = (builder.needs or {}).get(parts.layout, Needs())
    dims = shape(parts)
    _refuse_unbuildable(reg, parts, builder, needs)
    host = _index_arrays(reg, parts)
    if parts.layout == "coo" and needs.coords != parts.get("coords"):
        coords = host["coords"]  # the transposed view, for the dense route
        parts = parts.replace({"coords": coords.T}, coords=needs.coords)
        host["coords"] = parts.array("coords")
    _refuse_narrowed(reg, parts, builder, host)
    fixes = [Fix((role,), why, _same) for role, why in parts.get("copied", ())]
    if needs.canonical and not canonical(parts):
        order = "row-major" if parts.layout == "coo" else "within each compressed row"
        fixes.append(Fix(tuple(r for r, _ in parts.arrays),
                         f"{builder.of} requires sorted, distinct indices: sorted {order}, "
                         "duplicates summed (the values keep their dtype)",
                         lambda p: _canonicalised(reg, p)))
    takes = needs.index_dtypes
    if parts.layout == "coo" and len(dims) > 2 and needs.nd_index_dtypes is not None:
        takes = needs.nd_index_dtypes
    wide = _to_widen(np, host, takes, needs.same_index_dtype)
    if wide:
        fixes.append(Fix(wide, f"{builder.of} takes {' or '.join(takes)} indices"
                         + (" of one dtype" if needs.same_index_dtype and len(host) > 1 else "")
                         + (f" for {len(dims)} dimensions" if takes is not needs.index_dtypes
                            else "")
                         + ": widened to int64 (the values are not copied)",
                         lambda p: _widened(reg, p, wide)))
    if not (needs.strided or needs.canonical and not canonical(parts)):
        # (sorting and widening make compact buffers)
        loose = tuple(r for r, a in parts.arrays
                      if r not in wide and not _compact(host[r] if r in host else _local(reg, a)))
        if loose:
            fixes.append(Fix(loose, f"{builder.of} reads every buffer as compact: "
                             f"{', '.join(map(str, loose))} copied compact",
                             lambda p: _compacted(reg, p, loose)))
    return parts, tuple(fixes)


def _index_arrays(reg: RegistryLike, parts: Parts) -> dict[str, Any]:
    """The index arrays of ``parts`` by role, where they live (:func:`_local`)."""
    return {r: _local(reg, a) for r, a in parts.arrays if r in INDEX_ROLES}


def _refuse_unbuildable(reg: RegistryLike, parts: Parts, builder: Any, needs: Needs) -> None:
    """What ``builder`` cannot hold, refused before any buffer moves: a number of dimensions,
    a value dtype, a value without entries."""
    dims = shape(parts)
    if needs.ndims is not None and len(dims) not in needs.ndims and not (
            needs.batched and parts.layout in ("csr", "csc") and len(dims) == 3):
        raise UnsupportedConversionError(
            f"{builder.of} builds {parts.layout} values of "
            f"{' or '.join(map(str, needs.ndims))} dimensions; this one has shape {dims}: "
            "format= another layout, or format='dense'")
    if needs.max_dim is not None and any(int(n) > needs.max_dim for n in dims):
        raise UnsupportedConversionError(
            f"{builder.of} holds shapes of dimensions up to {needs.max_dim}; this one has "
            f"shape {dims}")
    if needs.data_dtypes is not None:
        name = _dtype_name(_local(reg, parts.array("data")[:0]).dtype)
        if name not in needs.data_dtypes:
            raise UnsupportedConversionError(
                f"{builder.of} holds sparse values of {', '.join(needs.data_dtypes)} only, "
                f"not {name}: cast the values first, or format='dense'")
    if parts.get("padded") and not needs.padded:
        raise UnsupportedConversionError(
            f"{builder.of} builds batched {parts.layout} values whose matrices hold the same "
            f"number of entries; this one's (shape {dims}) hold fewer than its nnz, padded "
            "after (JAX's batched BCSR): format='dense', or convert each matrix")
    if not needs.empty and not parts.array("data").shape[0]:
        raise UnsupportedConversionError(
            f"{builder.of} builds no {parts.layout} value without stored entries; "
            "format='dense' densifies it")


def _refuse_narrowed(reg: RegistryLike, parts: Parts, builder: Any, host: dict[str, Any]) -> None:
    """An index the target's dense route would narrow past its range (JAX with 64-bit types
    off holds int32 indices: an index of 2**33 + 7 would become 7), refused; indices that
    fit are narrowed as the target's dense rule says."""
    target = reg.adapters.get(builder.dense or builder.of)
    rules = getattr(target, "rules", None)
    if rules is None or rules.narrows is None:
        return
    np = module("numpy")
    for role, a in host.items():
        narrow = rules.narrows(a.dtype.str)
        if narrow is None:
            continue
        top = int(np.iinfo(np.dtype(narrow[0])).max)
        if int(parts.get("index_max") or 0) > top:
            raise UnsupportedConversionError(
                f"{builder.of} narrows {a.dtype} indices to {np.dtype(narrow[0]).name} (its "
                f"64-bit types are off), but the {parts.layout} {role} reach "
                f"{parts.get('index_max')}, past {top}: entries would move. "
                "jax.config.update('jax_enable_x64', True) keeps int64 indices")


def _check_compressed(np: Any, layout: str, dims: tuple[int, ...], data: Any, indices: Any,
                      indptr: Any) -> tuple[bool, int, bool]:
    """Checks a CSR/CSC/BSR value; whether its indices are sorted and distinct in each row,
    the largest index (or pointer), and whether a batch's matrices are padded (hold fewer
    entries than its nnz: JAX's batched BCSR)."""
    if len(dims) < 2:  # SciPy's 1-D csr_array (a sparse vector)
        raise UnsupportedConversionError(
            f"a {layout} value of shape {dims}: interop reads compressed layouts of 2 "
            "dimensions (or batches of them); a 1-D sparse vector converts as coo "
            "(x.tocoo() first)")
    block = (1, 1)
    if layout == "bsr":
        block = tuple(int(n) for n in data.shape[-2:])
        if len(dims) != 2 or dims[0] % block[0] or dims[1] % block[1]:
            raise MalformedError(f"a BSR value of shape {dims} is not a whole number of "
                                 f"{block} blocks")
    rows = dims[COMPRESSED[layout]] // block[COMPRESSED[layout]]
    cols = dims[-1 - (COMPRESSED[layout] + 2)] // block[-1 - (COMPRESSED[layout] + 2)]
    batch = dims[:-2]
    ptr = indptr.reshape(-1, indptr.shape[-1]) if indptr.ndim else indptr.reshape(1, 1)
    idx = indices.reshape(ptr.shape[0], -1)
    what = f"{layout} value of shape {dims}"
    if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
        raise MalformedError(f"the {what} has index arrays of dtypes {indices.dtype} and "
                             f"{indptr.dtype}; indices are integers")
    if indptr.shape != (*batch, rows + 1):
        raise MalformedError(f"the {what} has indptr of shape {indptr.shape}; it needs "
                             f"{(*batch, rows + 1)}")
    nnz = indices.shape[-1] if indices.ndim else 0
    if indices.shape != (*batch, nnz) or (layout != "bsr" and data.shape[:len(batch) + 1]
                                          != (*batch, nnz)) or (
            layout == "bsr" and data.shape[0] != nnz):
        raise MalformedError(f"the {what} has {nnz} indices per matrix but data of shape "
                             f"{tuple(data.shape)}")
    if not batch:  # one pass, compiled (index_kernel), where it runs; a fault: named below
        found = check_csr(indptr, indices, cols)
        if found is not None:
            return found[0], max(found[1], nnz), False
    # a batch's matrices may hold fewer entries than its nnz, padded after (JAX's BCSR)
    ends = ptr[:, -1] if ptr.size else ptr.reshape(-1)
    wrong = np.flatnonzero((ends != nnz) if not batch else (ends > nnz))
    if ptr.size and (np.any(ptr[:, 0] != 0) or wrong.size):
        at = int(wrong[0]) if wrong.size else int(np.flatnonzero(ptr[:, 0] != 0)[0])
        raise MalformedError(f"the {what} has indptr{f' of matrix {at}' if batch else ''} "
                             f"running from {ptr[at, 0]} to {ptr[at, -1]}; it runs from 0 to "
                             f"the {nnz} stored entries" + (" (or fewer)" if batch else ""))
    if rows and np.any(ptr[:, 1:] < ptr[:, :-1]):
        raise MalformedError(f"the {what} has decreasing index pointers (indptr)")
    padded = bool(ptr.size and np.any(ends < nnz))
    if not nnz:
        return True, int(ptr.max()) if ptr.size else 0, padded
    # one pass: each index above the one before it, except where a row starts
    step = np.greater(idx[:, 1:], idx[:, :-1])
    for b in range(ptr.shape[0]):
        starts = ptr[b, 1:]
        step[b, starts[(starts > 0) & (starts < nnz)] - 1] = True
        step[b, max(int(ends[b]) - 1, 0):] = True  # the padding after the last row
    ordered = bool(step.all())
    if ordered:  # each row's first and last index bound the rest: O(rows) reads
        filled = ptr[:, 1:] > ptr[:, :-1]
        low = idx[np.nonzero(filled)[0], ptr[:, :-1][filled]]
        high = idx[np.nonzero(filled)[0], ptr[:, 1:][filled] - 1]
    else:
        stored = np.arange(nnz)[None, :] < ends[:, None]
        low = high = idx[stored]
    if low.size and (low.min() < 0 or high.max() >= cols):
        raise MalformedError(f"the {what} has indices from {low.min()} to {high.max()}; "
                             f"they must lie in [0, {cols})")
    return ordered, max(int(high.max()) if high.size else 0, nnz), padded


def _check_coo(np: Any, dims: tuple[int, ...], data: Any, coords: Any) -> tuple[bool, int]:
    """Checks a COO value (``coords`` as ``(ndim, nnz)``); whether its coordinates are
    sorted row-major and distinct, and the largest coordinate."""
    what = f"coo value of shape {dims}"
    if coords.dtype.kind not in "iu":
        raise MalformedError(f"the {what} has coordinates of dtype {coords.dtype}; "
                             "coordinates are integers")
    if coords.ndim != 2 or coords.shape[0] != len(dims):
        raise MalformedError(f"the {what} has coordinates of shape {coords.shape}; it needs "
                             f"{len(dims)} per entry")
    nnz = coords.shape[1]
    if tuple(data.shape) != (nnz,):
        raise MalformedError(f"the {what} has {nnz} coordinates but data of shape "
                             f"{tuple(data.shape)}")
    if not nnz:
        return True, 0
    low, high = coords.min(axis=1), coords.max(axis=1)
    bad = [d for d in range(len(dims)) if low[d] < 0 or high[d] >= dims[d]]
    if bad:
        d = bad[0]
        raise MalformedError(f"the {what} has coordinates from {low[d]} to {high[d]} along "
                             f"dimension {d}; they must lie in [0, {dims[d]})")
    top = int(high.max())
    if nnz < 2:
        return True, top
    if _fits(dims):
        return bool(np.all(np.diff(_linear(np, coords, dims)) > 0)), top
    step = np.diff(coords.astype(np.int64), axis=1)  # the first dimension that differs rises
    moved = step != 0
    first = moved.argmax(axis=0)
    return bool(moved.any(axis=0).all()
                and (step[first, np.arange(step.shape[1])] > 0).all()), top


def _fits(dims: tuple[int, ...]) -> bool:
    """Whether every row-major position of ``dims`` fits an int64."""
    size = 1
    for n in dims:
        size *= max(int(n), 1)
    return size < 2**62


def _linear(np: Any, coords: Any, dims: tuple[int, ...]) -> Any:
    """Each entry's row-major position (:func:`_fits` says it fits)."""
    return np.ravel_multi_index(tuple(coords.astype(np.intp, copy=False)), dims)


_dtype_name = memo(lambda d: d.name)
"""A NumPy dtype's name (NumPy computes it in Python on each read)."""


# ---- fixes -------------------------------------------------------------------------------
def _compact(a: Any) -> bool:
    """Whether ``a`` is laid out row-major by its strides (empty arrays included, whose
    strides NumPy's flags do not read)."""
    stride, strides = a.itemsize, []
    for n in reversed(a.shape):
        strides.append(stride)
        stride *= n
    return tuple(reversed(strides)) == a.strides


def _compacted(reg: RegistryLike, parts: Parts, roles: tuple[str, ...]) -> Parts:
    """The buffers ``roles`` copied compact (row-major), of their dtype, where they live."""
    return parts.replace({r: _fresh(_local(reg, parts.array(r), fix=True)) for r in roles})


def _same(parts: Parts) -> Parts:
    """A fix already made while taking the value apart."""
    return parts


def _to_widen(np: Any, host: dict[str, Any], takes: tuple[str, ...],
              same: bool) -> tuple[str, ...]:
    kinds = {r: _dtype_name(a.dtype) for r, a in host.items()}
    wide = [r for r, k in kinds.items() if k not in takes]
    if same and len(set(kinds.values())) > 1:
        wide = [r for r, k in kinds.items() if k != "int64"]
    return tuple(wide)


def _widened(reg: RegistryLike, parts: Parts, roles: tuple[str, ...]) -> Parts:
    return parts.replace({r: _fresh(_local(reg, parts.array(r), fix=True), "int64")
                          for r in roles})


def _local(reg: RegistryLike, a: Any, fix: bool = False) -> Any:
    """``a`` where it lives, as an array of a namespace with NumPy's API: on the host a NumPy
    view; on a CUDA device a CuPy array of the same memory (CuPy's own as it is, torch's and
    JAX's handed over zero-copy: CuPy is the GPU hub). Without CuPy a device array is read
    through a host copy, and a fix of one (*fix*), which must stay on the device, is a
    :class:`FrameworkMissingError` naming CuPy."""
    if type(a) is module("numpy").ndarray:  # itself (the host NumPy-to-NumPy plan's answer)
        return a
    top = type(a).__module__.partition(".")[0]
    if top == "cupy":
        return a
    if top == "numpy":
        return reg.convert(a, "numpy", device="cpu")
    owner = reg.adapters[reg.owner(a)]
    where = owner.device(a)[0] if getattr(owner, "device", None) is not None else "cpu"
    if where == "cpu":
        return reg.convert(a, "numpy", device="cpu")
    if reg.adapters["cupy"].missing() is None:
        return reg.convert(a, "cupy")
    if fix:
        raise FrameworkMissingError(
            f"fixing the indices of a sparse value on a {where} device (sorting, widening, "
            "compacting) is done there with CuPy, which is not installed: pip install "
            "cupy-cuda12x (or cupy-cuda13x), or fix them first")
    return reg.convert(a, "numpy", device="cpu")


def _xp(a: Any) -> Any:
    """The namespace of an array :func:`_local` gave: NumPy, or CuPy on a device."""
    return module(type(a).__module__.partition(".")[0])


def _fresh(a: Any, dtype: Any = None) -> Any:
    """A new compact copy of ``a`` (cast to ``dtype``) where it lives: a 64-byte aligned host
    buffer, as every buffer interop allocates, or a CuPy array on ``a``'s device."""
    xp = _xp(a)
    if xp.__name__ == "numpy":
        from ..host import fresh_copy  # loaded by the first fix, not by a first call

        return fresh_copy(a) if dtype is None else fresh_copy(a, dtype)
    return xp.array(a, dtype=a.dtype if dtype is None else dtype, order="C", copy=True)


def _canonicalised(reg: RegistryLike, parts: Parts) -> Parts:
    """The entries sorted (row-major, or by column within each row) and duplicates summed:
    new data and index arrays, where the value lives."""
    fresh_copy = _fresh
    dims = shape(parts)
    data = _local(reg, parts.array("data"), fix=True)
    np = _xp(data)
    if parts.layout == "coo":
        ndim_first = parts.get("coords") == NDIM_FIRST
        coords = _local(reg, parts.array("coords"), fix=True)
        coords = coords if ndim_first else coords.T
        if _fits(dims):
            order = np.argsort(_linear(np, coords, dims), kind="stable")
        else:  # positions past int64: sorted by each dimension, the last the least
            order = np.lexsort(coords[::-1])
        ordered = coords[:, order]
        first = np.ones(ordered.shape[1], bool)
        first[1:] = (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)
        summed = _summed(np, data[order], np.flatnonzero(first)) if first.size else data
        new = ordered[:, first]
        return parts.replace({"data": fresh_copy(summed),
                              "coords": fresh_copy(new if ndim_first else new.T)},
                             canonical=True)
    indices = _local(reg, parts.array("indices"), fix=True)
    indptr = _local(reg, parts.array("indptr"), fix=True)
    if indptr.ndim != 1:
        raise UnsupportedConversionError(
            f"a batched {parts.layout} value with unsorted or duplicate indices: sort each "
            "matrix first (the target requires sorted, distinct indices)")
    # each entry's row (np.repeat of the row numbers; CuPy's repeat takes host counts only)
    rows = np.searchsorted(indptr[1:], np.arange(indices.size), side="right")
    order = np.lexsort(np.stack((indices.astype(rows.dtype), rows)))  # CuPy: one 2-D key
    rows, cols = rows[order], indices[order]
    first = np.ones(rows.size, bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    keep = np.flatnonzero(first)
    summed = _summed(np, data[order], keep) if keep.size else data
    ptr = np.zeros_like(indptr)
    np.cumsum(np.bincount(rows[keep], minlength=indptr.size - 1), out=ptr[1:])
    return parts.replace({"data": fresh_copy(summed), "indices": fresh_copy(cols[keep]),
                          "indptr": fresh_copy(ptr)}, canonical=True)


def _summed(np: Any, data: Any, starts: Any) -> Any:
    """The runs of ``data`` beginning at ``starts`` summed, in ``data``'s own dtype (NumPy's
    accumulator would widen small integers and bools to 64 bits; a framework sums duplicates
    in the values' dtype: bools by logical or)."""
    return np.add.reduceat(data, starts, axis=0, dtype=data.dtype)
