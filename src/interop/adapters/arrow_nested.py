"""Arrow's list and tensor columns as composite values
(:class:`~interop.adapters.base.CompositeAdapter`).

A ``fixed_size_list`` (nested to any depth) and an ``arrow.fixed_shape_tensor`` are one dense
buffer and a shape: their part is one N-D array, a NumPy view over the leaf values buffer
(read-only, as Arrow's memory is), of shape ``(rows, d1, d2, ...)``; a tensor's
``permutation`` becomes the view's strides. A ``list``, ``large_list`` or ``list_view`` is
``values`` (such an N-D array over the rows' items) plus ``offsets`` (``rows + 1``, the first
0): the ``"jagged"`` layout, which a target with a ragged type of its own builds (torch's
jagged nested tensor); any other gets the ``(values, offsets)`` pair. ``ragged=`` chooses:
``None`` (that default), ``"offsets"`` (the pair, whatever the target), ``"list"`` (one view
per row) or ``"pad"`` (one padded array, a copy, filled with ``fill_value``).

Each part then takes the registry's dense route (devices, read-only hazards, ``copy=``).
Nulls follow the arrays' contract: refused unless ``copy=True``, which takes a copy where a
null row of a list is an empty row and a null slot of a fixed-size value is NaN (integers
have no NaN: fill them first). Walking a type is one loop over its ``fixed_size_list``
levels, whatever the depth.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..errors import InteropError, MalformedError, NullsError, UnsupportedConversionError
from ..memo import arrow_type_key, extension_name, memo_by
from ..view import BufferView
from .base import CompositeAdapter, Parts, RegistryLike, assembly, instance_test
from .index_kernel import offsets_ok_at
from .ragged import Jagged, check_offsets, describe_jagged, jagged_rebuilder

RAGGED = (None, "offsets", "list", "pad")
"""The values of ``ragged=``."""
OPTIONS = ("ragged", "fill_value")
TENSOR = "arrow.fixed_shape_tensor"
"""The extension name of Arrow's canonical tensor type."""


def _pa() -> Any:
    return sys.modules["pyarrow"]


def _np() -> Any:
    return sys.modules.get("numpy") or _import_numpy()


def _import_numpy() -> Any:
    import numpy as np

    return np


def describe_value(x: Any) -> str:
    return f"pyarrow {type(x).__name__}<{x.type}> of length {len(x)}"


def _nested_type_of(t: Any) -> bool:
    types = _pa().types
    return (types.is_fixed_size_list(t) or types.is_list(t) or types.is_large_list(t)
            or types.is_list_view(t) or types.is_large_list_view(t)
            or extension_name(t) == TENSOR)


nested_type = memo_by(arrow_type_key, _nested_type_of)
"""Whether an Arrow type is a list or tensor type (the values of this kind), read from the
type alone: the one test, for arrays, chunked arrays and table columns."""


def levels(leaf: Any, items: tuple[int, ...]) -> Any:
    """``leaf`` (a flat Arrow array) as nested ``fixed_size_list`` levels of ``items`` each,
    outermost first: the same buffer (a tensor's rows, or items of several dimensions)."""
    cur = leaf
    for d in reversed(items):
        cur = _pa().FixedSizeListArray.from_arrays(cur, d)
    return cur


def numeric_items(t: Any) -> bool:
    """Whether a list or tensor type's innermost items are fixed-width numbers (what the
    parts hold), read from the type alone."""
    types = _pa().types
    while not (types.is_integer(t) or types.is_floating(t)):
        t = getattr(t, "storage_type", None) or getattr(t, "value_type", None)
        if t is None:
            return False
    return True


# ---- the dense part: fixed_size_list levels over a leaf buffer --------------------------
_IDS: dict[str, Any] = {}


def _ids() -> dict[str, Any]:
    """Arrow's type ids read here, once: ``fsl`` (``fixed_size_list``) and ``leaf`` (the id of
    each type of fixed-width numbers, one type per id, to its NumPy dtype)."""
    if not _IDS:
        pa, np = _pa(), _np()
        _IDS["fsl"] = pa.lib.Type_FIXED_SIZE_LIST
        _IDS["lists"] = {pa.lib.Type_LIST: 32, pa.lib.Type_LARGE_LIST: 64}
        _IDS["leaf"] = {t.id: np.dtype(t.to_pandas_dtype()) for t in (
            pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
            pa.uint32(), pa.uint64(), pa.float16(), pa.float32(), pa.float64())}
    return _IDS


