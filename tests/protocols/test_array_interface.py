"""CPU producers through the buffer protocol and ``__array_interface__``; malformed dicts."""

from __future__ import annotations

import array
import ctypes

import numpy as np
import pytest

import interop
import oracles
from helpers import aligned, data_pointer
from interop.errors import ProtocolError
from interop.protocols import array_interface

torch = pytest.importorskip("torch")


class Iface:
    """A minimal producer exposing only ``__array_interface__`` over a NumPy buffer."""

    def __init__(self, base, **override):
        self.base = base
        ai = dict(base.__array_interface__)
        ai.update(override)
        self.__array_interface__ = ai


def _address(buf) -> int:
    return ctypes.addressof((ctypes.c_char * len(memoryview(buf).cast("B"))).from_buffer(buf))


# ---- buffer protocol ------------------------------------------------------------------

@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_bytearray_zero_copy(target):
    buf = bytearray(range(16))
    out = interop.to_framework(buf, target)
    assert data_pointer(out) == _address(buf)
    assert list(np.asarray(out)) == list(range(16))
    buf[3] = 200  # a write through the producer shows in the result
    assert int(np.asarray(out)[3]) == 200


def test_array_module_doubles():
    buf = array.array("d", [1.5, 2.5, 3.5])
    out = interop.to_framework(buf, "numpy")
    assert out.dtype == np.float64 and out.tolist() == [1.5, 2.5, 3.5]
    assert data_pointer(out) == buf.buffer_info()[0]
    out[0] = 9.0
    assert buf[0] == 9.0


def test_read_only_buffer_stays_read_only():
    out = interop.to_framework(b"\x01\x02\x03", "numpy")
    assert not out.flags.writeable and out.tolist() == [1, 2, 3]
    data = b"\x01\x02\x03"
    plan = interop.explain(data, "torch")
    assert plan.zero_copy and any("read-only" in h for h in plan.hazards), plan
    t = interop.to_framework(data, "torch")
    assert t.tolist() == [1, 2, 3]
    assert t.data_ptr() == np.frombuffer(data, np.uint8).ctypes.data  # NumPy's own view


def test_memoryview_of_strided_buffer():
    base = aligned(np.arange(12, dtype=np.int32))
    mv = memoryview(base)[::3]
    out = interop.to_framework(mv, "numpy")
    assert out.tolist() == [0, 3, 6, 9] and data_pointer(out) == data_pointer(base)
    base[3] = -3  # a write through the buffer's owner, read in the result
    assert out[1] == -3
    t = interop.to_framework(mv, "torch")
    assert t.tolist() == [0, -3, 6, 9]


# ---- __array_interface__ --------------------------------------------------------------

@pytest.mark.parametrize("target", ["numpy", "torch", "jax"])
def test_array_interface_producer_zero_copy(target):
    base = aligned(np.arange(12, dtype=np.float32).reshape(3, 4))
    out = interop.to_framework(Iface(base), target)
    np.testing.assert_array_equal(np.asarray(out), base)
    assert data_pointer(out) == data_pointer(base)
    base[0, 0] = 42.0
    assert float(np.asarray(out)[0, 0]) == 42.0


def test_array_interface_strides_honoured():
    base = aligned(np.arange(12, dtype=np.float64).reshape(3, 4))
    view = base[:, ::2]
    out = interop.to_framework(Iface(view), "numpy")
    np.testing.assert_array_equal(out, view)
    assert data_pointer(out) == data_pointer(base)
    base[1, 2] = -1.0  # the second column of the view: the strides were read, not assumed
    assert out[1, 1] == -1.0


def test_array_interface_read_only_flag():
    base = aligned(np.arange(4.0))
    p = Iface(base, data=(data_pointer(base), True))
    out = interop.to_framework(p, "numpy")
    assert not out.flags.writeable and data_pointer(out) == data_pointer(base)
    base[0] = 9.0  # the owner may still write: the read-only view sees it
    assert out[0] == 9.0


def test_array_interface_negative_strides_to_torch_copy():
    base = aligned(np.arange(6.0))
    p = Iface(base[::-1])
    t = interop.to_framework(p, "torch")
    assert t.tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
    assert not oracles.shares(t, base)


# ---- malformed dicts ------------------------------------------------------------------

_BASE = aligned(np.arange(4.0))
_PTR = data_pointer(_BASE)

