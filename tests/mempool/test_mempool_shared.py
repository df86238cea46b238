"""``backend="async"``: every framework on the device's default CUDA pool, decided on the CPU.

No device here, so every device call goes to a named stand-in: ``DriverStandIn`` plays the
CUDA runtime of ``cuda.bindings`` (it records every call, in order, and keeps the pool's
attributes), ``MemoryAsyncPoolStandIn`` plays ``cupy.cuda.MemoryAsyncPool`` (with CuPy's
limit check in ``malloc``), ``malloc_async_stand_in`` plays ``cupy.cuda.malloc_async``,
``XLAStandIn`` the start of XLA's ``cuda_async`` allocator (the release threshold it writes),
and ``torch_stand_in`` a CUDA build of PyTorch as far as mempool reads it. The settings
written, their order, the errors and what ``close()`` gives back are the real code's.
"""

from __future__ import annotations

import os
import sys
import types
import warnings
from types import SimpleNamespace
from typing import Any

import pytest

import mempool
from mempool import adapters, api, asyncpool
from mempool import pool as pool_module
from mempool.adapters import cupy as cupy_adapter
from mempool.adapters import jax as jax_adapter
from mempool.adapters import numba as numba_adapter
from mempool.adapters import torch as torch_adapter
from mempool.errors import ConfigError, MempoolWarning, OrderError

cupy = pytest.importorskip("cupy")
rmm_mr = pytest.importorskip("rmm.mr")
pytest.importorskip("cuda.bindings.runtime")

KEEP = (1 << 64) - 1
DEFAULT_POOL, OTHER_POOL = 0xD00, 0x0A0
ENV = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "XLA_PYTHON_CLIENT_ALLOCATOR",
       "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
       "XLA_CLIENT_MEM_FRACTION", "MEMPOOL_BACKEND")


class DriverStandIn:
    """The CUDA runtime calls asyncpool makes, on one device whose current pool is another."""

    cudaError_t = SimpleNamespace(cudaSuccess=0, cudaErrorMemoryAllocation=2)
    cudaMemPoolAttr = SimpleNamespace(
        cudaMemPoolAttrReleaseThreshold="threshold", cudaMemPoolAttrReservedMemCurrent="reserved",
        cudaMemPoolAttrReservedMemHigh="reserved_high", cudaMemPoolAttrUsedMemCurrent="used",
        cudaMemPoolAttrUsedMemHigh="used_high")

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.current = OTHER_POOL
        self.attrs = {"threshold": 0, "reserved": 3 << 30, "reserved_high": 4 << 30,
                      "used": 1 << 30, "used_high": 2 << 30}

    def allocate(self, size: int) -> None:
        """cudaMallocAsync from the default pool: the pool grows by what it lacks."""
        a = self.attrs
        a["used"] += size
        a["reserved"] = max(a["reserved"], a["used"])

    def free(self, size: int) -> None:
        self.attrs["used"] -= size

    def synchronize(self) -> None:
        """The driver gives back what the pool holds unused above its release threshold."""
        a = self.attrs
        a["reserved"] = max(a["used"], min(a["reserved"], a["threshold"]))

    def cudaDeviceGetDefaultMemPool(self, device: int) -> tuple[int, int]:
        return 0, DEFAULT_POOL

    def cudaDeviceGetMemPool(self, device: int) -> tuple[int, int]:
        return 0, self.current

    def cudaDeviceSetMemPool(self, device: int, pool: int) -> tuple[int]:
        self.log.append(f"current pool {pool:#x}")
        self.current = pool
        return (0,)

    def cudaMemPoolGetAttribute(self, pool: int, attr: str) -> tuple[int, int]:
        assert pool == DEFAULT_POOL
        return 0, self.attrs[attr]

    def cudaMemPoolSetAttribute(self, pool: int, attr: str, value: Any) -> tuple[int]:
        assert pool == DEFAULT_POOL
        self.log.append(f"{attr} {int(value):#x}")
        self.attrs[attr] = int(value)
        return (0,)

    def cudaMallocFromPoolAsync(self, size: int, pool: int, stream: int) -> tuple[int, int]:
        self.log.append(f"prime {size}")
        self.allocate(size)
        self.primed = size
        return 0, 0x1000

    def cudaFreeAsync(self, ptr: int, stream: int) -> tuple[int]:
        self.free(self.primed)
        return (0,)

    def cudaStreamSynchronize(self, stream: int) -> tuple[int]:
        return (0,)


class MemoryAsyncPoolStandIn:
    """``cupy.cuda.MemoryAsyncPool`` (v13.6, v14.2): records the handles it was built with;
    ``malloc`` makes CuPy's check (``memory.pyx``): the pool's release threshold is its limit,
    and an allocation that needs the pool to grow past it is refused."""

    log: list[str] = []
    driver: Any = None

    def __init__(self, pool_handles: Any = "current") -> None:
        self.pool_handles = pool_handles
        self._pools = [DEFAULT_POOL if h == "default" else OTHER_POOL for h in pool_handles]
        self.log.append(f"cupy MemoryAsyncPool({pool_handles})")

    def malloc(self, size: int) -> int:
        a = self.driver.attrs
        curr_total, curr_free = a["reserved"], a["reserved"] - a["used"]
        if curr_free < size and max(a["threshold"], curr_total) < curr_total + size:
            raise cupy.cuda.memory.OutOfMemoryError(size, curr_total, a["threshold"])
        self.driver.allocate(size)
        return size


