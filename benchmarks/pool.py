"""The GPU pool, side by side in one run: what an allocation costs and what a pipeline holds.

Per framework (CuPy, PyTorch, Numba, JAX), allocate+free pairs from 4 KiB to 1 GiB with:

* ``own``          the framework's own default allocator (CuPy's MemoryPool, torch's caching
                   allocator, Numba's memory manager, XLA's BFC allocator)
* ``pool``         ``use_rmm_pool()``: RMM's pool under a statistics adaptor (the default);
                   JAX cannot be routed there: XLA's BFC beside it, not preallocating
* ``shared``       ``use_rmm_pool(backend="async")``: the device's default CUDA pool, torch
                   (``cudaMallocAsync``), JAX (``cuda_async``) and CuPy (``MemoryAsyncPool``)
                   natively, Numba through RMM's view of it
* ``cached_pool``  (CuPy, torch) the framework's own cache *on top of* the pool (CuPy:
                   ``MemoryPool(allocator=rmm_cupy_allocator)``; torch: ``MemPool`` over RMM's
                   pluggable allocator in ``use_mem_pool``), to measure that option
* ``cudaMalloc``   (CuPy, torch, JAX) no cache at all (CuPy: ``set_allocator(None)``; torch:
                   ``PYTORCH_NO_CUDA_MEMORY_CACHING=1``; JAX: ``XLA_PYTHON_CLIENT_ALLOCATOR=
                   platform``)

``rmm_resource`` calls the RMM resources directly (pool with and without the statistics
adaptor, the async pool, cudaMalloc) to show where the time of the pool path goes.
``pipeline``: 2 GiB in CuPy, freed, then 2 GiB in torch; the device memory held (cudaMemGetInfo)
with each framework's own allocator, and under each pool mode.

Every measurement runs in a fresh interpreter (a pool is process-wide, and torch picks its
allocator once per process). Without a CUDA device, ``run()`` returns ``{"skipped": True,
"reason": ...}``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

GPU_ONLY = True
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SIZES = tuple(4 * KiB << (2 * k) for k in range(10))  # 4 KiB, 16 KiB, ..., 1 GiB
QUICK_SIZES = (4 * KiB, 1 * MiB)
FRAMEWORK_MODES = {
    "cupy": ("own", "pool", "shared", "cached_pool", "cudaMalloc"),
    "torch": ("own", "pool", "shared", "cached_pool", "cudaMalloc"),
    "numba": ("own", "pool", "shared"),  # Numba's own manager already calls cuMemAlloc
    "jax": ("own", "pool", "shared", "cudaMalloc"),
}
PIPELINE_MODES = ("own", "pool", "shared", "cached_pool")
FRAMEWORKS = tuple(FRAMEWORK_MODES)
BACKENDS = {"pool": "pool", "shared": "async"}  # mode -> use_rmm_pool(backend=...)
ROOT = Path(__file__).resolve().parent.parent


def _iterations(nbytes: int, quick: bool) -> int:
    top = 200 if quick else 2000
    return max(5, min(top, (256 * MiB) // nbytes))


# --- in the child interpreter -------------------------------------------------------------

def _pool_size(sizes: list[int]) -> int:
    return 2 * max(sizes)


def _routed(mode: str, sizes: list[int], framework: str) -> None:
    """``use_rmm_pool()`` for *framework* in a pool mode, before the framework starts."""
    import mempool

    if mode in BACKENDS:
        mempool.use_rmm_pool(_pool_size(sizes), frameworks=[framework], backend=BACKENDS[mode])


def _cupy_setup(mode: str, sizes: list[int]) -> tuple[Any, Any]:
    import cupy

    import mempool

    _routed(mode, sizes, "cupy")
    if mode == "cudaMalloc":
        cupy.cuda.set_allocator(None)
    elif mode == "cached_pool":
        from rmm.allocators.cupy import rmm_cupy_allocator

        mempool.use_rmm_pool(_pool_size(sizes), frameworks=[])
        cupy.cuda.set_allocator(cupy.cuda.MemoryPool(allocator=rmm_cupy_allocator).malloc)

    def alloc(n: int) -> Any:
        return cupy.empty(n, dtype=cupy.uint8)

    return alloc, cupy.cuda.runtime.deviceSynchronize


def _torch_setup(mode: str, sizes: list[int]) -> tuple[Any, Any]:
    import mempool

    if mode == "cudaMalloc":
        os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # read when CUDA initialises
    _routed(mode, sizes, "torch")  # before import torch: "shared" picks its backend there
    import torch

    if mode == "cached_pool":
        from rmm.allocators.torch import rmm_torch_allocator

        mempool.use_rmm_pool(_pool_size(sizes), frameworks=[])
        pool = torch.cuda.MemPool(rmm_torch_allocator.allocator())
        scope = torch.cuda.use_mem_pool(pool)  # this thread's allocations: the timing loop
        scope.__enter__()

    def alloc(n: int) -> Any:
        return torch.empty(n, dtype=torch.uint8, device="cuda")

    return alloc, torch.cuda.synchronize


def _numba_setup(mode: str, sizes: list[int]) -> tuple[Any, Any]:
    _routed(mode, sizes, "numba")  # before Numba's context binds its memory manager
    import numpy as np
    from numba import cuda

    def alloc(n: int) -> Any:
        return cuda.device_array(n, dtype=np.uint8)

    return alloc, cuda.synchronize


def _jax_setup(mode: str, sizes: list[int]) -> tuple[Any, Any]:
    if mode == "cudaMalloc":
        os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = "platform"  # read when JAX starts
    _routed(mode, sizes, "jax")  # before JAX's backend starts
    import jax
    import jax.numpy as jnp

    def alloc(n: int) -> Any:  # a fill kernel too: the same in every mode
        return jnp.zeros((n,), jnp.uint8)

    def synchronize() -> None:  # one compute stream: the last op done means all are
        jax.block_until_ready(jnp.zeros((1,), jnp.uint8))

    return alloc, synchronize


SETUPS = {"cupy": _cupy_setup, "torch": _torch_setup, "numba": _numba_setup, "jax": _jax_setup}


def _time_pairs(alloc: Any, synchronize: Any, nbytes: int, n: int) -> float:
    """Median over 5 rounds of the mean us per allocate+free pair."""
    alloc(nbytes)  # warm up: the result is freed at once
    synchronize()
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            x = alloc(nbytes)
            del x
        synchronize()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


def child_framework(framework: str, mode: str, sizes: list[int], quick: bool) -> dict[str, Any]:
    """Allocate+free timings of one framework in one mode, per size (us per pair)."""
    alloc, synchronize = SETUPS[framework](mode, sizes)
    return {"us": [_time_pairs(alloc, synchronize, s, _iterations(s, quick)) for s in sizes]}


def child_rmm_resource(sizes: list[int], quick: bool) -> dict[str, Any]:
    """RMM resources called directly: where the pool path's time goes."""
    import rmm.mr
    from cuda.bindings import runtime

    import mempool

    def synchronize() -> None:
        runtime.cudaDeviceSynchronize()

    def pairs(resource: Any) -> list[float]:
        def alloc(n: int) -> _Held:
            return _Held(resource, n)

        return [_time_pairs(alloc, synchronize, s, _iterations(s, quick)) for s in sizes]

    rows = {"cudaMalloc": pairs(rmm.mr.CudaMemoryResource())}
    with mempool.rmm_pool(_pool_size(sizes), frameworks=[]) as pool:
        rows["pool+statistics"] = pairs(pool.resource())
        rows["pool"] = pairs(pool.stacks[0].pool)
    with mempool.rmm_pool(_pool_size(sizes), frameworks=[], backend="async") as pool:
        rows["default pool view"] = pairs(pool.resource())
    return {"us": rows}


