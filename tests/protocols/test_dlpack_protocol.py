"""DLPack 1.x as code: device and dtype tables, export negotiation, both capsule kinds,
consumed capsules, ml_dtypes types into NumPy and the read-only flag."""

from __future__ import annotations

import ctypes
import gc
import weakref

import ml_dtypes
import numpy as np
import pytest

import interop
from helpers import aligned, data_pointer
from interop.errors import (
    CapsuleConsumedError,
    InteropError,
    ProtocolError,
    UnsupportedConversionError,
)
from interop.protocols import dlpack
from interop.protocols.dlpack import Code, Device
from matrix_samples import as_numpy

torch = pytest.importorskip("torch")
jnp = pytest.importorskip("jax.numpy")


# ---- code tables (dlpack.h) ---------------------------------------------------------------

@pytest.mark.parametrize(("member", "code"), [
    ("CPU", 1), ("CUDA", 2), ("CUDA_HOST", 3), ("OPENCL", 4), ("VULKAN", 7), ("METAL", 8),
    ("VPI", 9), ("ROCM", 10), ("ROCM_HOST", 11), ("EXT_DEV", 12), ("CUDA_MANAGED", 13),
    ("ONE_API", 14), ("WEBGPU", 15), ("HEXAGON", 16), ("MAIA", 17),
])
def test_device_codes(member, code):
    assert Device[member] == code


@pytest.mark.parametrize(("code", "name"), [
    (1, "cpu"), (3, "cpu"), (11, "cpu"), (2, "cuda"), (13, "cuda"), (10, "rocm"), (4, "other"),
])
def test_device_names(code, name):
    assert dlpack.device_name(code) == name


@pytest.mark.parametrize(("member", "code"), [
    ("INT", 0), ("UINT", 1), ("FLOAT", 2), ("OPAQUE_HANDLE", 3), ("BFLOAT", 4),
    ("COMPLEX", 5), ("BOOL", 6), ("FLOAT8_E3M4", 7), ("FLOAT8_E4M3", 8),
    ("FLOAT8_E4M3B11FNUZ", 9), ("FLOAT8_E4M3FN", 10), ("FLOAT8_E4M3FNUZ", 11),
    ("FLOAT8_E5M2", 12), ("FLOAT8_E5M2FNUZ", 13), ("FLOAT8_E8M0FNU", 14),
    ("FLOAT6_E2M3FN", 15), ("FLOAT6_E3M2FN", 16), ("FLOAT4_E2M1FN", 17),
])
def test_dtype_codes(member, code):
    assert Code[member] == code


DTYPE_TABLE = [
    ("|b1", (6, 8, 1)), ("|i1", (0, 8, 1)), ("<i2", (0, 16, 1)), ("<i4", (0, 32, 1)),
    ("<i8", (0, 64, 1)), ("|u1", (1, 8, 1)), ("<u2", (1, 16, 1)), ("<u4", (1, 32, 1)),
    ("<u8", (1, 64, 1)), ("<f2", (2, 16, 1)), ("<f4", (2, 32, 1)), ("<f8", (2, 64, 1)),
    ("<c8", (5, 64, 1)), ("<c16", (5, 128, 1)), ("bfloat16", (4, 16, 1)),
    ("float8_e4m3fn", (10, 8, 1)), ("float8_e5m2", (12, 8, 1)),
    ("float8_e4m3fnuz", (11, 8, 1)), ("float8_e5m2fnuz", (13, 8, 1)),
    ("float8_e4m3b11fnuz", (9, 8, 1)), ("float8_e3m4", (7, 8, 1)),
    ("float8_e4m3", (8, 8, 1)), ("float8_e8m0fnu", (14, 8, 1)),
]


@pytest.mark.parametrize(("typestr", "dl"), DTYPE_TABLE)
def test_dtype_table_round_trip(typestr, dl):
    assert dlpack.dtype_to_dl(typestr) == dl
    assert dlpack.dtype_from_dl(*dl) == typestr
    dt = dlpack.numpy_dtype(typestr)
    assert dt.itemsize * 8 == dl[1]
    assert dlpack.typestr_of(dt) == typestr


