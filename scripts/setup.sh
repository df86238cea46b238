#!/usr/bin/env bash
# Creates .venv (if missing) and installs interop with everything its tests and demo use.
# torch is pinned to the CPU build this machine carries; the package itself does not pin it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.interop-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[all,gpu,test]" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import interop, torch, jax, pyarrow, pandas, polars, numba" 
  touch "$stamp"
fi
