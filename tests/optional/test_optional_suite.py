"""What every optional framework (TensorFlow, PaddlePaddle, NVIDIA DALI) must show, one test
each, parametrized over the frameworks: its docs examples run, the committed table is fresh
for it, the doctor lists it with its pitfalls, and on a GPU a zero-copy round trip with torch
and an explicit copy to the host.

Each parameter carries its framework's marker, so each runs in that framework's own pytest
process (``pytest -m tensorflow`` ...; scripts/test.sh does it) and the core run imports none
of them. What differs per framework (how it makes a device tensor, reads its pointer, sees a
GPU) is its :class:`Traits`; the framework's own behaviour is tested in its own file
(``test_tensorflow.py``, ``test_paddle.py``, ``test_dali.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import interop
import oracles
from docs_examples import run_optional_blocks
from helpers import doctor_pitfalls, run_cli_json, stale_table_cells
from interop.errors import ZeroCopyError


@dataclass(frozen=True)
class Traits:
    """An optional framework as these tests need it."""

    name: str
    module: str
    pitfalls: frozenset[str] = frozenset()
    """The doctor's pitfall ids for it."""
    seen: str = ""
    """The version whose pitfalls were all seen present."""
    sees_gpu: Callable[[Any], Any] | None = None
    no_gpu: str = ""
    arange_gpu: Callable[[Any, int], Any] | None = None
    pointer: Callable[[Any], int] = oracles.pointer
    on_gpu: Callable[[Any], bool] | None = None


def _tf_arange(tf: Any, n: int) -> Any:
    with tf.device("/GPU:0"):
        return tf.range(n, dtype=tf.float32)


TENSORFLOW = Traits(
    "tensorflow", "tensorflow",
    frozenset({"tensorflow-misaligned-abort", "tensorflow-string-dlpack",
               "tensorflow-numpy-copies", "tensorflow-bfloat16-writable",
               "tensorflow-non-compact"}), "2.21.0",
    sees_gpu=lambda tf: tf.config.list_physical_devices("GPU"),
    no_gpu="this TensorFlow build sees no GPU (tensorflow-cpu)",
    arange_gpu=_tf_arange,
    pointer=oracles.pointer,  # TensorFlow's own DLPack export, read by the tests' reader
    on_gpu=lambda t: "GPU" in t.device)
PADDLE = Traits(
    "paddle", "paddle",
    frozenset({"paddle-after-tensorflow", "paddle-negative-strides", "paddle-readonly",
               "paddle-uint16-bfloat16", "paddle-dlpack-device"}), "3.3.1",
    sees_gpu=lambda p: p.is_compiled_with_cuda() and p.device.cuda.device_count(),
    no_gpu="this paddle build sees no GPU (the CPU wheel)",
    arange_gpu=lambda p, n: p.arange(n, dtype="float32").cuda(0),
    pointer=lambda t: t.data_ptr(),
    on_gpu=lambda t: t.place.is_gpu_place())
DALI = Traits("dali", "nvidia.dali")

TABLED = [pytest.param(TENSORFLOW, marks=pytest.mark.tensorflow, id="tensorflow"),
          pytest.param(PADDLE, marks=pytest.mark.paddle, id="paddle")]
"""The optional frameworks that are targets: rows and columns of the table, on a GPU too."""
ALL = [*TABLED, pytest.param(DALI, marks=pytest.mark.dali, id="dali")]


def _module(fw: Traits) -> Any:
    if fw is DALI:
        return pytest.importorskip("nvidia.dali", reason="DALI is not installed: "
                                   "pip install 'interop-mempool[dali]' (CUDA 12 build)")
    return importlib.import_module(fw.module)


@pytest.fixture(scope="module")
def live_table() -> dict:
    return run_cli_json("table")


@pytest.mark.parametrize("fw", ALL)
def test_docs_examples_run(fw):
    _module(fw)
    assert run_optional_blocks(fw.name) >= 1


@pytest.mark.parametrize("fw", TABLED)
def test_committed_table_is_fresh(fw, live_table):
    stale = stale_table_cells(fw.name, live_table)
    assert not stale, ("conversion_table.md is stale; regenerate it with `python -m interop "
                       f"table --markdown > conversion_table.md`: {stale}")


@pytest.mark.parametrize("fw", TABLED)
def test_doctor_lists_the_framework_and_its_pitfalls(fw):
    m = _module(fw)
    fws, pits = doctor_pitfalls(fw.name)
    assert fws[fw.name]["version"] == m.__version__
    assert fw.pitfalls <= set(pits)
    if m.__version__ == fw.seen:  # what this version was seen to do
        assert all(p["state"] == "present" for p in pits.values()), pits


def _on_gpu(fw: Traits) -> Any:
    m = _module(fw)
    if not fw.sees_gpu(m):
        pytest.skip(fw.no_gpu)
    return m


@pytest.mark.gpu
@pytest.mark.parametrize("fw", TABLED)
def test_gpu_to_torch_and_back_zero_copy(fw):
    m = _on_gpu(fw)
    import torch

    t = fw.arange_gpu(m, 1024)
    plan = interop.explain(t, "torch")
    assert plan.zero_copy, plan
    r = interop.to_framework(t, "torch", copy=False)
    assert r.device.type == "cuda" and r.data_ptr() == fw.pointer(t)
    r[0] = 42.0
    torch.cuda.synchronize()
    assert float(t[0]) == 42.0
    back = interop.to_framework(r, fw.name, copy=False)
    assert fw.on_gpu(back) and fw.pointer(back) == r.data_ptr()


@pytest.mark.gpu
@pytest.mark.parametrize("fw", TABLED)
def test_gpu_to_host_is_an_explicit_copy(fw):
    m = _on_gpu(fw)
    t = fw.arange_gpu(m, 8)
    with pytest.raises(interop.errors.DeviceError, match="device='cpu'"):
        interop.to_framework(t, "numpy")
    with pytest.raises(ZeroCopyError):
        interop.to_framework(t, "numpy", device="cpu", copy=False)
    got = interop.to_framework(t, "numpy", device="cpu")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.arange(8, dtype=np.float32))
