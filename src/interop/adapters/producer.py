"""Any other object: a CUDA Array Interface producer, a DLPack producer, or a CPU buffer
(array interface, buffer protocol).

These are sources only (so is :class:`interop.Jagged`, values and offsets). Device
buffers go to the GPU consumers over the CUDA Array Interface
(CuPy, the GPU hub, and Numba wait on the producer's ``stream`` themselves; torch is made to
wait by its adapter); host buffers are read through NumPy, which consumes both host protocols.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from .. import devices
from ..protocols import array_interface, cai, dlpack
from ..view import BufferView
from .base import STEP_COPIES, ArrayAdapter, CompositeAdapter, Edge, fixed
from .ragged import Jagged, describe_jagged, jagged_parts, rebuild_jagged


def _is_cai_producer(x: Any) -> bool:
    try:
        return hasattr(x, "__cuda_array_interface__")
    except Exception:  # the property raises: it claims the interface; validate() says why
        return True


def _cai_view(x: Any) -> BufferView:
    view = cai.validate(cai.interface_of(x), who=type(x).__name__)
    index = devices.pointer_device(view.ptr)
    return view if index == view.device[1] else replace(view, device=("cuda", index))


def _cai_to_numpy(x: Any) -> Any:
    """A host copy (the ``device="cpu"`` route), read through CuPy, which waits on ``stream``."""
    import cupy

    _cai_view(x)
    return cupy.asnumpy(cupy.asarray(x))


def _is_dlpack_producer(x: Any) -> bool:
    return hasattr(type(x), "__dlpack__") and hasattr(type(x), "__dlpack_device__")


def _is_buffer(x: Any) -> bool:
    try:
        if hasattr(x, "__array_interface__"):
            return True
    except Exception:  # the property raises: it claims the interface; validate() says why
        return True
    try:
        memoryview(x)
    except TypeError:
        return False
    except Exception:  # the type has a buffer slot that fails: it claims the protocol, and
        return True  # the conversion names the failure (as an interop error)
    return True


def _producer_view(x: Any) -> BufferView:
    """The view of the producer's capsule, which must hold memory on the device its
    ``__dlpack_device__`` names (consumers trust it to pick their import path: a lie crashes
    them)."""
    view = dlpack.inspect_capsule(dlpack.export(x)).view
    dev = dlpack.device_of(x)
    declared = dlpack.device_name(dev[0])
    if view.device[0] != declared:
        raise dlpack.ProtocolError(
            f"{type(x).__name__}.__dlpack_device__() says {declared} ({dev}) but its capsule "
            f"holds {view.device[0]} memory")
    return view


def _producer_to_numpy(x: Any) -> Any:
    import numpy as np

    dev = dlpack.device_of(x)
    if dlpack.device_name(dev[0]) != "cpu":
        from ..errors import DeviceError

        raise DeviceError(f"{type(x).__name__} lives on device {dev}; NumPy reads host memory")
    # interop's reader validates the capsule (NULL data, shape, dtype) before NumPy sees it
    arr = dlpack.to_numpy(dlpack.export(x))
    if not isinstance(arr, np.ndarray):  # pragma: no cover
        raise dlpack.ProtocolError(f"{type(x).__name__} did not give an array")
    return arr


def _buffer_to_numpy(x: Any) -> Any:
    import numpy as np

    try:
        has_ai = hasattr(x, "__array_interface__")
    except Exception:
        has_ai = True
    if _viewed_scalar(x):  # its own memory, read-only (its __array_interface__ is a copy)
        return np.asarray(memoryview(x))
    if has_ai and not _numpy_scalar(x):  # NumPy reads its other scalars (str_, datetime64)
        array_interface.validate(x)
    try:
        # a plain buffer (bytes, bytearray, array.array) is read through memoryview: NumPy
        # would copy bytes into an "|S" scalar array instead of viewing them
        return np.asarray(x if has_ai else memoryview(x))
    except (ValueError, TypeError, BufferError) as e:
        raise array_interface.ProtocolError(
            f"NumPy cannot read {type(x).__name__} as an array: {type(e).__name__}: {e}") from e


def _numpy_scalar(x: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.generic)


def _viewed_scalar(x: Any) -> bool:
    """Whether ``x`` is a NumPy scalar of a number (bool, integer, float, complex), whose
    memory is handed over as it is, read-only, as NumPy exports it over DLPack
    (``np.from_dlpack(np.float64(1.0))``): read through its buffer protocol, a 0-d
    read-only array over the scalar's own memory, keeping the scalar alive."""
    return _numpy_scalar(x) and x.dtype.kind in "biufc"


def _buffer_check(x: Any) -> tuple[str, str] | None:
    """A NumPy scalar of no number (a string, a date, a record) holds a value NumPy reads
    into a new array (the step's own copy); any other buffer, a number's scalar included, is
    viewed as it is."""
    if _numpy_scalar(x) and not _viewed_scalar(x):
        return STEP_COPIES, (f"a NumPy scalar ({type(x).__name__}) is read by NumPy into a "
                             "new array (only a number's scalar is handed over as it is)")
    return None


def _buffer_view(x: Any) -> BufferView:
    """The view of the memory NumPy reads the buffer from (none for a NumPy scalar of no
    number: each read of it is a new array)."""
    if _numpy_scalar(x) and not _viewed_scalar(x):
        raise array_interface.ProtocolError(f"a NumPy scalar ({type(x).__name__}) has no "
                                            "buffer of its own")
    return array_interface.view_of_numpy(_buffer_to_numpy(x))


CAI_PRODUCER = ArrayAdapter(
    name="cai-producer",
    target=False,
    modules=(),
    package="cupy",
    devices=("cuda",),
    is_value=_is_cai_producer,
    view=_cai_view,
    device=lambda x: _cai_view(x).device,
    to_numpy=_cai_to_numpy,
    export_cai=lambda x: x,
)

def _producer_device(x: Any) -> tuple[str, int]:
    """Where the producer's ``__dlpack_device__`` says its memory is."""
    code, index = dlpack.device_of(x)
    return dlpack.device_name(code), index


PRODUCER = ArrayAdapter(
    name="dlpack-producer",
    target=False,
    modules=(),
    package="numpy",
    devices=("cpu", "cuda"),
    device=_producer_device,
    is_value=_is_dlpack_producer,
    view=_producer_view,
    to_numpy=_producer_to_numpy,
    export_dlpack=lambda x: x,
    edges=lambda: [Edge("dlpack-producer", "numpy", "numpy.from_dlpack",
                        fixed(_producer_to_numpy))],
)

BUFFER = ArrayAdapter(
    name="buffer",
    target=False,
    modules=(),
    package="numpy",
    is_value=_is_buffer,
    view=_buffer_view,
    to_numpy=_buffer_to_numpy,
    edges=lambda: [Edge("buffer", "numpy", "numpy.asarray (array interface / buffer protocol)",
                        fixed(_buffer_to_numpy), check=_buffer_check)],
)

JAGGED = CompositeAdapter(
    name="jagged",
    is_value=lambda x: type(x) is Jagged,
    parts=jagged_parts,
    rebuild=rebuild_jagged,
    describe=lambda reg, p, tgt: describe_jagged(reg, p, tgt, "interop.Jagged"),
    devices=("cpu", "cuda"),
)
"""A ragged batch as :class:`interop.Jagged` values and offsets (what a list column
or a jagged tensor gives a framework without a ragged type): converted to torch or pyarrow,
that framework's ragged type."""

ADAPTERS = [JAGGED, CAI_PRODUCER, PRODUCER, BUFFER]