MALFORMED = [
    ("not-a-dict", ["a", "b"], "must be a dict"),
    ("no-shape", {"typestr": "<f8", "data": (_PTR, False), "version": 3}, "'shape'"),
    ("no-typestr", {"shape": (4,), "data": (_PTR, False), "version": 3}, "'typestr'"),
    ("shape-list", {"shape": [4], "typestr": "<f8", "data": (_PTR, False)}, "['shape']"),
    ("shape-float", {"shape": (4.0,), "typestr": "<f8", "data": (_PTR, False)}, "['shape']"),
    ("shape-negative", {"shape": (-1,), "typestr": "<f8", "data": (_PTR, False)},
     "['shape']"),
    ("typestr-bad", {"shape": (4,), "typestr": "<f9", "data": (_PTR, False)},
     "['typestr']"),
    ("typestr-kind", {"shape": (4,), "typestr": "<z8", "data": (_PTR, False)}, "['typestr']"),
    ("typestr-type", {"shape": (4,), "typestr": 8, "data": (_PTR, False)}, "['typestr']"),
    ("typestr-object", {"shape": (4,), "typestr": "|O8", "data": (_PTR, False)},
     "object references"),
    ("descr-object", {"shape": (4,), "typestr": "|V8", "descr": [("a", "|O8")],
                      "data": (_PTR, False)}, "object references"),
    ("version", {"shape": (4,), "typestr": "<f8", "data": (_PTR, False), "version": 2},
     "version"),
    ("strides-len", {"shape": (4,), "typestr": "<f8", "data": (_PTR, False),
                     "strides": (8, 8)}, "['strides']"),
    ("strides-list", {"shape": (4,), "typestr": "<f8", "data": (_PTR, False),
                      "strides": [8]}, "['strides']"),
    ("data-one", {"shape": (4,), "typestr": "<f8", "data": (_PTR,)}, "['data']"),
    ("data-flag", {"shape": (4,), "typestr": "<f8", "data": (_PTR, 0)}, "['data']"),
    ("data-null", {"shape": (4,), "typestr": "<f8", "data": (0, False)}, "NULL"),
    ("mask", {"shape": (4,), "typestr": "<f8", "data": (_PTR, False),
              "mask": np.zeros(4, bool)}, "mask"),
]


class Raw:
    def __init__(self, ai):
        self.__array_interface__ = ai
        self.keep = _BASE


@pytest.mark.parametrize(("ai", "key"), [pytest.param(ai, key, id=name)
                                          for name, ai, key in MALFORMED])
def test_malformed_interface_names_the_key(ai, key):
    obj = Raw(ai)
    with pytest.raises(ProtocolError) as ei:
        array_interface.validate(obj)
    assert key in str(ei.value) and "Raw" in str(ei.value)
    for target in ("numpy", "torch"):
        with pytest.raises(ProtocolError, match=key.replace("[", r"\[").replace("]", r"\]")):
            interop.to_framework(Raw(ai), target)


def test_interface_property_that_raises():
    class Boom:
        @property
        def __array_interface__(self):
            raise RuntimeError("device lost")

    with pytest.raises(ProtocolError, match="device lost"):
        array_interface.validate(Boom())


def test_valid_interface_passes_validation():
    ai = array_interface.validate(Iface(_BASE))
    assert ai["shape"] == (4,) and ai["typestr"] == "<f8"


def test_view_of_numpy_describes_the_buffer():
    a = aligned(np.arange(12, dtype=np.int16).reshape(3, 4))[:, ::2]
    v = array_interface.view_of_numpy(a)
    assert (v.ptr, v.shape, v.strides, v.itemsize, v.dtype) == (
        data_pointer(a), (3, 2), (8, 4), 2, "<i2")
    assert not v.readonly and not v.is_c_contiguous()
    a.flags.writeable = False
    assert array_interface.view_of_numpy(a).readonly


@pytest.mark.parametrize(("typestr", "dtype"), [("=f", np.float32), ("=d", np.float64),
                                                ("f8", np.float64), ("<i", np.int32),
                                                ("=f8", np.float64), ("|S8", "S8")])
def test_a_typestr_numpy_reads_is_read(typestr, dtype):
    """A typestr NumPy reads (``'=f'``: native float32, with no size) is read, over the
    producer's memory, as NumPy reads it; ``explain`` and ``can_convert`` agree."""
    want = np.dtype(dtype)
    obj = Raw({"shape": (32 // want.itemsize,), "typestr": typestr, "data": (_PTR, False),
               "version": 3})
    out = interop.to_framework(obj, "numpy")
    assert out.dtype == want and out.ctypes.data == _PTR
    assert interop.can_convert(obj, "numpy") and interop.explain(obj, "numpy").zero_copy
