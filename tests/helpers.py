"""Sample builders and zero-copy proofs shared by the tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import numpy as np

from interop.host import fresh_copy


def aligned(values: Any, dtype: Any = None) -> np.ndarray:
    """A 64-byte aligned, C-contiguous, writable copy of ``values``."""
    return fresh_copy(np.asarray(values, dtype=dtype))


def data_pointer(x: Any) -> int:
    """The address of the first element, by ``x``'s own framework (see ``oracles``)."""
    from oracles import pointer

    return pointer(x)


class UpstreamChanged(Warning):
    """An upstream misbehaviour interop guards against is no longer there (a ``Warning``, not
    a ``UserWarning``, which the suite turns into errors: it reports, it never fails)."""


def report_upstream(what: str, still_there: bool) -> None:
    """A probe of an upstream framework's misbehaviour reports, it never fails: a warning
    (in pytest's summary) when the misbehaviour is gone, so the guard can be revisited. The
    test that calls it asserts interop's own behaviour, which must hold either way."""
    if not still_there:
        import warnings

        warnings.warn(f"upstream no longer misbehaves: {what}", UpstreamChanged, stacklevel=2)


def run_cli_json(*args: str) -> dict:
    """``python -m interop <args> --json`` in a child process, parsed."""
    import json
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "interop", *args, "--json"], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def stale_table_cells(framework: str, live: dict) -> dict:
    """The CPU cells of conversion_table.md involving ``framework`` that differ from ``live``
    (a fresh ``table --json``); empty when the committed table is fresh."""
    from pathlib import Path

    from interop.cli import table

    def cells(md: str) -> dict:
        return {k: v for k, v in table.parse_markdown(md).items()
                if framework in table.frameworks_of(*k)
                and k[1] not in table.GPU and k[2] not in table.GPU}

    committed = cells((Path(__file__).resolve().parents[1] / "conversion_table.md").read_text())
    now = cells(table.markdown(live))
    assert committed and len(committed) == len(now)
    return {k: (committed.get(k), now.get(k)) for k in committed.keys() | now.keys()
            if committed.get(k) != now.get(k)}


def assert_zero_copy_with_every_cpu_framework(framework: str, live: dict) -> None:
    """Every CPU pair to and from ``framework`` in a fresh table is zero-copy, as planned."""
    from interop.cli import table

    pairs = {(c["source"], c["target"]): c for c in live["pairs"]}
    for other in table.CPU:
        for key in ((framework, other), (other, framework)):
            assert pairs[key]["status"] == table.ZERO_COPY, pairs[key]
            assert pairs[key]["plan_agrees"], pairs[key]


def doctor_pitfalls(framework: str) -> tuple[dict, dict]:
    """``doctor --json``: (frameworks by name, this framework's pitfalls by id), each pitfall
    probed (present or absent) and handled by interop."""
    d = run_cli_json("doctor")
    pits = {p["id"]: p for p in d["pitfalls"] if p["framework"] == framework}
    for p in pits.values():
        assert p["state"] in ("present", "absent"), p
        assert p["interop"].startswith(("guarded", "avoided", "reported")), p
    return {f["name"]: f for f in d["frameworks"]}, pits


def check_narrowed(make: Any, want: np.ndarray, narrow: np.dtype, target: str = "jax") -> None:
    """A source the target narrows (JAX with 64-bit types off): the plan shows one copy and
    why; copy=None and copy=True give the narrowed values with exactly one NarrowingWarning;
    copy=False raises ZeroCopyError with the reason. ``make()`` gives a fresh source value."""
    import warnings

    import pytest

    import interop

    plan = interop.explain(make(), target)
    assert plan.supported and not plan.zero_copy, plan
    assert any("jax_enable_x64" in r for r in plan.reasons), plan
    assert any(s.copies and f"cast to {narrow.name}" in s.via for s in plan.steps), plan
    for copy in (None, True):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            out = interop.to_framework(make(), target, copy=copy)
        told = [w for w in got if issubclass(w.category, interop.NarrowingWarning)]
        assert len(told) == 1 and want.dtype.name in str(told[0].message), told
        assert out.dtype == narrow
        np.testing.assert_array_equal(np.asarray(out), want.astype(narrow))
    with pytest.raises(interop.ZeroCopyError, match="jax_enable_x64"):
        interop.to_framework(make(), target, copy=False)


