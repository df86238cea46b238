"""The Arrow C Device Data Interface on CUDA, read from its C structs, judged on the CPU.

No device here: the producer is pyarrow's own ``__arrow_c_device_array__`` of a host record
batch whose ``ArrowDeviceArray`` is then labelled as the spec's CUDA device
(``device_type`` 2, a ``device_id``, a ``sync_event``), as cuDF's ``to_arrow_device.cu``
exports one; the "device" addresses are host memory, so what interop reads through them is
checked against pyarrow's own ``to_pylist``. CuPy is a stand-in (``CupyStreamStandIn``) that
records the device, the stream and the event waits interop asks for. Before, pyarrow's
``_import_from_c_device_capsule`` raised ``ArrowKeyError: Device type 2 is not registered``
(``arrow/device.cc`` ``GetDeviceMapper``: CUDA's mapper is registered by ``pyarrow.cuda``
only, which pyarrow's wheels do not have), and the device id was always 0.
"""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pyarrow as pa
import pytest

from interop.errors import UnsupportedConversionError
from interop.tables import arrow_c


class _Array(ctypes.Structure):  # arrow/c/abi.h, read here apart from interop's reader
    pass


_Array._fields_ = [(n, ctypes.c_int64) for n in ("length", "null_count", "offset", "n_buffers",
                                                 "n_children")] + [
    ("buffers", ctypes.c_void_p), ("children", ctypes.POINTER(ctypes.POINTER(_Array))),
    ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p)]


class _DeviceArray(ctypes.Structure):
    _fields_ = [("array", _Array), ("device_id", ctypes.c_int64),
                ("device_type", ctypes.c_int32), ("sync_event", ctypes.c_void_p),
                ("reserved", ctypes.c_int64 * 3)]


def _struct(capsule):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return _DeviceArray.from_address(get(capsule, b"arrow_device_array"))


class CudaProducerStandIn:
    """``__arrow_c_device_array__`` of ``batch`` with its ``ArrowDeviceArray`` relabelled as on
    CUDA device ``device_id`` (``arrow/c/abi.h``), with ``sync_event`` (a ``cudaEvent_t*``)
    and, per column, a ``null_count`` written into the child struct."""

    def __init__(self, batch, device_id=1, event=None, null_counts=None):
        self.batch, self.device_id, self.null_counts = batch, device_id, null_counts or {}
        self.event = None if event is None else ctypes.c_void_p(event)  # the cudaEvent_t

    def __arrow_c_device_array__(self, requested_schema=None, **kw):
        schema, array = self.batch.__arrow_c_device_array__(requested_schema, **kw)
        struct = _struct(array)
        struct.device_type, struct.device_id = 2, self.device_id
        struct.sync_event = ctypes.addressof(self.event) if self.event is not None else None
        for i, n in self.null_counts.items():
            struct.array.children[i].contents.null_count = n
        return schema, array


def _host(cai):
    """The values a CUDA Array Interface names, read where they really are (host memory)."""
    dtype = np.dtype(cai["typestr"])
    shape, strides = cai["shape"], cai["strides"]
    if strides is None:
        strides = tuple(dtype.itemsize * int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    extent = sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize if all(shape) \
        else 0
    raw = (ctypes.c_char * extent).from_address(cai["data"][0]) if extent else b""
    return np.ndarray(shape, dtype, np.frombuffer(raw, np.uint8) if extent else None, 0, strides)


def _sample():
    tensor = pa.fixed_shape_tensor(pa.float32(), (2, 3), permutation=[1, 0])
    storage = pa.array([list(range(6)), list(range(6, 12))], pa.list_(pa.float32(), 6))
    return pa.record_batch({
        "i": pa.array([1, 2], pa.int32()),
        "f": pa.array([0.5, 1.5], pa.float64()),
        "rows": pa.array([[1, 2, 3], [4, 5, 6]], pa.list_(pa.int16(), 3)),
        "grid": pa.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
                         pa.list_(pa.list_(pa.float64(), 2), 2)),
        "t": pa.ExtensionArray.from_storage(tensor, storage),
    })


