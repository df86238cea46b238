"""Dask: convert the blocks of a dask array or the partitions of a dask dataframe, lazily.

    >>> import interop.dask                                            # doctest: +SKIP
    >>> t = interop.dask.to_delayed(dx, "torch")       # one Delayed torch tensor per block
    >>> c = interop.dask.to_framework(dx, "cupy", device="cuda")   # a dask array of CuPy
    >>> interop.dask.explain(dx, "torch")              # the plan for one block; computes nothing

Each block (partition) becomes ``interop.to_framework(block, target, ...)`` on the worker
that holds it, with the same zero-copy rules as a single value. Nothing is computed when the
call returns: the result is a new lazy dask object over the same graph.

* :func:`to_framework` returns a dask collection of the same kind when dask can hold the
  target's values as blocks -- a ``dask.array.Array`` for NumPy or CuPy blocks, a dask
  DataFrame/Series for pandas or cuDF partitions -- and otherwise (torch, JAX, pyarrow,
  polars, ``{column: tensor}`` dicts ...) what ``.to_delayed()`` gives: one
  ``dask.delayed.Delayed`` per block (an object ndarray shaped like the block grid for an
  array, a list for a dataframe).
* :func:`to_delayed` always returns the Delayed objects.
* :func:`explain` plans one block from the collection's ``_meta`` (an empty block of the same
  type and dtype) without computing anything, or a real block with ``block=``.

The target type of the result is checked on the client when the graph is built, by converting
the collection's empty ``_meta``: an unknown target, an unsupported dtype or a string column
raises at once, not inside a worker. Pass ``meta=`` (an empty value of the result type) to skip
that, e.g. for ``device="cuda"`` from a client without a GPU.

On a GPU cluster give every worker the shared pool with
``client.register_plugin(mempool.dask.RMMPoolPlugin("8GiB"))`` before computing: the
conversions then run inside the workers, allocating (when they must copy) from that pool.

Importing this module imports ``dask`` (not dask.array or dask.dataframe).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .errors import DeviceError, FrameworkMissingError, UnsupportedConversionError

try:
    import dask
except ImportError as exc:  # pragma: no cover - the dask extra is missing
    raise FrameworkMissingError(
        f"interop.dask needs dask ({exc}); pip install 'interop-mempool[dask]'"
    ) from exc

__all__ = ["explain", "to_delayed", "to_framework"]


def _convert(block: Any, target: str, device: Any, copy: bool | None,
             options: dict[str, Any], told: bool = False) -> Any:
    """The task run for every block: ``interop.to_framework`` on the worker. ``told``: the
    client already warned that the collection narrows (its ``_meta`` did), so a block does
    not warn again."""
    from .api import to_framework as convert

    if not told:
        return convert(block, target, device=device, copy=copy, **options)
    from .narrowing import gather

    with gather():
        return convert(block, target, device=device, copy=copy, **options)


def _convert_frame(part: Any, target: str, device: Any, copy: bool | None,
                   options: dict[str, Any], told: bool = False) -> Any:
    """The task for a partition that stays a dataframe: its index (and Series name) is kept.

    ``interop.to_framework`` converts the column buffers and gives the new frame a default
    index; dask places rows by their index (its divisions), so it is put back.
    """
    return _keep_index(part, _convert(part, target, device, copy, options, told))


def _keep_index(part: Any, out: Any) -> Any:
    if _framework(out) != _framework(part):
        return out
    index = getattr(part, "index", None)  # a DataFrame or Series; an Index is its own index
    if index is not None and not out.index.equals(index):
        out.index = index  # an Index is immutable: sharing it copies nothing
    if hasattr(part, "name") and out.name != part.name:  # a Series keeps its name
        out.name = part.name
    return out


def _framework(x: Any) -> str:
    return (type(x).__module__ or "").partition(".")[0]


# ---- what the collection is -------------------------------------------------------------
def _kind(x: Any, call: str, target: Any) -> str:
    """``"array"`` or ``"dataframe"``; anything else raises, naming the value and the fix."""
    mod = type(x).__module__ or ""
    name = f"{mod}.{type(x).__qualname__}"
    if mod.startswith("dask.array"):
        from dask.array import Array

        if isinstance(x, Array):
            return "array"
    if mod.startswith(("dask.dataframe", "dask_cudf")):
        from dask.dataframe import DataFrame, Index, Series

        if isinstance(x, (DataFrame, Series, Index)):
            return "dataframe"
    t = repr(target)
    if dask.is_dask_collection(x):
        if mod.startswith("dask.bag"):
            fix = f"map it: bag.map(interop.to_framework, {t})"
        elif mod.startswith("dask.delayed"):
            fix = f"wrap the call: dask.delayed(interop.to_framework)(value, {t})"
        else:
            fix = "convert it to a dask array or dataframe first, or map interop.to_framework"
        raise UnsupportedConversionError(
            f"interop.dask.{call} takes a dask Array, DataFrame, Series or Index, got a {name} "
            f"(a dask collection with no blocks of one array type); {fix}")
    raise UnsupportedConversionError(
        f"interop.dask.{call} takes a dask Array, DataFrame, Series or Index, got a {name}, "
        f"which is not a dask collection: call interop.to_framework(x, {t}) for a single "
        f"value, or make it lazy first (dask.array.from_array(x, chunks=...), "
        f"dask.dataframe.from_pandas(df, npartitions=...))")


def _check(collection: Any, target: Any, call: str, copy: Any) -> tuple[str, str]:
    from .api import REGISTRY

    kind = _kind(collection, call, target)
    if copy not in (None, True, False):
        from .errors import InteropError

        raise InteropError(f"copy must be None, True or False, got {copy!r}")
    return kind, REGISTRY.target(target)


def _holds(kind: str, meta: Any) -> bool:
    """Whether dask can keep values like ``meta`` as the blocks of a ``kind`` collection."""
    if kind == "array":
        from dask.array.chunk_types import is_valid_chunk_type

        return is_valid_chunk_type(type(meta))
    from dask.dataframe.utils import is_dataframe_like, is_index_like, is_series_like

    return is_dataframe_like(meta) or is_series_like(meta) or is_index_like(meta)


def _meta_of(collection: Any, kind: str, target: str, device: Any, copy: bool | None,
             options: dict[str, Any], call: str) -> Any:
    """The converted empty ``_meta``: the result type, checked on the client."""
    from .api import to_framework as convert

    src = collection._meta
    try:
        return convert(src, target, device=device, copy=copy, **options)
    except Exception as exc:
        what = "block" if kind == "array" else "partition"
        tp = type(src)
        note = (f"interop.dask.{call}, checked on this client with the collection's _meta (an "
                f"empty {tp.__module__}.{tp.__qualname__} {what}): {exc}")
        if isinstance(exc, FrameworkMissingError) or (
                isinstance(exc, DeviceError) and device not in (None, "cpu")):
            note += ("; if the workers have what this client lacks, pass meta= (an empty "
                     "value of the result type) to build the graph without this check")
        try:
            err = type(exc)(note)
        except Exception:  # an exception type with another signature: keep it as it is
            raise exc from None
        raise err from exc


# ---- the calls ----------------------------------------------------------------------------
def to_framework(collection: Any, target: str, *, device: str | None = None,
                 copy: bool | None = None, meta: Any = None, **options: Any) -> Any:
    """Lazily convert every block (partition) of ``collection`` to framework ``target``.

    Arguments as :func:`interop.to_framework` (``copy``, ``device``, and for dataframes
    ``columns=``, ``nulls=``, ``fill_value=``), applied per block on the worker. Returns a dask
    array (NumPy, CuPy blocks) or dask dataframe (pandas, cuDF partitions) when dask can hold
    the result, else one ``Delayed`` per block as :func:`to_delayed`. Computes nothing.
    """
    kind, tgt = _check(collection, target, "to_framework", copy)
    told = meta is None  # the client converts the _meta: a narrowing is told there, once
    out_meta = meta if meta is not None else _meta_of(collection, kind, tgt, device, copy,
                                                      options, "to_framework")
    if not _holds(kind, out_meta):
        return _delayed(collection, kind, tgt, device, copy, options, told)
    token = f"interop-to-{tgt}"
    if kind == "array":
        return collection.map_blocks(_convert, target=tgt, device=device, copy=copy,
                                     options=options, told=told, meta=out_meta,
                                     dtype=getattr(out_meta, "dtype", None), token=token)
    if meta is None:
        out_meta = _keep_index(collection._meta, out_meta)
    # Across frameworks (pandas -> cuDF) the index is not carried over: row positions are
    # kept, the divisions are not.
    across = _framework(out_meta) != _framework(collection._meta)
    return collection.map_partitions(_convert_frame, tgt, device, copy, options, told,
                                     meta=out_meta, clear_divisions=across)


def to_delayed(collection: Any, target: str, *, device: str | None = None,
               copy: bool | None = None, meta: Any = None, **options: Any) -> Any:
    """One ``dask.delayed.Delayed`` per block, each computing to a ``target`` value.

    Like ``collection.to_delayed()``: an object ndarray shaped like the block grid for a dask
    array, a list (one per partition) for a dask dataframe. ``client.compute(result)`` keeps
    every converted block on the worker that made it (futures); ``dask.compute(*result)``
    brings them all here. Computes nothing itself.
    """
    kind, tgt = _check(collection, target, "to_delayed", copy)
    if meta is None:
        _meta_of(collection, kind, tgt, device, copy, options, "to_delayed")
    return _delayed(collection, kind, tgt, device, copy, options, meta is None)


def _delayed(collection: Any, kind: str, tgt: str, device: Any, copy: bool | None,
             options: dict[str, Any], told: bool) -> Any:
    from dask.base import tokenize

    task = dask.delayed(_convert, pure=True)
    name = f"interop-to-{tgt}-" + tokenize(collection, tgt, device, copy, options)
    parts = collection.to_delayed()
    if kind == "dataframe":
        return [task(p, tgt, device, copy, options, told, dask_key_name=(name, i))
                for i, p in enumerate(parts)]
    import numpy as np

    out = np.empty(parts.shape, dtype=object)
    for idx in np.ndindex(parts.shape):
        out[idx] = task(parts[idx], tgt, device, copy, options, told,
                        dask_key_name=(name, *idx))
    return out


def explain(collection: Any, target: str, *, device: str | None = None,
            copy: bool | None = None, block: Any = None, **options: Any) -> Any:
    """The plan :func:`to_framework` follows for one block (partition); converts nothing.

    ``block=None`` plans the collection's ``_meta`` (an empty block of the same type and
    dtype) and computes nothing: the path, the protocol, dtype problems and hazards are those
    of every block, but a real block's strides, alignment or nulls can still force a copy
    (a note in ``reasons`` says so). ``block=`` an index (``0``, ``(1, 2)`` for an array's
    block grid, a partition number for a dataframe) computes that one block and plans it.
    """
    from .api import explain as plan_of

    kind, tgt = _check(collection, target, "explain", copy)
    if block is None:
        src = collection._meta
        plan = plan_of(src, tgt, device=device, copy=copy, **options)
        what = "block" if kind == "array" else "partition"
        obstacles = ("strides or alignment" if kind == "array" else "nulls, chunks or strides")
        tp = type(src)
        note = (f"planned on the collection's _meta (an empty {tp.__module__}."
                f"{tp.__qualname__}); a real {what}'s {obstacles} can still force a copy: "
                f"interop.dask.explain(..., block=0) plans a real one")
        return replace(plan, reasons=(*plan.reasons, note))
    if kind == "array":
        if isinstance(block, int):
            block = (block,) + (0,) * (collection.ndim - 1)
        part = collection.blocks[block]
    else:
        part = collection.partitions[block]
    return plan_of(part.compute(), tgt, device=device, copy=copy, **options)
