"""Tables: a wide Arrow table to a dict of torch tensors and back, per-column cost.

Forward: ``interop.to_framework(table, "torch")`` when the library takes tables
(``interop.can_convert(table, "torch")``), otherwise ``to_framework`` on each column.
Baselines: pyarrow's own ``to_numpy(zero_copy_only=True)`` per column (the floor), and the
native ``torch.from_numpy(col.to_numpy(zero_copy_only=True))``.
Back: ``pa.table({name: to_framework(t, "pyarrow")})`` against ``pa.table({name:
pa.array(t.numpy())})``.
"""

from __future__ import annotations

import statistics
import time
import warnings
from typing import Any

from . import aligned_empty


def _best(fn: Any, repeat: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def run(quick: bool = False, columns: int | None = None, rows: int | None = None
        ) -> dict[str, Any]:
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*not writable.*")
    import numpy as np
    import pyarrow as pa
    import torch

    import interop

    ncols = columns or (10 if quick else 100)
    nrows = rows or (10_000 if quick else 1_000_000)
    repeat = 5 if quick else 21
    arrays = {}
    for i in range(ncols):
        a = aligned_empty(4 * nrows, "float32")
        a[:] = i
        arrays[f"c{i}"] = a
    table = pa.table(arrays)
    del arrays
    names = table.column_names
    cols = [table.column(i) for i in range(ncols)]
    table_api = bool(interop.can_convert(table, "torch"))
    to_fw = interop.to_framework

    if table_api:
        def fwd() -> dict[str, Any]:
            return to_fw(table, "torch")
    else:
        def fwd() -> dict[str, Any]:
            return {n: to_fw(c, "torch") for n, c in zip(names, cols)}

    # the native calls start from the table too: its columns are part of the work
    def pa_numpy() -> dict[str, Any]:
        return {n: c.chunk(0).to_numpy(zero_copy_only=True)
                for n, c in zip(table.schema.names, table.columns)}

    def native_torch() -> dict[str, Any]:
        return {n: torch.from_numpy(c.chunk(0).to_numpy(zero_copy_only=True))
                for n, c in zip(table.schema.names, table.columns)}

    tensors = fwd()
    zero_copy = all(tensors[n].data_ptr() == c.chunk(0).buffers()[1].address
                    for n, c in zip(names, cols))
    items = list(tensors.items())

    def back() -> Any:
        return pa.table({n: to_fw(t, "pyarrow") for n, t in items})

    def back_native() -> Any:
        return pa.table({n: pa.array(t.numpy()) for n, t in items})

    back_zc = back().column(0).chunk(0).buffers()[1].address == items[0][1].data_ptr()
    fns = {"interop_to_torch": fwd, "pyarrow_to_numpy": pa_numpy,
           "native_to_torch": native_torch, "interop_back": back, "native_back": back_native}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):  # interleaved rounds
        for k, f in fns.items():
            samples[k].extend(_best(f, 1))
    med = {k: statistics.median(v) for k, v in samples.items()}
    per_col = {k: v / ncols * 1e6 for k, v in med.items()}
    return {
        "columns": ncols, "rows": nrows, "dtype": "float32",
        "table_bytes": int(table.nbytes),
        "path": ("interop.to_framework(table, 'torch')" if table_api
                 else "interop.to_framework(column, 'torch') per column (no table-level API: "
                      "interop.can_convert(table, 'torch') is False)"),
        "table_api": table_api,
        "zero_copy_forward": bool(zero_copy), "zero_copy_back": bool(back_zc),
        "repeat": repeat,
        "total_ms": {k: v * 1e3 for k, v in med.items()},
        "per_column_us": per_col,
        "forward_vs_pyarrow_to_numpy": per_col["interop_to_torch"] / per_col["pyarrow_to_numpy"],
        "forward_vs_native_torch": per_col["interop_to_torch"] / per_col["native_to_torch"],
        "back_vs_native": per_col["interop_back"] / per_col["native_back"],
        "numpy_version": np.__version__,
    }
