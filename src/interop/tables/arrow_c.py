"""The Arrow PyCapsule interface: any object speaking it, read through pyarrow's importers.

* ``__arrow_c_array__`` (nanoarrow ``Array``, arro3 ``RecordBatch``, ...): ``pyarrow.array``
  imports it without copying; a struct array is a record batch (``RecordBatch.from_struct_array``,
  zero-copy), anything else is one array.
* ``__arrow_c_stream__`` (DuckDB relations, nanoarrow ``ArrayStream``, arro3 ``Table``, ...):
  ``pyarrow.RecordBatchReader.from_stream`` reads it; every batch becomes a chunk of each
  column, so a stream of one batch converts zero-copy and several batches cost one join.
  Reading consumes a one-shot stream, so ``explain`` reads only its schema.
* ``__arrow_c_device_array__`` (Arrow C Device Data Interface): a CPU device imports like
  ``__arrow_c_array__``; a CUDA device is read from its C structs (:mod:`.arrow_device`:
  pyarrow's wheels cannot import it), after waiting on the producer's ``sync_event``, and each
  fixed-width column is handed on as a ``__cuda_array_interface__`` over its data buffer, a
  ``fixed_size_list`` or tensor column as the N-D interface of its values (needs a GPU for the
  data; the reading is tested on the CPU with structs labelled CUDA).
"""

from __future__ import annotations

from typing import Any

from ..errors import ProtocolError

ARROW_DEVICE_CPU = 1


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
    """``(batch, device_type, device_id)`` from ``__arrow_c_device_array__``: on the CPU a
    ``RecordBatch`` or ``Array`` imported by pyarrow, on CUDA an
    :class:`~.arrow_device.DeviceBatch` read from the C structs, on another device ``None``."""
    from . import arrow_device

    schema_capsule, array_capsule = x.__arrow_c_device_array__()
    struct = arrow_device.device_struct(array_capsule)
    kind, device = int(struct.device_type), int(struct.device_id)
    if kind == arrow_device.CUDA:
        return arrow_device.read(schema_capsule, array_capsule, struct), kind, device
    if kind != ARROW_DEVICE_CPU:
        return None, kind, device
    import pyarrow as pa

    try:
        batch = pa.RecordBatch._import_from_c_device_capsule(schema_capsule, array_capsule)
    except Exception:  # not a struct: one array
        schema_capsule, array_capsule = x.__arrow_c_device_array__()
        batch = pa.Array._import_from_c_device_capsule(schema_capsule, array_capsule)
    return batch, kind, device


def device_columns(batch: Any) -> list[tuple[str, Any]]:  # pragma: no cover - needs a GPU
    """``[(name, CuPy array)]`` over each column's device buffer (through its CAI, which names
    the stream that waited on the producer's ``sync_event``), for an array imported from a
    CUDA device, made on the device that holds it."""
    import cupy

    from .arrow_device import wait_event

    stream = wait_event(batch)
    with cupy.cuda.Device(batch.device_id):
        return [(name, cupy.asarray(col)) for name, col in batch.columns(stream)]
