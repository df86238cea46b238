"""NumPy scalars follow NumPy: a number's scalar is handed over as its own memory, read-only
(NumPy exports it so over DLPack: ``np.from_dlpack(np.float64(1.0))``), where the target can
say read-only (NumPy, a DLPack 1.x capsule), with the hazard named where it cannot (torch).
NumPy's own ``TestScalarDLPack`` cases (every dtype, the read-only flag, the capsule keeping
the scalar alive), replayed through ``to_framework``. Pointers are checked against the scalar
object's own memory (``id(s)`` to ``id(s) + sys.getsizeof(s)``, CPython's layout)."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import interop
from interop.errors import ZeroCopyError
from oracles import consume_capsule, read_capsule

NUMBERS = "?bBhHiIlLqQefdgFDG"
"""Every NumPy number type: bool, the integers, the floats and complex numbers."""
DLPACK = NUMBERS.replace("g", "").replace("G", "")
"""Those DLPack has a type code for (no long double)."""


def _scalar(char: str):
    return np.dtype(char).type(1)


def _inside(ptr: int, s) -> bool:
    return id(s) <= ptr < id(s) + sys.getsizeof(s)


@pytest.mark.parametrize("char", NUMBERS)
def test_a_numbers_scalar_is_viewed_read_only_into_numpy(char):
    s = _scalar(char)
    for _ in range(2):  # the pair's checked plan, then its fast form
        out = interop.to_framework(s, "numpy", copy=False)
        assert out.shape == () and out.dtype == s.dtype and out == s
        assert not out.flags.writeable and _inside(out.ctypes.data, s)
    plan = interop.explain(s, "numpy", copy=False)
    assert plan.zero_copy and interop.can_convert(s, "numpy", copy=False)
    assert interop.shares_memory(s, out)


@pytest.mark.parametrize("char", DLPACK)
def test_a_numbers_scalar_is_a_read_only_capsule_that_keeps_it_alive(char):
    s = _scalar(char)
    refs = sys.getrefcount(s)
    cap = interop.to_framework(s, "dlpack", copy=False)
    info = read_capsule(cap)
    assert info.name == "dltensor_versioned" and info.read_only and info.shape == ()
    assert _inside(info.ptr, s) and info.bits == s.dtype.itemsize * 8
    assert sys.getrefcount(s) > refs  # the capsule holds the scalar
    assert interop.explain(s, "dlpack", copy=False).zero_copy
    del cap
    gc.collect()
    assert sys.getrefcount(s) == refs  # and lets it go
    cap = interop.to_framework(_scalar(char), "dlpack")  # the only reference: the capsule's
    gc.collect()
    back = consume_capsule(cap)
    assert back == 1 and not back.flags.writeable


def test_a_numbers_scalar_into_torch_is_zero_copy_with_the_hazard_named():
    s = np.float32(2.5)
    t = interop.to_framework(s, "torch", copy=False)
    assert _inside(t.data_ptr(), s) and t.item() == 2.5
    plan = interop.explain(s, "torch")
    assert plan.zero_copy and any("cannot be read-only" in h for h in plan.hazards), plan
    t2 = interop.to_framework(s, "torch", copy=True)
    assert not _inside(t2.data_ptr(), s) and t2.item() == 2.5


@pytest.mark.parametrize("s", [np.str_("ab"), np.bytes_(b"ab"), np.datetime64("2020-01-02")],
                         ids=lambda s: type(s).__name__)
def test_a_scalar_of_no_number_is_still_read_into_a_new_array(s):
    """A string, bytes or date scalar is read by NumPy into a new array (a copy, said so):
    ``copy=False`` refuses it, naming the scalar."""
    out = interop.to_framework(s, "numpy")
    assert out.shape == () and out == s and not _inside(out.ctypes.data, s)
    plan = interop.explain(s, "numpy")
    assert plan.supported and not plan.zero_copy
    with pytest.raises(ZeroCopyError, match=type(s).__name__):
        interop.to_framework(s, "numpy", copy=False)
    assert not interop.can_convert(s, "numpy", copy=False)


def test_a_ulonglong_array_and_scalar_reach_torch_as_uint64():
    """``numpy.ulonglong`` (dtype char ``'Q'``): NumPy calls its dtype equal to uint64 (``'L'``)
    but ``torch.from_numpy`` refuses it by type, which reached the caller as a raw
    ``TypeError`` (found by the structures' property search, a ``np.ulonglong`` leaf)."""
    import torch

    a = np.arange(4, dtype="Q")
    for _ in range(2):  # the checked plan, then the fast form
        t = interop.to_framework(a, "torch")
        assert t.dtype == torch.uint64 and t.data_ptr() == a.ctypes.data
    assert interop.explain(a, "torch", copy=True).supported
    s = np.ulonglong(7)
    t = interop.to_framework(s, "torch", copy=False)
    assert t.item() == 7 and _inside(t.data_ptr(), s)
