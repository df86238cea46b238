#!/usr/bin/env bash
# The main job: the demo pipeline (Parquet -> pyarrow -> torch -> JAX -> Arrow), CPU by default.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python -m interop demo "$@"