def malloc_async_stand_in(size: int) -> int:
    """``cupy.cuda.malloc_async``: ``cudaMallocAsync`` from the device's current pool, no check."""
    driver = MemoryAsyncPoolStandIn.driver
    assert driver.current == DEFAULT_POOL, "the default pool is the device's current pool"
    driver.allocate(size)
    return size


class XLAStandIn:
    """XLA's ``cuda_async`` allocator starting on a device of ``total`` bytes, as
    ``se_gpu_pjrt_client.cc`` and ``gpu_cudamallocasync_allocator.cc`` do it on the default
    pool: ``reserve = total x fraction`` if it preallocates, else 0, written as the pool's
    release threshold; a preallocating XLA then primes the pool with ``reserve`` bytes. The
    variables are read as jaxlib reads them (preallocation on and 0.75 by default)."""

    def __init__(self, driver: DriverStandIn, total: int) -> None:
        self.driver, self.total = driver, total

    def start(self) -> None:
        assert os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] == "cuda_async"
        preallocate = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").lower() not in (
            "false", "0")
        fraction = float(os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION",
                                        os.environ.get("XLA_CLIENT_MEM_FRACTION", "0.75")))
        reserve = int(self.total * fraction) if preallocate else 0
        self.driver.log.append(f"xla threshold {reserve:#x}")
        self.driver.attrs["threshold"] = reserve
        if reserve:
            self.driver.allocate(reserve)
            self.driver.free(reserve)


def torch_stand_in(backend: str) -> types.ModuleType:
    """A CUDA build of PyTorch that was imported with the allocator *backend*."""
    module = types.ModuleType("torch")
    module.version = SimpleNamespace(cuda="12.9", hip=None)
    module._C = SimpleNamespace(_cuda_getAllocatorBackend=lambda: backend,
                                _cuda_getAllocator=lambda: None,
                                _cuda_changeCurrentAllocator=lambda a: None)
    module.cuda = SimpleNamespace(is_initialized=lambda: False)
    return module


@pytest.fixture
def log() -> list[str]:
    return []


@pytest.fixture
def driver(monkeypatch, log) -> DriverStandIn:
    runtime = DriverStandIn(log)
    monkeypatch.setattr(asyncpool, "_runtime", lambda: runtime)
    return runtime


@pytest.fixture
def clean(monkeypatch):
    """No allocator variable set, torch not imported, JAX not started (a stand-in of
    ``jax._src.xla_bridge`` with no backends), CuPy's allocator kept."""
    for var in ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setitem(sys.modules, "jax._src.xla_bridge", SimpleNamespace(_backends={}))
    monkeypatch.setattr(jax_adapter, "_started_with", [], raising=False)
    before = cupy.cuda.get_allocator()
    yield monkeypatch
    cupy.cuda.set_allocator(before)


@pytest.fixture
def cupy_async(monkeypatch, log, driver):
    MemoryAsyncPoolStandIn.log = log
    MemoryAsyncPoolStandIn.driver = driver
    monkeypatch.setattr(cupy.cuda, "MemoryAsyncPool", MemoryAsyncPoolStandIn)
    monkeypatch.setattr(cupy.cuda, "malloc_async", malloc_async_stand_in)
    monkeypatch.setattr(cupy.cuda.runtime, "deviceGetMemPool", lambda d: driver.current)
    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceCount", lambda: 2)
    monkeypatch.setattr(cupy.cuda.runtime, "getDevice", lambda: 0)
    monkeypatch.setattr(cupy.cuda.runtime, "deviceGetDefaultMemPool", lambda d: DEFAULT_POOL)


# --- the driver pool: share, one threshold, give back ------------------------------------

def test_share_settle_unshare_write_the_driver_in_order(driver, log) -> None:
    shared = asyncpool.share(0)
    assert (shared.handle, shared.previous_current, shared.previous_threshold) == (
        DEFAULT_POOL, OTHER_POOL, 0)
    asyncpool.settle(shared, 256 << 20)
    assert log == [f"current pool {DEFAULT_POOL:#x}", f"threshold {KEEP:#x}", "prime 268435456"]
    assert asyncpool.statistics(DEFAULT_POOL) == {
        "reserved": 3 << 30, "reserved_peak": 4 << 30, "in_use": 1 << 30, "peak": 2 << 30,
        "release_threshold": KEEP}
    log.clear()
    asyncpool.unshare(shared, keep_threshold=True)  # a framework still runs on the pool
    assert log == [f"current pool {OTHER_POOL:#x}"] and driver.attrs["threshold"] == KEEP
    asyncpool.unshare(shared, keep_threshold=False)
    assert driver.attrs["threshold"] == 0


