"""The ML data libraries' own Arrow extension types (Ray Data, Hugging Face ``datasets``,
Daft) as composite values (:class:`~interop.adapters.base.CompositeAdapter`).

Each library stores tensor, image and embedding columns as an extension type of its own over
storages :mod:`interop.adapters.arrow_nested` already reads. A type is recognised by its
registered extension name (never by importing the library: its data may come from a file or
another process) and read from its storage and the metadata the type serialises
(``__arrow_ext_serialize__``), as :data:`READERS` lists:

* fixed shapes (Ray's ``ray.data.arrow_tensor`` and ``ray.data.arrow_tensor_v2``, a list of
  ``prod(shape)`` items per row; ``datasets``' ``Array2D`` .. ``Array5D``, one list level per
  dimension; Daft's ``Embedding``, ``FixedShapeTensor`` and ``FixedShapeImage``, a
  ``fixed_size_list``) are rewritten, without copying, as the canonical
  ``arrow.fixed_shape_tensor`` of the same buffer (every row's offsets checked against the
  shape, every slice offset honoured): one N-D view of the values buffer;
* ``datasets``' arrays whose first dimension is dynamic (``Array2D(shape=(None, 3))``) are a
  ``large_list`` of such items: the ``"jagged"`` layout, with ``ragged=`` as for Arrow lists;
* variable shapes (Ray's ``ray.data.arrow_variable_shaped_tensor``, Daft's ``Tensor`` and
  ``Image``: a struct of the flat data and each row's shape) are the ``"rows"`` layout: one
  N-D view of the values buffer per row, each converted by the dense rules (a list).

Nulls follow the arrays' contract (refused unless ``copy=True``; a null row of a fixed shape
is NaN, of a variable shape an empty array). Any other extension type is refused, naming its
extension name and its storage type.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

from ..errors import InteropError, MalformedError, NullsError, UnsupportedConversionError
from ..memo import extension_name
from . import arrow_nested
from .base import CompositeAdapter, Parts, RegistryLike, instance_test


def _pa() -> Any:
    return sys.modules["pyarrow"]


def _np() -> Any:
    import numpy as np

    return np


def _meta(t: Any) -> Any:
    """The metadata ``t`` serialises, read as JSON (``None`` where it is not JSON)."""
    try:
        return json.loads(t.__arrow_ext_serialize__())
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError):
        return None


def _describe(x: Any) -> str:
    t = x.type
    return (f"pyarrow {type(x).__name__} of extension type {extension_name(t)!r} "
            f"(storage {t.storage_type}) of length {len(x)}")


# ---- fixed shapes: lists whose every row holds the same items ----------------------------
def _levels(storage: Any, sizes: tuple[int | None, ...], what: str) -> tuple[Any, Any]:
    """``(offsets, leaf)`` of ``storage``, list levels of ``sizes`` items each (``None``: the
    first level's rows differ in length): ``offsets`` the first level's (its own, a view,
    or ``None`` where every level is fixed) and ``leaf`` the slice of the values the rows
    span. Raises :class:`MalformedError` where a row's length contradicts the type."""
    np = _np()
    offsets = None
    cur, lo, count = storage, 0, len(storage)
    for k, size in enumerate(sizes):
        if cur.null_count and k:
            raise NullsError(f"{what} holds nulls inside its rows (dimension {k}), which no "
                             "dense buffer shows: fill them first (pyarrow.compute.fill_null)")
        offs = cur.offsets.to_numpy()
        if size is None:
            offsets = offs
            lo, count = (int(offs[0]), int(offs[-1] - offs[0])) if offs.size else (0, 0)
        else:
            lengths = np.diff(offs)
            if lengths.size and bool((lengths != size).any()):
                bad = int(np.argmax(lengths != size))
                raise MalformedError(
                    f"{what}: its type says {size} items in dimension {k} of every row, but "
                    f"item {bad} holds {int(lengths[bad])}: the storage contradicts the "
                    "type; rebuild the column with the library")
            lo, count = (int(offs[0]) if offs.size else 0), count * size
        cur = cur.values.slice(lo, count)
    return offsets, cur


def _tensor(leaf: Any, shape: tuple[int, ...]) -> Any:
    """The canonical ``arrow.fixed_shape_tensor`` over ``leaf`` (rows of ``shape``): the
    same buffer."""
    pa = _pa()
    size = math.prod(shape)
    rows = pa.FixedSizeListArray.from_arrays(leaf, size)
    return pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(leaf.type, list(shape)), rows)


