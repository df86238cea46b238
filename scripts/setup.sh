#!/usr/bin/env bash
# Creates .venv (if missing) and installs interop with everything its tests and demo use.
# torch is pinned to the CPU build this machine carries; the package itself does not pin it.
# tensorflow-cpu and paddlepaddle are pinned too; their tests run in their own pytest processes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.interop-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
  # TensorFlow and PaddlePaddle: pinned to the versions whose behaviour the adapters and
  # tests/test_tensorflow.py, tests/test_paddle.py were probed against (not in [all]).
  .venv/bin/python -m pip install -q --disable-pip-version-check "tensorflow-cpu==2.21.0" "paddlepaddle==3.3.1" 2>&1 | grep -v "^WARNING: Location" || true
  # The CUDA 12 GPU packages import on a CPU machine, for the detection and error tests; not
  # the gpu-cu12 extra itself, whose numba-cuda[cu12] pulls the CUDA toolkit wheels.
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[all,test]" \
    "cupy-cuda12x>=13" "rmm-cu12>=24.10" "numba-cuda>=0.20" 2>&1 | grep -v "^WARNING: Location" || true
  # paddle before tensorflow: importing paddle after tensorflow segfaults (both bundle protobuf)
  .venv/bin/python -c "import interop, torch, jax, pyarrow, pandas, polars, numba, paddle, tensorflow" 
  touch "$stamp"
fi
