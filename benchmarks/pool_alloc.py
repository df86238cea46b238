"""Allocate/free through the mempool RMM pool vs. cudaMalloc/cudaFree, 1 KiB .. 1 GiB.

Needs a CUDA GPU (the benchmark is GPU-only). Without one it prints that it was skipped
and why, and exits 0. ``run(sizes=None) -> dict`` is the entry point for a runner::

    python benchmarks/pool_alloc.py
"""

from __future__ import annotations

import sys
import time
from typing import Any

GPU_ONLY = True
DEFAULT_SIZES = tuple(1 << p for p in range(10, 31, 2))  # 1 KiB, 4 KiB, ..., 1 GiB


def _iterations(nbytes: int) -> int:
    return max(5, min(2000, (256 << 20) // max(nbytes, 1)))


def _time_pairs(resource: Any, nbytes: int, iterations: int, synchronize: Any) -> float:
    """Mean seconds per allocate+deallocate pair."""
    resource.deallocate(resource.allocate(nbytes), nbytes)  # warm up
    synchronize()
    start = time.perf_counter()
    for _ in range(iterations):
        ptr = resource.allocate(nbytes)
        resource.deallocate(ptr, nbytes)
    synchronize()
    return (time.perf_counter() - start) / iterations


def run(sizes: tuple[int, ...] | list[int] | None = None) -> dict[str, Any]:
    """Time alloc/free pairs per size; ``{"skipped": True, "reason": ...}`` without a GPU."""
    from mempool.device import cuda_device_count

    count, reason = cuda_device_count()
    if count == 0:
        return {"skipped": True, "reason": f"no CUDA device: {reason}"}
    import rmm.mr
    from cuda.bindings import runtime

    import mempool

    sizes = tuple(sizes or DEFAULT_SIZES)

    def synchronize() -> None:
        runtime.cudaDeviceSynchronize()

    direct = rmm.mr.CudaMemoryResource()  # cudaMalloc / cudaFree
    initial = max(sizes) * 2
    results = []
    with mempool.rmm_pool(initial, frameworks=[]) as pool:
        pooled = pool.resource()
        for nbytes in sizes:
            n = _iterations(nbytes)
            t_pool = _time_pairs(pooled, nbytes, n, synchronize)
            t_cuda = _time_pairs(direct, nbytes, n, synchronize)
            results.append({"bytes": nbytes, "iterations": n, "pool_us": t_pool * 1e6,
                            "cuda_us": t_cuda * 1e6, "speedup": t_cuda / t_pool})
    return {"skipped": False, "pool_initial_bytes": initial, "results": results}


def main() -> int:
    """Print the table (or why it was skipped); always exit 0 when skipped."""
    report = run()
    if report["skipped"]:
        print(f"pool_alloc: skipped ({report['reason']})")
        return 0
    print(f"{'size':>10} {'pool us':>10} {'cudaMalloc us':>14} {'speedup':>8}")
    for row in report["results"]:
        print(f"{row['bytes']:>10} {row['pool_us']:>10.2f} {row['cuda_us']:>14.2f} "
              f"{row['speedup']:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