def _dense(arr: Any, lo: int, count: int) -> tuple[Any, bool]:
    """Rows ``[lo, lo + count)`` of ``arr`` (a fixed-width array or ``fixed_size_list``
    levels over one) as one N-D NumPy array ``(count, d1, ...)``: a read-only view of the
    leaf buffer, or, where a level holds nulls, a copy with NaN in their slots (``True``
    then). Integers with nulls raise :class:`NullsError`."""
    np, ids = _np(), _IDS or _ids()
    fsl = ids["fsl"]
    dims: list[int] = []
    levels: list[tuple[Any, int, int]] = []
    cur, start, n = arr, lo, count
    t = cur.type
    while t.id == fsl:
        d = t.list_size
        levels.append((cur, start, n))
        dims.append(d)
        start, n = (cur.offset + start) * d, n * d
        cur = cur.values
        t = cur.type
    dtype = ids["leaf"].get(t.id)
    if dtype is None:
        raise UnsupportedConversionError(
            f"{describe_value(arr)}: its items are {t}, not fixed-width numbers; cast them "
            "first (pyarrow.compute.cast) or leave the column out (columns=)")
    levels.append((cur, start, n))
    buf = cur.buffers()[1]
    if buf is not None and not buf.is_cpu:
        if any(a.buffers()[0] is not None for a, _, _ in levels):
            raise UnsupportedConversionError(
                f"{describe_value(arr)} on a CUDA device has a validity bitmap, which cannot "
                "be read on the host: fill its nulls on the device first (a dense device "
                "buffer cannot represent them)")
        return DeviceRows(arr, buf, dtype, (cur.offset + start) * dtype.itemsize,
                          (count, *dims)), False
    # a level without nulls anywhere holds none in the rows' range (null_count is kept by
    # Arrow); only a level holding some is sliced to count those in range
    nulls = False
    for a, s, k in levels:
        if k and a.null_count and a.slice(s, k).null_count:
            nulls = True
            break
    if not nulls:
        flat = (np.frombuffer(buf, dtype, n, (cur.offset + start) * dtype.itemsize)
                if n else np.empty(0, dtype))
        flat.flags.writeable = False  # Arrow's memory is immutable
        return flat.reshape(count, *dims), False
    if not _pa().types.is_floating(t):
        raise NullsError(f"{describe_value(arr)} holds nulls and its items ({t}) have no NaN "
                         "to stand for them: fill them first (pyarrow.compute.fill_null)")
    flat = cur.slice(start, n).to_numpy(zero_copy_only=False).copy()
    span = n
    for a, s, k in levels[:-1]:
        valid = a.slice(s, k).is_valid().to_numpy(zero_copy_only=False)
        flat.reshape(k, span // k)[~valid] = np.nan
    return flat.reshape(count, *dims), True


class DeviceRows:
    """The rows of a pyarrow array whose values live on a CUDA device (``pyarrow.cuda``) as
    a ``__cuda_array_interface__`` (v3) over the same device memory: the registry hands it to
    CuPy, torch, JAX ... on the device by its dense rules. It names no stream: pyarrow exposes
    none for such an array (an Arrow C device array is read by
    :mod:`interop.tables.arrow_device`, which waits on its ``sync_event``). Awaits a GPU run:
    the stand-in test checks the interface, not a device."""

    def __init__(self, arr: Any, buf: Any, dtype: Any, start: int, shape: tuple[int, ...],
                 strides: tuple[int, ...] | None = None) -> None:
        self._keep, self._start = (arr, buf), start  # the device buffer lives as long as this
        self.shape, self.dtype = tuple(shape), dtype
        self.strides = strides or tuple(
            dtype.itemsize * int(_np().prod(shape[i + 1:])) for i in range(len(shape)))
        self.__cuda_array_interface__ = {
            "shape": self.shape, "typestr": dtype.str, "version": 3,
            "strides": None if strides is None else self.strides,
            "data": (int(buf.address) + start, True)}

    def reshape(self, *shape: int) -> DeviceRows:
        """The same compact rows in another shape."""
        return DeviceRows(*self._keep, self.dtype, self._start, shape)

    def transpose(self, *axes: int) -> DeviceRows:
        """The same memory with its dimensions permuted (strides, no copy)."""
        return DeviceRows(*self._keep, self.dtype, self._start,
                          tuple(self.shape[a] for a in axes), tuple(self.strides[a] for a in axes))


def _nulls_why(x: Any) -> str:
    return (f"{describe_value(x)} holds nulls, which a dense buffer cannot represent: fill "
            "them first (pyarrow.compute.fill_null) or pass copy=True (a copy: a null row of "
            "a list becomes an empty row, a null slot of a fixed-size value NaN)")


# ---- the kinds ------------------------------------------------------------------------------
def _fixed(x: Any) -> Parts:
    values, nulls = _dense(x, 0, len(x))
    return Parts("tensor", (("values", values),), (("type", x.type), ("levels", True)),
                 nulls=_nulls_why(x) if nulls else "")


def _tensor(x: Any) -> Parts:
    t = x.type
    values, nulls = _dense(x.storage, 0, len(x))
    values = values.reshape(len(x), *t.shape)
    perm = list(t.permutation or range(len(t.shape)))
    meta: list[tuple[str, Any]] = [("type", t)]
    if perm != sorted(perm):
        values = values.transpose(0, *(p + 1 for p in perm))
        meta.append(("permutation", perm))
    if t.dim_names:
        meta.append(("dim_names", list(t.dim_names)))
    return Parts("tensor", (("values", values),), tuple(meta),
                 nulls=_nulls_why(x) if nulls else "")


def reader(x: Any, parts: Parts) -> Any:
    """The fast reader of values of ``x``'s kind
    (:attr:`~interop.adapters.base.CompositeAdapter.reader`): for a ``fixed_size_list`` (any
    depth) or a tensor without permutation of fixed-width numbers, the one N-D view of a value
    of the same Arrow type with rows, no nulls at any level (any held anywhere: the full walk)
    and its leaf buffer in host memory, as :func:`parts` reads it; for a ``list`` or
    ``large_list`` of fixed-width numbers, :func:`_list_reader` (``parts``: unread, the type
    says it all)."""
    ids = _IDS or _ids()
    t = x.type
    if t.id in ids["lists"]:
        return _list_reader(t, ids)
    tensor = extension_name(t) == TENSOR
    if tensor and list(t.permutation or range(len(t.shape))) != list(range(len(t.shape))):
        return None
    s = t.storage_type if tensor else t
    dims: list[int] = []
    while s.id == ids["fsl"]:
        dims.append(s.list_size)
        s = s.value_type
    dtype = ids["leaf"].get(s.id)
    if not dims or dtype is None:
        return None
    shape = tuple(t.shape) if tensor else tuple(dims)
    size, itemsize, np = 1, dtype.itemsize, _np()
    for d in dims:
        size *= d

    frombuffer, shape = np.frombuffer, (-1, *shape)

    def read(v: Any) -> tuple[Any, ...] | None:
        n = len(v)
        if not n or v.type != t:
            return None
        cur, start = (v.storage if tensor else v), 0
        for d in dims:
            if cur.null_count:
                return None
            start = (cur.offset + start) * d
            cur = cur.values
        buf = cur.buffers()[1]
        if cur.null_count or buf is None or not buf.is_cpu:
            return None
        flat = frombuffer(buf, dtype, n * size, (cur.offset + start) * itemsize)
        flat.flags.writeable = False  # Arrow's memory is immutable
        return (flat.reshape(shape),)

    return read


def _list_reader(t: Any, ids: dict[str, Any]) -> Any:
    """The fast reader of ``list``/``large_list`` values of type ``t`` over fixed-width
    numbers: ``(values, offsets)`` as :func:`parts` reads them (read-only views), of a value of
    type ``t`` with rows, no validity bitmap on the rows or the items, buffers in host memory,
    offsets from 0 (a slice's are rebased by the walk, which says so) that the compiled check
    passes (:func:`~interop.adapters.index_kernel.offsets_ok_at`: a fault, or no kernel
    loaded, goes to the walk, which names it)."""
    dtype = ids["leaf"].get(t.value_type.id)
    if dtype is None:
        return None
    width = ids["lists"][t.id]
    np, size, itemsize = _np(), width // 8, dtype.itemsize
    otype = np.dtype(f"int{width}")

    def read(v: Any) -> tuple[Any, ...] | None:
        n = len(v)
        if not n or v.type != t:
            return None
        valid, offs, items_valid, data = v.buffers()
        if (valid is not None or items_valid is not None or data is None
                or not offs.is_cpu or not data.is_cpu):
            return None
        child = v.values
        items = len(child)
        start = v.offset * size
        if not offsets_ok_at(offs.address + start, n + 1, width, items):
            return None
        offsets = np.frombuffer(offs, otype, n + 1, start)
        if offsets[0]:
            return None
        values = np.frombuffer(data, dtype, int(offsets[n]), child.offset * itemsize)
        offsets.flags.writeable = values.flags.writeable = False  # Arrow's memory is immutable
        return values, offsets

    return read


def _bounds(x: Any) -> tuple[Any, Any, Any]:
    """``(starts, lengths, valid)`` of each row of a list or list view (NumPy arrays)."""
    np, types = _np(), _pa().types
    n = len(x)
    valid = (x.is_valid().to_numpy(zero_copy_only=False) if x.null_count
             else np.ones(n, dtype=bool))
    if types.is_list_view(x.type) or types.is_large_list_view(x.type):
        starts = x.offsets.to_numpy()
        lengths = x.sizes.to_numpy()
        items = len(x.values)
        bad = valid & ((lengths < 0) | (starts < 0) | (starts + lengths > items))
        if bad.any():
            i = int(bad.argmax())
            raise MalformedError(f"{describe_value(x)}: row {i} starts at {int(starts[i])} "
                                 f"with size {int(lengths[i])}, outside its {items} items "
                                 "(pyarrow's validate(full=True) refuses it too)")
    else:
        offs = _offsets(x)
        starts, lengths = offs[:-1], np.diff(offs)
    return starts, lengths, valid


def _offsets(x: Any) -> Any:
    """The offsets of a list array (a view of Arrow's), checked against its items."""
    offs = x.offsets.to_numpy()
    check_offsets(offs, len(x.values), describe_value(x))
    return offs


def _ragged(x: Any, ragged: str | None = None, fill_value: Any = 0) -> Parts:
    types = _pa().types
    if ragged not in RAGGED:
        raise InteropError(f"ragged={ragged!r}: use None (the target's ragged type, else "
                           "(values, offsets)), 'offsets', 'list' or 'pad'")
    child = x.values
    if types.is_list(child.type) or types.is_large_list(child.type) or \
            types.is_list_view(child.type) or types.is_large_list_view(child.type):
        raise UnsupportedConversionError(
            f"{describe_value(x)}: lists of lists have two ragged dimensions, which no "
            "framework's ragged type holds; flatten one level first (pyarrow.compute."
            "list_flatten) or convert the inner lists row by row")
    n = len(x)
    offs_buf = x.buffers()[1]
    if offs_buf is not None and not offs_buf.is_cpu:
        raise UnsupportedConversionError(
            f"{describe_value(x)} lives on a CUDA device: its offsets would be read on the "
            "host to slice the values, which interop does not do yet (awaits a GPU run); a "
            "fixed_size_list or tensor column on the device converts")
    view = types.is_list_view(x.type) or types.is_large_list_view(x.type)
    if x.null_count or view:
        values, offsets, copied, rebased, nulls = _gathered(x, child, view)
    else:  # offsets rise by Arrow's rule (checked): the rows are one run of the child
        offsets = _offsets(x)  # Arrow's own offsets, a view
        lo, hi = int(offsets[0]), int(offsets[-1])
        values, item_nulls = _dense(child, lo, hi - lo)
        nulls = _nulls_why(x) if item_nulls else ""
        copied, rebased = [], []
        if lo:
            offsets = offsets - lo
            rebased.append(f"{describe_value(x)} is a slice: its {n + 1} offsets are rebased "
                           "to start at 0 (a copy of the offsets; the values are not copied)")
    if ragged != "list":  # per-row views read the offsets on the host, hand none over
        copied += rebased
    meta: tuple[tuple[str, Any], ...] = (("type", x.type), ("ragged", ragged),
                                         ("offsets", offsets))
    if ragged == "pad":
        return _padded(x, values, offsets, fill_value, meta, copied, nulls)
    return Parts("jagged", (("values", values), ("offsets", offsets)), meta, tuple(copied),
                 nulls)


def _gathered(x: Any, child: Any, view: bool) -> tuple[Any, Any, list[str], list[str], str]:
    """``(values, offsets, copied, rebased, nulls)`` of a list with null rows or a list view:
    the rows read from their starts and lengths (a null row empty), the values a view where
    the rows follow one another, else gathered (a copy: ``copied``); the offsets made anew
    (``rebased``: a copy of the offsets only)."""
    np = _np()
    n = len(x)
    starts, lengths, valid = _bounds(x)
    copied: list[str] = []
    rebased = [f"{describe_value(x)}: "
               + ("a list view's offsets and sizes become" if view else "its rows without "
                  "the null rows' items make") + f" {n + 1} offsets (a copy of the offsets)"]
    nulls = _nulls_why(x) if x.null_count else ""
    lengths = np.where(valid, lengths, 0)  # a null row: an empty row (nulls: copy=True only)
    ends = starts + lengths
    lo = int(starts.min()) if n else 0
    hi = int(ends.max()) if n else 0
    offsets = np.empty(n + 1, dtype=np.int64 if starts.dtype.itemsize == 8 else np.int32)
    offsets[0] = 0
    np.cumsum(lengths, out=offsets[1:])
    try:
        items, item_nulls = _dense(child, lo, max(hi - lo, 0))
    except NullsError:  # integers, nulls among the items in reach
        item_nulls = True
    if item_nulls:  # only the nulls the rows hold count: their items taken one by one
        index = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1] - starts, lengths)
        values, held = _dense(child.take(_pa().array(index)), 0, len(index))
        copied.append(f"{describe_value(x)}: null items lie among its rows' items; the "
                      "rows' own items are taken one by one (a copy of the values)")
        return values, offsets, copied, rebased, nulls or (_nulls_why(x) if held else "")
    if n == 0 or bool((starts[1:] == ends[:-1]).all()):
        values = items[int(starts[0]) - lo:int(starts[0]) - lo + int(offsets[-1])] if n \
            else items
    else:
        index = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1] - (starts - lo), lengths)
        values = items[index]
        copied.append(f"{describe_value(x)}: its rows are not stored one after another (or "
                      "null rows hold items); gathering them copies the values")
    return values, offsets, copied, rebased, nulls