def test_a_cuda_device_array_is_read_from_its_structs_without_pyarrow_cuda():
    rb = _sample()
    batch, kind, device = arrow_c.import_device_array(CudaProducerStandIn(rb, device_id=1))
    assert (kind, device) == (2, 1)  # the producer's device id, not 0
    assert batch.device_id == 1
    cols = dict(batch.columns(stream=None))
    assert list(cols) == rb.schema.names
    for name in ("i", "f"):
        cai = cols[name].__cuda_array_interface__
        assert cai["data"] == (rb.column(name).buffers()[1].address, True)  # pyarrow's own
        assert cai["stream"] is None and cai["version"] == 3
        assert _host(cai).tolist() == rb.column(name).to_pylist()
    assert _host(cols["rows"].__cuda_array_interface__).tolist() == rb.column("rows").to_pylist()
    assert _host(cols["grid"].__cuda_array_interface__).tolist() == rb.column("grid").to_pylist()
    t = cols["t"].__cuda_array_interface__  # the tensor type's own numpy view is the oracle
    np.testing.assert_array_equal(_host(t), rb.column("t").to_numpy_ndarray())
    assert t["strides"] is not None


def test_a_sliced_cuda_array_starts_at_its_offsets():
    rb = _sample().slice(1, 1)
    batch, _, _ = arrow_c.import_device_array(CudaProducerStandIn(rb))
    for name, col in batch.columns(stream=None):
        if name != "t":
            assert _host(col.__cuda_array_interface__).tolist() == rb.column(name).to_pylist()


def test_one_cuda_array_not_a_batch_is_one_column():
    arr = pa.array([3.0, 4.0])
    batch, kind, _ = arrow_c.import_device_array(CudaProducerStandIn(arr, device_id=0))
    ((name, col),) = batch.columns(stream=None)
    assert kind == 2 and _host(col.__cuda_array_interface__).tolist() == [3.0, 4.0]


@pytest.mark.parametrize(("count", "refused"), [(-1, "an unknown number of"), (1, "1"),
                                                (0, None)])
def test_a_device_validity_bitmap_is_judged_from_the_struct_never_by_pyarrow(count, refused):
    """A producer may export ``null_count`` -1 (unknown): pyarrow would count the bitmap's bits
    on the host, at a device address. The struct's count and bitmap pointer decide: a bitmap
    with a count other than 0 is refused; a count of 0 is trusted."""
    rb = pa.record_batch({"a": pa.array([1.0, None, 3.0]), "b": pa.array([1, 2, 3])})
    holder = CudaProducerStandIn(rb, null_counts={0: count})
    batch, _, _ = arrow_c.import_device_array(holder)
    if refused is None:
        (name, col), _ = batch.columns(stream=None)
        assert name == "a" and col.__cuda_array_interface__["shape"] == (3,)
        return
    with pytest.raises(UnsupportedConversionError, match=f"'a'.*holds {refused} nulls in a "
                                                         "validity bitmap on the device"):
        batch.columns(stream=None)


class CupyStreamStandIn:
    """The CuPy calls interop makes for a CUDA device array (CuPy 14.2): ``cuda.Device(i)`` as a
    context (the current device), ``cuda.get_current_stream()`` (that device's current stream,
    ``ptr`` its handle), ``cuda.runtime.streamWaitEvent(stream, event, flags=0)``
    (``cupy_backends/cuda/api/runtime.pyx``) and ``asarray`` of a CAI; each is recorded with
    the device current when it ran."""

    def __init__(self):
        self.log, self.current = [], 0
        standin = self

        class Device:
            def __init__(self, i):
                self.i = i

            def __enter__(self):
                self.before, standin.current = standin.current, self.i

            def __exit__(self, *exc):
                standin.current = self.before

        class Stream:
            def __init__(self, ptr):
                self.ptr = ptr

        def wait(stream, event, flags=0):
            self.log.append(("streamWaitEvent", self.current, stream, event))

        self.module = types.ModuleType("cupy")
        self.module.cuda = types.SimpleNamespace(
            Device=Device, runtime=types.SimpleNamespace(streamWaitEvent=wait),
            get_current_stream=lambda: Stream(0x5000 + self.current))
        self.module.asarray = lambda obj: self.log.append(
            ("asarray", self.current, obj.__cuda_array_interface__["stream"])) or obj


