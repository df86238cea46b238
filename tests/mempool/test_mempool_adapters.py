"""Each adapter against the real framework: install sets the real hook, uninstall restores it.

No device is needed: CuPy and Numba accept an allocator / EMM plugin without touching the
GPU, and RMM's resource objects (CUDA, pool with initial size 0, adaptors) can be built
without one. Nothing here mocks cupy, rmm, numba or torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from mempool import adapters
from mempool.adapters import cudf as cudf_adapter
from mempool.adapters import tensorflow as tf_adapter
from mempool.errors import ConfigError

cupy = pytest.importorskip("cupy")
rmm_mr = pytest.importorskip("rmm.mr")


@pytest.fixture
def resources() -> dict[int, object]:
    """A real RMM resource for device 0, constructible on a CPU machine."""
    return {0: rmm_mr.StatisticsResourceAdaptor(rmm_mr.CudaMemoryResource())}


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "TF_"))}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
        env=full_env, timeout=120,
    )


# --- CuPy -------------------------------------------------------------------------------

def test_cupy_install_sets_rmm_allocator_and_uninstall_restores_it(resources) -> None:
    from rmm.allocators.cupy import rmm_cupy_allocator

    from mempool.adapters import cupy as adapter

    before = cupy.cuda.get_allocator()
    state = adapter.install(resources)
    try:
        assert cupy.cuda.get_allocator() is rmm_cupy_allocator
        assert adapter.status().routed
        assert "rmm_cupy_allocator" in adapter.status().reason
    finally:
        adapter.uninstall(state)
    assert cupy.cuda.get_allocator() is before
    assert not adapter.status().routed


def test_cupy_uninstall_restores_a_custom_allocator_exactly(resources) -> None:
    from mempool.adapters import cupy as adapter

    def my_allocator(nbytes: int) -> None:  # never called: nothing allocates
        raise AssertionError

    before = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(my_allocator)
    try:
        state = adapter.install(resources)
        assert cupy.cuda.get_allocator() is not my_allocator
        adapter.uninstall(state)
        assert cupy.cuda.get_allocator() is my_allocator
        assert "my_allocator" in adapter.status().reason
    finally:
        cupy.cuda.set_allocator(before)


# --- Numba ------------------------------------------------------------------------------

def test_numba_install_sets_rmm_emm_plugin_and_uninstall_restores_it(resources) -> None:
    from numba.cuda.cudadrv import driver
    from rmm.allocators.numba import RMMNumbaManager

    from mempool.adapters import numba as adapter

    before = driver._memory_manager
    state = adapter.install(resources)
    try:
        assert driver._memory_manager is RMMNumbaManager
        assert adapter.status().routed
    finally:
        adapter.uninstall(state)
    assert driver._memory_manager is before
    assert not adapter.status().routed


def test_numba_restores_a_previously_chosen_manager(resources) -> None:
    from numba import cuda
    from numba.cuda.cudadrv import driver

    from mempool.adapters import numba as adapter

    before = driver._memory_manager
    cuda.set_memory_manager(driver.NumbaCUDAMemoryManager)
    try:
        state = adapter.install(resources)
        adapter.uninstall(state)
        assert driver._memory_manager is driver.NumbaCUDAMemoryManager
    finally:
        driver._memory_manager = before


def test_numba_check_passes_without_contexts() -> None:
    from mempool.adapters import numba as adapter

    adapter.check([0])  # no Numba context exists on a CPU machine: nothing to refuse


# Numba's own Device and Context classes (numba-cuda's when installed), registered where
# Numba keeps them (driver.driver.devices). Only Device.__init__, which asks the hardware for
# the device's attributes, is skipped; Context.__init__ binds the memory manager as it does
# on a GPU. Each scenario runs in a fresh interpreter so the registry starts empty.
_NUMBA_CONTEXT = """
import numba.cuda
from numba.cuda.cudadrv import driver
from mempool.adapters import numba as adapter
from mempool.errors import OrderError

def numba_context(devnum):
    device = object.__new__(driver.Device)
    device.id, device.primary_context = devnum, None
    driver.driver.devices[devnum] = device
    device.primary_context = driver.Context(device, None)
    return device.primary_context