# --- PyTorch: PYTORCH_CUDA_ALLOC_CONF before import ---------------------------------------

def test_torch_async_writes_the_backend_before_import_and_gives_it_back(clean) -> None:
    state = torch_adapter.install({0: None}, backend="async")
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "backend:cudaMallocAsync"
    report = torch_adapter.status("async")
    assert report.routed and report.reason.endswith("(not imported yet)")
    assert not torch_adapter.status(None).routed  # the default pool is not a mempool pool
    assert torch_adapter.uninstall(state) is None
    assert "PYTORCH_CUDA_ALLOC_CONF" not in os.environ


@pytest.mark.parametrize(("var", "value", "written"), [
    ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True",
     "expandable_segments:True,backend:cudaMallocAsync"),
    ("PYTORCH_ALLOC_CONF", "pinned_use_cuda_host_register:True",
     "pinned_use_cuda_host_register:True,backend:cudaMallocAsync"),
])
def test_torch_async_adds_to_the_variable_torch_reads(clean, var, value, written) -> None:
    clean.setenv(var, value)
    state = torch_adapter.install({0: None}, backend="async")
    other = ({"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"} - {var}).pop()
    assert os.environ[var] == written and other not in os.environ  # only the one torch reads
    torch_adapter.uninstall(state)
    assert os.environ[var] == value


def test_torch_async_refuses_a_backend_the_user_chose(clean) -> None:
    clean.setenv("PYTORCH_CUDA_ALLOC_CONF", "backend:native")
    with pytest.raises(ConfigError, match=r"PYTORCH_CUDA_ALLOC_CONF='backend:native'; remove "
                                          r"'backend:native' from it, or use backend='pool'"):
        torch_adapter.check([0], backend="async")


def test_torch_imported_with_its_native_allocator_is_an_order_error(clean) -> None:
    clean.setitem(sys.modules, "torch", torch_stand_in("native"))
    with pytest.raises(OrderError) as info:
        torch_adapter.check([0], backend="async")
    message = str(info.value)
    assert "chose its 'native' CUDA allocator" in message
    assert "before 'import torch'" in message
    assert "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync" in message
    torch_adapter.check([0], backend="pool")  # the pluggable allocator may still come first


def test_torch_imported_on_cuda_malloc_async_is_routed_natively(clean) -> None:
    clean.setitem(sys.modules, "torch", torch_stand_in("cudaMallocAsync"))
    state = torch_adapter.install({0: None}, backend="async")
    assert state == torch_adapter.ALREADY and "PYTORCH_CUDA_ALLOC_CONF" not in os.environ
    assert torch_adapter.status("async").routed
    reason = torch_adapter.status("async").reason
    assert "natively from the device's default pool" in reason
    assert "torch.cuda.empty_cache() trims the pool for every framework" in reason
    assert "reset_peak_memory_stats() resets the peaks status() reads" in reason
    # CUDAMallocAsyncAllocator.cpp getDeviceStats: the default pool's used/reserved counters
    assert ("torch.cuda.memory_allocated() / memory_reserved() count the whole pool (every "
            "framework's bytes)") in reason
    assert not torch_adapter.status("pool").routed
    assert torch_adapter.uninstall(state) is None  # it was like that before the pool


def test_torch_imported_under_the_pool_keeps_its_backend_after_close(clean) -> None:
    state = torch_adapter.install({0: None}, backend="async")
    clean.setitem(sys.modules, "torch", torch_stand_in("cudaMallocAsync"))  # import torch
    left = torch_adapter.uninstall(state)
    assert "PYTORCH_CUDA_ALLOC_CONF" not in os.environ  # the variable is given back anyway
    assert left is not None and left.keeps_pool
    assert "keeps that backend for the life of the process" in left.reason


# --- JAX: cuda_async, no preallocation, a fraction that keeps everything -----------------

def test_jax_async_preallocates_the_initial_size_as_its_fraction(clean) -> None:
    """XLA writes its fraction of the device as the pool's threshold only if it preallocates
    (else 0): with an initial size, XLA preallocates exactly that fraction."""
    clean.setattr(jax_adapter, "device_memory", lambda d: (0, 80 << 30))
    state = jax_adapter.install({0: None}, allocator="cuda_async", backend="async",
                                initial={0: 1 << 30})
    assert [os.environ.get(v) for v in ENV[2:5]] == ["cuda_async", "true", repr(1 / 80)]
    report = jax_adapter.status("async")
    assert report.routed and "natively from the device's default pool" in report.reason
    assert not jax_adapter.status("pool").routed
    assert jax_adapter.uninstall(state) is None
    assert not set(ENV[2:5]) & set(os.environ)
    state = jax_adapter.install({0: None}, allocator="cuda_async", backend="async",
                                initial={0: None})  # no initial size: no preallocation
    assert [os.environ.get(v) for v in ENV[2:5]] == ["cuda_async", "false", None]
    jax_adapter.uninstall(state)