@pytest.fixture
def cupy_standin(monkeypatch):
    standin = CupyStreamStandIn()
    monkeypatch.setitem(sys.modules, "cupy", standin.module)
    return standin


def test_the_producers_sync_event_is_waited_on_and_the_columns_name_that_stream(cupy_standin):
    """The spec: a consumer MUST wait on ``sync_event`` before reading. CuPy's current stream
    on the array's device waits on the event (``cudaStreamWaitEvent``, no host wait), and each
    column's CAI names that stream, so its consumer orders its reads after it; the columns are
    made on the array's device (1, not the current 0)."""
    rb = pa.record_batch({"a": pa.array([1.0, 2.0]), "b": pa.array([1, 2])})
    producer = CudaProducerStandIn(rb, device_id=1, event=0xE7E7)  # its event lives with it
    batch, _, _ = arrow_c.import_device_array(producer)
    cols = arrow_c.device_columns(batch)
    assert [n for n, _ in cols] == ["a", "b"]
    assert cupy_standin.log == [("streamWaitEvent", 1, 0x5001, 0xE7E7),
                                ("asarray", 1, 0x5001), ("asarray", 1, 0x5001)]


def test_without_a_sync_event_nothing_is_waited_on(cupy_standin):
    rb = pa.record_batch({"a": pa.array([1.0, 2.0])})
    batch, _, _ = arrow_c.import_device_array(CudaProducerStandIn(rb, device_id=0))
    arrow_c.device_columns(batch)
    assert cupy_standin.log == [("asarray", 0, None)]


def test_another_device_type_is_refused_naming_it():
    import interop

    class OnMetal(CudaProducerStandIn):
        def __arrow_c_device_array__(self, requested_schema=None, **kw):
            schema, array = super().__arrow_c_device_array__(requested_schema, **kw)
            _struct(array).device_type = 8  # ARROW_DEVICE_METAL
            return schema, array

    with pytest.raises(UnsupportedConversionError, match="Arrow device type 8 is not supported"):
        interop.to_framework(OnMetal(pa.record_batch({"a": pa.array([1.0])})), "numpy")


class _PyarrowDeviceColumnStandIn:
    """A pyarrow array on a CUDA device (``pyarrow.cuda``): ``is_cpu`` False; its
    ``null_count`` of an unknown count would make pyarrow count the bitmap's bits on the
    host, at a device address (a segfault), so reading it fails the test."""

    type = pa.list_(pa.float32(), 2)
    is_cpu = False

    @property
    def null_count(self):
        raise AssertionError("pyarrow would count a device bitmap's bits on the host")


def test_a_pyarrow_device_column_is_not_asked_its_null_count():
    from interop.tables import columns

    prep = columns._prepare_nested("a", _PyarrowDeviceColumnStandIn(), "raise", None, False,
                                   columns.Prepared())
    assert prep.error is None and isinstance(prep.value, _PyarrowDeviceColumnStandIn)


# ---- a random search over batches (hypothesis) ---------------------------------------------
import os  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

LEAVES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
          pa.uint32(), pa.uint64(), pa.float16(), pa.float32(), pa.float64()]
EXAMPLES = int(os.environ.get("DEVICE_ARROW_EXAMPLES", "60"))
"""The CI profile: 60 derandomized cases; by hand, more with fresh seeds
(``DEVICE_ARROW_EXAMPLES=2000 pytest ... --hypothesis-seed=N``)."""


