#!/usr/bin/env bash
# The GPU check, in one command, on a CUDA machine: ./scripts/gpu-check.sh [WHEELS_DIR]
#
# From a source checkout (PYTHONPATH=src; no venv, no network) with the GPU frameworks
# installed. First it installs, offline, the wheels of WHEELS_DIR (the argument, else $WHEELS,
# else .whl/ when it exists: optree and RMM for the lent image, see docs/gpu.md) into a
# private folder put on PYTHONPATH. Then, in order of value, each step under the time left:
#   versions   nvidia-smi, every framework's version and device, the packages missing here
#   sources    first, the gpu tests that settle what reading the frameworks' sources
#              predicted and the CPU judged with stand-ins (SOURCES_TESTS below:
#              tests/gpu/test_gpu_sources_third.py, tests/tables/test_tables_gpu.py,
#              tests/mempool/test_mempool_gpu_sources.py)
#   table      the GPU cells of the conversion table (docs/gpu-cells.json and the GPU section
#              of conversion_table.md, written only when this run probed them)
#   gpu        the other gpu-marked tests in one process (the pool's excepted)
#   pool       the shared pool's gpu-marked tests (tests/mempool/test_mempool_gpu.py, mempool.auto)
#   core       the core suite, -n 8 when pytest-xdist is there
#   tensorflow, paddle   their suites, where installed
#   benchmarks the GPU (and pool) benchmarks; SKIP_BENCHMARKS=1 leaves them out
# STEPS=core,benchmarks runs only the steps named (a second check of the same lease picks
# up where the first one's deadline stopped it). DEADLINE (seconds, default 360) bounds the
# whole check: each step gets the time left (at
# most STEP_LIMIT, default 540), a step that cannot start in time is reported "not run", so
# two checks fit one 15-minute lease. The report is rewritten after every step, so a check
# stopped from outside still leaves one. Everything that comes back goes to $OUT (else
# $TMPDIR/gpu-check-out), at most 5 files (a lent machine returns 8): gpu-report.md, gpu-check.json (steps, counts,
# versions, missing packages), gpu-check-logs.tar.gz (every log), gpu-cells.json and
# conversion_table.md when the cells were probed. Missing packages are named in the report,
# never counted as failures. Where the tree stays (your own CUDA machine), the report, the
# cells and the table's GPU section are also written into docs/ and conversion_table.md at
# the end (WRITE_DOCS=0: not). DRY_RUN=1 shows the steps, their budgets and the report
# without running them (and writes nothing into the tree). Exit status: 0 when every step
# that ran passed. On a machine without a GPU it says so in one line and exits 0. PYTHON
# picks the interpreter (default python3).
set -uo pipefail

# No GPU: one line, exit 0 (shell builtins only up to here).
gpus=""
if command -v nvidia-smi >/dev/null 2>&1; then gpus="$(nvidia-smi -L 2>/dev/null)"; fi
if [[ "$gpus" != *"GPU "* ]]; then
  echo "gpu-check: no CUDA device on this machine (nvidia-smi lists no GPU); nothing to check"
  exit 0
fi