def _padded(x: Any, values: Any, offsets: Any, fill: Any,
            meta: tuple[tuple[str, Any], ...], copied: list[str], nulls: str) -> Parts:
    np = _np()
    try:
        fits = np.can_cast(np.min_scalar_type(fill), values.dtype)
    except (TypeError, ValueError):  # not a number
        fits = False
    if not fits:
        raise UnsupportedConversionError(
            f"{describe_value(x)}: ragged='pad' with fill_value={fill!r}, which its items' "
            f"dtype {values.dtype} cannot hold as it is (it would overflow or be truncated); "
            f"pass a fill_value that {values.dtype} holds, or cast the column first")
    lengths = np.diff(offsets)
    n = len(lengths)
    width = int(lengths.max()) if n else 0
    out = np.full((n, width, *values.shape[1:]), fill, dtype=values.dtype)
    rows = np.repeat(np.arange(n), lengths)
    out[rows, np.arange(len(values)) - np.repeat(offsets[:-1], lengths)] = values
    copied.append(f"{describe_value(x)}: ragged='pad' copies the rows into one padded "
                  f"{out.shape} array filled with {fill!r}")
    return Parts("tensor", (("values", out),), meta, tuple(copied), nulls)


def parts(x: Any, ragged: str | None = None, fill_value: Any = 0) -> Parts:
    """``x`` taken apart: ``"tensor"`` (one N-D array) or ``"jagged"`` (values, offsets)."""
    types = _pa().types
    if fill_value != 0 and ragged != "pad":
        raise InteropError(f"fill_value={fill_value!r} is used only with ragged='pad'")
    if types.is_fixed_size_list(x.type):
        return _fixed(x)
    if extension_name(x.type) == TENSOR:
        return _tensor(x)
    try:
        return _ragged(x, ragged, fill_value)
    except NullsError as e:  # raised of its items: named by the value they belong to
        raise NullsError(f"{describe_value(x)}: its items: {e}") from None


