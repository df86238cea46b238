"""Findings from reading the installed sources (issue 16, item 7), judged on the CPU.

cuDF, a CUDA build of pyarrow and a device are absent here, so the GPU-side calls are made
against named stand-ins that record what interop asked for; the decisions are interop's own.
"""

from __future__ import annotations

import sys
import types

import pyarrow as pa
import pytest
import torch

from interop import devices
from interop.adapters import cudf_
from interop.api import REGISTRY
from interop.errors import DeviceError, UnsupportedConversionError
from interop.tables import arrow_device, build
from machine import machine


@pytest.mark.parametrize(("t", "ts"), [
    (pa.int8(), "|i1"), (pa.uint16(), "<u2"), (pa.int32(), "<i4"), (pa.int64(), "<i8"),
    (pa.float16(), "<f2"), (pa.float32(), "<f4"), (pa.float64(), "<f8")])
def test_device_arrow_fixed_width_columns_keep_their_layout(t, ts):
    assert arrow_device.device_typestr(t) == ts


@pytest.mark.parametrize(("t", "words"), [
    (pa.bool_(), "bit-packed"), (pa.date32(), "int32 for date32"),
    (pa.timestamp("us"), "count of time units"), (pa.string(), "fixed-width values buffer"),
    (pa.large_string(), "fixed-width values buffer"),
    (pa.list_(pa.int32()), "fixed-width values buffer")])
def test_device_arrow_columns_not_laid_out_as_numpy_are_refused(t, words):
    with pytest.raises(UnsupportedConversionError, match=str(t).replace("[", r"\[")) as e:
        arrow_device.device_typestr(t)
    assert words in str(e.value), e.value


class _Recorder:
    """Named stand-in for ``cudf``: records each ``Series(...)`` call's keywords."""

    def __init__(self):
        self.calls = []
        recorder = self

        class Series:
            def __init__(self, data, **kw):
                recorder.calls.append(kw)
                self.data = data

        self.module = types.ModuleType("cudf")
        self.module.Series = Series
        self.module.DataFrame = dict


class _Device:
    def __init__(self, index):
        self.index = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def cudf_standin(monkeypatch):
    rec = _Recorder()
    monkeypatch.setitem(sys.modules, "cudf", rec.module)
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(Device=_Device)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return rec


class _DeviceBuffer:
    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (0x7F0000000000, False),
                                "version": 3, "strides": None}


def test_cudf_columns_keep_nan_as_a_value(cudf_standin):
    import numpy as np

    cudf_.from_cai(_DeviceBuffer())
    cudf_.to_device(np.array([1.0, np.nan]), 0)
    assert cudf_standin.calls == [{"nan_as_null": False}, {"nan_as_null": False}]


class _GradLike(torch.Tensor):
    """A tensor whose ``__cuda_array_interface__`` raises RuntimeError, as torch's does for a
    CUDA tensor that requires grad. It says it is torch's, as a real tensor's type does."""

    __module__ = "torch"

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")


def test_building_a_cudf_table_never_probes_the_cuda_array_interface(cudf_standin):
    col = torch.arange(3.0).as_subclass(_GradLike)
    if machine().count:  # the host column moved to the device, into the stand-in cuDF
        assert list(build.build(REGISTRY, {"a": col}, "cudf")) == ["a"]
    else:  # no CUDA device: the host column cannot be moved, and interop says so
        with pytest.raises(DeviceError, match="no CUDA device"):
            build.build(REGISTRY, {"a": col}, "cudf")


class AsTensorStandIn:
    """``torch.as_tensor`` of a CAI producer as torch does it: ``torch.set_default_device``
    puts its device into every ``as_tensor`` call without one (``torch/utils/_device.py``,
    ``DeviceContext``), and ``internal_new_from_data`` (``torch/csrc/utils/tensor_new.cpp``)
    then ``.to()``s the tensor read from the pointers there: a copy (another device), nothing
    (``"meta"``), or the same memory (its own device). Records what it did."""

    def __init__(self, default, pointer_device):
        self.default, self.pointer_device, self.calls = default, pointer_device, []

    def __call__(self, obj, device=None, **kw):
        device = torch.device(device if device is not None else self.default)
        own = torch.device("cuda", self.pointer_device)
        what = "same memory" if device == own else "data lost" if device.type == "meta" \
            else "copied"
        self.calls.append((str(device), what))
        return types.SimpleNamespace(device=device)