def test_jax_async_keeps_the_users_fraction(clean) -> None:
    clean.setenv("XLA_CLIENT_MEM_FRACTION", "0.5")  # jaxlib refuses both variables at once
    state = jax_adapter.install({0: None}, allocator="cuda_async", backend="async",
                                initial={0: 1 << 30})
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    jax_adapter.uninstall(state)


def test_jax_started_on_the_gpu_with_its_own_allocator_is_an_order_error(clean) -> None:
    clean.setitem(sys.modules, "jax._src.xla_bridge", SimpleNamespace(_backends={"cuda": 0}))
    with pytest.raises(OrderError, match=r"JAX already started on the GPU with XLA's 'default' "
                                         r"allocator.*XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async"):
        jax_adapter.check([0], allocator="cuda_async", backend="async")
    jax_adapter.check([0], allocator=None, backend="pool")  # beside RMM's pool: a warning only
    clean.setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "cuda_async")
    jax_adapter.check([0], allocator="cuda_async", backend="async")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # it shares the pool already: nothing to warn about
        state = jax_adapter.install({0: None}, allocator="cuda_async", backend="async")
    left = jax_adapter.uninstall(state)
    assert left is not None and left.keeps_pool and "keeps it" in left.reason
    assert os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] == "cuda_async"  # the user's, kept


# --- CuPy: cudaMallocAsync from the current pool, no MemoryAsyncPool ---------------------

def test_cupy_async_allocates_from_the_current_pool_and_builds_no_memory_async_pool(
        clean, cupy_async, driver, log) -> None:
    """Issue 35: a ``MemoryAsyncPool`` built with a list visits every visible GPU and writes
    each one's threshold, and its ``malloc`` takes the threshold as a limit; CuPy now calls
    ``cudaMallocAsync`` itself (``cupy.cuda.malloc_async``) and writes nothing."""
    before = cupy.cuda.get_allocator()
    driver.current = DEFAULT_POOL  # as share() leaves it
    state = cupy_adapter.install({0: None}, backend="async")
    assert cupy.cuda.get_allocator() is cupy_adapter.malloc_shared
    assert cupy.cuda.get_allocator()(1 << 20) == 1 << 20  # through cupy.cuda.malloc_async
    assert log == []  # no pool built, no device visited, no threshold written
    report = cupy_adapter.status("async")
    assert report.routed and "cudaMallocAsync from the device's current pool" in report.reason
    assert not cupy_adapter.status(None).routed
    driver.current = OTHER_POOL  # closed: the device's current pool is no longer the default
    assert not cupy_adapter.status("async").routed
    assert cupy_adapter.uninstall(state) is None
    assert cupy.cuda.get_allocator() is before


class OutOfMemoryStandIn:
    """``cupy.cuda.malloc_async`` on a full pool, as CuPy 14.2 does it (``memory.pyx``:
    ``MemoryAsync.__init__`` calls ``runtime.mallocAsync``, which raises the runtime's
    ``CUDARuntimeError(cudaErrorMemoryAllocation)``) for its first ``fails`` calls; the current
    stream's ``synchronize`` is recorded (it returns memory freed on it to the pool)."""

    def __init__(self, log: list[str], fails: int, status: int = 2) -> None:
        self.log, self.fails, self.status = log, fails, status

    def __call__(self, size: int) -> int:
        self.log.append(f"malloc_async {size}")
        if self.fails:
            self.fails -= 1
            raise cupy.cuda.runtime.CUDARuntimeError(self.status)
        return size

    def stream(self) -> SimpleNamespace:
        return SimpleNamespace(synchronize=lambda: self.log.append("synchronize"))


@pytest.mark.parametrize("fails", [1, 2, 3])
def test_cupy_out_of_memory_on_the_shared_pool_is_cupys_out_of_memory_error(
        clean, cupy_async, driver, log, fails) -> None:
    """Before, CuPy's allocator on the shared pool was ``malloc_async`` itself: a full pool
    raised ``CUDARuntimeError`` (a ``RuntimeError``), which neither ``except MemoryError`` nor
    CuPy's own fallbacks catch, with no retry. Now it retries as ``MemoryAsyncPool.malloc``
    does (synchronise the current stream, twice) and raises ``OutOfMemoryError``."""
    full = OutOfMemoryStandIn(log, fails)
    clean.setattr(cupy.cuda, "malloc_async", full)
    clean.setattr(cupy.cuda, "get_current_stream", full.stream)
    driver.current = DEFAULT_POOL
    state = cupy_adapter.install({0: None}, backend="async")
    try:
        allocate = cupy.cuda.get_allocator()
        if fails < 3:
            assert allocate(4096) == 4096
        else:
            with pytest.raises(MemoryError) as e:
                allocate(4096)
            assert isinstance(e.value, cupy.cuda.memory.OutOfMemoryError), type(e.value)
            assert "Out of memory allocating 4,096 bytes" in str(e.value)
        tries = min(fails + 1, 3)
        assert log == ["malloc_async 4096", "synchronize"] * (tries - 1) + ["malloc_async 4096"]
    finally:
        cupy_adapter.uninstall(state)


