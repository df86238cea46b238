"""``import mempool.auto``: configuration from MEMPOOL_* variables, run in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from machine import RMM_MISSING
from mempool.envconfig import config_from_env
from mempool.errors import ConfigError


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMPOOL_")}
    clean.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=clean, timeout=120)


def test_config_from_env() -> None:
    config = config_from_env({"MEMPOOL_SIZE": "8GiB", "MEMPOOL_MAXIMUM": "30GiB",
                              "MEMPOOL_MANAGED": "yes", "MEMPOOL_DEVICES": "0, 1",
                              "MEMPOOL_FRAMEWORKS": "cupy,torch",
                              "MEMPOOL_JAX_ALLOCATOR": "cuda_async",
                              "MEMPOOL_BACKEND": "async"})
    assert config == {"initial_size": "8GiB", "maximum": "30GiB", "limit": None,
                      "managed": True, "devices": [0, 1], "frameworks": ["cupy", "torch"],
                      "jax_allocator": "cuda_async", "backend": "async"}
    assert config_from_env({}) == {"initial_size": None, "maximum": None, "limit": None,
                                   "managed": False}
    assert config_from_env({"MEMPOOL_DEVICES": "all"})["devices"] == "all"


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"MEMPOOL_SIZE": "lots"}, r"MEMPOOL_SIZE='lots' is not a valid size"),
        ({"MEMPOOL_MAXIMUM": "1.5 XB"}, r"MEMPOOL_MAXIMUM='1.5 XB'"),
        ({"MEMPOOL_MANAGED": "maybe"}, r"MEMPOOL_MANAGED='maybe'"),
        ({"MEMPOOL_DEVICES": "gpu0"}, r"MEMPOOL_DEVICES='gpu0'"),
        ({"MEMPOOL_JAX_ALLOCATOR": "bfc"}, r"MEMPOOL_JAX_ALLOCATOR='bfc'"),
        ({"MEMPOOL_BACKEND": "arena"}, r"MEMPOOL_BACKEND='arena': use one of pool, async"),
    ],
)
def test_bad_variables_are_named(env: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        config_from_env(env)


@pytest.mark.cpu_only
def test_auto_without_device_warns_and_the_program_continues() -> None:
    result = _run(
        """
        import cupy
        before = cupy.cuda.get_allocator()
        import mempool.auto
        assert mempool.auto.pool is None
        assert type(mempool.auto.error).__name__ == "NoDeviceError"
        assert cupy.cuda.get_allocator() is before
        print("program continued")
        """,
        MEMPOOL_SIZE="1GiB", MEMPOOL_FRAMEWORKS="cupy",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "program continued"
    assert "MempoolWarning: mempool.auto: no RMM pool was set up" in result.stderr
    assert "no CUDA device" in result.stderr and "MEMPOOL_STRICT=1" in result.stderr


@pytest.mark.cpu_only
def test_auto_strict_without_device_fails() -> None:
    result = _run("import mempool.auto", MEMPOOL_SIZE="1GiB", MEMPOOL_STRICT="1")
    assert result.returncode != 0
    assert "mempool.errors.NoDeviceError: no CUDA device" in result.stderr


def test_auto_with_a_typo_fails_loudly() -> None:
    result = _run("import mempool.auto", MEMPOOL_SIZE="8 gigs")
    assert result.returncode != 0
    assert "ConfigError: MEMPOOL_SIZE='8 gigs' is not a valid size" in result.stderr


@pytest.mark.gpu
@pytest.mark.skipif(RMM_MISSING is not None, reason=str(RMM_MISSING))
def test_auto_with_device_creates_the_pool() -> None:
    result = _run(
        """
        import cupy, mempool, mempool.auto
        from rmm.allocators.cupy import rmm_cupy_allocator
        assert mempool.auto.pool is mempool.current_pool() is not None
        assert cupy.cuda.get_allocator() is rmm_cupy_allocator
        print(mempool.auto.pool.settings.initial)
        """,
        MEMPOOL_SIZE="256MiB", MEMPOOL_FRAMEWORKS="cupy",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"({256 * 1024**2},)"