def chunked_parts(x: Any, ragged: str | None = None, fill_value: Any = 0) -> Parts:
    """A ``ChunkedArray`` of a list or tensor type taken apart: its one chunk's parts (no
    copy), or, of several chunks (or none), the parts of the chunks joined (a copy: said)."""
    if x.num_chunks == 1:
        return parts(x.chunk(0), ragged, fill_value)
    whole = _joined(x) if x.num_chunks else _empty(x.type)
    p = parts(whole, ragged, fill_value)
    if x.num_chunks < 2:
        return p
    why = f"{describe_value(x)} is split into {x.num_chunks} chunks; joining them copies"
    return Parts(p.layout, p.arrays, p.meta, (why, *p.copied), p.nulls)


def _joined(x: Any) -> Any:
    """The chunks of ``x`` joined into one array (an extension type's through its storage:
    pyarrow joins no tensor chunks with a permutation)."""
    pa = _pa()
    if extension_name(x.type) is None:
        return x.combine_chunks()
    storage = pa.chunked_array([c.storage for c in x.chunks], type=x.type.storage_type)
    return pa.ExtensionArray.from_storage(x.type, storage.combine_chunks())


def _empty(t: Any) -> Any:
    pa = _pa()
    if extension_name(t) is not None:
        return pa.ExtensionArray.from_storage(t, pa.array([], type=t.storage_type))
    return pa.array([], type=t)