class _Held:
    """One allocation from an RMM resource, freed when dropped (as a framework's array is)."""

    __slots__ = ("n", "ptr", "resource")

    def __init__(self, resource: Any, n: int) -> None:
        self.resource, self.n = resource, n
        self.ptr = resource.allocate(n)

    def __del__(self) -> None:
        self.resource.deallocate(self.ptr, self.n)


def child_pipeline(mode: str, nbytes: int) -> dict[str, Any]:
    """nbytes in CuPy, freed, then nbytes in torch: device memory held, MiB."""
    import gc

    import cupy

    import mempool

    def used() -> int:
        free, total = cupy.cuda.runtime.memGetInfo()
        return total - free

    base = used()
    pool = None
    if mode in BACKENDS:  # before import torch: "shared" picks torch's backend there
        pool = mempool.use_rmm_pool("256MiB", frameworks=["cupy", "torch"],
                                    backend=BACKENDS[mode])
    import torch

    if mode == "cached_pool":
        from rmm.allocators.cupy import rmm_cupy_allocator
        from rmm.allocators.torch import rmm_torch_allocator

        pool = mempool.use_rmm_pool("256MiB", frameworks=[])
        cupy.cuda.set_allocator(cupy.cuda.MemoryPool(allocator=rmm_cupy_allocator).malloc)
        scope = torch.cuda.use_mem_pool(torch.cuda.MemPool(rmm_torch_allocator.allocator()))
        scope.__enter__()
    a = cupy.ones(nbytes, dtype=cupy.uint8)
    del a
    gc.collect()
    cupy.cuda.runtime.deviceSynchronize()
    b = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    out = {"held_mib": (used() - base) / MiB, "alive_mib": b.numel() / MiB}
    if pool is not None:
        s = pool.statistics()[pool.devices[0]]
        out.update(pool_mib=s["pool_bytes"] / MiB, peak_mib=s["peak_bytes"] / MiB)
    return out


def _child_main() -> None:
    kind, *args = sys.argv[1:]
    if kind == "framework":
        framework, mode, sizes, quick = args[0], args[1], json.loads(args[2]), args[3] == "1"
        result = child_framework(framework, mode, sizes, quick)
    elif kind == "rmm":
        result = child_rmm_resource(json.loads(args[0]), args[1] == "1")
    else:
        result = child_pipeline(args[0], int(args[1]))
    print(json.dumps(result))


