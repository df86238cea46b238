"""CUDA Array Interface v3 validation: pure Python, so it runs on the CPU."""

from __future__ import annotations

import pytest

from interop.errors import InteropError, ProtocolError
from interop.protocols import cai


def good(**over):
    d = {"shape": (2, 3), "typestr": "<f4", "data": (0x1000, False), "version": 3,
         "strides": None, "stream": 1}
    d.update(over)
    return d


def test_valid_dict_gives_view_with_c_strides():
    v = cai.validate(good(), device=2)
    assert (v.ptr, v.shape, v.strides, v.itemsize, v.dtype) == (0x1000, (2, 3), (12, 4), 4, "<f4")
    assert v.device == ("cuda", 2) and v.readonly is False


def test_explicit_strides_and_readonly_kept():
    v = cai.validate(good(strides=(4, 8), data=(0x2000, True)))
    assert v.strides == (4, 8) and v.readonly is True and v.is_f_contiguous()


def test_empty_array_may_have_null_pointer():
    assert cai.validate(good(shape=(0, 3), data=(0, False))).size == 0


@pytest.mark.parametrize("key", ["shape", "typestr", "data", "version"])
def test_missing_required_key_is_named(key):
    d = good()
    del d[key]
    with pytest.raises(ProtocolError, match=repr(key)):
        cai.validate(d)


@pytest.mark.parametrize("over, key", [
    ({"shape": [2, 3]}, "shape"),
    ({"shape": (2, -1)}, "shape"),
    ({"shape": (2.0, 3)}, "shape"),
    ({"typestr": "f4"}, "typestr"),
    ({"typestr": "<x4"}, "typestr"),
    ({"typestr": "<f3"}, "typestr"),
    ({"typestr": ">f4"}, "typestr"),
    ({"data": 0x1000}, "data"),
    ({"data": (0x1000, 0)}, "data"),
    ({"data": (0, False)}, "data"),
    ({"data": (-8, False)}, "data"),
    ({"strides": (4,)}, "strides"),
    ({"strides": [12, 4]}, "strides"),
    ({"version": 4}, "version"),
    ({"version": "3"}, "version"),
    ({"stream": -1}, "stream"),
    ({"stream": "1"}, "stream"),
    ({"descr": "nope"}, "descr"),
])
def test_malformed_values_are_named(over, key):
    with pytest.raises(ProtocolError, match=f"'{key}'"):
        cai.validate(good(**over))


def test_mask_is_refused():
    with pytest.raises(ProtocolError, match="mask"):
        cai.validate(good(mask=object()))


def test_not_a_dict():
    with pytest.raises(ProtocolError, match="must be a dict"):
        cai.validate([("shape", (1,))])


def test_errors_are_interop_and_value_errors():
    with pytest.raises(InteropError):
        cai.validate(good(version=9))
    with pytest.raises(ValueError):
        cai.validate(good(version=9))


def test_stream_only_read_from_v3():
    assert cai.stream_of(good(stream=7)) == 7
    assert cai.stream_of(good(version=2, stream=7)) is None
    assert cai.stream_of(good(stream=None)) is None


def test_interface_of_wraps_a_raising_property():
    class Broken:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("driver gone")

    with pytest.raises(ProtocolError, match="driver gone"):
        cai.interface_of(Broken())


@pytest.mark.parametrize("env, off", [
    ({}, False),
    ({"NUMBA_CUDA_ARRAY_INTERFACE_SYNC": "0"}, True),
    ({"CUPY_CUDA_ARRAY_INTERFACE_SYNC": "0"}, True),
    ({"CUPY_CUDA_ARRAY_INTERFACE_SYNC": "1"}, False),
])
def test_sync_opt_out(env, off):
    assert cai.sync_disabled(env) is off