def buffers(x: Any) -> list[BufferView]:
    """Every buffer of ``x``'s tree (validity, offsets, sizes, the leaf values), whole, as byte
    views: what :func:`interop.shares_memory` reads (a slice shares its parent's buffers; an
    empty array holds none of their bytes); of a ``ChunkedArray``, every chunk's."""
    if type(x).__name__ == "ChunkedArray":
        return [v for c in x.chunks for v in buffers(c)]
    return [BufferView(b.address, (b.size,), (1,), 1, "|u1",
                       ("cpu", 0) if b.is_cpu else ("cuda", 0), True, x)
            for b in x.buffers() if b is not None and b.size] if len(x) else []


# ---- rebuilding on the target side -------------------------------------------------------
def rebuild(reg: RegistryLike, p: Parts, tgt: str) -> Any:
    return rebuilder(reg, p, tgt)(tuple(a for _, a in p.arrays))


def rebuilder(reg: RegistryLike, p: Parts, tgt: str) -> Callable[[tuple[Any, ...]], Any]:
    """The rebuild on ``tgt`` of parts of ``p``'s layout and meta, as a function of the
    converted arrays: a tensor's one array (or ``tgt``'s tensor type), the rows as ``tgt``'s
    ragged type or a :class:`Jagged`, per-row views (``ragged="list"``)."""
    roles = tuple(r for r, _ in p.arrays)
    if p.layout == "tensor":
        made = assembly(reg, tgt, "tensor")  # a framework with a tensor type keeps its kind
        if made is None:
            return _first
        make = made[1]
        return lambda arrays: make(p.with_arrays(tuple(zip(roles, arrays))))
    mode = p.get("ragged")
    if mode is None:
        return jagged_rebuilder(reg, p, tgt)
    v, o = roles.index("values"), roles.index("offsets")
    if mode == "list":
        bounds = p.get("offsets").tolist()
        return lambda arrays: [arrays[v][a:b] for a, b in zip(bounds, bounds[1:])]
    return lambda arrays: Jagged(arrays[v], arrays[o])


