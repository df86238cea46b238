"""The committed conversion_table.md matches a fresh probe of this machine (CPU cells)."""

from __future__ import annotations

from pathlib import Path

import pytest

from interop.cli import table

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("pyarrow")


# TensorFlow and PaddlePaddle are probed by their own suites (tests/test_tensorflow.py and
# tests/test_paddle.py, in their own processes): this run never imports them.
CORE = [n for n in table.CPU if n not in table.OPTIONAL]


@pytest.fixture(scope="module")
def fresh() -> dict:
    return table.build(skip=table.OPTIONAL)


def _cpu_cells(md: str) -> dict:
    gpu = set(table.GPU)
    return {k: v for k, v in table.parse_markdown(md).items()
            if k[1] not in gpu and k[2] not in gpu
            and not table.frameworks_of(*k) & set(table.OPTIONAL)}


def test_committed_table_matches_a_fresh_probe(fresh):
    committed = _cpu_cells((ROOT / "conversion_table.md").read_text())
    now = _cpu_cells(table.markdown(fresh))
    assert committed, "conversion_table.md has no cells: regenerate it"
    changed = {k: (committed.get(k), now.get(k)) for k in committed.keys() | now.keys()
               if committed.get(k) != now.get(k)}
    assert not changed, (
        "conversion_table.md is stale; regenerate it with "
        "`python -m interop table --markdown > conversion_table.md`. Changed cells "
        "(section, source, target): (committed, fresh):\n"
        + "\n".join(f"  {k}: {v}" for k, v in sorted(changed.items())))


def test_every_cpu_pair_is_probed(fresh):
    cells = {(c["source"], c["target"]): c for c in fresh["pairs"]}
    for s in CORE:
        for t in CORE:
            c = cells[(s, t)]
            assert c["status"] in (table.ZERO_COPY, table.COPY, table.UNSUPPORTED), c
            if c["status"] != table.ZERO_COPY:
                assert c["reason"], c


def test_every_zero_copy_cell_is_proved_by_a_write(fresh):
    """A zero-copy cell names its proof: overlapping bytes by the frameworks' accessors and a
    write read back on the other side (or the same object handed back)."""
    for c in fresh["pairs"] + fresh["layouts"]:
        if c["status"] == table.ZERO_COPY:
            assert c["proof"], c
            assert c["proof"] != "the same object" or c["source"] == c["target"], c
        else:
            assert c["proof"] is None, c


def test_the_probe_is_not_fooled_by_a_copy(monkeypatch):
    """A conversion that copies where the plan promised a view is a copy in the table, and a
    disagreement with the plan."""
    import interop

    real = interop.to_framework
    monkeypatch.setattr(interop, "to_framework", lambda x, t, **kw: real(x, t, copy=True))
    for s, t in (("numpy", "torch"), ("jax", "numpy"), ("pyarrow", "polars"),
                 ("torch", "dlpack")):
        c = table.probe(s, t, lambda s=s: table.make_sample(s))
        assert c["status"] == table.COPY and not c["plan_agrees"], c


def test_the_probe_needs_the_write_to_be_seen(monkeypatch):
    """Overlapping pointers alone do not make a zero-copy cell: the write must be seen."""
    from interop.cli import memory

    monkeypatch.setattr(memory, "write_proof", lambda origin, result: None)
    c = table.probe("numpy", "torch", lambda: table.make_sample("numpy"))
    assert c["status"] == table.COPY and c["reason"] == table.NOT_SEEN, c
    assert not c["plan_agrees"]


@pytest.mark.parametrize("name", [*CORE, "dlpack-result"])
def test_the_cli_reader_agrees_with_the_tests_oracle(name):
    """Two independent readers of each framework's accessors (the CLI's, the tests') agree on
    every probe sample: the first element's address and the extent."""
    import numpy as np

    import oracles
    from interop.cli import memory

    value = (np.arange(8, dtype=np.float32).__dlpack__() if name == "dlpack-result"
             else table.make_sample(name)[0])
    ((device, ptr, *_),) = memory.layouts(value)
    assert (device, ptr) == ("cpu", oracles.pointer(value))
    assert memory._span(memory.layouts(value)[0])[1:] == oracles.extent(value)


def test_plans_agree_with_the_probes(fresh):
    disagree = [c for c in fresh["pairs"] + fresh["layouts"] if not c["plan_agrees"]]
    assert not disagree


def test_aligned_float32_is_zero_copy_between_cpu_frameworks(fresh):
    cells = {(c["source"], c["target"]): c["status"] for c in fresh["pairs"]}
    for s in CORE:
        for t in CORE:
            assert cells[(s, t)] == table.ZERO_COPY, (s, t)


def test_known_copies_and_refusals_are_reported(fresh):
    cells = {(c["label"], c["target"]): c for c in fresh["layouts"]}
    neg = cells[("numpy negative strides [::-1]", "torch")]
    assert neg["status"] == table.COPY and "negative strides" in neg["reason"]
    mis = cells[("numpy misaligned (+4 bytes)", "jax")]
    assert mis["status"] == table.COPY and "64-byte aligned" in mis["reason"]
    assert "0x..." in mis["reason"]  # no run-specific addresses in the table
    nulls = cells[("pyarrow with nulls", "numpy")]
    assert nulls["status"] == table.UNSUPPORTED and "nulls" in nulls["reason"]


def test_skipped_frameworks_are_not_probed_and_not_imported(fresh):
    import sys

    assert not {"tensorflow", "paddle"} & set(sys.modules)
    for c in fresh["pairs"]:
        cpu = c["source"] in table.CPU and c["target"] in table.CPU
        if cpu and {c["source"], c["target"]} & set(table.OPTIONAL):
            assert c["status"] == table.NOT_PROBED and "skipped" in c["reason"], c


def test_retired_frameworks_have_a_row_and_a_column_saying_why(fresh):
    md = table.markdown(fresh)
    cells = table.parse_markdown(md)
    why = "not supported (MXNet is retired upstream (Apache attic, 2023) and needs NumPy < 2)"
    for name in fresh["targets"]:
        assert cells[("Every pair", "mxnet", name)] == why
        assert cells[("Every pair", name, "mxnet")] == why


def test_gpu_cells_say_not_probed_without_a_device():
    data = table.build(gpu=(0, "no CUDA device"), skip=table.OPTIONAL)
    gpu = [c for c in data["pairs"] if (c["source"] in table.GPU or c["target"] in table.GPU)
           and not {c["source"], c["target"]} & set(table.RETIRED)]
    assert gpu and all(c["status"] == table.NOT_PROBED for c in gpu)
    assert all("no CUDA device" in c["reason"] for c in gpu)


def test_markdown_round_trips_through_the_parser(fresh):
    md = table.markdown(fresh)
    cells = table.parse_markdown(md)
    assert cells[("Every pair", "numpy", "torch")] == "zero-copy"
    assert cells[("Every pair", "cupy", "numpy")].startswith("not probed (")
    assert "[^" not in "".join(cells.values())
