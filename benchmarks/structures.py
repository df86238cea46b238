"""Structures: a model's weights and a batch converted in one call, against native loops.

A torch ``state_dict`` of 1,000 small CPU tensors (500 ``Linear(8, 8)`` layers: 8x8 weights
and 8-element biases) to NumPy and to JAX by ``interop.to_framework(state, target)``, against
the fastest hand-written loop of native zero-copy calls over the same leaves
(``{k: t.numpy() for k, t in state.items()}``; for JAX each spelling below is timed and the
fastest kept), and the same weights nested (``{"layers": [{"w": .., "b": ..}, ...]}``) against
a nested comprehension; beside them, the same leaves each converted by its own
``to_framework`` call (what the leaves' own plans cost, without the structure's). A 3-leaf
batch (``image``, ``label``, ``mask``) against its three leaves' own ``to_framework`` calls
(the budget: 1 us over them) and the native calls.

Every contender is timed in interleaved rounds (``benchmarks.interleaved``); ratios and
differences are medians of the per-round values, so drift between rounds cancels.
"""

from __future__ import annotations

import statistics
import warnings
from typing import Any

from . import calibrate, interleaved, summary, timer

LEAVES_BAR = 1.3  # the 1,000-leaf conversion within this ratio of the native loop
BATCH_BAR_US = 1.0  # the 3-leaf batch within this many us of its leaves' own conversions
JAX_SPELLINGS = ("jax.dlpack.from_dlpack(t)", "jax.dlpack.from_dlpack(t.numpy())",
                 "jax.device_put(t.numpy(), may_alias=True)")


def _paired(samples: dict[str, list[float]], a: str, b: str) -> tuple[float, float]:
    """Median per-round ratio ``a / b`` and difference ``a - b`` (in us)."""
    ratio = statistics.median(x / y for x, y in zip(samples[a], samples[b]))
    diff = statistics.median((x - y) * 1e6 for x, y in zip(samples[a], samples[b]))
    return ratio, diff


def _fastest(env: dict[str, Any], spellings: list[str], quick: bool) -> str:
    """The fastest of the native loops ``spellings`` (a few samples each)."""
    timers = {s: timer(s, env) for s in spellings}
    got = interleaved(timers, 1, 3 if quick else 7)
    return min(got, key=lambda s: statistics.median(got[s]))


def _state(model_layers: int) -> Any:
    import torch

    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 8) for _ in range(model_layers)]
    return torch.nn.Sequential(*layers).state_dict()


def _weights(quick: bool, target: str, env: dict[str, Any]) -> dict[str, Any]:
    """The 1,000-leaf state (flat, as torch gives it, and nested) to ``target``."""
    import interop

    state = env["state"]
    leaf = "t.numpy()" if target == "numpy" else None
    if leaf is None:
        flat = [f"{{k: {s} for k, t in state.items()}}" for s in JAX_SPELLINGS]
        leaf = _fastest(env, flat, quick).split(": ", 1)[1].split(" for ")[0]
    native_flat = f"{{k: {leaf} for k, t in state.items()}}"
    inner = leaf.replace("t.", "l[n].").replace("(t)", "(l[n])")
    native_nested = (f"{{'layers': [{{n: {inner} for n in ('w', 'b')}} "
                     f"for l in nested['layers']]}}")
    timers = {"interop": timer(f"to_framework(state, {target!r})", env),
              "native": timer(native_flat, env),
              "leaves": timer(f"{{k: to_framework(t, {target!r}) for k, t in state.items()}}",
                              env),
              "interop_nested": timer(f"to_framework(nested, {target!r})", env),
              "native_nested": timer(native_nested, env)}
    out = interop.to_framework(state, target)
    zero_copy = all(env["pointer"](out[k]) == t.data_ptr() for k, t in state.items())
    samples = interleaved(timers, 1, 5 if quick else (41 if target == "numpy" else 15))
    ratio, diff = _paired(samples, "interop", "native")
    nratio, _ = _paired(samples, "interop_nested", "native_nested")
    lratio, _ = _paired(samples, "leaves", "native")
    return {"leaves": len(state), "native": native_flat, "native_nested": native_nested,
            "zero_copy": zero_copy,
            "ms": {k: summary(v, 1e3) for k, v in samples.items()},
            "ratio": ratio, "over_native_us_per_leaf": diff / len(state),
            "ratio_of_medians": (statistics.median(samples["interop"])
                                 / statistics.median(samples["native"])),
            "ratio_nested": nratio, "leaves_ratio": lratio, "pass": ratio <= LEAVES_BAR}


def _batch(quick: bool, target: str, env: dict[str, Any]) -> dict[str, Any]:
    """The 3-leaf batch to ``target``: interop's one call, its leaves' own calls, native."""
    native = {"numpy": "{k: t.numpy() for k, t in batch.items()}",
              "jax": "{k: jax.dlpack.from_dlpack(t) for k, t in batch.items()}"}[target]
    timers = {"interop": timer(f"to_framework(batch, {target!r})", env),
              "leaves": timer(f"{{k: to_framework(t, {target!r}) for k, t in batch.items()}}",
                              env),
              "native": timer(native, env)}
    number = calibrate(timers["interop"], 0.002 if quick else 3e-4)
    samples = interleaved(timers, number, 5 if quick else 301)
    ratio, over_leaves = _paired(samples, "interop", "leaves")
    nratio, over_native = _paired(samples, "interop", "native")
    return {"native": native, "us": {k: summary(v) for k, v in samples.items()},
            "over_leaves_us": over_leaves, "over_native_us": over_native,
            "ratio_to_native": nratio, "pass": over_leaves <= BATCH_BAR_US}


def run(quick: bool = False) -> dict[str, Any]:
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*not writable.*")
    import jax
    import torch

    import interop

    from .dispatch import data_pointer

    state = _state(50 if quick else 500)
    nested = {"layers": [{"w": state[f"{i}.weight"], "b": state[f"{i}.bias"]}
                         for i in range(len(state) // 2)]}
    batch = {"image": torch.rand(8, 3, 32, 32), "label": torch.arange(8, dtype=torch.int32),
             "mask": torch.ones(8, 32, dtype=torch.bool)}
    env = {"state": state, "nested": nested, "batch": batch, "jax": jax, "torch": torch,
           "to_framework": interop.to_framework, "pointer": data_pointer}
    for target in ("numpy", "jax"):  # the first calls plan; the timings are of kept plans
        for value in (state, nested, batch):
            interop.to_framework(value, target)
    return {"weights": {t: _weights(quick, t, env) for t in ("numpy", "jax")},
            "batch": {t: _batch(quick, t, env) for t in ("numpy", "jax")},
            "bars": {"leaves_ratio": LEAVES_BAR, "batch_us": BATCH_BAR_US}}