def test_cupy_other_runtime_errors_on_the_shared_pool_pass_through(clean, cupy_async, driver,
                                                                   log) -> None:
    broken = OutOfMemoryStandIn(log, 1, status=700)  # cudaErrorIllegalAddress: not retried
    clean.setattr(cupy.cuda, "malloc_async", broken)
    driver.current = DEFAULT_POOL
    state = cupy_adapter.install({0: None}, backend="async")
    try:
        with pytest.raises(cupy.cuda.runtime.CUDARuntimeError):
            cupy.cuda.get_allocator()(4096)
        assert log == ["malloc_async 4096"]
    finally:
        cupy_adapter.uninstall(state)


def test_cupy_memory_limit_is_refused_on_the_shared_pool(clean, cupy_async, no_device, log):
    """``CUPY_GPU_MEMORY_LIMIT`` cannot be honoured on a pool every framework shares (and
    ``MemoryAsyncPool`` used to replace it silently): refused, nothing changed."""
    clean.setenv("CUPY_GPU_MEMORY_LIMIT", "50%")
    before = cupy.cuda.get_allocator()
    with pytest.raises(ConfigError, match=r"CUPY_GPU_MEMORY_LIMIT='50%'.*cannot be honoured "
                                          r"there; unset CUPY_GPU_MEMORY_LIMIT"):
        mempool.use_rmm_pool(backend="async", frameworks=["cupy"])
    assert log == [] and cupy.cuda.get_allocator() is before
    cupy_adapter.check([0], backend="pool")  # RMM's pool: CuPy's variable is not read


# --- issue 35, item 1: XLA's threshold rule, in either order -----------------------------

GiB = 1 << 30


@pytest.mark.parametrize("order", [("torch", "jax", "cupy"), ("jax", "torch", "cupy")])
def test_the_shared_pool_holds_whatever_order_the_frameworks_start_in(
        order, clean, cupy_async, no_device, driver, log) -> None:
    """torch -> JAX -> CuPy and JAX -> torch -> CuPy on the shared pool, with the stand-ins of
    XLA's threshold rule and CuPy's allocation: CuPy allocates past the threshold XLA wrote,
    and the pool keeps at least its initial size across a synchronisation. Before: XLA, not
    preallocating, wrote 0 and CuPy's ``MemoryAsyncPool`` refused to grow the pool."""
    total = 80 * GiB  # the no_device fixture's device
    driver.attrs.update(threshold=0, reserved=0, used=0)
    xla = XLAStandIn(driver, total)
    start = {"torch": lambda: driver.attrs.update(threshold=KEEP),  # lazy_init_device
             "jax": xla.start,
             "cupy": lambda: cupy.cuda.get_allocator()(GiB)}  # grows the pool by 1 GiB
    pool = mempool.use_rmm_pool("256MiB", backend="async", frameworks=["cupy", "torch", "jax"])
    try:
        for name in order:
            start[name]()
        assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"
        assert driver.attrs["used"] == GiB  # CuPy's array
        driver.attrs["used"] = 0  # freed
        driver.synchronize()
        assert driver.attrs["reserved"] >= 256 << 20  # the primed size survives
        report = mempool.status()
        writer = report.statistics[0]["release_threshold_by"]
        assert writer.startswith("XLA when JAX's GPU backend started" if order[-2] == "jax"
                                 else "mempool, or PyTorch's")
        assert f"(written last by {writer})" in str(report)
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pool.close()
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in os.environ
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ


def test_without_an_initial_size_xla_does_not_preallocate_and_status_says_why(
        clean, cupy_async, no_device, driver) -> None:
    pool = mempool.use_rmm_pool(backend="async", frameworks=["cupy", "jax"])
    try:
        assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
        assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ
        XLAStandIn(driver, 80 * GiB).start()
        cupy.cuda.get_allocator()(GiB)  # CuPy still grows the pool
        text = str(mempool.status())
        assert "releases what it holds above 0 B at each synchronisation" in text
        assert "pass initial_size= to keep that much" in text
    finally:
        pool.close()


def test_xla_is_not_let_preallocate_on_gpus_outside_the_pool(clean, cupy_async, no_device,
                                                              driver, log) -> None:
    """XLA makes one ``cuda_async`` allocator per device it starts on, each priming and
    keeping ``fraction x total`` (``se_gpu_pjrt_client.cc``, ``CreateCudaAsyncAllocator``):
    one process-wide fraction would take the initial size on every visible GPU, not only the
    pool's (a dask-cuda worker sees all of them). Before, mempool set it whenever an initial
    size was given; now only where JAX starts on the pool's devices alone, and status() says
    why the pool's device then runs with XLA's 0."""
    clean.setattr(jax_adapter, "cuda_device_count", lambda: (4, "4 CUDA device(s)"))
    pool = mempool.use_rmm_pool("1GiB", backend="async", frameworks=["cupy", "jax"])
    try:
        assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
        assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ
        XLAStandIn(driver, 80 * GiB).start()  # on each of the 4: threshold 0, nothing primed
        assert log[-1] == "xla threshold 0x0"
        writer = mempool.status().statistics[0]["release_threshold_by"]
        assert "JAX would start on devices [1, 2, 3] outside the pool's [0]" in writer
        assert "set JAX_CUDA_VISIBLE_DEVICES=0 before JAX starts" in writer
    finally:
        pool.close()
    clean.setenv("JAX_CUDA_VISIBLE_DEVICES", "0")  # JAX uses the pool's device only
    pool = mempool.use_rmm_pool("1GiB", backend="async", frameworks=["cupy", "jax"])
    try:
        assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"
        assert os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] == repr(1 / 80)
    finally:
        pool.close()


