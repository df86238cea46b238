"""Child probe: import tensorflow, then paddle, which segfaults where the pitfall is present
(both bundle protobuf)."""

from __future__ import annotations

import importlib


def main() -> None:
    for name in ("tensorflow", "paddle"):  # this order: the other one is safe
        importlib.import_module(name)


if __name__ == "__main__":
    main()
