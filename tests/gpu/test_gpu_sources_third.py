"""What the third reading of the frameworks' sources predicts (issue 47), on a device.

Each is judged on the CPU with stand-ins (``test_gpu_framework_sources.py``,
``test_gpu_streams.py``, ``tests/tables/test_sparse.py``); these decide it on hardware. The
Arrow device array's are in ``tests/tables/test_tables_gpu.py``, the pool's in
``tests/mempool/test_mempool_gpu_sources.py``. ``scripts/gpu-check.sh`` runs all three first.
"""

from __future__ import annotations

import pytest

import interop
from helpers import run_child

pytestmark = pytest.mark.gpu


class _CaiProducer:
    """A bare CUDA Array Interface producer over a CuPy array (no framework of its own)."""

    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = dict(a.__cuda_array_interface__, version=3)


@pytest.mark.parametrize("default", ["cpu", "meta", "cuda:last"])
def test_cai_into_torch_stays_on_its_device_whatever_torchs_default(default):
    """Item 9: ``torch.as_tensor`` of a CAI producer follows ``torch.set_default_device``
    without ``device=``: a copy to the host, the data lost, or another GPU."""
    cupy = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    last = torch.cuda.device_count() - 1
    a = cupy.arange(6, dtype=cupy.float32)  # on device 0
    before = torch.get_default_device()
    torch.set_default_device(f"cuda:{last}" if default == "cuda:last" else default)
    try:
        t = interop.to_framework(_CaiProducer(a), "torch")
    finally:
        torch.set_default_device(before)
    assert t.device == torch.device("cuda", 0) and t.data_ptr() == a.data.ptr
    t[0] = 42.0
    torch.cuda.synchronize()
    assert float(a[0]) == 42.0


def test_torch_tensor_off_the_current_device_exports_with_a_stream():
    """Item 10: torch 2.13's ``__dlpack__`` refuses a tensor off the current device before it
    reads ``stream=``; interop exports it under its own device."""
    done = run_child("""
        import torch, cupy, interop
        if torch.cuda.device_count() < 2:
            print("skip"); raise SystemExit
        t = torch.arange(8, dtype=torch.float32, device="cuda:1")
        torch.cuda.set_device(0)
        s = torch.cuda.Stream(device=1)
        c = interop.to_framework(t, "cupy", stream=s)
        assert c.data.ptr == t.data_ptr() and c.device.id == 1, (c.device, t.device)
        c2 = interop.to_framework(t, "cupy")  # without stream= too
        assert c2.data.ptr == t.data_ptr()
        assert torch.cuda.current_device() == 0
        print("ok")
    """)
    if done.stdout.strip() == "skip":
        pytest.skip("needs two GPUs (a tensor off the current device)")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_cupyx_is_told_its_checked_indices_are_canonical():
    """Item 12: a cupyx CSR rebuilt from a torch CUDA CSR tensor (sorted, distinct indices,
    checked by interop) carries ``has_canonical_format`` without cupyx's kernel."""
    pytest.importorskip("cupyx.scipy.sparse")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    t = torch.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], device="cuda").to_sparse_csr()
    m = interop.to_framework(t, "cupy")
    assert getattr(m, "_has_canonical_format", None) is True
    assert (m.toarray().get() == t.to_dense().cpu().numpy()).all()


# ---- item 1: sparse values fixed and checked on their device --------------------------------

def _cupyx_or_skip():
    cs = pytest.importorskip("cupyx.scipy.sparse")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    return cs, torch


def test_cupyx_int32_coo_into_torch_is_widened_on_the_device():
    """cupyx keeps int32 coordinates; torch's COO takes int64: before, they were widened on
    the host, and torch raised "backend of indices (CPU) must match backend of values"."""
    cs, torch = _cupyx_or_skip()
    import cupy

    m = cs.coo_matrix((cupy.array([1.0, 2.0]), (cupy.array([0, 1], cupy.int32),
                                                 cupy.array([2, 0], cupy.int32))), shape=(2, 3))
    t = interop.to_framework(m, "torch")
    assert t.is_cuda and t._indices().is_cuda and t._indices().dtype == torch.int64
    assert (t.to_dense().cpu().numpy() == m.toarray().get()).all()


def test_unsorted_cupyx_csr_into_torch_stays_on_the_device():
    """torch's CSR needs sorted indices: sorted where the value lives (before: a CPU tensor)."""
    cs, torch = _cupyx_or_skip()
    import cupy

    m = cs.csr_matrix((cupy.array([1.0, 2.0, 3.0]), cupy.array([2, 0, 1], cupy.int64),
                       cupy.array([0, 2, 3], cupy.int64)), shape=(2, 3))
    t = interop.to_framework(m, "torch")
    assert t.is_cuda and t.crow_indices().is_cuda
    assert (t.to_dense().cpu().numpy() == m.toarray().get()).all()


def test_jax_bcoo_on_the_gpu_into_torch_and_back_stays_on_the_device():
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    from jax.experimental import sparse as jsparse

    if not torch.cuda.is_available() or jax.devices()[0].platform == "cpu":
        pytest.skip("needs torch with CUDA and JAX on the GPU")
    dense = jax.numpy.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    b = jsparse.BCOO.fromdense(dense)
    t = interop.to_framework(b, "torch")
    assert t.is_cuda and t._indices().is_cuda
    back = interop.to_framework(t.coalesce(), "jax")
    assert all(d.platform != "cpu" for d in back.indices.devices())
    assert (back.todense() == dense).all()