@pytest.mark.parametrize(("yours", "xla_wrote"), [
    ({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, 0),
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.5"}, 0),  # mempool: PREALLOCATE=false
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.5", "XLA_PYTHON_CLIENT_PREALLOCATE": "true"},
     40 * GiB)])
def test_the_users_own_xla_settings_are_named_not_initial_size(
        clean, cupy_async, no_device, driver, yours, xla_wrote) -> None:
    """The usual JAX-beside-torch settings are kept, and XLA writes what they say (0 without
    preallocation, its fraction with): before, status() then advised "pass initial_size="
    (which the user had passed) or named "another writer (CuPy's set_limit ...)"."""
    for k, v in yours.items():
        clean.setenv(k, v)
    pool = mempool.use_rmm_pool("1GiB", backend="async", frameworks=["cupy", "jax"])
    try:
        XLAStandIn(driver, 80 * GiB).start()
        assert driver.attrs["threshold"] == xla_wrote
        writer = mempool.status().statistics[0]["release_threshold_by"]
        assert writer.startswith("XLA when JAX's GPU backend started: your ")
        assert all(f"{k}={v}" in writer for k, v in yours.items())
        assert "unset them before use_rmm_pool()" in writer
        assert "pass initial_size=" not in writer and "another writer" not in writer
    finally:
        pool.close()


def test_jax_started_after_torch_keeps_only_the_initial_size_and_status_says_so(
        clean, cupy_async, no_device, driver) -> None:
    """The threshold counts every byte the pool holds, in use or not (CUDA's
    ``cudaMemPoolAttrReleaseThreshold``, the stand-in driver's ``synchronize``): with XLA's
    value (JAX started after torch's first allocation) the pool keeps 256 MiB in all, and
    torch's freed 2 GiB go back to the driver at the next synchronisation; with torch's
    (JAX first) everything stays. status() says which, and what it means."""
    driver.attrs.update(threshold=0, reserved=0, used=0)
    pool = mempool.use_rmm_pool("256MiB", backend="async", frameworks=["cupy", "jax"])
    try:
        driver.attrs.update(threshold=KEEP)  # torch's first allocation
        XLAStandIn(driver, 80 * GiB).start()  # then JAX's backend
        driver.allocate(2 * GiB)
        driver.free(2 * GiB)
        driver.synchronize()
        assert driver.attrs["reserved"] == 256 << 20  # not the 2 GiB torch freed
        writer = mempool.status().statistics[0]["release_threshold_by"]
        assert "after PyTorch's first allocation" in writer
        assert "keeps at most that much reserved, memory in use included" in writer
    finally:
        pool.close()


def test_a_second_async_pool_after_jax_started_under_a_closed_one(
        clean, cupy_async, no_device, driver) -> None:
    """Issue 35, item 6: JAX started under a pool keeps cuda_async after close() gives the
    variable back; a second ``use_rmm_pool(backend="async")`` is not refused for it."""
    pool = mempool.use_rmm_pool(backend="async", frameworks=["jax"])
    clean.setitem(sys.modules, "jax._src.xla_bridge", SimpleNamespace(_backends={"cuda": 0}))
    clean.setitem(sys.modules, "jax", SimpleNamespace(devices=lambda: []))  # JAX started
    with pytest.warns(MempoolWarning, match="jax: XLA chose its cuda_async allocator"):
        pool.close()
    assert "XLA_PYTHON_CLIENT_ALLOCATOR" not in os.environ
    report = jax_adapter.status("async")
    assert report.routed and "holds memory of its own" not in report.reason
    again = mempool.use_rmm_pool(backend="async", frameworks=["jax"])
    try:
        assert mempool.status().frameworks["jax"].routed
    finally:
        with pytest.warns(MempoolWarning):
            again.close()


# --- Numba: contexts made under the pool keep RMMNumbaManager ----------------------------