def _null_rows(read: Callable[[Any], Any], storage: Any) -> Any:
    """``read`` of a storage with null rows: its valid rows read (a copy), the null rows
    put back as null rows of the canonical array (of no items, or of zeros)."""
    pa, np = _pa(), _np()
    valid = storage.is_valid().to_numpy(zero_copy_only=False)
    kept = read(storage.filter(pa.array(valid)))
    mask = pa.array(~valid)
    if isinstance(kept, pa.FixedShapeTensorArray):
        inner = kept.storage
        size = inner.type.list_size
        flat = np.zeros(len(valid) * size, dtype=inner.values.type.to_pandas_dtype())
        flat.reshape(len(valid), size)[valid] = inner.flatten().to_numpy(
            zero_copy_only=False).reshape(-1, size)
        rows = pa.FixedSizeListArray.from_arrays(pa.array(flat), size, mask=mask)
        return pa.ExtensionArray.from_storage(kept.type, rows)
    lengths = np.zeros(len(valid), dtype=np.int64)
    lengths[valid] = np.diff(kept.offsets.to_numpy())
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return pa.LargeListArray.from_arrays(pa.array(offsets), kept.flatten(), mask=mask)


def _fixed(storage: Any, shape: tuple[int | None, ...], levels: tuple[int | None, ...],
           what: str) -> tuple[Any, tuple[str, ...]]:
    """``storage`` (list levels of ``levels`` items, or one ``fixed_size_list``) as a
    canonical tensor of rows of ``shape``, or, where the first dimension is dynamic
    (``None``), a ``large_list`` of such items; zero-copy where no row is null. With why
    taking it apart copied (offsets rebased)."""
    pa, np = _pa(), _np()
    if pa.types.is_fixed_size_list(storage.type):  # its validity is the rows' own
        if storage.type.list_size != math.prod(shape):  # type: ignore[arg-type]
            raise MalformedError(f"{what}: its storage holds {storage.type.list_size} items "
                                 f"per row, its type says shape {shape}")
        return pa.ExtensionArray.from_storage(
            pa.fixed_shape_tensor(storage.type.value_type, list(shape)), storage), ()
    if storage.null_count:
        return _null_rows(lambda s: _fixed(s, shape, levels, what)[0], storage), ()
    offsets, leaf = _levels(storage, levels, what)
    if shape[0] is not None:
        return _tensor(leaf, tuple(shape)), ()  # type: ignore[arg-type]
    start = int(offsets[0]) if offsets.size else 0
    copied = (f"{what} is a slice: its {offsets.size} offsets are rebased to start at 0 (a "
              "copy of the offsets; the values are not copied)",) if start else ()
    offs = (offsets - start).astype(np.int64, copy=False)
    items = arrow_nested.levels(leaf, tuple(shape[1:]))
    return pa.LargeListArray.from_arrays(pa.array(offs), items), copied


# ---- variable shapes: a struct of the flat data and each row's shape ---------------------
def _rows(x: Any, storage: Any, read_shapes: Callable[[Any, Any, str], Any],
          what: str) -> Parts:
    """The ``"rows"`` parts of a struct storage whose ``data`` field holds each row's items
    (a list) and whose shapes ``read_shapes(storage, valid, what)`` reads (``rows x ndim``,
    zeros for a null row): one N-D view per row."""
    pa, np = _pa(), _np()
    data = storage.field("data")
    n = len(storage)
    valid = (storage.is_valid().to_numpy(zero_copy_only=False)
             & data.is_valid().to_numpy(zero_copy_only=False)) if (
        storage.null_count or data.null_count) else np.ones(n, dtype=bool)
    shapes = read_shapes(storage, valid, what)
    offs = data.offsets.to_numpy()
    lengths = np.where(valid, np.diff(offs), 0)
    sizes = shapes.prod(axis=1) if n else lengths
    if bool((sizes != lengths).any()):
        bad = int(np.argmax(sizes != lengths))
        raise MalformedError(f"{what}: row {bad} has shape {tuple(shapes[bad].tolist())} but "
                             f"holds {int(lengths[bad])} items: the storage contradicts its "
                             "shapes; rebuild the column with the library")
    starts = offs[:-1] - (offs[0] if n else 0)
    lo = int(offs[0]) if n else 0
    span = int(offs[-1] - offs[0]) if n else 0
    flat = pa.FixedSizeListArray.from_arrays(data.values.slice(lo, span), 1)
    p = arrow_nested.parts(flat)
    values = p.array("values").reshape(-1)
    nulls = _nulls_why(x) if (not valid.all() or p.nulls) else ""
    rows = tuple((i, values[s:s + int(k)].reshape(tuple(int(d) for d in shape)))
                 for i, (s, k, shape) in enumerate(zip(starts, sizes, shapes)))
    return Parts("rows", rows, (("type", _type_line(x)), ("ndim", shapes.shape[1])),
                 p.copied, nulls)


