"""One module per framework, each declaring its ``ADAPTER``, or its ``ADAPTERS`` where its
values are arrays and batches of them (``dali_``); ``producer`` declares three.

Adding a framework is a module here and its name in ``FRAMEWORKS``; :mod:`interop.default`
builds the registry from these lists. Order matters only for detection: specific frameworks
first, the table kinds (:mod:`interop.tables.adapters`) next, the generic producers last.
"""

FRAMEWORKS = ("numpy_", "torch_", "jax_", "tensorflow_", "paddle_", "pyarrow_", "scipy_",
              "sparse_", "pandas_", "polars_", "cupy_", "numba_", "cudf_", "dali_", "capsule")
"""The modules of the array frameworks, each with an ``ADAPTER``."""

PRODUCERS = "producer"
"""The module of the generic sources (``ADAPTERS``): read after every framework and table."""

PAIRS = "pairs"
"""The module of the pair-specific edges (``edges()``)."""