@pytest.mark.parametrize("default", ["cpu", "meta", "cuda:1", "cuda:0"])
def test_cai_into_torch_names_the_pointers_device_whatever_torchs_default(monkeypatch,
                                                                           default):
    """Before, ``torch.as_tensor(obj)`` took torch's default device: a silent copy to the
    host under ``"cpu"``, the data lost under ``"meta"``, a copy to another GPU under
    ``"cuda:1"``. Now the pointer's own device is named (asked of the CUDA runtime)."""
    from interop import devices
    from interop.adapters import torch_

    as_tensor = AsTensorStandIn(default, pointer_device=0)
    monkeypatch.setattr(torch, "as_tensor", as_tensor)
    monkeypatch.setattr(devices, "pointer_device", lambda ptr: 0)
    t = torch_._from_cai(_DeviceBuffer())
    assert as_tensor.calls == [("cuda:0", "same memory")] and t.device == torch.device("cuda", 0)


def test_read_only_cai_into_torch_goes_through_a_writable_alias(monkeypatch):
    from interop.adapters import torch_

    class ReadOnly:
        __cuda_array_interface__ = dict(_DeviceBuffer.__cuda_array_interface__,
                                        data=(0x7F0000000000, True))

    seen = []
    monkeypatch.setattr(torch, "as_tensor", lambda obj, **kw: seen.append(obj) or "t")
    monkeypatch.setattr(devices, "pointer_device", lambda ptr: 0)
    src = ReadOnly()
    torch_._from_cai(src)
    alias = seen[0]
    assert alias.__cuda_array_interface__["data"] == (0x7F0000000000, False)
    assert alias.owner is src  # keeps the producer alive


def test_cai_stream_makes_torch_wait(monkeypatch):
    from interop.adapters import torch_

    class OnStream:
        __cuda_array_interface__ = dict(_DeviceBuffer.__cuda_array_interface__, stream=0x1234)

    waits = []

    class External:
        def __init__(self, ptr, device=None):
            self.ptr, self.device = ptr, "cuda:0"

    class Current:
        def wait_stream(self, s):
            waits.append(s.ptr)

    monkeypatch.setattr(torch.cuda, "ExternalStream", External)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: Current())
    monkeypatch.setattr(torch, "as_tensor", lambda obj, **kw: types.SimpleNamespace(device=None))
    monkeypatch.setattr(devices, "pointer_device", lambda ptr: 0)
    torch_._from_cai(OnStream())
    assert waits == [0x1234]
    monkeypatch.setenv("CUPY_CUDA_ARRAY_INTERFACE_SYNC", "0")
    torch_._from_cai(OnStream())
    assert waits == [0x1234]  # the user's opt-out is honoured



def test_pointer_device_without_cupy_asks_cuda_bindings(monkeypatch):
    """Without CuPy the pointer's device is asked of ``cuda.bindings.runtime``
    (``cudaPointerGetAttributes``: ``(err, attributes)``, numba-cuda's dependency); neither
    installed is a DeviceError naming both."""
    from interop.errors import DeviceError

    class RuntimeStandIn:
        cudaError_t = types.SimpleNamespace(cudaSuccess=0)

        @staticmethod
        def cudaPointerGetAttributes(ptr):
            return 0, types.SimpleNamespace(device=3)

        @staticmethod
        def cudaGetDevice():
            return 0, 2

    bindings = types.ModuleType("cuda.bindings")
    bindings.runtime = RuntimeStandIn
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    assert devices.pointer_device(0x7F0000000000) == 3 and devices.pointer_device(0) == 2
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    with pytest.raises(DeviceError, match="needs CuPy or cuda-bindings"):
        devices.pointer_device(0x7F0000000000)
