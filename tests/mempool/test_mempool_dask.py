"""``mempool.dask`` on real local clusters of worker processes (CPU here; GPU tests marked)."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")

from mempool.dask import RMMPoolPlugin, worker_outcomes, worker_status  # noqa: E402
from mempool.errors import ConfigError, NoDeviceError  # noqa: E402


def _cluster(**kwargs):
    return distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
        worker_dashboard_address=None, memory_limit=0, **kwargs,
    )


@pytest.fixture(scope="module")
def client():
    with _cluster() as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


@pytest.fixture(scope="module")
def preloaded():
    """Workers started with ``--preload mempool.dask`` and a MEMPOOL_* environment."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MEMPOOL_SIZE", "256MiB")
    mp.setenv("MEMPOOL_FRAMEWORKS", "cupy")
    mp.delenv("MEMPOOL_STRICT", raising=False)
    try:
        with _cluster(preload=["mempool.dask"]) as cluster, distributed.Client(cluster) as c:
            c.wait_for_workers(2, timeout=60)
            yield c
    finally:
        mp.undo()


def test_plugin_checks_sizes_on_the_client() -> None:
    with pytest.raises(ConfigError, match="initial_size='8 gigs'"):
        RMMPoolPlugin("8 gigs")


def test_plugin_is_a_worker_plugin() -> None:
    assert isinstance(RMMPoolPlugin("1GiB"), distributed.WorkerPlugin)


@pytest.mark.cpu_only
def test_no_device_error_from_every_worker(client) -> None:
    with pytest.raises(NoDeviceError, match="no CUDA device"):
        client.register_plugin(RMMPoolPlugin("256MiB", frameworks=["cupy"]))
    outcomes = worker_outcomes(client)
    assert len(outcomes) == 2
    for outcome in outcomes.values():
        assert outcome["ok"] is False and outcome["pool"] is None
        assert outcome["error"].startswith("NoDeviceError: no CUDA device")
        assert outcome["via"] == "plugin"


@pytest.mark.cpu_only
def test_lenient_plugin_lets_workers_run(client) -> None:
    client.register_plugin(RMMPoolPlugin("256MiB", frameworks=["cupy"], strict=False),
                           name="mempool-lenient")
    for outcome in worker_outcomes(client).values():
        assert outcome["ok"] is False and "NoDeviceError" in outcome["error"]
    assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6
    # A plugin registered after the worker ran tasks says how many it had run.
    client.register_plugin(RMMPoolPlugin("256MiB", frameworks=["cupy"], strict=False),
                           name="mempool-late")
    assert sum(o["tasks_before"] for o in worker_outcomes(client).values()) >= 1


@pytest.mark.cpu_only
def test_preload_sets_up_each_worker_before_any_task(preloaded) -> None:
    outcomes = worker_outcomes(preloaded)
    assert len(outcomes) == 2
    for outcome in outcomes.values():
        assert outcome["via"] == "preload" and outcome["tasks_before"] == 0
        assert outcome["ok"] is False and outcome["error"].startswith("NoDeviceError")
    statuses = worker_status(preloaded)
    assert set(statuses) == set(outcomes)
    assert len({s["pid"] for s in statuses.values()}) == 2  # one process, one pool, per worker
    for s in statuses.values():
        assert s["active"] is False and s["cuda_devices"] == 0
        assert s["frameworks"]["cupy"]["routed"] is False


@pytest.mark.gpu
@pytest.mark.gpu
def test_preload_pool_on_every_gpu_worker_before_any_task(preloaded) -> None:
    def allocate() -> int:
        import cupy

        return int(cupy.ones(16 << 20, dtype=cupy.uint8).sum())

    for outcome in worker_outcomes(preloaded).values():
        assert outcome["ok"] is True and outcome["tasks_before"] == 0
        assert "initial 256.0 MiB" in outcome["pool"]
    statuses = worker_status(preloaded)
    assert len({s["pid"] for s in statuses.values()}) == 2
    for s in statuses.values():
        assert s["active"] is True and s["frameworks"]["cupy"]["routed"] is True
        assert s["statistics"]["0"]["pool_bytes"] == 256 << 20
    for address in statuses:  # one task on each worker, then its own pool saw it
        assert preloaded.submit(allocate, workers=[address], pure=False).result() == 16 << 20
    for s in worker_status(preloaded).values():
        assert s["statistics"]["0"]["total_bytes"] >= 16 << 20


@pytest.mark.gpu
@pytest.mark.gpu
def test_pool_on_every_gpu_worker(client) -> None:
    client.register_plugin(RMMPoolPlugin("256MiB", frameworks=["cupy"]))
    for outcome in worker_outcomes(client).values():
        assert outcome["ok"] is True and "initial 256.0 MiB" in outcome["pool"]
    for s in worker_status(client).values():
        assert s["active"] is True and s["frameworks"]["cupy"]["routed"] is True
