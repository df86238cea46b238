#!/usr/bin/env bash
# Creates .venv (if missing) and installs interop with everything its tests, demo and docs use.
# torch is pinned to the CPU build this machine carries; the package itself does not pin it.
# tensorflow-cpu, paddlepaddle and nvidia-dali-cuda120 are pinned too; their tests run in their
# own pytest processes.
#
# One progress line per step; a step's own output (pip's, and the log lines TensorFlow,
# absl and paddle print on import) is shown only when that step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

step() {  # step WHAT COMMAND...: "[setup] WHAT ... ok", or the command's output and its exit
  local what="$1" log rc=0
  shift
  log=$(mktemp)
  printf '[setup] %s ... ' "$what" >&2
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok" >&2
  else
    echo "FAILED (exit $rc); its output:" >&2
    cat "$log" >&2
  fi
  rm -f "$log"
  return "$rc"
}

pip_install() {
  .venv/bin/python -m pip install -q --disable-pip-version-check "$@"
}

mldata_install() {  # the ML data libraries, never moving the torch, numpy or pyarrow installed
  local pins rc=0
  pins=$(mktemp)
  .venv/bin/python -m pip freeze --disable-pip-version-check \
    | grep -iE '^(torch|numpy|pyarrow)==' >"$pins"
  pip_install -c "$pins" "ray[data]==2.60.0" "datasets==5.2.0" "pylance==14.0.2" \
    "tqdm==4.67.3" || rc=$?
  # daft 0.7.26 caps pyarrow below 26: installed without its dependencies (packaging,
  # typing-extensions and tqdm are there); tests/optional/test_mldata.py shows it works.
  [ "$rc" -eq 0 ] && { pip_install --no-deps "daft==0.7.26" || rc=$?; }
  rm -f "$pins"
  return "$rc"
}

if [ ! -x .venv/bin/python ]; then
  step "creating .venv" "$PY" -m venv .venv
fi
stamp=.venv/.interop-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  step "installing torch 2.13.0 (CPU)" pip_install "torch==2.13.0"
  # TensorFlow and PaddlePaddle: pinned to the versions whose behaviour the adapters and
  # tests/optional/test_tensorflow.py, tests/optional/test_paddle.py were probed against (not in [all]).
  step "installing tensorflow-cpu 2.21.0 and paddlepaddle 3.3.1" \
    pip_install "tensorflow-cpu==2.21.0" "paddlepaddle==3.3.1"
  # NVIDIA DALI (CUDA 12 build; its CPU pipelines need no GPU): pinned to the version
  # tests/optional/test_dali.py was probed against (not in [all]: a 424 MB wheel).
  step "installing nvidia-dali-cuda120 2.4.0" pip_install "nvidia-dali-cuda120==2.4.0"
  # The CUDA 12 GPU packages import on a CPU machine, for the detection and error tests; not
  # the gpu-cu12 extra itself, whose numba-cuda[cu12] pulls the CUDA toolkit wheels.
  step "installing interop-mempool[all,test,docs] and the CUDA 12 GPU packages" \
    pip_install -e ".[all,test,docs]" \
    "cupy-cuda12x>=13" "rmm-cu12>=24.10" "numba-cuda>=0.20"
  # Ray Data, Hugging Face datasets, Daft and Lance: pinned to the versions
  # tests/optional/test_mldata.py was probed against (not in [all]; about 30 s here).
  step "installing ray[data] 2.60.0, datasets 5.2.0, daft 0.7.26 and pylance 14.0.2" \
    mldata_install
  # paddle before tensorflow: importing paddle after tensorflow segfaults (both bundle
  # protobuf). Their import-time log lines are not ours: quietened here, shown on failure.
  step "checking every framework imports" env TF_CPP_MIN_LOG_LEVEL=3 GLOG_minloglevel=3 \
    PYTHONWARNINGS=ignore .venv/bin/python -c \
    "import interop, torch, jax, pyarrow, pandas, polars, numba, paddle, tensorflow"
  touch "$stamp"
fi
