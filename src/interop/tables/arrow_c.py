"""The Arrow PyCapsule interface: any object speaking it, read through pyarrow's importers.

* ``__arrow_c_array__`` (nanoarrow ``Array``, arro3 ``RecordBatch``, ...): ``pyarrow.array``
  imports it without copying; a struct array is a record batch (``RecordBatch.from_struct_array``,
  zero-copy), anything else is one array.
* ``__arrow_c_stream__`` (DuckDB relations, nanoarrow ``ArrayStream``, arro3 ``Table``, ...):
  ``pyarrow.RecordBatchReader.from_stream`` reads it; every batch becomes a chunk of each
  column, so a stream of one batch converts zero-copy and several batches cost one join.
  Reading consumes a one-shot stream, so ``explain`` reads only its schema.
* ``__arrow_c_device_array__`` (Arrow C Device Data Interface): a CPU device imports like
  ``__arrow_c_array__``; a CUDA device is imported by pyarrow as ``pyarrow.cuda`` buffers and
  each fixed-width column is handed on as a ``__cuda_array_interface__`` over its data buffer,
  a ``fixed_size_list`` or tensor column as the N-D interface of its values
  (:class:`interop.adapters.arrow_nested.DeviceRows`) (needs a GPU; never run on the CPU-only test
  machine).
"""

from __future__ import annotations

from typing import Any

from ..errors import ProtocolError, UnsupportedConversionError

ARROW_DEVICE_CPU = 1
ARROW_DEVICE_CUDA = 2


def has_array(x: Any) -> bool:
    return hasattr(type(x), "__arrow_c_array__")


def has_stream(x: Any) -> bool:
    return hasattr(type(x), "__arrow_c_stream__")


def has_device_array(x: Any) -> bool:
    return hasattr(type(x), "__arrow_c_device_array__")


def is_arrow_c(x: Any) -> bool:
    """Speaks any of the three capsule protocols (and is not a DLPack capsule)."""
    return has_array(x) or has_stream(x) or has_device_array(x)


def import_array(x: Any) -> Any:
    """A ``pyarrow.RecordBatch`` (struct data) or ``pyarrow.Array`` from ``__arrow_c_array__``."""
    import pyarrow as pa

    try:
        arr = pa.array(x)
    except Exception as e:
        raise ProtocolError(f"{type(x).__name__}.__arrow_c_array__ could not be imported: "
                            f"{e}") from e
    if pa.types.is_struct(arr.type):
        return pa.RecordBatch.from_struct_array(arr)
    return arr


def import_stream(x: Any) -> Any:
    """A ``pyarrow.RecordBatchReader`` over ``__arrow_c_stream__`` (not read yet)."""
    import pyarrow as pa

    try:
        return pa.RecordBatchReader.from_stream(x)
    except Exception as e:
        raise ProtocolError(f"{type(x).__name__}.__arrow_c_stream__ could not be imported: "
                            f"{e}") from e


def schema_of(x: Any) -> Any:
    """The schema without reading data: ``__arrow_c_schema__`` if offered, else ``None``."""
    import pyarrow as pa

    if hasattr(type(x), "__arrow_c_schema__"):
        try:
            return pa.schema(x)
        except Exception:
            return None
    return None


def import_device_array(x: Any) -> tuple[Any, int, int]:
    """``(RecordBatch or Array, device_type, device_id)`` from ``__arrow_c_device_array__``."""
    import pyarrow as pa

    schema_capsule, array_capsule = x.__arrow_c_device_array__()
    try:
        batch = pa.RecordBatch._import_from_c_device_capsule(schema_capsule, array_capsule)
    except Exception:  # not a struct: one array
        schema_capsule, array_capsule = x.__arrow_c_device_array__()
        batch = pa.Array._import_from_c_device_capsule(schema_capsule, array_capsule)
    dev = getattr(batch, "device_type", None)
    kind = ARROW_DEVICE_CPU if dev is None else int(getattr(dev, "value", dev))
    return batch, kind, 0


def device_typestr(t: Any) -> str:
    """The NumPy type string of an Arrow type whose values buffer is laid out as that NumPy
    dtype (integers and floats); any other type is refused, naming it: a device buffer cannot
    be reinterpreted on the host (booleans are bit-packed, dates and times are counts in a
    unit, strings are offsets plus bytes)."""
    import pyarrow as pa

    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return _numeric_typestr(t)
    if pa.types.is_boolean(t):
        fix = "bit-packed: cast it to uint8 or int8 on the device first"
    elif pa.types.is_temporal(t):
        fix = ("a count of time units, not a NumPy datetime buffer: cast it to its integer "
               "storage type (e.g. int32 for date32) on the device first")
    else:
        fix = "not one fixed-width values buffer: cast or encode it on the device first"
    raise UnsupportedConversionError(f"a device Arrow column of type {t} is {fix}")


def _numeric_typestr(t: Any) -> str:
    import pyarrow as pa

    n = t.bit_width // 8
    kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
    return f"{'|' if n == 1 else '<'}{kind}{n}"


class CudaColumn:  # pragma: no cover - needs a GPU and pyarrow built with CUDA
    """A fixed-width Arrow column on a CUDA device as ``__cuda_array_interface__`` (v3)."""

    def __init__(self, arr: Any) -> None:
        import numpy as np

        if arr.null_count:
            raise UnsupportedConversionError(
                "a device Arrow column with nulls: fill them on the device first")
        dtype = np.dtype(device_typestr(arr.type))
        data = arr.buffers()[1]
        self._keep = (arr, data)
        self.__cuda_array_interface__ = {
            "shape": (len(arr),), "typestr": dtype.str, "version": 3, "strides": None,
            "data": (int(data.address) + arr.offset * dtype.itemsize, False),
        }


def device_columns(batch: Any) -> list[tuple[str, Any]]:  # pragma: no cover - needs a GPU
    """``[(name, CuPy array)]`` over each column's device buffer (through its CAI), for a
    record batch imported from a CUDA device."""
    import cupy

    from .columns import _arrow_kind

    # list and tensor columns stay Arrow arrays: the nested composite reads their device
    # buffers (interop.adapters.arrow_nested.DeviceRows)
    return [(f.name, batch.column(i) if _arrow_kind(f.type) == "nested"
             else cupy.asarray(CudaColumn(batch.column(i))))
            for i, f in enumerate(batch.schema)]