def test_typestr_of_big_endian_is_normalised():
    assert dlpack.typestr_of(np.dtype(">f4")) == "<f4"


@pytest.mark.parametrize(("args", "words"), [
    ((2, 32, 4), "lanes=4"),
    ((int(Code.FLOAT4_E2M1FN), 4, 1), "FLOAT4_E2M1FN"),
    ((int(Code.FLOAT6_E2M3FN), 6, 1), "FLOAT6_E2M3FN"),
    ((2, 24, 1), "bits=24"),
    ((int(Code.OPAQUE_HANDLE), 64, 1), "OPAQUE_HANDLE"),
    ((99, 8, 1), "99"),
])
def test_unsupported_dl_dtypes_are_named(args, words):
    with pytest.raises(UnsupportedConversionError, match=words):
        dlpack.dtype_from_dl(*args)


def test_unknown_typestr_is_named():
    with pytest.raises(UnsupportedConversionError, match="<m8"):
        dlpack.dtype_to_dl("<m8")


TORCH_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
                "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                "float8_e5m2fnuz"]


@pytest.mark.parametrize("name", TORCH_DTYPES)
def test_table_matches_a_real_producer(name):
    """torch's own capsules decode to the dtype the table names, pointer and shape intact.
    Only the float8 types, which older torch releases do not export, may be refused by
    torch (reported as a skip); a refusal of any other type fails."""
    t = torch.zeros((2, 3), dtype=getattr(torch, name))
    try:
        capsule = t.__dlpack__(max_version=(1, 1))
    except (BufferError, RuntimeError, TypeError) as e:
        if not name.startswith("float8"):
            raise
        pytest.skip(f"torch {torch.__version__} exports no {name} over DLPack: {e}")
    info = dlpack.inspect_capsule(capsule)
    assert dlpack.numpy_dtype(info.view.dtype) == _np_dtype(name)
    assert info.view.ptr == t.data_ptr() and info.view.shape == (2, 3)
    assert info.versioned and info.version[0] == 1


def _np_dtype(name):
    return np.dtype(getattr(ml_dtypes, name, None) or name)


# ---- __dlpack_device__ ------------------------------------------------------------------

class _Dev:
    def __init__(self, dev):
        self.dev = dev

    def __dlpack_device__(self):
        return self.dev


@pytest.mark.parametrize("bad", [[1, 0], (1,), (1, 0, 0), ("cpu", 0), (1.0, 0), None])
def test_device_of_rejects_malformed(bad):
    with pytest.raises(ProtocolError, match="__dlpack_device__"):
        dlpack.device_of(_Dev(bad))


def test_device_of_unknown_code_and_missing():
    with pytest.raises(ProtocolError, match="unknown device 42"):
        dlpack.device_of(_Dev((42, 0)))
    with pytest.raises(ProtocolError, match="no __dlpack_device__"):
        dlpack.device_of(object())
    assert dlpack.device_of(_Dev((1, 0))) == (1, 0)