"""


def test_numba_context_created_first_is_an_order_error() -> None:
    result = _run(_NUMBA_CONTEXT + textwrap.dedent(
        """
        adapter.check([0])  # nothing created yet
        print(type(numba_context(0).memory_manager).__name__)
        adapter.check([1])  # another device: no context there
        try:
            adapter.check([0])
        except OrderError as e:
            print(e)
        print(adapter.status())
        """
    ))
    assert result.returncode == 0, result.stderr
    manager, error, report = result.stdout.strip().splitlines()
    assert manager == "NumbaCUDAMemoryManager"
    assert error.startswith("Numba already created its CUDA context on device 0 with "
                            "NumbaCUDAMemoryManager")
    assert report == "not routed: Numba allocates with NumbaCUDAMemoryManager"


def test_numba_context_created_after_the_plugin_is_routed() -> None:
    result = _run(_NUMBA_CONTEXT + textwrap.dedent(
        """
        state = adapter.install({})
        print(type(numba_context(0).memory_manager).__name__)
        adapter.check([0])  # the context already allocates through RMM: nothing to refuse
        print(adapter.status())
        adapter.uninstall(state)
        numba_context(1)  # a context made with Numba's own manager while RMM's is not set
        adapter.install({})
        print(adapter.status())
        """
    ))
    assert result.returncode == 0, result.stderr
    manager, routed, stale = result.stdout.strip().splitlines()
    assert manager == "RMMNumbaManager"
    assert routed == "routed: numba.cuda.set_memory_manager(RMMNumbaManager)"
    assert stale.startswith("not routed: RMMNumbaManager is set, but Numba's context on "
                            "device(s) [1] was created earlier")


# --- PyTorch ----------------------------------------------------------------------------

def test_torch_without_cuda_is_reported_and_left_alone(resources) -> None:
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None:
        pytest.skip("this torch is built with CUDA; covered by the GPU tests")
    from mempool.adapters import torch as adapter

    assert adapter.status().reason == "built without CUDA"
    assert not adapter.status().routed
    adapter.check([0])  # a CPU build never "initialised CUDA"
    state = adapter.install(resources)
    assert state == adapter.SKIPPED
    assert adapter.uninstall(state) is None  # nothing to give back
    assert adapter.status().reason == "built without CUDA"


# --- JAX / TensorFlow: no hook, environment only -----------------------------------------

def test_jax_before_start_sets_preallocate_false_and_restores_absence() -> None:
    result = _run(
        """
        import os, jax  # imported, backend not started
        from mempool.adapters import jax as adapter
        state = adapter.install({})
        print(os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"])
        print(adapter.status())
        adapter.uninstall(state)
        print("XLA_PYTHON_CLIENT_PREALLOCATE" in os.environ)
        """
    )
    assert result.returncode == 0, result.stderr
    value, report, still_set = result.stdout.strip().splitlines()
    assert value == "false"
    assert report.startswith("not routed: no allocator hook")
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=false" in report
    assert still_set == "False"


def test_jax_keeps_the_users_own_setting() -> None:
    result = _run(
        """
        import os
        from mempool.adapters import jax as adapter
        adapter.uninstall(adapter.install({}))
        print(os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"])
        """,
        XLA_PYTHON_CLIENT_PREALLOCATE="true",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "true"


def test_jax_started_on_cpu_is_not_routed_and_not_touched() -> None:
    result = _run(
        """
        import os, warnings
        import jax.numpy as jnp
        jnp.ones(3).block_until_ready()  # the CPU backend is up
        from mempool.adapters import jax as adapter
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no GPU memory held: no warning
            state = adapter.install({})
        print("XLA_PYTHON_CLIENT_PREALLOCATE" in os.environ)
        print(adapter.status())
        adapter.uninstall(state)
        """,
        JAX_PLATFORMS="cpu",  # on a GPU host too: JAX started on its CPU backend
    )
    assert result.returncode == 0, result.stderr
    touched, report = result.stdout.strip().splitlines()
    assert touched == "False"
    assert report == (
        "not routed: no allocator hook; its runtime started without a GPU (it holds no GPU memory)"
    )


def test_jax_allocator_is_set_before_start_and_both_variables_restored() -> None:
    result = _run(
        """
        import os
        from mempool.adapters import jax as adapter
        names = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_ALLOCATOR")
        state = adapter.install({}, allocator="platform")
        print([os.environ.get(n) for n in names])
        print(adapter.status())
        adapter.uninstall(state)
        print([n in os.environ for n in names])
        """
    )
    assert result.returncode == 0, result.stderr
    values, report, left = result.stdout.strip().splitlines()
    assert values == "['false', 'platform']"
    assert report == ("not routed: no allocator hook; XLA_PYTHON_CLIENT_PREALLOCATE=false: it "
                      "allocates on demand beside the pool; XLA_PYTHON_CLIENT_ALLOCATOR=platform")
    assert left == "[False, False]"


def test_jax_allocator_conflicting_with_the_environment_changes_nothing() -> None:
    result = _run(
        """
        import os
        from mempool.adapters import jax as adapter
        from mempool.errors import ConfigError
        try:
            adapter.install({}, allocator="platform")
        except ConfigError as e:
            print(e)
        print(os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"),
              os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"])
        """,
        XLA_PYTHON_CLIENT_ALLOCATOR="cuda_async",
    )
    assert result.returncode == 0, result.stderr
    error, left = result.stdout.strip().splitlines()
    assert error.startswith("jax_allocator='platform' but the environment already sets "
                            "XLA_PYTHON_CLIENT_ALLOCATOR='cuda_async'")
    assert left == "None cuda_async"


def test_jax_allocator_after_jax_started_warns_and_changes_nothing() -> None:
    result = _run(
        """
        import os, warnings
        import jax.numpy as jnp
        jnp.ones(3).block_until_ready()  # the backend is up: too late for any XLA variable
        from mempool.adapters import jax as adapter
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            state = adapter.install({}, allocator="cuda_async")
        print(" | ".join(str(w.message) for w in caught))
        print("XLA_PYTHON_CLIENT_ALLOCATOR" in os.environ, adapter.memory())
        adapter.uninstall(state)
        """
    )
    assert result.returncode == 0, result.stderr
    warning, left = result.stdout.strip().splitlines()
    assert warning.startswith("JAX already started, so jax_allocator='cuda_async' "
                              "(XLA_PYTHON_CLIENT_ALLOCATOR) has no effect in this process")
    assert left == "False {}"  # untouched; a CPU backend holds no GPU memory to report


def test_jax_memory_is_described_per_device() -> None:
    from mempool.adapters import jax as adapter

    # The shape jax.Device.memory_stats() returns on a GPU (a stand-in: no GPU here).
    held = {"cuda:0": {"bytes_in_use": 3 << 30, "peak_bytes_in_use": 4 << 30,
                       "bytes_limit": 60 << 30},
            "cuda:1": {"bytes_in_use": 0}}
    assert adapter.describe_memory(held) == (
        "cuda:0 holds 3.0 GiB in use (peak 4.0 GiB, limit 60.0 GiB); cuda:1 holds 0 B in use"
    )
    # XLA's cuda_async allocator never compares an allocation with bytes_limit
    # (gpu_cudamallocasync_allocator.cc, AllocateRaw): not shown as a limit
    assert adapter.describe_memory(held, shared=True).startswith(
        "cuda:0 holds 3.0 GiB in use (peak 4.0 GiB, bytes_limit 60.0 GiB, which XLA's "
        "cuda_async allocator does not enforce);")


def test_tensorflow_env_var_set_and_restored(monkeypatch) -> None:
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "false")  # the user's choice wins
    state = tf_adapter.install({})
    assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "false"
    tf_adapter.uninstall(state)
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH")
    state = tf_adapter.install({})
    assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    tf_adapter.uninstall(state)
    assert "TF_FORCE_GPU_ALLOW_GROWTH" not in os.environ


def test_uninstalled_frameworks_report_not_installed() -> None:
    for adapter in (cudf_adapter, tf_adapter):
        if adapters.is_installed(adapter.MODULE):
            continue
        report = adapter.status()
        assert (report.routed, report.reason, report.installed) == (False, "not installed", False)


# --- the adapter list: selection and rollback ---------------------------------------------

def test_select_unknown_framework_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown framework 'mxnet'.*cupy, numba, torch"):
        adapters.select(["mxnet"])


def test_select_none_takes_installed_frameworks_only() -> None:
    names = [a.NAME for a in adapters.select(None)]
    assert "cupy" in names and "numba" in names
    for name in names:
        assert adapters.is_installed(adapters.load(name).MODULE)
    if not adapters.is_installed("cudf"):
        assert "cudf" not in names
        with pytest.raises(ConfigError, match="cudf is not installed"):
            adapters.select(["cudf"])


def test_failure_midway_rolls_back_the_installed_adapters(resources) -> None:
    from numba.cuda.cudadrv import driver

    from mempool.adapters import cupy as cupy_adapter
    from mempool.adapters import numba as numba_adapter

    def fail(resources: object) -> None:
        raise RuntimeError("adapter exploded")

    broken = SimpleNamespace(NAME="broken", install=fail, uninstall=lambda state: True)
    cupy_before, numba_before = cupy.cuda.get_allocator(), driver._memory_manager
    with pytest.raises(RuntimeError, match="adapter exploded"):
        adapters.install_all([cupy_adapter, numba_adapter, broken], resources)
    assert cupy.cuda.get_allocator() is cupy_before
    assert driver._memory_manager is numba_before


def test_statuses_cover_every_adapter_and_never_claim_routing_by_default() -> None:
    report = adapters.statuses()
    assert list(report) == list(adapters.ADAPTERS)
    for name in ("jax", "tensorflow"):
        assert not report[name].routed