def test_numba_contexts_keep_rmm_after_uninstall(monkeypatch) -> None:
    from numba.cuda.cudadrv import driver as numba_driver
    from rmm.allocators.numba import RMMNumbaManager

    # stand-ins of numba-cuda's Context and Device (driver.py) as the check reads them
    context = SimpleNamespace(memory_manager=RMMNumbaManager(context=None))
    device = SimpleNamespace(id=0, primary_context=context)
    monkeypatch.setattr(numba_driver.driver, "devices", {0: device}, raising=False)
    before = numba_driver._memory_manager
    state = numba_adapter.install({})
    try:
        assert numba_adapter.status("pool").routed
        left = numba_adapter.uninstall(state)
    finally:
        numba_driver._memory_manager = before
    assert left is not None and not left.keeps_pool
    assert "device(s) [0] was created under the pool and keeps RMMNumbaManager" in left.reason
    after = numba_adapter.status(None)  # closed: RMM's resource is no longer a pool
    assert not after.routed and "keeps RMMNumbaManager" in after.reason
    assert numba_adapter.status("pool").routed  # a pinned pool is still RMM's resource


# --- the whole call: settings, order, status, close ---------------------------------------

@pytest.fixture
def no_device(monkeypatch, driver):
    """use_rmm_pool() on a stand-in device 0; the stack holds a real RMM resource."""
    monkeypatch.setattr(api, "require_devices", lambda: 1)
    monkeypatch.setattr(api, "current_device", lambda: 0)
    monkeypatch.setattr(pool_module, "current_device", lambda: 0)
    monkeypatch.setattr(pool_module, "set_device", lambda d: None)
    monkeypatch.setattr(jax_adapter, "device_memory", lambda d: (80 << 30, 80 << 30),
                        raising=False)  # an 80 GiB device

    def build_stack(*, initial, maximum, limit, managed, backend, device):
        assert backend == "async" and maximum is limit is None
        shared = asyncpool.share(device)
        return pool_module.DeviceStack(device, None, rmm_mr.CudaMemoryResource(), None, None,
                                       shared=shared)

    monkeypatch.setattr(pool_module, "build_stack", build_stack)
    before = rmm_mr.get_per_device_resource(0)
    yield
    rmm_mr.set_per_device_resource(0, before)


def test_use_rmm_pool_async_routes_everyone_then_close_gives_all_back(
        clean, cupy_async, no_device, driver, log) -> None:
    pool = mempool.use_rmm_pool("64MiB", backend="async", frameworks=["cupy", "torch", "jax"])
    try:
        # The device's current pool first, then CuPy's pool, then the one threshold and priming.
        assert log == [f"current pool {DEFAULT_POOL:#x}", f"threshold {KEEP:#x}",
                       f"prime {64 << 20}"]
        assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "backend:cudaMallocAsync"
        assert os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] == "cuda_async"
        assert pool.settings.jax_allocator == "cuda_async"
        report = mempool.status()
        assert set(report.routed()) == {"cupy", "torch", "jax"}
        assert report.statistics[0]["pool_bytes"] == 3 << 30  # the driver's counters
        assert report.statistics[0]["peak_bytes"] == 2 << 30
        assert "keeps everything it reserved" in str(report)
        assert mempool.use_rmm_pool("64MiB", backend="async",
                                    frameworks=["cupy", "torch", "jax"]) is pool
        log.clear()
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing imported torch or started JAX: all back
            pool.close()
    assert log == [f"current pool {OTHER_POOL:#x}", "threshold 0x0"]
    assert not {"PYTORCH_CUDA_ALLOC_CONF", "XLA_PYTHON_CLIENT_ALLOCATOR"} & set(os.environ)
    assert cupy.cuda.get_allocator() is not cupy_adapter.malloc_shared
    assert pool.closed and pool.unrestored == () and mempool.current_pool() is None


def test_close_says_what_stays_on_the_default_pool_and_keeps_its_threshold(
        clean, cupy_async, no_device, driver, log) -> None:
    pool = mempool.use_rmm_pool(backend="async", frameworks=["cupy", "torch"])
    clean.setitem(sys.modules, "torch", torch_stand_in("cudaMallocAsync"))  # import torch
    log.clear()
    with pytest.warns(MempoolWarning) as caught:
        pool.close()
    text = str(caught[0].message)
    assert text.startswith("close() gave back everything else, but not: torch: PyTorch was "
                           "imported under PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync")
    assert "keeps the release threshold torch runs with" in text
    assert log == [f"current pool {OTHER_POOL:#x}"]  # the threshold stays for torch
    assert pool.closed and not pool.pinned_by and [u.name for u in pool.unrestored] == ["torch"]
    assert cupy.cuda.get_allocator() is not cupy_adapter.malloc_shared  # CuPy got its own back


def test_an_initial_size_the_device_cannot_reserve_is_the_config_error_of_either_backend(
        clean, cupy_async, no_device, driver, log) -> None:
    """``backend="pool"`` turns RMM's ``MemoryError`` into a ``ConfigError`` with advice; with
    ``"async"`` the priming's ``cudaMallocFromPoolAsync`` out of memory
    (``cudaErrorMemoryAllocation``, the stand-in driver's answer here) was a raw
    ``MemoryError``. Now the same error, and everything is given back."""
    def full(size, pool, stream):
        log.append(f"prime {size}")
        return 2, None  # cudaErrorMemoryAllocation

    driver.cudaMallocFromPoolAsync = full
    driver.cudaGetErrorString = lambda err: (0, b"out of memory")
    before = cupy.cuda.get_allocator()
    with pytest.raises(ConfigError, match=r"could not reserve an initial pool of 100\.0 GiB on "
                                          r"device 0 .*pass a smaller initial_size"):
        mempool.use_rmm_pool("100GiB", backend="async", frameworks=["cupy"])
    assert cupy.cuda.get_allocator() is before and mempool.current_pool() is None
    assert log[-2:] == ["current pool 0xa0", "threshold 0x0"]  # the device's pool given back