# --- in the benchmark process ----------------------------------------------------------------

def _spawn(*args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMPOOL_", "XLA_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    code = "from benchmarks.pool import _child_main; _child_main()"
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip()
                else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def no_gpu_reason() -> str | None:
    """``None`` when a CUDA device is usable, else why not (asks the CUDA runtime)."""
    from mempool.device import cuda_device_count

    count, reason = cuda_device_count()
    return None if count else f"no CUDA device: {reason}"


def run(quick: bool = False) -> dict[str, Any]:
    """Every measurement above, or ``{"skipped": True, "reason": ...}`` without a GPU."""
    reason = no_gpu_reason()
    if reason is not None:
        return {"skipped": True, "reason": reason}
    sizes = list(QUICK_SIZES if quick else SIZES)
    q = "1" if quick else "0"
    out: dict[str, Any] = {"skipped": False, "sizes": sizes, "frameworks": {}}
    for framework in FRAMEWORKS:
        modes = {m: _spawn("framework", framework, m, json.dumps(sizes), q)
                 for m in FRAMEWORK_MODES[framework]}
        out["frameworks"][framework] = {"modes": modes, "ratios": _ratios(modes)}
    out["rmm_resource"] = _spawn("rmm", json.dumps(sizes), q)
    nbytes = 256 * MiB if quick else 2 * GiB
    out["pipeline"] = {"bytes": nbytes,
                       "modes": {m: _spawn("pipeline", m, str(nbytes)) for m in PIPELINE_MODES}}
    return out


def _ratios(modes: dict[str, dict[str, Any]]) -> dict[str, list[float] | None]:
    """Per size: each pool mode over the framework's own allocator, cudaMalloc over the pool."""
    def us(mode: str) -> list[float] | None:
        return modes.get(mode, {}).get("us")

    own, cuda = us("own"), us("cudaMalloc")
    ratios: dict[str, list[float] | None] = {}
    for mode in [m for m in modes if m not in ("own", "cudaMalloc")]:
        t = us(mode)
        ratios[f"{mode}/own"] = None if t is None or own is None else [
            a / b for a, b in zip(t, own, strict=True)]
        if "cudaMalloc" in modes:
            ratios[f"cudaMalloc/{mode}"] = None if t is None or cuda is None else [
                c / a for c, a in zip(cuda, t, strict=True)]
    return ratios


def markdown(result: dict[str, Any]) -> list[str]:
    """The section's lines for the benchmark report."""
    lines = ["", "## 7. GPU pool", ""]
    if result.get("skipped"):
        return lines + [f"Skipped: {result['reason']}."]
    for framework, data in result["frameworks"].items():
        modes = list(data["modes"])
        keys = [k for k in data["ratios"] if k.endswith("/own")]
        head = "| size | " + " | ".join(modes + keys) + " |"
        lines += ["", f"{framework}: us per allocate+free pair (median of 5 rounds)", "", head,
                  "|---" * (len(modes) + len(keys) + 1) + "|"]
        for i, size in enumerate(result["sizes"]):
            cells = []
            for mode in modes:
                row = data["modes"][mode]
                cells.append(f"{row['us'][i]:.1f}" if "us" in row else "error")
            for key in keys:
                r = data["ratios"][key]
                cells.append("" if r is None else f"{r[i]:.2f}")
            lines.append(f"| {_size(size)} | " + " | ".join(cells) + " |")
        errors = {m: r["error"] for m, r in data["modes"].items() if "error" in r}
        lines += [f"- {framework} {m}: {e}" for m, e in errors.items()]
    rmm = result.get("rmm_resource", {})
    if "us" in rmm:
        names = list(rmm["us"])
        lines += ["", "RMM resources called directly, us per pair", "",
                  "| size | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for i, size in enumerate(result["sizes"]):
            lines.append(f"| {_size(size)} | "
                         + " | ".join(f"{rmm['us'][n][i]:.1f}" for n in names) + " |")
    p = result.get("pipeline", {})
    if p:
        lines += ["", f"Pipeline: {_size(p['bytes'])} in CuPy, freed, then {_size(p['bytes'])} "
                  "in torch; device memory held (MiB)", "",
                  "| mode | held | pool | pool peak |", "|---|---|---|---|"]
        for mode, row in p["modes"].items():
            if "error" in row:
                lines.append(f"| {mode} | error: {row['error']} | | |")
                continue
            pool = f"{row['pool_mib']:.0f} | {row['peak_mib']:.0f}" if "pool_mib" in row else " | "
            lines.append(f"| {mode} | {row['held_mib']:.0f} | {pool} |")
    return lines


def _size(n: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main() -> int:
    """Print the section (or why it was skipped); exit 0 either way."""
    print("\n".join(markdown(run(quick="--quick" in sys.argv[1:]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
