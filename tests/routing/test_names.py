"""Names a user types: unknown targets, devices and options say what was asked, suggest the
closest known names and list them on one line; aliases share one cached plan."""

from __future__ import annotations

import numpy as np
import pytest

import interop
from helpers import aligned
from interop.api import REGISTRY
from interop.errors import DeviceError, InteropError, UnknownFrameworkError

torch = pytest.importorskip("torch")
pa = pytest.importorskip("pyarrow")

KNOWN = ("cudf, cupy, dlpack, jax, numba, numpy, paddle, pandas, polars, pyarrow, tensorflow, "
         "torch")


@pytest.mark.parametrize("typed, suggested", [
    ("tensorfow", "'tensorflow'"), ("PyTorh", "'torch'"), ("pytorch2", "'torch'"),
    ("panda", "'pandas'"), ("jaxx", "'jax'"), ("cupi", "'cupy'"),
])
def test_unknown_target_suggests_the_closest_names(typed, suggested):
    with pytest.raises(UnknownFrameworkError) as ei:
        interop.to_framework(np.arange(3.0), typed)
    msg = str(ei.value)
    assert msg.startswith(f"unknown target framework {typed!r} (did you mean {suggested}")
    assert f"known: {KNOWN} " in msg and "\n" not in msg
    assert "{" not in msg  # no dict of every alias


def test_unknown_target_without_a_close_name_lists_the_known_ones():
    with pytest.raises(UnknownFrameworkError) as ei:
        interop.to_framework(np.arange(3.0), "spreadsheet")
    assert "did you mean" not in str(ei.value) and KNOWN in str(ei.value)
    with pytest.raises(UnknownFrameworkError, match="did you mean 'numpy'"):
        interop.explain(np.arange(3.0), "nump")
    assert not interop.can_convert(np.arange(3.0), "nump")


@pytest.mark.parametrize("device, suggested", [
    ("gpu", "'cuda'"), ("cdua", "'cuda'"), ("CPU:x", "'cpu'"), ("host", "'cpu'"),
])
def test_unknown_device_suggests_the_closest_name(device, suggested):
    with pytest.raises(DeviceError) as ei:
        interop.to_framework(np.arange(3.0), "torch", device=device)
    msg = str(ei.value)
    assert msg.startswith(f"unknown device {device!r} (did you mean {suggested}?)"), msg
    assert "known: 'cpu', 'cuda', 'cuda:N'" in msg


@pytest.mark.parametrize("option, suggested", [
    ("devcie", "'device'"), ("null", "'nulls'"), ("colums", "'columns'"), ("cpy", "'copy'"),
])
def test_unknown_option_suggests_the_closest_name(option, suggested):
    with pytest.raises(InteropError) as ei:
        interop.to_framework(np.arange(3.0), "torch", **{option: 1})
    msg = str(ei.value)
    assert msg.startswith(f"unknown option {option!r} (did you mean {suggested}?)"), msg
    assert "device=, copy=, stream=" in msg and "nulls=, fill_value=, columns=" in msg
    with pytest.raises(InteropError, match=rf"unknown table option {option!r} \(did you mean "):
        interop.to_framework(pa.table({"a": [1.0]}), "torch", **{option: 1})


def test_ragged_is_a_known_option():
    """``ragged=`` (a batch of samples, e.g. a DALI TensorList) is listed and suggested."""
    with pytest.raises(InteropError) as ei:
        interop.to_framework(np.arange(3.0), "torch", raged="pad")
    msg = str(ei.value)
    assert msg.startswith("unknown option 'raged' (did you mean 'ragged'?)"), msg
    assert "ragged=, fill_value=" in msg
    with pytest.raises(InteropError, match=r"options \['ragged'\] apply to .*batches"):
        interop.to_framework(np.arange(3.0), "torch", ragged="pad")


def test_a_table_option_on_an_array_still_says_where_it_applies():
    with pytest.raises(InteropError, match=r"options \['nulls'\] apply to tables"):
        interop.to_framework(np.arange(3.0), "torch", nulls="mask")


def test_aliases_share_one_plan(monkeypatch):
    REGISTRY.clear_plans()
    compiled = []
    real = REGISTRY.runner.compile

    def spy(*args, **kw):
        compiled.append(args[:2])
        return real(*args, **kw)

    monkeypatch.setattr(REGISTRY.runner, "compile", spy)
    a = aligned(np.arange(4, dtype=np.float32))
    outs = [interop.to_framework(a, name) for name in ("torch", "pt", "PyTorch", "pytorch")
            for _ in range(2)]
    assert compiled == [("numpy", "torch")]  # planned once, under the canonical name
    kept = {REGISTRY.cache.get(np.ndarray, n, None, None)
            for n in ("torch", "pt", "PyTorch", "pytorch")}
    assert len(kept) == 1 and None not in kept  # every name finds the one plan
    a[0] = 5.0  # every result is the same zero-copy view
    assert all(float(t[0]) == 5.0 for t in outs)
    interop.to_framework(a, "pt", copy=True)
    interop.to_framework(a, "torch", copy=True)
    assert compiled == [("numpy", "torch"), ("numpy", "torch")]
