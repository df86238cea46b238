"""``python -m mempool status [--json]``: print the status report."""

from __future__ import annotations

import argparse
import json
import sys

from .report import status


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m mempool", description=__doc__)
    parser.add_argument("command", choices=["status"], help="what to show")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    report = status()
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
