#!/usr/bin/env bash
# The GPU check, in one command, on a CUDA machine: ./scripts/gpu-check.sh
#
# From a source checkout (PYTHONPATH=src; no venv, no network; RMM optional) with the GPU
# frameworks installed: prints the versions and the device, probes the GPU cells of the
# conversion table (docs/gpu-cells.json and the GPU section of conversion_table.md, written
# only when this run probed them), runs the gpu-marked tests in one process, then the core
# suite (-n 8 when pytest-xdist is there) and the TensorFlow / PaddlePaddle suites when
# installed, runs the GPU benchmarks, and writes docs/gpu-report.md. Each step stops after
# STEP_LIMIT seconds (default 540); missing test packages are named, and what can be
# collected still runs. Full logs go to $OUT/gpu-check when OUT is set
# (else a temporary folder), with copies of the files it wrote. A short table comes last.
# Exit status: 0 when every step passed. On a machine without a GPU it says so in one line
# and exits 0. PYTHON picks the interpreter (default python3).
set -uo pipefail

# No GPU: one line, exit 0 (shell builtins only up to here).
gpus=""
if command -v nvidia-smi >/dev/null 2>&1; then gpus="$(nvidia-smi -L 2>/dev/null)"; fi
if [[ "$gpus" != *"GPU "* ]]; then
  echo "gpu-check: no CUDA GPU on this machine (nvidia-smi lists none); nothing to check"
  exit 0
fi

case "$0" in */*) cd "${0%/*}/.." || exit 1 ;; *) cd .. || exit 1 ;; esac
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"  # absolute: tests start children elsewhere
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # several processes share the GPU
LOG="${OUT:-${TMPDIR:-/tmp}}/gpu-check"
rm -rf "$LOG" && mkdir -p "$LOG" || exit 1
DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo 'a source tree without git')"
echo "== gpu-check $DATE ($COMMIT); logs in $LOG"

status=0
last=0
LIMIT="${STEP_LIMIT:-540}"  # seconds per step: each fits a 10-minute device command
step() {  # step NAME COMMAND...: run it (at most LIMIT seconds), log it, record its status
  local name="$1"; shift
  echo "== $name: $*"
  timeout -k 10 "$LIMIT" "$@" >"$LOG/$name.log" 2>&1
  local rc=$?
  [ "$rc" -eq 124 ] && echo "$name: stopped after ${LIMIT}s (STEP_LIMIT)" >>"$LOG/$name.log"
  last=$rc
  local cmd
  printf -v cmd '%q ' "$@"
  printf '%s\t%s\t%s\n' "$name" "$rc" "${cmd% }" >>"$LOG/steps.tsv"
  tail -n 3 "$LOG/$name.log"
  [ "$rc" -ne 0 ] && status=1
  return 0
}
has() { "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)"; }

nvidia-smi | tee "$LOG/nvidia-smi.txt"
"$PY" scripts/gpu_report.py versions >"$LOG/versions.json" || status=1
cat "$LOG/versions.json"

# The test packages the suite imports at collection; without them pytest cannot collect the
# files that use them, so say which are missing (those files are then reported as errors and
# the rest still runs: --continue-on-collection-errors).
missing=()
for pkg in hypothesis pyarrow pandas; do has "$pkg" || missing+=("$pkg"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== missing test packages: ${missing[*]} (pip install ${missing[*]}); the test files" \
       "that import them are not collected, the others run"
fi
pytest_args=(-q -ra -p no:cacheprovider --continue-on-collection-errors)
xdist=()
if has xdist; then xdist=(-n 8); fi

# The GPU cells first (the recorded-cells test reads them), then the GPU tests, then the rest.
rm -f "$LOG/gpu-cells.json"
step table "$PY" -m interop table --save-gpu "$LOG/gpu-cells.json"
if [ "$last" -eq 0 ] && [ -f "$LOG/gpu-cells.json" ]; then
  cp "$LOG/gpu-cells.json" docs/gpu-cells.json  # only this run's cells are recorded
  step table-section "$PY" scripts/gpu_report.py table docs/gpu-cells.json conversion_table.md
else
  rm -f "$LOG/gpu-cells.json"  # the report then says the cells were not probed in this run
fi
step gpu "$PY" -m pytest "${pytest_args[@]}" --junitxml="$LOG/gpu.xml" \
  -m "gpu and not tensorflow and not paddle"
step core "$PY" -m pytest "${pytest_args[@]}" "${xdist[@]}" --junitxml="$LOG/core.xml" \
  -m "not gpu and not tensorflow and not paddle"
for fw in tensorflow paddle; do
  if has "$fw"; then
    step "$fw" "$PY" -m pytest "${pytest_args[@]}" --junitxml="$LOG/$fw.xml" -m "$fw"
  else
    echo "== $fw: not installed, its suite is not run"
    printf '%s\t-\tnot installed\n' "$fw" >>"$LOG/steps.tsv"
  fi
done

bench_only="gpu"
if "$PY" -c "import sys; from benchmarks.__main__ import SECTIONS; sys.exit('pool' not in SECTIONS)" \
    2>/dev/null; then bench_only="gpu,pool"; fi
step benchmarks "$PY" -m benchmarks --only "$bench_only" --out "$LOG/bench" --machine gpu-check \
  --no-plots

echo "== report: docs/gpu-report.md"
"$PY" scripts/gpu_report.py write "$LOG" docs/gpu-report.md "./scripts/gpu-check.sh ($COMMIT)" \
  "$DATE" || status=1
cp docs/gpu-report.md conversion_table.md "$LOG/" 2>/dev/null
exit "$status"