def _list_shapes(storage: Any, valid: Any, what: str) -> Any:
    """Each row's shape from the ``shape`` list field (Ray's, Daft's): ``rows x ndim``, the
    rows of one rank (a null row's shape may be empty: zeros)."""
    np = _np()
    field = storage.field("shape")
    offs = field.offsets.to_numpy()
    ranks = np.diff(offs)[valid]
    if ranks.size and bool((ranks != ranks[0]).any()):
        raise UnsupportedConversionError(f"{what}: its rows have different numbers of "
                                         "dimensions; select rows of one rank first")
    ndim = int(ranks[0]) if ranks.size else 0
    flat = np.asarray(field.values.to_numpy(zero_copy_only=False), dtype=np.int64)
    out = np.zeros((len(storage), ndim), dtype=np.int64)
    out[valid] = flat[offs[:-1][valid][:, None] + np.arange(ndim)]
    return out


def _image_shapes(storage: Any, valid: Any, what: str) -> Any:
    """Each row's ``(height, width, channel)`` from Daft's image struct (zeros: a null row)."""
    np = _np()
    out = np.stack([storage.field(f).fill_null(0).to_numpy(zero_copy_only=False)
                    .astype(np.int64) for f in ("height", "width", "channel")], axis=1)
    return np.where(valid[:, None], out.reshape(-1, 3), 0)


# ---- the libraries ---------------------------------------------------------------------------
def _ray_tensor(x: Any, storage: Any) -> tuple[Any, tuple[str, ...]]:
    meta = _meta(x.type)
    shape = tuple(meta if isinstance(meta, list) else getattr(x.type, "shape", ()))
    return _fixed(storage, shape, (math.prod(shape),), _describe(x))


def _ray_variable(x: Any, storage: Any) -> tuple[Parts, tuple[str, ...]]:
    return _rows(x, storage, _list_shapes, _describe(x)), ()


def _hf_array(x: Any, storage: Any) -> tuple[Any, tuple[str, ...]]:
    meta = _meta(x.type)
    shape = tuple(meta[0]) if isinstance(meta, list) else tuple(x.type.shape)
    return _fixed(storage, shape, shape, _describe(x))


_DAFT_CHANNELS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "L16": 1, "LA16": 2, "RGB16": 3,
                  "RGBA16": 4, "RGB32F": 3, "RGBA32F": 4}


def _daft(x: Any, storage: Any) -> tuple[Any, tuple[str, ...]]:
    meta = _meta(x.type)
    kind = meta.get("datatype") if isinstance(meta, dict) else None
    name, arg = next(iter(kind.items())) if isinstance(kind, dict) and kind else (kind, None)
    what = _describe(x)
    if name == "Embedding":
        return _fixed(storage, (int(arg[1]),), (), what)
    if name == "FixedShapeTensor":
        return _fixed(storage, tuple(arg[1]), (), what)
    if name == "FixedShapeImage":
        mode, h, w = arg
        return _fixed(storage, (int(h), int(w), _DAFT_CHANNELS[mode]), (), what)
    if name == "Tensor":
        return _rows(x, storage, _list_shapes, what), ()
    if name == "Image":
        return _rows(x, storage, _image_shapes, what), ()
    raise UnsupportedConversionError(
        f"{what}: Daft's {name or kind!r} columns hold no tensor interop reads (it reads "
        "Embedding, Tensor, FixedShapeTensor, Image and FixedShapeImage); convert the "
        "column with Daft first")


_HF = "datasets.features.features.Array{}DExtensionType"
READERS: dict[str, Callable[[Any, Any], tuple[Any, tuple[str, ...]]]] = {
    "ray.data.arrow_tensor": _ray_tensor,
    "ray.data.arrow_tensor_v2": _ray_tensor,
    "ray.data.arrow_variable_shaped_tensor": _ray_variable,
    **{_HF.format(d): _hf_array for d in (2, 3, 4, 5)},
    "daft.super_extension": _daft,
}
"""Extension name -> ``(array, storage)`` -> a canonical Arrow array over the same buffers
(read by :mod:`~interop.adapters.arrow_nested`) or the ``"rows"`` :class:`Parts`, and why
reading it copied."""


def ours(t: Any) -> bool:
    """Whether arrays of ``t`` are this kind's: an extension type other than the canonical
    tensor (which :mod:`~interop.adapters.arrow_nested` reads), read by :data:`READERS` or
    refused by name."""
    return extension_name(t) not in (None, arrow_nested.TENSOR)


