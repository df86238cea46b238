"""What the third reading of the frameworks' sources predicts of the shared pool
(``backend="async"``), decided on a device; each is judged on the CPU with stand-ins in
``test_mempool_shared.py``. Every scenario runs in a fresh interpreter (``_run``)."""

from __future__ import annotations

import pytest
from test_mempool_gpu import MiB, _run

from machine import RMM_MISSING

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(RMM_MISSING is not None, reason=str(RMM_MISSING))]


def test_cupy_out_of_memory_on_the_shared_pool_is_cupys_out_of_memory_error() -> None:
    """Item 7: ``malloc_async`` alone raised the runtime's ``CUDARuntimeError``."""
    out = _run(
        """
        import json
        import cupy, mempool
        pool = mempool.use_rmm_pool(backend="async", frameworks=["cupy"], devices=[0])
        total = cupy.cuda.runtime.memGetInfo()[1]
        r = {}
        try:
            cupy.empty(2 * total, dtype=cupy.uint8)
        except MemoryError as e:
            r["error"] = type(e).__module__ + "." + type(e).__name__
        except Exception as e:
            r["error"] = "not a MemoryError: " + type(e).__name__ + ": " + str(e)
        r["after"] = int(cupy.ones(1 << 20, dtype=cupy.uint8).sum())  # the pool still works
        print(json.dumps(r))
        """
    )
    assert out["error"] == "cupy.cuda.memory.OutOfMemoryError", out
    assert out["after"] == 1 << 20


def test_an_initial_size_the_device_cannot_reserve_is_a_config_error_with_async() -> None:
    """Item 12: the priming's ``cudaMallocFromPoolAsync`` out of memory was a raw
    ``MemoryError`` with ``backend="async"``."""
    out = _run(
        """
        import json
        import mempool
        from mempool.errors import ConfigError
        try:
            mempool.use_rmm_pool("4TiB", backend="async", frameworks=["cupy"], devices=[0])
        except ConfigError as e:
            r = {"error": str(e)}
        else:
            r = {"error": None}
        r["pool"] = mempool.current_pool() is None
        print(json.dumps(r))
        """
    )
    assert out["error"] and "pass a smaller initial_size" in out["error"], out
    assert out["pool"]


def test_jax_after_torch_keeps_only_the_initial_size_and_status_says_so() -> None:
    """Item 5: torch first, then JAX's backend (XLA writes the initial size as the threshold,
    which counts memory in use): 1 GiB torch frees goes back to the driver at the next
    synchronisation. Item 12: torch's ``memory_allocated()`` counts CuPy's bytes too (the
    whole pool); XLA's ``bytes_limit`` (the initial size here) is not enforced."""
    out = _run(
        """
        import json, os
        os.environ["JAX_CUDA_VISIBLE_DEVICES"] = "0"  # JAX on the pool's device alone
        import mempool
        pool = mempool.use_rmm_pool("256MiB", backend="async", devices=[0])
        import torch
        if not torch.cuda.is_available():
            print(json.dumps({"skip": "this torch has no CUDA"})); raise SystemExit
        torch.ones(1, device="cuda"); torch.cuda.synchronize()
        import jax, jax.numpy as jnp
        if jax.devices()[0].platform == "cpu":
            print(json.dumps({"skip": "this JAX has no GPU"})); raise SystemExit
        jnp.ones(4).block_until_ready()
        r = {"jax": pool.statistics()[0]}
        t = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); torch.cuda.synchronize()
        del t; torch.cuda.synchronize()
        r["after_free"] = pool.statistics()[0]
        import cupy
        before = torch.cuda.memory_allocated()
        c = cupy.ones(64 << 20, dtype=cupy.uint8); cupy.cuda.Device().synchronize()
        r["torch_counts_cupy"] = torch.cuda.memory_allocated() - before
        del c
        stats = jax.devices()[0].memory_stats() or {}
        r["bytes_limit"] = stats.get("bytes_limit")
        big = jnp.ones((512 << 20,), jnp.uint8).block_until_ready()  # past bytes_limit
        r["jax_past_limit"] = int(big[:16].sum())
        r["status"] = str(mempool.status())
        print(json.dumps(r))
        """
    )
    assert abs(out["jax"]["release_threshold"] - 256 * MiB) <= MiB, out["jax"]
    assert "after PyTorch's first allocation" in out["jax"]["release_threshold_by"]
    assert out["after_free"]["pool_bytes"] <= 300 * MiB, out["after_free"]  # 1 GiB given back
    assert out["torch_counts_cupy"] >= 64 << 20
    assert out["jax_past_limit"] == 16
    assert "memory_allocated() / memory_reserved() count the whole pool" in out["status"]
    if out["bytes_limit"]:
        assert "which XLA's cuda_async allocator does not enforce" in out["status"]


def test_the_users_preallocate_false_is_named_as_why_initial_size_is_not_kept() -> None:
    """Item 6: with the user's ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` XLA writes 0 despite
    ``initial_size``; status() named "pass initial_size=" before."""
    out = _run(
        """
        import json, os
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        import mempool
        pool = mempool.use_rmm_pool("256MiB", backend="async", frameworks=["jax", "cupy"],
                                    devices=[0])
        import jax, jax.numpy as jnp
        if jax.devices()[0].platform == "cpu":
            print(json.dumps({"skip": "this JAX has no GPU"})); raise SystemExit
        jnp.ones(4).block_until_ready()
        print(json.dumps(pool.statistics()[0]))
        """
    )
    assert out["release_threshold"] == 0, out
    assert "your XLA_PYTHON_CLIENT_PREALLOCATE=false kept" in out["release_threshold_by"]
    assert "pass initial_size=" not in out["release_threshold_by"]


def test_xla_primes_nothing_on_a_gpu_outside_the_pool() -> None:
    """Item 4: XLA primes and keeps its fraction on every device it starts on; with a pool
    on device 0 only, device 1's default pool must not hold the initial size."""
    out = _run(
        """
        import json
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 2:
            print(json.dumps({"skip": "needs two GPUs (JAX on a device outside the pool)"}))
            raise SystemExit
        import mempool
        pool = mempool.use_rmm_pool("1GiB", backend="async", frameworks=["jax", "cupy"],
                                    devices=[0])
        import jax, jax.numpy as jnp
        jnp.ones(4).block_until_ready()
        rt = cupy.cuda.runtime
        with cupy.cuda.Device(1):
            other = rt.memPoolGetAttribute(rt.deviceGetDefaultMemPool(1),
                                           rt.cudaMemPoolAttrReservedMemCurrent)
        print(json.dumps({"other": int(other), "by": pool.statistics()[0][
            "release_threshold_by"]}))
        """
    )
    assert out["other"] < 1 << 30, out
    assert "outside the pool's [0]" in out["by"]
