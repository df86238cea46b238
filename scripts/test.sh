#!/usr/bin/env bash
# The test command: set up .venv, lint, run the whole suite. Zero tests collected is a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || exit 1
.venv/bin/ruff check src tests benchmarks || exit 1
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit "$rc"
