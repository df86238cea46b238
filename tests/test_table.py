"""The committed conversion_table.md matches a fresh probe of this machine (CPU cells)."""

from __future__ import annotations

from pathlib import Path

import pytest

from interop.cli import table

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def fresh() -> dict:
    return table.build()


def _cpu_cells(md: str) -> dict:
    gpu = set(table.GPU)
    return {k: v for k, v in table.parse_markdown(md).items()
            if k[1] not in gpu and k[2] not in gpu}


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
    for s in table.CPU:
        for t in table.CPU:
            c = cells[(s, t)]
            assert c["status"] in (table.ZERO_COPY, table.COPY, table.UNSUPPORTED), c
            if c["status"] != table.ZERO_COPY:
                assert c["reason"], c


def test_plans_agree_with_the_probes(fresh):
    disagree = [c for c in fresh["pairs"] + fresh["layouts"] if not c["plan_agrees"]]
    assert not disagree


def test_aligned_float32_is_zero_copy_between_cpu_frameworks(fresh):
    cells = {(c["source"], c["target"]): c["status"] for c in fresh["pairs"]}
    for s in table.CPU:
        for t in table.CPU:
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


def test_gpu_cells_say_not_probed_without_a_device():
    data = table.build(gpu=(0, "no CUDA device"))
    gpu = [c for c in data["pairs"] if c["source"] in table.GPU or c["target"] in table.GPU]
    assert gpu and all(c["status"] == table.NOT_PROBED for c in gpu)
    assert all("no CUDA device" in c["reason"] for c in gpu)


def test_markdown_round_trips_through_the_parser(fresh):
    md = table.markdown(fresh)
    cells = table.parse_markdown(md)
    assert cells[("Every pair", "numpy", "torch")] == "zero-copy"
    assert cells[("Every pair", "cupy", "numpy")].startswith("not probed (")
    assert "[^" not in "".join(cells.values())
