"""Build the documentation site strictly: ``python docs/site/build.py [OUT]`` (default ``site/``).

The one place the build's flags are written; ``./scripts/docs.sh`` and the test suite
(tests/project/test_docs.py) both run it. Strict: ``-n -W --keep-going`` turn every warning (a
broken link or anchor, a reference to one of our names that resolves nowhere, a public
name without a docstring) into a failure, all of them listed; ``-E`` reads every page anew,
so no warning hides in a cache. Prints the build time.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def build(out: Path) -> int:
    """Build the HTML site into ``out``; Sphinx's exit status (0: built, no warning)."""
    from sphinx.cmd.build import build_main

    with tempfile.TemporaryDirectory() as doctrees:
        return build_main(["-b", "html", "-c", str(HERE), "-d", doctrees, "-E", "-n", "-W",
                           "--keep-going", "-q", str(ROOT), str(out)])


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "site"
    start = time.perf_counter()
    rc = build(out)
    took = time.perf_counter() - start
    if rc == 0:
        print(f"[docs] built {out / 'index.html'} in {took:.1f} s", file=sys.stderr)
    else:
        print(f"[docs] the build failed (exit {rc}) after {took:.1f} s", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