START=$SECONDS
DEADLINE="${DEADLINE:-360}"  # seconds for the whole check
LIMIT="${STEP_LIMIT:-540}"   # seconds at most per step (one device command runs 10 minutes)
RESERVE=15                   # kept for the last report and the log archive
MIN_STEP=20                  # a step with less time than this left is not started
DRY="${DRY_RUN:-0}"
ONLY=",${STEPS:-},"  # ",," : every step
DOCS="${WRITE_DOCS:-1}"
[ "$DRY" = 1 ] && DOCS=0
WHEELS="${1:-${WHEELS:-}}"
case "$0" in */*) cd "${0%/*}/.." || exit 1 ;; *) cd .. || exit 1 ;; esac
[ -z "$WHEELS" ] && [ -d .whl ] && WHEELS=.whl
PY="${PYTHON:-python3}"
OUTDIR="${OUT:-${TMPDIR:-/tmp}/gpu-check-out}"
LOG="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")" || exit 1  # logs: archived into OUTDIR
mkdir -p "$OUTDIR" || exit 1
rm -f "$OUTDIR"/gpu-report.md "$OUTDIR"/gpu-check.json "$OUTDIR"/gpu-check-logs.tar.gz \
  "$OUTDIR"/gpu-cells.json "$OUTDIR"/conversion_table.md
DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo 'a source tree without git')"
echo "== gpu-check $DATE ($COMMIT): deadline ${DEADLINE}s, at most ${LIMIT}s a step; report" \
     "and logs in $OUTDIR"

export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"  # absolute: tests start children elsewhere
if [ -n "$WHEELS" ]; then
  echo "== wheels: $WHEELS/*.whl, offline, into $LOG/site"
  if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target "$LOG/site" "$WHEELS"/*.whl >"$LOG/wheels.log" 2>&1; then
    export PYTHONPATH="$PYTHONPATH:$LOG/site"
  else
    echo "wheels: the install failed (wheels.log); going on without them"
  fi
fi
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # several processes share the GPU

status=0
last=0
left() { echo $(( DEADLINE - (SECONDS - START) - RESERVE )); }
report() {  # the report and the archive, rewritten after every step
  "$PY" scripts/gpu_report.py write "$LOG" "$OUTDIR/gpu-report.md" \
    "./scripts/gpu-check.sh ($COMMIT)" "$DATE" "$DEADLINE" "$(( SECONDS - START ))" \
    >"$LOG/summary.txt" 2>"$LOG/report.err" || status=1
  tar -czf "$OUTDIR/gpu-check-logs.tar.gz" -C "$LOG" --exclude=./site . 2>/dev/null
  echo "   report rewritten after $1 ($(( SECONDS - START ))s of ${DEADLINE}s)"
}
step() {  # step NAME COMMAND...: run it in the time left, log it, record its status
  local name="$1"; shift
  local budget
  budget=$(left)
  [ "$budget" -gt "$LIMIT" ] && budget=$LIMIT
  local cmd
  printf -v cmd '%q ' "$@"
  last=124
  if [ "$ONLY" != ",," ] && [[ "$ONLY" != *",$name,"* ]]; then
    skip "$name" "not run: not in STEPS=${STEPS}"
    return 0
  fi
  if [ "$budget" -lt "$MIN_STEP" ]; then
    echo "== $name: not run, ${budget}s left before the deadline"
    printf '%s\t-\tnot run: deadline (%ss left of %ss)\t0\n' "$name" "$budget" "$DEADLINE" \
      >>"$LOG/steps.tsv"
    report "$name"
    return 0
  fi
  echo "== $name (at most ${budget}s): ${cmd% }"
  local t0=$SECONDS
  if [ "$DRY" = 1 ]; then
    echo "dry run: not run" >"$LOG/$name.log"
    last=0
  else
    timeout -k 10 "$budget" "$@" >"$LOG/$name.log" 2>&1
    last=$?
    [ "$last" -eq 124 ] && echo "$name: stopped after ${budget}s" >>"$LOG/$name.log"
    tail -n 3 "$LOG/$name.log"
  fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$last" "${cmd% }" "$(( SECONDS - t0 ))" >>"$LOG/steps.tsv"
  [ "$last" -ne 0 ] && status=1
  report "$name"
  return 0
}
skip() {  # skip NAME WHY: a step left out, in the report
  echo "== $1: $2"
  printf '%s\t-\t%s\t0\n' "$1" "$2" >>"$LOG/steps.tsv"
}
has() { "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)"; }

# versions, and what is missing here (named in the report, never counted as failures)
nvidia-smi >"$LOG/nvidia-smi.txt" 2>&1
head -n 12 "$LOG/nvidia-smi.txt"
if [ "$DRY" = 1 ]; then echo '{}' >"$LOG/versions.json"; else
  timeout -k 5 120 "$PY" scripts/gpu_report.py versions >"$LOG/versions.json" || status=1
fi
missing=()
for pkg in optree rmm hypothesis pyarrow pandas xdist polars dask cudf; do
  has "$pkg" || missing+=("$pkg")
done
printf '%s\n' "${missing[@]}" >"$LOG/missing.txt"
[ "${#missing[@]}" -gt 0 ] && echo "== missing here: ${missing[*]} (their tests skip or are" \
  "not collected; the rest runs)"
report versions

pytest_args=(-q -ra -p no:cacheprovider --continue-on-collection-errors)
xdist=()
has xdist && xdist=(-n 8)
POOL_TESTS=(tests/mempool/test_mempool_gpu.py tests/mempool/test_mempool_auto.py)
SOURCES_TESTS=(tests/gpu/test_gpu_sources_third.py tests/tables/test_tables_gpu.py
               tests/mempool/test_mempool_gpu_sources.py)

# what the sources predicted first (stand-ins decided it on the CPU), then the GPU cells
# (the recorded-cells test reads them), then the tests, by value
step sources "$PY" -m pytest "${pytest_args[@]}" --junitxml="$LOG/sources.xml" -m gpu \
  "${SOURCES_TESTS[@]}"
step table "$PY" -m interop table --save-gpu "$LOG/gpu-cells.json"
if [ "$last" -eq 0 ] && [ -f "$LOG/gpu-cells.json" ]; then  # only this run's cells count
  cp conversion_table.md "$LOG/conversion_table.md"
  step table-section "$PY" scripts/gpu_report.py table "$LOG/gpu-cells.json" \
    "$LOG/conversion_table.md"
  cp "$LOG/gpu-cells.json" "$LOG/conversion_table.md" "$OUTDIR/" 2>/dev/null
else
  rm -f "$LOG/gpu-cells.json"  # the report then says the cells were not probed in this run
fi
step gpu "$PY" -m pytest "${pytest_args[@]}" --junitxml="$LOG/gpu.xml" \
  -m "gpu and not tensorflow and not paddle" "${POOL_TESTS[@]/#/--ignore=}" \
  "${SOURCES_TESTS[@]/#/--ignore=}"
step pool "$PY" -m pytest "${pytest_args[@]}" --junitxml="$LOG/pool.xml" -m gpu \
  "${POOL_TESTS[@]}"
step core "$PY" -m pytest "${pytest_args[@]}" "${xdist[@]}" --junitxml="$LOG/core.xml" \
  -m "not gpu and not tensorflow and not paddle"
for fw in tensorflow paddle; do
  if has "$fw"; then
    step "$fw" "$PY" -m pytest "${pytest_args[@]}" --junitxml="$LOG/$fw.xml" -m "$fw"
  else
    skip "$fw" "not installed"
  fi
done
if [ "${SKIP_BENCHMARKS:-0}" = 1 ]; then
  skip benchmarks "not run: SKIP_BENCHMARKS=1"
else
  step benchmarks "$PY" -m benchmarks --only gpu,pool --out "$LOG/bench" --machine gpu-check \
    --no-plots
fi
report end
if [ "$DOCS" = 1 ]; then  # the tree, where it stays: what this run verified
  cp "$OUTDIR/gpu-report.md" docs/gpu-report.md
  [ -f "$OUTDIR/gpu-cells.json" ] && cp "$OUTDIR/gpu-cells.json" docs/gpu-cells.json &&
    cp "$OUTDIR/conversion_table.md" conversion_table.md
fi
cat "$LOG/summary.txt"
echo "== $(( SECONDS - START ))s of ${DEADLINE}s; in $OUTDIR: $(ls "$OUTDIR" | tr '\n' ' ')"
rm -rf "$LOG"
exit "$status"