# ---- the kind --------------------------------------------------------------------------------
def _type_line(x: Any) -> str:
    t = x.type
    meta = _meta(t)
    if isinstance(meta, dict):  # Daft's: its datatype (the rest names its build)
        meta = meta.get("datatype", meta)
    return (f"{extension_name(t)}" + (f" {json.dumps(meta)}" if meta is not None else "")
            + f" over {t.storage_type}")


def _nulls_why(x: Any) -> str:
    return (f"{_describe(x)} holds null rows, which a dense buffer cannot represent: drop or "
            "fill them first (pyarrow.compute.drop_null) or pass copy=True (a copy: a null "
            "row of a fixed shape becomes NaN, of a variable shape an empty array)")


def _storage(x: Any) -> tuple[Any, tuple[str, ...]]:
    """The storage of ``x`` (of a ChunkedArray's one chunk; several chunks' storages joined,
    a copy: the reason is returned)."""
    pa = _pa()
    if not isinstance(x, pa.ChunkedArray):
        return x.storage, ()
    if x.num_chunks == 1:
        return x.chunk(0).storage, ()
    if not x.num_chunks:
        return pa.array([], type=x.type.storage_type), ()
    return (pa.concat_arrays([c.storage for c in x.chunks]),
            (f"{_describe(x)} is split into {x.num_chunks} chunks; joining them copies",))


def _unknown(x: Any) -> str:
    t = x.type
    storage = ("its chunks' storage (chunk.storage)" if isinstance(x, _pa().ChunkedArray)
               else "its storage (x.storage)")
    return (f"{_describe(x)}: interop does not know the Arrow extension type "
            f"{extension_name(t)!r} (it reads Ray Data's, Hugging Face datasets' and Daft's "
            f"tensor types and arrow.fixed_shape_tensor); convert {storage} if its values "
            "are what you want, or cast it to a type interop reads")


def parts(x: Any, ragged: str | None = None, fill_value: Any = 0) -> Parts:
    """``x`` taken apart by its extension name's reader: ``"tensor"`` (one N-D array),
    ``"jagged"`` (values and offsets) or ``"rows"`` (one N-D array per row)."""
    t = x.type
    read = READERS.get(extension_name(t))
    if read is None:
        raise UnsupportedConversionError(_unknown(x))
    storage, joined = _storage(x)
    made, copied = read(x, storage)
    joined += copied
    if isinstance(made, Parts):
        if ragged not in (None, "list") or fill_value != 0:
            raise InteropError(f"{_describe(x)} has rows of different shapes: they convert "
                               "to one view per row (ragged=None or 'list'); ragged= "
                               "'offsets' and 'pad' take rows differing in their first "
                               "dimension only")
        return Parts(made.layout, made.arrays, made.meta, joined + made.copied, made.nulls)
    p = arrow_nested.parts(made, ragged, fill_value)
    meta = (("type", _type_line(x)), *((k, v) for k, v in p.meta if k != "type"))
    nulls = _nulls_why(x) if p.nulls else ""
    return Parts(p.layout, p.arrays, meta, joined + p.copied, nulls)


def rebuild(reg: RegistryLike, p: Parts, tgt: str) -> Any:
    """The converted parts on ``tgt``: one N-D array, the target's ragged type, or a list of
    one N-D array per row."""
    if p.layout != "rows":
        return arrow_nested.rebuild(reg, p, tgt)
    return [a for _, a in p.arrays]


def describe(reg: RegistryLike, p: Parts, tgt: str) -> str:
    if p.layout != "rows":
        return arrow_nested.describe(reg, p, tgt)
    return (f"{p.get('type')}: {len(p.arrays)} rows of their own shapes -> one "
            f"{p.get('ndim')}-D view per row (a list)")


ARROW_EXTENSIONS = CompositeAdapter(
    name="arrow-extension",
    modules=(),  # the libraries subclass pa.ExtensionArray in their own modules (ray., datasets.)
    package="pyarrow",
    is_value=instance_test("pyarrow", "ExtensionArray"),
    parts=parts,
    buffers=arrow_nested.buffers,
    rebuild=rebuild,
    describe=describe,
    options=arrow_nested.OPTIONS,
    home="pyarrow",
)
"""Arrow extension arrays other than ``arrow.fixed_shape_tensor`` (detected after
:data:`~interop.adapters.arrow_nested.ARROW_NESTED`, before the pyarrow arrays of one
buffer): the types of :data:`READERS`, and a clear refusal of any other."""