@st.composite
def device_batches(draw):
    n = draw(st.integers(0, 12))
    cols = {}
    for i in range(draw(st.integers(1, 4))):
        leaf = draw(st.sampled_from(LEAVES))
        sizes = draw(st.lists(st.integers(1, 3), max_size=2))
        tensor = draw(st.booleans()) and not sizes
        count = n
        for d in sizes:
            count *= d
        if tensor:
            shape = draw(st.sampled_from([(2, 3), (3, 1, 2)]))
            count = n * int(np.prod(shape))
        values = pa.array(np.arange(count) % 97, leaf)
        nulls = draw(st.integers(0, 2)) if count else 0
        if nulls:  # some leaf values null: the column's leaf has a validity bitmap
            mask = np.zeros(count, bool)
            mask[: min(nulls, count)] = True
            values = pa.array(np.arange(count) % 97, leaf, mask=mask)
        arr = values
        for d in reversed(sizes):
            arr = pa.FixedSizeListArray.from_arrays(arr, d)
        if tensor:
            perm = draw(st.permutations(range(len(shape))))
            t = pa.fixed_shape_tensor(leaf, shape, permutation=list(perm))
            arr = pa.ExtensionArray.from_storage(
                t, pa.FixedSizeListArray.from_arrays(values, int(np.prod(shape))))
        cols[f"c{i}"] = arr
    rb = pa.record_batch(cols)
    lo = draw(st.integers(0, n))
    return rb.slice(lo, draw(st.integers(0, n - lo)))


def _nulls_in(col):
    """Whether a level of ``col`` exports a null count other than 0, asked of pyarrow on the
    host (the oracle): the column's own rows, and each child array whole (a child is exported
    whole, its offset into it: its count covers values outside the rows the column spans,
    and the bitmap that would tell them apart lives on the device, so that column is
    refused too)."""
    while True:
        if col.null_count:
            return True
        extension = isinstance(col.type, pa.BaseExtensionType)
        t = col.type.storage_type if extension else col.type
        if not pa.types.is_fixed_size_list(t):
            return False
        col = (col.storage if extension else col).values


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 60,
          suppress_health_check=[HealthCheck.too_slow])
@given(device_batches())
def test_random_device_batches_read_as_pyarrow_reads_them(rb):
    """Every column read from the structs (labelled CUDA) holds what pyarrow's own
    ``to_pylist`` / ``to_numpy_ndarray`` says, whatever its offset and nesting; a column with
    nulls anywhere in what it spans is refused."""
    batch, kind, _ = arrow_c.import_device_array(CudaProducerStandIn(rb))
    assert kind == 2
    for (name, arr, t) in batch.named_arrays():
        col = rb.column(name)
        if _nulls_in(col):
            with pytest.raises(UnsupportedConversionError, match="nulls in a validity bitmap"):
                arrow_device_column(arr, t, name, batch)
            continue
        got = _host(arrow_device_column(arr, t, name, batch).__cuda_array_interface__)
        if isinstance(t, pa.FixedShapeTensorType) and len(col) and (
                len(t.shape) == 2 or t.permutation in (None, sorted(t.permutation))):
            np.testing.assert_array_equal(got, col.to_numpy_ndarray())
        elif isinstance(t, pa.FixedShapeTensorType) and len(col):
            # pyarrow 26's to_numpy_ndarray reads past the buffer for a 3-D permutation
            # such as [1, 2, 0] (values not in the array, or "strides must not involve buffer
            # over run"): a pyarrow bug, found by this search. The storage's rows, laid out
            # as interop's host path reads them (arrow_nested._tensor), are the oracle here.
            rows = col.storage.flatten().to_numpy(zero_copy_only=False).reshape(
                len(col), *t.shape)
            np.testing.assert_array_equal(got, rows.transpose(
                0, *(p + 1 for p in t.permutation)))
        elif isinstance(t, pa.FixedShapeTensorType):  # pyarrow makes no ndarray of no rows
            assert got.shape[0] == 0 and sorted(got.shape[1:]) == sorted(t.shape)
        else:
            assert got.tolist() == col.to_pylist(), name


def arrow_device_column(arr, t, name, batch):
    from interop.tables.arrow_device import DeviceColumn

    return DeviceColumn(arr, t, name, None, batch)