def run_child(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter (faulthandler on): a crash or abort there fails the
    calling test instead of killing pytest."""
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout)


def assert_same_array(got: np.ndarray, want: np.ndarray) -> None:
    """``got`` has ``want``'s shape, dtype and values."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


class DLPackOnly:
    """A producer with only ``__dlpack__`` and ``__dlpack_device__`` (over its array ``a``):
    no framework of its own, so only the DLPack protocol reads it."""

    def __init__(self, a: Any) -> None:
        self.a = a

    def __dlpack__(self, **kw: Any) -> Any:
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.a.__dlpack_device__()


# ---- nodes of structures the pytree registries know (issue 51) --------------------------------

class KeyedNode:
    """A node registered with optree's global registry: its children by keys, the keys in
    its metadata and entries (as optree keeps a ``defaultdict``'s)."""

    def __init__(self, items: dict) -> None:
        self.items = items


class JaxKeyed:
    """A node registered with JAX's registry with keys (``DictKey``: its paths name them)."""

    def __init__(self, items: dict) -> None:
        self.items = items


class Noisy:
    """A node registered with JAX's registry whose ``repr`` warns (a ``RuntimeWarning``, as
    pandas' repr of a float16 Series does) or raises, counting its calls: planning must
    never format it."""

    calls = 0

    def __init__(self, *children: Any, raises: bool = False) -> None:
        self.children, self.raises = children, raises

    def __repr__(self) -> str:
        Noisy.calls += 1
        if self.raises:
            raise RuntimeError("repr ran")
        import warnings

        warnings.warn("repr ran", RuntimeWarning, stacklevel=2)
        return "Noisy"


class NoisyLeaf(Noisy):
    """A :class:`Noisy` no registry knows: a leaf, kept as it is."""


_REGISTERED: list = []


def register_nodes() -> None:
    """Register :class:`KeyedNode` with optree and :class:`JaxKeyed` and :class:`Noisy` with
    JAX (once per process)."""
    if _REGISTERED:
        return
    import jax
    import optree

    tu = jax.tree_util
    optree.register_pytree_node(
        KeyedNode, lambda n: (list(n.items.values()), tuple(n.items), tuple(n.items)),
        lambda keys, children: KeyedNode(dict(zip(keys, children))),
        namespace=vars(optree.registry)["__GLOBAL_NAMESPACE"])
    tu.register_pytree_with_keys(
        JaxKeyed, lambda n: ([(tu.DictKey(k), v) for k, v in n.items.items()], tuple(n.items)),
        lambda keys, children: JaxKeyed(dict(zip(keys, children))),
        lambda n: (list(n.items.values()), tuple(n.items)))
    tu.register_pytree_node(Noisy, lambda b: (list(b.children), b.raises),
                            lambda raises, ch: Noisy(*ch, raises=raises))
    _REGISTERED.append(True)


def torch_leaf(kind: str, i: int = 0) -> Any:
    """A structure's leaf of ``kind`` (``"plain"``: a float32 tensor; the odd ones a wide node
    hides among plain ones: requires grad, conj, neg, meta, bfloat16, strided, sparse ...),
    made with torch's own warnings about it silenced."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "plain": lambda: torch.arange(4, dtype=torch.float32) + i,
            "grad": lambda: torch.ones(3, requires_grad=True),
            "conj": lambda: torch.tensor([1 + 2j, 3 - 1j]).conj(),
            "neg": lambda: torch.tensor([1 + 2j, 3 - 1j]).conj().imag,
            "meta": lambda: torch.empty(3, device="meta"),
            "bfloat16": lambda: torch.arange(3, dtype=torch.bfloat16),
            "strided": lambda: torch.arange(12.0).reshape(3, 4).t(),
            "sparse": lambda: torch.eye(3).to_sparse(),
            "float64": lambda: torch.arange(3, dtype=torch.float64),
            "int64": lambda: torch.arange(3),
            "complex32": lambda: torch.ones(2, dtype=torch.complex32),
            "empty": lambda: torch.ones(0),
            "parameter": lambda: torch.nn.Parameter(torch.ones(2)),
            "numpy": lambda: np.arange(3, dtype=np.float32),
            "none": lambda: None,
        }[kind]()


def outcome(call: Any) -> tuple[Any, Any, list[Any]]:
    """``(result, error, warnings)`` of ``call()``: its result (``None`` where it raised), the
    exception it raised (``None``: none) and every warning it gave."""
    import warnings

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        try:
            out, err = call(), None
        except Exception as e:  # noqa: BLE001 - compared by the caller
            out, err = None, e
    return out, err, list(got)
