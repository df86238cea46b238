"""The public API on a CPU machine: no-device behaviour, status, the resource stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import mempool
from machine import machine
from mempool import api
from mempool.errors import ConfigError, MempoolError, NoDeviceError
from mempool.pool import Settings, build_stack, restore, set_resources

FRAMEWORK_MODULES = ("rmm", "cupy", "torch", "jax", "numba", "cuda.bindings", "distributed",
                     "tensorflow", "cudf")



cpu_only = pytest.mark.cpu_only


def test_import_mempool_imports_no_framework() -> None:
    code = (
        "import sys, time; t = time.perf_counter(); import mempool, mempool.adapters; "
        "dt = time.perf_counter() - t; "
        f"print([m for m in {FRAMEWORK_MODULES!r} if m in sys.modules]); print(dt)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    imported, seconds = result.stdout.strip().splitlines()
    assert imported == "[]"
    print(f"import mempool: {float(seconds) * 1000:.1f} ms")  # measured, not asserted


def _snapshot() -> dict[str, object]:
    import cupy
    import rmm.mr
    from numba.cuda.cudadrv import driver

    return {
        "cupy": cupy.cuda.get_allocator(),
        "numba": driver._memory_manager,
        "rmm0": rmm.mr.get_per_device_resource(0),
        "env": {k: os.environ.get(k) for k in ("XLA_PYTHON_CLIENT_PREALLOCATE",
                                               "TF_FORCE_GPU_ALLOW_GROWTH")},
    }


@cpu_only
@pytest.mark.parametrize("frameworks", [None, ["cupy", "numba", "jax"]])
def test_no_device_raises_and_leaves_everything_untouched(monkeypatch, frameworks) -> None:
    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE", raising=False)
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    before = _snapshot()
    with pytest.raises(NoDeviceError) as info:
        mempool.use_rmm_pool("1GiB", maximum="2GiB", frameworks=frameworks)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, MempoolError)
    message = str(info.value)
    assert "no CUDA device" in message and "cudaError" in message
    assert "Nothing was changed" in message
    after = _snapshot()
    assert after["cupy"] is before["cupy"]
    assert after["numba"] is before["numba"]
    assert after["rmm0"] is before["rmm0"]
    assert after["env"] == before["env"] == {"XLA_PYTHON_CLIENT_PREALLOCATE": None,
                                             "TF_FORCE_GPU_ALLOW_GROWTH": None}
    assert mempool.current_pool() is None
    assert not mempool.status().active


@cpu_only
def test_percent_without_device_is_a_no_device_error() -> None:
    with pytest.raises(NoDeviceError):
        mempool.use_rmm_pool("50%")


@cpu_only
def test_context_manager_without_device_raises_on_entry() -> None:
    with pytest.raises(NoDeviceError), mempool.rmm_pool("256MiB"):
        pytest.fail("the block must not run without a pool")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"initial_size": "8 gigs"}, r"initial_size='8 gigs' is not a valid size"),
        ({"maximum": "-1GiB"}, r"maximum='-1GiB'"),
        ({"limit": "1%%"}, r"limit='1%%'"),
        ({"managed": "yes"}, r"managed='yes': pass True or False"),
        ({"frameworks": ["mxnet"]}, r"unknown framework 'mxnet'"),
        ({"backend": "arena"}, r"backend='arena': pass 'pool' .* or 'async'"),
        ({"backend": "async", "managed": True}, r"backend='async' with managed=True"),
        ({"backend": "async", "maximum": "8GiB"},
         r"backend='async' with maximum='8GiB': the device's default CUDA pool has no maximum"),
        ({"backend": "async", "limit": "1GiB"},
         r"backend='async' with limit='1GiB': a limit would cap only what goes through RMM"),
        ({"backend": "async", "jax_allocator": "platform"},
         r"backend='async' with jax_allocator='platform': JAX shares the pool only with"),
        ({"jax_allocator": "bfc"}, r"jax_allocator='bfc': pass None .*'platform' or 'cuda_async'"),
    ],
)
def test_bad_arguments_are_config_errors_even_without_device(kwargs, match) -> None:
    # Arguments are validated before the device check, so a typo fails the same way everywhere.
    with pytest.raises(ConfigError, match=match):
        mempool.use_rmm_pool(**kwargs)


def test_resolve_devices() -> None:
    assert api._resolve_devices([1, 0, 1], 2) == (1, 0)
    assert api._resolve_devices("all", 3) == (0, 1, 2)
    assert api._resolve_devices(1, 2) == (1,)
    with pytest.raises(ConfigError, match=r"devices=\[0, 2\]: 2 is not a visible CUDA device"):
        api._resolve_devices([0, 2], 2)
    for bad in ([], "gpu0", [True], 1.0):
        with pytest.raises(ConfigError):
            api._resolve_devices(bad, 2)


def _settings(**overrides: object) -> Settings:
    base = dict(devices=(0,), initial=(1 << 30,), maximum=(None,), limit=(None,),
                managed=False, frameworks=("cupy",))
    base.update(overrides)
    return Settings(**base)  # type: ignore[arg-type]


def test_second_pool_with_same_settings_is_fine_different_is_an_error() -> None:
    api.check_conflict(_settings(), _settings())
    with pytest.raises(ConfigError) as info:
        api.check_conflict(_settings(), _settings(initial=(2 << 30,), managed=True))
    message = str(info.value)
    assert "live pool: devices [0]: initial 1.0 GiB, CUDA memory" in message
    assert "requested: devices [0]: initial 2.0 GiB, managed memory" in message
    assert "pool.close()" in message
    with pytest.raises(ConfigError, match="JAX allocator platform"):
        api.check_conflict(_settings(), _settings(jax_allocator="platform"))
    with pytest.raises(ConfigError,
                       match=r"async backend \(the device's default CUDA pool, shared natively\)"):
        api.check_conflict(_settings(), _settings(backend="async"))


@cpu_only
def test_async_pool_without_device_is_a_clear_error() -> None:
    pytest.importorskip("cuda.bindings.runtime")
    from mempool import asyncpool

    with pytest.raises(MempoolError, match=r"^cudaDeviceGetDefaultMemPool failed: cuda"):
        asyncpool.share(0)


def test_status_of_an_async_pool_leaves_out_the_counts_it_does_not_have() -> None:
    from mempool.pool import STATISTICS
    from mempool.report import StatusReport

    stats = dict.fromkeys(STATISTICS)
    stats.update(pool_bytes=1 << 30, pool_peak_bytes=2 << 30, in_use_bytes=3 << 20,
                 peak_bytes=5 << 20, release_threshold=(1 << 64) - 1)
    report = StatusReport(cuda_devices=1, cuda="1 CUDA device(s)", pool="devices [0]: ...",
                          pinned_by=(), statistics={0: stats})
    assert ("  device 0: pool 1.0 GiB (peak 2.0 GiB), in use 3.0 MiB, peak 5.0 MiB, keeps "
            "everything it reserved\n") in str(report) + "\n"
    stats["release_threshold"] = 60 << 30  # lowered by someone (XLA's memory fraction)
    assert "releases what it holds above 60.0 GiB at each synchronisation" in str(report)
    assert "live allocations" not in str(report)


def test_resource_stack_is_built_from_real_rmm_resources() -> None:
    rmm_mr = pytest.importorskip("rmm.mr")
    # An initial pool size of 0 reserves nothing, so the stack can be built without a GPU.
    stack = build_stack(initial=0, maximum=1 << 20, limit=1 << 19, managed=False)
    assert isinstance(stack.top, rmm_mr.StatisticsResourceAdaptor)
    assert stack.top.get_upstream() is stack.limit
    assert isinstance(stack.limit, rmm_mr.LimitingResourceAdaptor)
    assert stack.limit.get_allocation_limit() == 1 << 19
    assert stack.limit.get_upstream() is stack.pool
    assert isinstance(stack.pool, rmm_mr.PoolMemoryResource)
    assert stack.pool.get_upstream() is stack.upstream
    assert isinstance(stack.upstream, rmm_mr.CudaMemoryResource)

    managed = build_stack(initial=0, maximum=None, limit=None, managed=True)
    assert managed.limit is None and managed.top.get_upstream() is managed.pool
    assert isinstance(managed.upstream, rmm_mr.ManagedMemoryResource)


def test_set_resources_and_restore_round_trip() -> None:
    rmm_mr = pytest.importorskip("rmm.mr")
    stack = build_stack(initial=0, maximum=None, limit=None, managed=False)
    stack.device = 0
    before = rmm_mr.get_per_device_resource(0)
    set_resources([stack])
    try:
        assert rmm_mr.get_per_device_resource(0) is stack.top
        assert stack.previous is before
    finally:
        restore([stack])
    assert rmm_mr.get_per_device_resource(0) is before


def test_status_report_content() -> None:
    pytest.importorskip("cupy")
    import cupy  # noqa: F401 - imported so the report can say what CuPy uses

    report = mempool.status()
    assert list(report.frameworks) == ["cupy", "numba", "torch", "cudf", "jax", "tensorflow"]
    assert report.frameworks["cupy"].reason == "CuPy allocates with CuPy's own memory pool"
    assert not any(s.routed for n, s in report.frameworks.items() if n != "cudf")
    text = str(report)
    assert text.splitlines()[0] == f"CUDA: {report.cuda}"
    assert "pool: none" in text
    assert "  cupy        not routed: CuPy allocates with CuPy's own memory pool" in text
    data = json.loads(json.dumps(report.to_dict()))
    assert data["frameworks"]["jax"]["routed"] is False
    if not machine().count:
        assert report.cuda_devices == 0 and "cudaError" in report.cuda
        assert not report.active and report.statistics == {}


def test_torch_cpu_build_is_reported_in_status() -> None:
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None:
        pytest.skip("torch has CUDA")
    assert str(mempool.status().frameworks["torch"]) == "not routed: built without CUDA"


def test_python_m_mempool_status() -> None:
    text = subprocess.run([sys.executable, "-m", "mempool", "status"], capture_output=True,
                          text=True, timeout=60)
    assert text.returncode == 0, text.stderr
    assert "frameworks:" in text.stdout and "jax" in text.stdout
    js = subprocess.run([sys.executable, "-m", "mempool", "status", "--json"],
                        capture_output=True, text=True, timeout=60)
    assert js.returncode == 0, js.stderr
    data = json.loads(js.stdout)
    assert set(data) >= {"active", "cuda", "frameworks", "statistics"}
    assert data["frameworks"]["jax"]["routed"] is False



@cpu_only
def test_benchmark_skips_cleanly_without_a_gpu() -> None:
    import pathlib
    import runpy

    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "pool.py"
    bench = runpy.run_path(str(path))
    report = bench["run"]()
    assert report["skipped"] is True and "no CUDA device" in report["reason"]
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and "Skipped: no CUDA device" in result.stdout


def test_statistics_of_a_closed_async_pool_say_it_is_closed() -> None:
    from mempool.pool import DeviceStack, Pool, _stats_of
    from mempool.report import StatusReport

    # A backend="async" stack after close(): restore() destroyed the driver's pool.
    stack = DeviceStack(0, None, pool=object(), limit=None, stats=None, shared=None)
    stats = _stats_of(stack)
    assert set(stats.values()) == {None}
    report = StatusReport(cuda_devices=1, cuda="1 CUDA device(s)", pool="devices [0]: ...",
                          pinned_by=(), statistics={0: stats})
    assert "  device 0: closed" in str(report)
    assert Pool(_settings(backend="async"), [stack], []).resource(0) is stack.pool