class _PybindEnum:
    """A device type as a pybind11 enum is (DALI's ``DLDeviceType``): not an ``int`` subclass,
    but ``__index__``, ``__int__``, ``.value``, and equal (and hashed) as its integer."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value

    __int__ = __index__

    def __eq__(self, other):
        try:
            return self.value == int(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.value)


def test_device_of_reads_an_enum_as_the_frameworks_do():
    assert dlpack.device_of(_Dev((_PybindEnum(1), 0))) == (1, 0)
    assert dlpack.device_of(_Dev((Device.CUDA, _PybindEnum(3)))) == (2, 3)
    with pytest.raises(ProtocolError, match="unknown device 42"):
        dlpack.device_of(_Dev((_PybindEnum(42), 0)))


# ---- export: version negotiation --------------------------------------------------------

class Modern:
    """A DLPack 1.x producer that records how it was called."""

    def __init__(self, a):
        self.a = a
        self.calls = []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"stream": stream, "max_version": max_version, "copy": copy})
        if max_version is None:
            return self.a.__dlpack__()
        return self.a.__dlpack__(max_version=max_version)

    def __dlpack_device__(self):
        return (1, 0)


class Legacy:
    """A pre-1.0 producer: no ``max_version`` keyword (calling with it is a TypeError)."""

    def __init__(self, a):
        self.a = a
        self.calls = 0

    def __dlpack__(self, stream=None):
        self.calls += 1
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_export_asks_for_max_version():
    p = Modern(aligned(np.arange(4.0)))
    capsule = dlpack.export(p)
    assert p.calls == [{"stream": None, "max_version": dlpack.MAX_VERSION, "copy": None}]
    assert dlpack.inspect_capsule(capsule).versioned


def test_export_falls_back_to_legacy_on_type_error():
    p = Legacy(aligned(np.arange(4.0)))
    capsule = dlpack.export(p)
    assert p.calls == 1
    info = dlpack.inspect_capsule(capsule)
    assert not info.versioned and info.version is None


def test_export_legacy_when_asked():
    p = Modern(aligned(np.arange(4.0)))
    dlpack.export(p, versioned=False)
    assert p.calls[0]["max_version"] is None


def test_export_passes_stream_only_when_given():
    p = Modern(aligned(np.arange(4.0)))
    dlpack.export(p, stream=None)
    dlpack.export(p, stream=-1)
    assert p.calls[0]["stream"] is None and p.calls[1]["stream"] == -1


def test_export_does_not_swallow_other_errors():
    class Broken(Modern):
        def __dlpack__(self, **kw):
            raise BufferError("cannot export")

    with pytest.raises((BufferError, ProtocolError), match="cannot export"):
        dlpack.export(Broken(None))


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_NAME = ctypes.c_char_p(b"not_a_tensor")


@pytest.mark.parametrize("ret", ["string", "capsule"])
def test_export_rejects_what_is_not_a_dltensor(ret):
    keep = ctypes.c_int(0)
    value = "hello" if ret == "string" else _PyCapsule_New(ctypes.addressof(keep), _NAME, None)

    class Liar(Modern):
        def __dlpack__(self, **kw):
            return value

    with pytest.raises(ProtocolError, match="dltensor") as ei:
        dlpack.export(Liar(None))
    assert ("not_a_tensor" in str(ei.value)) == (ret == "capsule")


@pytest.mark.parametrize("cls", [Modern, Legacy])
def test_generic_producers_convert_zero_copy(cls):
    a = aligned(np.arange(6.0, dtype=np.float32))
    p = cls(a)
    outs = {}
    for target in ("numpy", "torch", "jax"):
        outs[target] = out = interop.to_framework(p, target)
        assert data_pointer(out) == data_pointer(a), target
        np.testing.assert_array_equal(np.asarray(out), a)
    a[0] = 42  # a write through the source, read through each result's own API
    for target, out in outs.items():
        assert np.asarray(as_numpy(out))[0] == 42, target


class EnumDevice(Legacy):
    """A legacy producer whose ``__dlpack_device__`` gives a pybind11-style enum, as DALI's
    ``TensorCPU`` does: NumPy, torch and JAX read it, and so does interop."""

    def __dlpack_device__(self):
        return (_PybindEnum(1), 0)


def test_enum_device_type_producer_converts_zero_copy():
    a = aligned(np.arange(6.0, dtype=np.float32))
    p = EnumDevice(a)
    for native in (np.from_dlpack, torch.from_dlpack, jnp.from_dlpack):  # the frameworks do
        assert data_pointer(native(EnumDevice(a))) == data_pointer(a)
    outs = {t: interop.to_framework(p, t) for t in ("numpy", "torch", "jax")}
    for target, out in outs.items():
        assert data_pointer(out) == data_pointer(a), target
    a[0] = 42
    for target, out in outs.items():
        assert np.asarray(as_numpy(out))[0] == 42, target


# ---- both capsule kinds -------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["dltensor", "dltensor_versioned"])
@pytest.mark.parametrize("target", ["numpy", "torch", "jax", "pyarrow", "pandas", "polars"])
def test_both_capsule_kinds(kind, target):
    a = aligned(np.arange(8, dtype=np.float32))
    capsule = a.__dlpack__() if kind == "dltensor" else a.__dlpack__(max_version=(1, 0))
    assert dlpack._capsule_name(capsule) == kind.encode()
    info = dlpack.inspect_capsule(capsule)
    assert info.versioned == (kind == "dltensor_versioned")
    assert (info.view.ptr, info.view.shape, info.view.dtype) == (data_pointer(a), (8,), "<f4")
    plan = interop.explain(capsule, target)
    out = interop.to_framework(capsule, target)
    np.testing.assert_array_equal(np.asarray(out), a)
    assert plan.zero_copy
    assert data_pointer(out) == data_pointer(a)
    assert dlpack._capsule_name(capsule) == b"used_" + kind.encode()
    a[0] = 42  # a write through the source, read through the result's own API
    assert np.asarray(as_numpy(out))[0] == 42


def test_capsule_producer_rules():
    capsule = aligned(np.arange(3.0)).__dlpack__(max_version=(1, 0))
    prod = dlpack.CapsuleProducer(capsule)
    assert prod.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="legacy"):
        prod.__dlpack__()
    with pytest.raises(BufferError, match="copied"):
        prod.__dlpack__(max_version=(1, 0), copy=True)
    assert prod.__dlpack__(max_version=(1, 0)) is capsule
    with pytest.raises(BufferError, match="already"):
        prod.__dlpack__(max_version=(1, 0))


# ---- consumed capsules ------------------------------------------------------------------

@pytest.mark.parametrize("consumer", ["interop", "torch", "numpy"])
@pytest.mark.parametrize("versioned", [False, True])
def test_consumed_capsule_is_an_error_not_a_crash(consumer, versioned):
    a = aligned(np.arange(4.0))
    capsule = a.__dlpack__(max_version=(1, 0)) if versioned else a.__dlpack__()
    if consumer == "interop":
        interop.to_framework(capsule, "numpy")
    elif consumer == "torch":
        torch.from_dlpack(capsule)
    else:
        dlpack.to_numpy(capsule)
    for target in ("numpy", "torch", "jax", "dlpack"):
        with pytest.raises(CapsuleConsumedError, match="already consumed") as ei:
            interop.to_framework(capsule, target)
        assert isinstance(ei.value, BufferError) and isinstance(ei.value, InteropError)
    with pytest.raises(CapsuleConsumedError):
        interop.explain(capsule, "torch")
    with pytest.raises(CapsuleConsumedError):
        dlpack.inspect_capsule(capsule)


def test_wrongly_named_capsule_is_a_protocol_error():
    keep = ctypes.c_int(0)
    cap = _PyCapsule_New(ctypes.addressof(keep), _NAME, None)
    with pytest.raises(ProtocolError, match="not_a_tensor"):
        dlpack.inspect_capsule(cap)


# ---- ml_dtypes types into NumPy, zero-copy ----------------------------------------------

ML_TYPES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]


@pytest.mark.parametrize("name", ML_TYPES)
def test_torch_ml_dtypes_into_numpy_zero_copy(name):
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(getattr(torch, name))
    plan = interop.explain(t, "numpy")
    assert plan.zero_copy, plan
    a = interop.to_framework(t, "numpy", copy=False)
    assert a.dtype == np.dtype(getattr(ml_dtypes, name))
    assert data_pointer(a) == t.data_ptr()
    np.testing.assert_array_equal(a.astype(np.float32), np.arange(6.0).reshape(2, 3))
    t[1, 2] = 2.0  # write through torch, seen in NumPy
    assert float(a[1, 2]) == 2.0


@pytest.mark.parametrize("name", ML_TYPES)
def test_capsule_ml_dtypes_into_numpy_zero_copy(name):
    t = torch.arange(4, dtype=torch.float32).to(getattr(torch, name))
    capsule = t.__dlpack__(max_version=(1, 0))
    a = interop.to_framework(capsule, "numpy", copy=False)
    assert a.dtype == np.dtype(getattr(ml_dtypes, name)) and data_pointer(a) == t.data_ptr()
    np.testing.assert_array_equal(a.astype(np.float32), [0, 1, 2, 3])
    t[0] = 3.0
    assert float(a[0]) == 3.0


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_numpy_ml_dtypes_round_trip_through_capsules(name):
    a = aligned(np.arange(4, dtype=np.float32).astype(getattr(ml_dtypes, name)))
    capsule = interop.to_framework(a, "dlpack", copy=False)
    info = dlpack.inspect_capsule(capsule)
    assert info.view.dtype == name and info.view.ptr == data_pointer(a)
    t = torch.from_dlpack(capsule)
    assert str(t.dtype) == f"torch.{name}" and t.data_ptr() == data_pointer(a)
    t[0] = 2.0  # a write through torch, read through NumPy
    assert float(a[0]) == 2.0


def test_jax_bfloat16_into_numpy_zero_copy(jax_cpu):
    x = jnp.arange(8, dtype=jnp.bfloat16)
    assert x.devices() == {jax_cpu}
    a = interop.to_framework(x, "numpy", copy=False)
    assert a.dtype == np.dtype(ml_dtypes.bfloat16)
    assert data_pointer(a) == x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(a.astype(np.float32), np.arange(8.0))


# ---- read-only flag -----------------------------------------------------------------------

def test_read_only_flag_gives_read_only_numpy():
    a = aligned(np.arange(5.0))
    a.flags.writeable = False
    capsule = a.__dlpack__(max_version=(1, 0))
    info = dlpack.inspect_capsule(capsule)
    assert info.flags & dlpack.FLAG_READ_ONLY and info.view.readonly
    out = interop.to_framework(capsule, "numpy")
    assert not out.flags.writeable and data_pointer(out) == data_pointer(a)
    with pytest.raises(ValueError):
        out[0] = 1.0


def test_writable_capsule_gives_writable_numpy():
    a = aligned(np.arange(5.0))
    out = interop.to_framework(a.__dlpack__(max_version=(1, 0)), "numpy")
    assert out.flags.writeable
    out[0] = 9.0
    assert a[0] == 9.0


def test_read_only_capsule_to_torch_records_the_hazard():
    """torch cannot mark a tensor read-only: the capsule is shared, and the plan says so."""
    a = aligned(np.arange(5.0))
    a.flags.writeable = False
    plan = interop.explain(a.__dlpack__(max_version=(1, 0)), "torch")
    assert plan.zero_copy and any("read-only" in h for h in plan.hazards), plan
    t = interop.to_framework(a.__dlpack__(max_version=(1, 0)), "torch")
    assert t.data_ptr() == data_pointer(a) and t.tolist() == a.tolist()
    t[0] = 9.0  # the hazard is real: a write through torch changes the read-only array
    assert a[0] == 9.0


# ---- lifetimes ------------------------------------------------------------------------

def test_capsule_import_keeps_the_producer_alive():
    class Box(np.ndarray):
        pass

    base = aligned(np.arange(1000.0)).view(Box)
    ref = weakref.ref(base)
    capsule = base.__dlpack__(max_version=(1, 0))
    del base
    out = dlpack.to_numpy(capsule)
    del capsule
    gc.collect()
    assert ref() is not None  # the array is still in use by ``out``
    assert out[999] == 999.0
    del out
    gc.collect()
    assert ref() is None  # the deleter ran: the producer's memory was released


@pytest.mark.parametrize("name", ML_TYPES)
def test_numpy_ml_dtypes_into_torch_zero_copy(name):
    """ml_dtypes arrays (float8_e5m2 has kind "f", the others "V") reach torch unchanged."""
    a = aligned(np.arange(4, dtype=np.float32).astype(getattr(ml_dtypes, name)))
    t = interop.to_framework(a, "torch", copy=False)
    assert str(t.dtype) == f"torch.{name}" and t.data_ptr() == data_pointer(a)
    a[0] = 3.0
    assert float(t[0]) == 3.0
    neg = a[::-1]
    assert not interop.explain(neg, "torch").zero_copy
    assert interop.to_framework(neg, "torch").float().tolist() == [3.0, 2.0, 1.0, 3.0]