def test_torch_imported_first_changes_nothing(clean, cupy_async, no_device, log) -> None:
    clean.setitem(sys.modules, "torch", torch_stand_in("native"))
    before = cupy.cuda.get_allocator()
    with pytest.raises(OrderError, match="before 'import torch'"):
        mempool.use_rmm_pool(backend="async", frameworks=["cupy", "torch"])
    assert log == [] and cupy.cuda.get_allocator() is before
    assert mempool.current_pool() is None


# --- issue 28, item 2: torch routed to RMM but never on CUDA -----------------------------

class PluggableStandIn:
    """RMM's ``rmm_torch_allocator`` (a ``CUDAPluggableAllocator``)."""

    handle = object()

    def allocator(self) -> object:
        return self.handle


def _torch_on_rmm(monkeypatch) -> types.ModuleType:
    """A CUDA PyTorch that never touched CUDA and refuses to swap RMM's allocator back
    (torch's ``changeCurrentAllocator``: "Can't swap an already initialized allocator")."""
    rmm_torch = types.ModuleType("rmm.allocators.torch")
    rmm_torch.rmm_torch_allocator = PluggableStandIn()
    monkeypatch.setitem(sys.modules, "rmm.allocators.torch", rmm_torch)
    torch = torch_stand_in("native")
    current: list[object | None] = [None]  # no custom allocator before: _cuda_getAllocator() None

    def change(allocator: object) -> None:
        if current[0] is not None:
            raise RuntimeError("Can't swap an already initialized allocator")
        current[0] = allocator

    torch._C = SimpleNamespace(_cuda_getAllocator=lambda: current[0],
                               _cuda_changeCurrentAllocator=change,
                               _cuda_getAllocatorBackend=lambda: "native")
    torch.cuda = SimpleNamespace(
        is_initialized=lambda: False,
        memory=SimpleNamespace(change_current_allocator=lambda a: change(a.allocator())))
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


def _pool_with(installed: list[tuple[Any, Any]]) -> pool_module.Pool:
    stack = pool_module.build_stack(initial=0, maximum=None, limit=None, managed=False, device=0)
    pool_module.set_resources([stack])
    settings = pool_module.Settings(devices=(0,), initial=(0,), maximum=(None,), limit=(None,),
                                    managed=False, frameworks=("cupy", "numba", "torch"))
    return pool_module.Pool(settings, [stack], installed)


def test_close_restores_cupy_and_numba_when_torch_cannot_be_swapped_back(monkeypatch) -> None:
    from numba.cuda.cudadrv import driver as numba_driver

    _torch_on_rmm(monkeypatch)
    cupy_before, numba_before = cupy.cuda.get_allocator(), numba_driver._memory_manager
    rmm_before = rmm_mr.get_per_device_resource(0)
    chosen = [cupy_adapter, numba_adapter, torch_adapter]
    pool = _pool_with([])
    try:
        pool.installed = adapters.install_all(chosen, {0: pool.resource(0)})
        with pytest.warns(MempoolWarning, match="torch: its allocator is RMM's pluggable "
                                                "allocator and PyTorch cannot switch"):
            pool.close()
        assert cupy.cuda.get_allocator() is cupy_before
        assert numba_driver._memory_manager is numba_before
        assert pool.closed and pool.pinned_by == ("torch",)
        assert rmm_mr.get_per_device_resource(0) is pool.resource(0)  # torch frees through it
    finally:
        cupy.cuda.set_allocator(cupy_before)
        numba_driver._memory_manager = numba_before
        rmm_mr.set_per_device_resource(0, rmm_before)


def test_dask_teardown_restores_the_others_too(monkeypatch) -> None:
    dask = pytest.importorskip("mempool.dask")
    _torch_on_rmm(monkeypatch)
    cupy_before, rmm_before = cupy.cuda.get_allocator(), rmm_mr.get_per_device_resource(0)
    pool = _pool_with([])
    plugin = dask.RMMPoolPlugin()
    try:
        pool.installed = adapters.install_all([cupy_adapter, torch_adapter], {0: pool.resource(0)})
        plugin.pool = pool
        with pytest.warns(MempoolWarning, match="pool stays RMM's resource"):
            plugin.teardown()
        assert cupy.cuda.get_allocator() is cupy_before and pool.closed
    finally:
        cupy.cuda.set_allocator(cupy_before)
        rmm_mr.set_per_device_resource(0, rmm_before)
