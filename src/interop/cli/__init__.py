"""The ``python -m interop`` commands: ``table``, ``demo`` and ``doctor``.

Each command lives in its own module (``table`` in a package) with a ``main(args) -> int``;
nothing here is imported by ``import interop``.
"""
