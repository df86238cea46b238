"""``interop COMMAND`` (or ``python -m interop COMMAND``): ``table``, ``demo`` and ``doctor``.

The ``interop`` console command the package installs runs :func:`main`, as ``python -m`` does.

    python -m interop table [--markdown | --json]   the live conversion matrix of this machine
    python -m interop demo [--device cpu|cuda] [--rows N]   a mixed Parquet/torch/JAX pipeline
    python -m interop doctor [--json]               frameworks, GPUs, pool, known pitfalls
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "table": "the live conversion matrix of this machine",
    "demo": "a mixed pipeline: Parquet -> pyarrow -> torch -> JAX -> Arrow",
    "doctor": "frameworks found, GPUs, the memory pool, and known pitfalls",
}


def usage() -> str:
    lines = ["usage: interop COMMAND [options]   (or: python -m interop COMMAND [options])", "",
             "commands:"]
    lines += [f"  {name:<8} {what}" for name, what in COMMANDS.items()]
    lines += ["", "interop COMMAND --help shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names (``sys.argv[1:]`` by default); its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from . import __version__

        print(f"interop {__version__}")
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"unknown command {command!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"interop.cli.{command}")
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
