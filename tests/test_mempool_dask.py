"""``mempool.dask.RMMPoolPlugin`` on a real local cluster of CPU worker processes."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")

from mempool.dask import RMMPoolPlugin, worker_outcomes  # noqa: E402
from mempool.errors import ConfigError, NoDeviceError  # noqa: E402


def _has_cuda() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any failure means no usable device
        return False


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
        worker_dashboard_address=None, memory_limit=0,
    )
    with cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


def test_plugin_checks_sizes_on_the_client() -> None:
    with pytest.raises(ConfigError, match="initial_size='8 gigs'"):
        RMMPoolPlugin("8 gigs")


def test_plugin_is_a_worker_plugin() -> None:
    assert isinstance(RMMPoolPlugin("1GiB"), distributed.WorkerPlugin)


@pytest.mark.skipif(_has_cuda(), reason="checks the behaviour without a CUDA device")
def test_no_device_error_from_every_worker(client) -> None:
    with pytest.raises(NoDeviceError, match="no CUDA device"):
        client.register_plugin(RMMPoolPlugin("256MiB", frameworks=["cupy"]))
    outcomes = worker_outcomes(client)
    assert len(outcomes) == 2
    for outcome in outcomes.values():
        assert outcome["ok"] is False and outcome["pool"] is None
        assert outcome["error"].startswith("NoDeviceError: no CUDA device")


@pytest.mark.skipif(_has_cuda(), reason="checks the behaviour without a CUDA device")
def test_lenient_plugin_lets_workers_run(client) -> None:
    client.register_plugin(RMMPoolPlugin("256MiB", frameworks=["cupy"], strict=False),
                           name="mempool-lenient")
    for outcome in worker_outcomes(client).values():
        assert outcome["ok"] is False and "NoDeviceError" in outcome["error"]
    assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA device")
def test_pool_on_every_gpu_worker(client) -> None:
    client.register_plugin(RMMPoolPlugin("256MiB", frameworks=["cupy"]))
    for outcome in worker_outcomes(client).values():
        assert outcome["ok"] is True and "initial 256.0 MiB" in outcome["pool"]
