#!/usr/bin/env bash
# The test command: set up .venv, lint, run the whole suite. Zero tests collected is a failure.
#
# Six pytest processes: the core suite (-m "not tensorflow and not paddle and not dali and not
# multidevice and not mldata"; it never imports any of them), then the TensorFlow suite (-m
# tensorflow), the PaddlePaddle suite (-m paddle), the NVIDIA DALI suite (-m dali), the ML data
# libraries' suite (-m mldata: Ray Data, datasets, Daft, Lance), each in its own process
# (importing paddle after tensorflow segfaults, and TensorFlow's kernels abort the interpreter
# on misaligned buffers: a crash there must not take the core results with it; DALI loads its
# own CUDA libraries and worker threads; Ray and datasets register Arrow extension types
# process-wide, Daft starts threads and imports TensorFlow), and the multi-device suite (-m multidevice: JAX with
# four CPU devices, which XLA_FLAGS must ask for before JAX starts). Every run must pass. Arguments go to every run; a -m EXPR given here is
# combined with each run's own marker expression. With no arguments (CI), a run that collects
# no tests fails; with arguments that select tests (paths, -k, -m), a run the selection leaves
# empty is reported and skipped, but all six runs empty is still a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || exit 1
.venv/bin/ruff check src tests benchmarks docs/site || exit 1

user_m=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -m) user_m="${2:-}"; shift 2 || shift ;;
    -m=*) user_m="${1#-m=}"; shift ;;
    -m?*) user_m="${1#-m}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
narrowed=0
if [ ${#args[@]} -gt 0 ] || [ -n "$user_m" ]; then narrowed=1; fi

status=0
collected=0
run() {  # run NAME MARKER-EXPRESSION [VAR=VALUE ...] (environment of that run only)
  local name="$1" expr="$2"
  shift 2
  [ -n "$user_m" ] && expr="($user_m) and ($expr)"
  echo "=== $name: ${*:+$* }pytest -m \"$expr\" ${args[*]:-}" >&2
  env "$@" .venv/bin/python -m pytest -m "$expr" ${args[@]+"${args[@]}"}
  local rc=$?
  if [ "$rc" -eq 5 ]; then
    if [ "$narrowed" -eq 1 ]; then
      echo "=== $name: the given arguments select no tests here" >&2
      return
    fi
    echo "=== $name: pytest collected no tests: that is a failure" >&2
    status=1
    return
  fi
  collected=1
  [ "$rc" -ne 0 ] && { echo "=== $name: failed (exit $rc)" >&2; status=1; }
}

run core "not tensorflow and not paddle and not dali and not multidevice and not mldata"
run tensorflow "tensorflow"
run paddle "paddle"
run dali "dali"
run mldata "mldata"
run multidevice "multidevice" \
  XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_force_host_platform_device_count=4"
if [ "$collected" -eq 0 ]; then
  echo "no run collected any test: that is a failure" >&2
  exit 1
fi
exit "$status"
