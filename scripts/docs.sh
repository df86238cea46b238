#!/usr/bin/env bash
# Builds the documentation site into site/ (or the folder given): the guides of docs/, the API
# reference from the docstrings, the conversion table probed on this machine. Strict: every
# warning (a broken link or reference, a public name without a docstring) fails the build.
# Open site/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
out=${1:-site}
doctrees=$(mktemp -d)
trap 'rm -rf "$doctrees"' EXIT
.venv/bin/python -m sphinx -b html -c docs/site -d "$doctrees" -E -n -W --keep-going -q \
  . "$out"
echo "[docs] built $out/index.html" >&2
