"""Crash isolation and malformed producers: an InteropError with the reason, never a crash.

Every case runs in a child interpreter (this file, run as a script), so that an abort or a
segfault in a framework fails one test instead of killing the whole run. The child prints
one JSON line per case: ``{"case": ..., "outcome": "ok"|"raise", "error": ..., ...}``;
it prints ``START <case>`` before each case, so a crash names the case that crashed.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]


# ---- cases (run in the child) ------------------------------------------------------------

def _np():
    import numpy as np

    return np


def _interop():
    import interop

    return interop


def _values_equal(res, want) -> bool:
    np = _np()
    mod = type(res).__module__.partition(".")[0]
    if mod == "torch":
        res = res.numpy()
    return np.array_equal(np.asarray(res), want)


def case_negative_strides_numpy_to_torch():
    np, interop = _np(), _interop()
    a = np.arange(12.0).reshape(3, 4)[::-1, ::-2]
    t = interop.to_framework(a, "torch")
    assert _values_equal(t, a)
    interop.to_framework(a, "torch", copy=False)  # must raise ZeroCopyError


def case_negative_strides_capsule_to_torch():
    np, interop = _np(), _interop()
    a = np.arange(6, dtype=np.int32)[::-1]
    t = interop.to_framework(a.__dlpack__(max_version=(1, 1)), "torch")
    assert _values_equal(t, a)
    interop.to_framework(a.__dlpack__(max_version=(1, 1)), "torch", copy=False)


def case_negative_strides_legacy_capsule_to_jax():
    np, interop = _np(), _interop()
    a = np.arange(6, dtype=np.float32)[::-1]
    j = interop.to_framework(a.__dlpack__(), "jax")
    assert _values_equal(j, a)
    interop.to_framework(a.__dlpack__(), "jax", copy=False)


def case_broadcast_capsule_to_jax():
    np, interop = _np(), _interop()
    a = np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3))
    j = interop.to_framework(a.__dlpack__(max_version=(1, 1)), "jax")
    assert _values_equal(j, a)
    interop.to_framework(a.__dlpack__(max_version=(1, 1)), "jax", copy=False)


def case_misaligned_to_jax():
    np, interop = _np(), _interop()
    raw = np.zeros(65, np.uint8)
    a = raw[1:].view(np.float32)[1:5]
    a[...] = [1, 2, 3, 4]
    j = interop.to_framework(a, "jax")
    assert _values_equal(j, a)
    interop.to_framework(a, "jax", copy=False)


def case_unaligned_itemsize_to_torch():
    np, interop = _np(), _interop()
    raw = np.zeros(41, np.uint8)
    a = raw[1:].view(np.float64)
    a[...] = np.arange(5)
    t = interop.to_framework(a, "torch")
    assert _values_equal(t, a)
    assert _values_equal(interop.to_framework(a, "torch", copy=False), a)  # torch takes it


def case_capsule_consumed_twice_torch():
    np, interop = _np(), _interop()
    cap = np.arange(4.0).__dlpack__(max_version=(1, 1))
    interop.to_framework(cap, "torch")
    interop.to_framework(cap, "torch")


def case_capsule_consumed_twice_numpy():
    np, interop = _np(), _interop()
    cap = np.arange(4.0).__dlpack__()
    interop.to_framework(cap, "numpy")
    interop.to_framework(cap, "numpy")


def case_capsule_consumed_twice_jax():
    np, interop = _np(), _interop()
    cap = np.arange(4.0, dtype=np.float32).__dlpack__()
    interop.to_framework(cap, "jax")
    interop.to_framework(cap, "jax")


def case_capsule_consumed_by_torch_then_interop():
    import torch

    np, interop = _np(), _interop()
    cap = np.arange(4.0).__dlpack__()
    torch.from_dlpack(cap)
    interop.to_framework(cap, "jax")


def case_capsule_explain_after_consumed():
    np, interop = _np(), _interop()
    cap = np.arange(4.0).__dlpack__()
    interop.to_framework(cap, "numpy")
    interop.explain(cap, "torch")


def case_negative_strides_empty_to_torch():
    np, interop = _np(), _interop()
    a = np.arange(0, dtype=np.int8)[::-1]
    t = interop.to_framework(a, "torch")
    assert tuple(t.shape) == (0,)
    one = np.arange(1.0)[::-1]           # a negative stride on a dim of extent 1: zero-copy
    assert interop.shares_memory(interop.to_framework(one, "torch", copy=False), one)


def case_complex128_capsule_to_numpy():
    np, interop = _np(), _interop()
    a = (np.arange(3) + 1j).astype(np.complex128)
    out = interop.to_framework(a.__dlpack__(max_version=(1, 1)), "numpy")
    assert np.array_equal(out, a)


# malformed DLPack producers -----------------------------------------------------------------

def _capsule_named(name: bytes):
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    _KEEP.append(ctypes.c_char_p(name))
    buf = ctypes.create_string_buffer(256)
    _KEEP.append(buf)
    return new(ctypes.addressof(buf), _KEEP[-2], None)


_KEEP: list = []


def _bad_tensor_capsule(**override):
    """A hand-built versioned DLPack capsule over a small buffer, with fields overridden."""
    from interop.protocols import dlpack

    np = _np()
    data = np.arange(4, dtype=np.float32)
    shape = (ctypes.c_int64 * 1)(override.pop("n", 4))
    mt = dlpack._DLManagedTensorVersioned()
    mt.version.major, mt.version.minor = override.pop("version", (1, 1))
    t = mt.dl_tensor
    t.data = override.pop("data", data.ctypes.data)
    t.device.device_type = override.pop("device", 1)
    t.ndim = override.pop("ndim", 1)
    t.dtype.code, t.dtype.bits, t.dtype.lanes = override.pop("dtype", (2, 32, 1))
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = None
    _KEEP.extend([data, shape, mt])
    assert not override
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(mt), b"dltensor_versioned", None)


class _Producer:
    def __init__(self, dlpack, device=(1, 0)):
        self._dlpack, self._device = dlpack, device

    def __dlpack__(self, **kw):
        return self._dlpack() if callable(self._dlpack) else self._dlpack

    def __dlpack_device__(self):
        if isinstance(self._device, Exception):
            raise self._device
        return self._device


def _raises(exc):
    def f():
        raise exc

    return f


def _convert_all(obj_factory, targets=("numpy", "torch", "jax")):
    interop = _interop()
    errors = []
    for tgt in targets:
        try:
            interop.to_framework(obj_factory(), tgt)
        except interop.InteropError as e:
            errors.append(f"{tgt}: {type(e).__name__}: {e}")
            continue
        except Exception as e:  # noqa: BLE001 - reported as a non-InteropError
            errors.append(f"{tgt}: RAW {type(e).__name__}: {e}")
            continue
        errors.append(f"{tgt}: NO ERROR")
    return errors


def _good_capsule():
    return _np().arange(4.0).__dlpack__(max_version=(1, 1))


PRODUCERS = {
    "dlpack_returns_int": lambda: _Producer(42),
    "dlpack_returns_none": lambda: _Producer(None),
    "dlpack_returns_wrong_capsule": lambda: _Producer(_capsule_named(b"not_a_dltensor")),
    "dlpack_returns_used_capsule": lambda: _Producer(_capsule_named(b"used_dltensor")),
    "dlpack_raises_runtime": lambda: _Producer(_raises(RuntimeError("boom"))),
    "dlpack_raises_buffer": lambda: _Producer(_raises(BufferError("cannot export"))),
    "dlpack_raises_type": lambda: _Producer(_raises(TypeError("bad kw"))),
    "device_raises": lambda: _Producer(_good_capsule, RuntimeError("no device")),
    "device_not_tuple": lambda: _Producer(_good_capsule, "cpu"),
    "device_short_tuple": lambda: _Producer(_good_capsule, (1,)),
    "device_wrong_types": lambda: _Producer(_good_capsule, (1, "0")),
    "device_unknown_code": lambda: _Producer(_good_capsule, (999, 0)),
    "device_lies_cuda": lambda: _Producer(_good_capsule, (2, 0)),
    "capsule_claims_cuda": lambda: _Producer(lambda: _bad_tensor_capsule(device=2)),
    "capsule_negative_ndim": lambda: _Producer(lambda: _bad_tensor_capsule(ndim=-1)),
    "capsule_huge_ndim": lambda: _Producer(lambda: _bad_tensor_capsule(ndim=1000)),
    "capsule_negative_shape": lambda: _Producer(lambda: _bad_tensor_capsule(n=-4)),
    "capsule_null_data": lambda: _Producer(lambda: _bad_tensor_capsule(data=0)),
    "capsule_vector_dtype": lambda: _Producer(lambda: _bad_tensor_capsule(dtype=(2, 32, 4))),
    "capsule_unknown_dtype": lambda: _Producer(lambda: _bad_tensor_capsule(dtype=(99, 8, 1))),
    "capsule_odd_bits": lambda: _Producer(lambda: _bad_tensor_capsule(dtype=(2, 12, 1))),
    "capsule_version_2": lambda: _Producer(lambda: _bad_tensor_capsule(version=(2, 0))),
}


def _producer_case(name):
    def run():
        errors = _convert_all(PRODUCERS[name])
        print(json.dumps({"targets": errors}))
        bad = [e for e in errors if "RAW" in e or "NO ERROR" in e]
        assert not bad, bad

    return run


# malformed __array_interface__ --------------------------------------------------------------

def _ai(**kw):
    np = _np()
    data = np.arange(4, dtype=np.float32)
    _KEEP.append(data)
    d = {"version": 3, "shape": (4,), "typestr": "<f4", "data": (data.ctypes.data, False)}
    for k, v in kw.items():
        if v is _DROP:
            d.pop(k)
        else:
            d[k] = v
    return type("AI", (), {"__array_interface__": d})()


_DROP = object()

INTERFACES = {
    "ai_missing_shape": lambda: _ai(shape=_DROP),
    "ai_missing_typestr": lambda: _ai(typestr=_DROP),
    "ai_missing_data": lambda: _ai(data=_DROP),
    "ai_shape_list_of_str": lambda: _ai(shape=("4",)),
    "ai_shape_not_tuple": lambda: _ai(shape=4),
    "ai_negative_shape": lambda: _ai(shape=(-4,)),
    "ai_bad_typestr": lambda: _ai(typestr="<f3"),
    "ai_object_typestr": lambda: _ai(typestr="|O8"),
    "ai_typestr_int": lambda: _ai(typestr=4),
    "ai_typestr_kind": lambda: _ai(typestr="<z4"),
    "ai_null_data": lambda: _ai(data=(0, False)),
    "ai_data_wrong_type": lambda: _ai(data=("0x1000", False)),
    "ai_data_short_tuple": lambda: _ai(data=(1234,)),
    "ai_version_2": lambda: _ai(version=2),
    "ai_version_str": lambda: _ai(version="3"),
    "ai_strides_wrong_len": lambda: _ai(strides=(4, 4)),
    "ai_strides_str": lambda: _ai(strides="4"),
    "ai_mask": lambda: _ai(mask=_np().zeros(4, bool)),
    "ai_not_a_dict": lambda: type("AI", (), {"__array_interface__": [1, 2]})(),
    "ai_property_raises": lambda: type("AI", (), {"__array_interface__": property(
        lambda self: 1 / 0)})(),
}


def _interface_case(name):
    def run():
        errors = _convert_all(INTERFACES[name], targets=("numpy", "torch", "pyarrow"))
        print(json.dumps({"targets": errors}))
        bad = [e for e in errors if "RAW" in e or "NO ERROR" in e]
        assert not bad, bad

    return run


# ---- the case table: name -> (callable, expected) ----------------------------------------------
# expected: "ZeroCopyError" / "CapsuleConsumedError" ... the InteropError subclass the last
# statement raises, or "ok" (no exception at all).

CASES: dict[str, tuple] = {
    "negative_strides_numpy_to_torch": (case_negative_strides_numpy_to_torch, "ZeroCopyError"),
    "negative_strides_capsule_to_torch": (case_negative_strides_capsule_to_torch,
                                          "ZeroCopyError"),
    "negative_strides_legacy_capsule_to_jax": (case_negative_strides_legacy_capsule_to_jax,
                                               "ZeroCopyError"),
    "broadcast_capsule_to_jax": (case_broadcast_capsule_to_jax, "ZeroCopyError"),
    "misaligned_to_jax": (case_misaligned_to_jax, "ZeroCopyError"),
    "unaligned_itemsize_to_torch": (case_unaligned_itemsize_to_torch, "ok"),
    "capsule_consumed_twice_torch": (case_capsule_consumed_twice_torch, "CapsuleConsumedError"),
    "capsule_consumed_twice_numpy": (case_capsule_consumed_twice_numpy, "CapsuleConsumedError"),
    "capsule_consumed_twice_jax": (case_capsule_consumed_twice_jax, "CapsuleConsumedError"),
    "capsule_consumed_by_torch_then_interop": (case_capsule_consumed_by_torch_then_interop,
                                               "CapsuleConsumedError"),
    "capsule_explain_after_consumed": (case_capsule_explain_after_consumed,
                                       "CapsuleConsumedError"),
    "negative_strides_empty_to_torch": (case_negative_strides_empty_to_torch, "ok"),
    "complex128_capsule_to_numpy": (case_complex128_capsule_to_numpy, "ok"),
}
CASES.update({f"producer_{n}": (_producer_case(n), "ok") for n in PRODUCERS})
CASES.update({n: (_interface_case(n), "ok") for n in INTERFACES})


def child(names: list[str]) -> None:
    """Run ``names`` in this process, one JSON line each (``START`` first, for crashes)."""
    import faulthandler

    faulthandler.enable()
    interop = _interop()
    for name in names:
        print(f"START {name}", flush=True)
        fn, _ = CASES[name]
        rec = {"case": name}
        try:
            fn()
            rec["outcome"] = "ok"
        except interop.InteropError as e:
            rec.update(outcome="raise", error=type(e).__name__, message=str(e))
        except Exception as e:  # noqa: BLE001 - a non-InteropError is a finding
            rec.update(outcome="raw", error=type(e).__name__, message=str(e))
        print("RESULT " + json.dumps(rec), flush=True)


# ---- the tests (in the parent) ---------------------------------------------------------------

GROUPS = {
    "known_crashers": [n for n in CASES if not n.startswith(("producer_", "ai_"))],
    "producers": [n for n in CASES if n.startswith("producer_")],
    "interfaces": [n for n in CASES if n.startswith("ai_")],
}


def run_child(names: list[str], timeout: float = 120) -> dict[str, dict]:
    """Run cases in a child interpreter; a crash gives ``{"outcome": "crash", ...}``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(HERE), *names], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(ROOT))
    results: dict[str, dict] = {}
    started = None
    for line in proc.stdout.splitlines():
        if line.startswith("START "):
            started = line[6:]
        elif line.startswith("RESULT "):
            rec = json.loads(line[7:])
            results[rec["case"]] = rec
            started = None
    if proc.returncode != 0:
        results["__exit__"] = {"returncode": proc.returncode, "stderr": proc.stderr[-3000:],
                               "crashed_in": started}
    return results


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for group, names in GROUPS.items():
        res = run_child(names)
        exit_ = res.pop("__exit__", None)
        out.update(res)
        if exit_ is not None:
            out[f"__exit__{group}"] = exit_
    return out


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_child_exits_cleanly(outcomes, group):
    exit_ = outcomes.get(f"__exit__{group}")
    assert exit_ is None, f"the child crashed (in {exit_['crashed_in']}): {exit_}"


@pytest.mark.parametrize("name", list(CASES))
def test_case_raises_interop_error_not_a_crash(outcomes, name):
    rec = outcomes.get(name)
    assert rec is not None, f"{name} never finished: the child crashed before or in it"
    expected = CASES[name][1]
    assert rec["outcome"] != "raw", f"{name}: a raw {rec['error']}: {rec['message']}"
    if expected == "ok":
        assert rec["outcome"] == "ok", f"{name}: {rec}"
    else:
        assert rec["outcome"] == "raise" and rec["error"] == expected, f"{name}: {rec}"
        assert rec["message"], "an InteropError must say why"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    child(sys.argv[1:] or list(CASES))
