"""Composite values against the hand-written route with the same buffers, side by side.

The rows of issue 49, each ``interop.to_framework(x, target)`` (a kept plan: warmed first)
against the hand-written call a user would write for the same result, timed in interleaved
rounds (``benchmarks.interleaved``); each ratio is the ratio of the two best samples (as the
issue measured: torch's jagged constructor has bursts of 3x that land on either side), with
the median of the per-round ratios beside it. The hand routes check nothing interop checks
(nulls, slices, offsets, index bounds and order) except the small CSR's, which is torch's own
checked constructor. Beside them, the invariant check of a 100,000 x 100,000 CSR matrix of 10M
entries: interop's (one compiled pass, ``adapters/index_kernel.py``) against SciPy's own
``check_format(full_check=True)``.
"""

from __future__ import annotations

import statistics
import warnings
from typing import Any

from . import interleaved, summary, timer

BARS = {"fsl": 2.0, "tensor": 2.0, "jagged": 1.3, "table": 2.0, "csr": 1.0, "check": 1.5}
"""Issue 49's bars: each row within this ratio of its hand-written route."""


def _rows(quick: bool) -> dict[str, tuple[str, str, str, dict[str, Any]]]:
    """``{row: (label, interop statement, hand statement, env)}``."""
    import numpy as np
    import pyarrow as pa
    import scipy.sparse as sp
    import torch

    import interop

    rng = np.random.default_rng(0)
    to = interop.to_framework
    col = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.standard_normal(256 * 768, dtype=np.float32)), 768)
    ten = pa.ExtensionArray.from_storage(
        pa.fixed_shape_tensor(pa.float32(), [32, 32, 3]),
        pa.FixedSizeListArray.from_arrays(
            pa.array(rng.standard_normal(64 * 32 * 32 * 3, dtype=np.float32)), 32 * 32 * 3))
    lengths = rng.integers(1, 513, 256)
    offsets = np.zeros(257, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    lst = pa.ListArray.from_arrays(pa.array(offsets),
                                   pa.array(rng.integers(0, 30000, int(offsets[-1]))))
    tab = pa.table({"emb": col, "label": pa.array(rng.integers(0, 10, 256))})
    m = sp.random(100, 100, density=0.05, format="csr", random_state=0, dtype=np.float64)
    m.sort_indices()
    env = {"to": to, "torch": torch, "np": np, "col": col, "ten": ten, "lst": lst, "tab": tab,
           "m": m, "jagged": torch.nested.nested_tensor_from_jagged}
    return {
        "fsl": ("`fixed_size_list` 256x768 -> torch", "to(col, 'torch')",
                "torch.from_numpy(col.values.to_numpy().reshape(256, 768))", env),
        "tensor": ("`fixed_shape_tensor` 64x32x32x3 -> torch", "to(ten, 'torch')",
                   "torch.from_numpy(ten.to_numpy_ndarray())", env),
        "jagged": ("`list<int64>` 256 rows -> torch jagged", "to(lst, 'torch')",
                   "jagged(torch.from_numpy(lst.values.to_numpy()), "
                   "torch.from_numpy(lst.offsets.to_numpy()))", env),
        "table": ("table {emb, label} -> dict of torch", "to(tab, 'torch')",
                  "{'emb': torch.from_numpy(tab.column('emb').chunk(0).values.to_numpy()"
                  ".reshape(256, 768)), 'label': torch.from_numpy(tab.column('label')"
                  ".chunk(0).to_numpy())}", env),
        "csr": ("CSR 100x100, 500 nnz -> torch", "to(m, 'torch')",
                "torch.sparse_csr_tensor(torch.from_numpy(m.indptr), "
                "torch.from_numpy(m.indices), torch.from_numpy(m.data), m.shape, "
                "check_invariants=True)", env),
    }


def _check_row(quick: bool) -> tuple[str, str, str, dict[str, Any]]:
    """The 10M-entry CSR check: interop's (the check its conversions run) against SciPy's."""
    from interop.adapters.sparse_parts import check
    from interop.default import REGISTRY

    from .sparse import _csr

    n, per_row = (10_000, 10) if quick else (100_000, 100)
    m = _csr(n, per_row)
    parts = REGISTRY.adapters["scipy"].parts(m)
    env = {"check": check, "reg": REGISTRY, "parts": parts, "m": m}
    return (f"CSR {n:,} x {n:,}, {m.nnz:,} nnz: the invariant check",
            "check(reg, parts)", "m.check_format(full_check=True)", env)


def run(quick: bool = False) -> dict[str, Any]:
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    repeat = 5 if quick else 21
    rows = _rows(quick)
    rows["check"] = _check_row(quick)
    out: dict[str, Any] = {"bars": BARS, "rows": {}}
    for key, (label, ours, hand, env) in rows.items():
        timers = {"interop": timer(ours, env), "hand": timer(hand, env)}
        number = 1 if key == "check" else (20 if key == "jagged" else 200)
        samples = interleaved(timers, number, 7 if key == "check" else repeat)
        ratio = min(samples["interop"]) / min(samples["hand"])
        paired = statistics.median(a / b for a, b in zip(samples["interop"], samples["hand"]))
        out["rows"][key] = {"label": label, "interop": ours, "hand": hand,
                            "us": {k: summary(v) for k, v in samples.items()},
                            "ratio": ratio, "paired_ratio": paired, "bar": BARS[key],
                            "pass": ratio <= BARS[key]}
    return out
