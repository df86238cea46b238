#!/usr/bin/env bash
# The documentation site, into site/ (or the folder given): the guides of docs/, the API
# reference generated from the docstrings, the conversion table probed on this machine with
# the committed GPU section. Strict (docs/site/build.py): any warning fails the build.
# Then open site/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python docs/site/build.py "$@"
