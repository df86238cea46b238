"""interop: hand array buffers between frameworks without copying.

>>> import interop
>>> t = interop.to_framework(x, "torch")            # zero-copy whenever layouts allow
>>> interop.explain(x, "jax")                        # the path, and why

Importing interop imports no framework; each is touched only when a value of it is seen.
The registry itself loads on first use of the API (PEP 562), so the import stays cheap.
``interop.dask`` (converting dask arrays and dataframes block by block) loads on first use too.
"""

from __future__ import annotations

from . import errors as errors
from .errors import InteropError as InteropError
from .errors import NarrowingWarning as NarrowingWarning
from .errors import ZeroCopyError as ZeroCopyError

__version__ = "0.1.0"  # the one place it is written: pyproject.toml reads it (and so mempool)

_API = {"can_convert", "explain", "frameworks", "register_converter", "register_framework",
        "shares_memory", "to_framework"}
_PLAN = {"Plan", "Step"}
_COMPOSITE = {"Jagged"}
_TABLES = {"aos_to_soa", "columns_of", "soa_to_aos", "to_arrow_table", "to_record_batch",
           "transpose_kernel"}

__all__ = sorted(_API | _PLAN | _TABLES | _COMPOSITE
                 | {"InteropError", "NarrowingWarning", "ZeroCopyError", "errors"})


def __getattr__(name: str):
    if name in _API:
        from . import api

        value = getattr(api, name)
    elif name in _PLAN:
        from . import plan

        value = getattr(plan, name)
    elif name in _COMPOSITE:
        from .adapters import ragged

        value = getattr(ragged, name)
    elif name in _TABLES:
        from . import tabular

        value = getattr(tabular, name)
    elif name == "dask":
        # Block-wise conversion of dask collections; importing it imports dask.
        import importlib

        value = importlib.import_module(".dask", __name__)
    else:
        raise AttributeError(f"module 'interop' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # interop.dask is not in __all__: ``from interop import *`` must not import dask.
    return sorted([*__all__, "dask"])