def _first(arrays: tuple[Any, ...]) -> Any:
    return arrays[0]


def describe(reg: RegistryLike, p: Parts, tgt: str) -> str:
    arrays, meta = dict(p.arrays), dict(p.meta)
    v = arrays["values"]
    if p.layout == "tensor":
        line = f"{meta['type']}: one {v.dtype} array of shape {tuple(v.shape)}"
        if "permutation" in meta:
            line += f", permutation {meta['permutation']} as strides {v.strides}"
        if "dim_names" in meta:
            line += f", dim_names {meta['dim_names']}"
        return line
    if meta["ragged"] is None:
        return describe_jagged(reg, p, tgt, meta["type"])
    rows = len(arrays["offsets"]) - 1
    return (f"{meta['type']}: {rows} rows: values {tuple(v.shape)} + offsets -> "
            + (f"{rows} per-row views" if meta["ragged"] == "list"
               else "interop.Jagged(values, offsets)"))


ARROW_NESTED = CompositeAdapter(
    name="arrow-nested",
    modules=("pyarrow",),
    subclassed=True,
    package="pyarrow",
    is_value=instance_test("pyarrow", "FixedSizeListArray", "ListArray", "LargeListArray",
                           "ListViewArray", "LargeListViewArray", "FixedShapeTensorArray"),
    parts=parts,
    buffers=buffers,
    rebuild=rebuild,
    rebuilder=rebuilder,
    describe=describe,
    options=OPTIONS,
    home="pyarrow",
    reader=reader,
)
"""Arrow's ``fixed_size_list``, ``fixed_shape_tensor``, ``list``, ``large_list`` and
``list_view`` arrays (detected before the pyarrow arrays of one buffer)."""
