"""The committed conversion_table.md matches a fresh probe of this machine (CPU cells)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interop.cli import table

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("torch")
pytest.importorskip("jax")
pytest.importorskip("pyarrow")


# TensorFlow and PaddlePaddle are probed by their own suites (tests/optional/test_tensorflow.py and
# tests/optional/test_paddle.py, in their own processes): this run never imports them.
CORE = [n for n in table.CPU if n not in table.OPTIONAL]
HERE = [n for n in CORE if table.package_installed(n)]  # a GPU host may lack some (polars)
CPU_SECTIONS = ("Every pair", "Layouts and dtypes")


@pytest.fixture(scope="module")
def fresh() -> dict:
    return table.build(skip=table.OPTIONAL)


def probed_with(md: str) -> dict[str, str]:
    """The versions a rendered table names on its first "Probed with:" line."""
    line = next(x for x in md.splitlines() if x.startswith("- Probed with: "))
    return dict(v.rsplit(" ", 1) for v in line[len("- Probed with: "):].rstrip(".").split(", "))


def _cpu_cells(md: str, fresh: dict) -> dict:
    """The CPU cells of ``md`` this machine can check: not TensorFlow's or paddle's (their
    own suites check those), and only where every framework of the cell is installed here at
    the version the committed table names (a GPU host has other versions, and no polars)."""
    named = probed_with((ROOT / "conversion_table.md").read_text())
    here = fresh["versions"]

    def checkable(k) -> bool:
        fws = table.frameworks_of(*k)
        return not fws & set(table.OPTIONAL) and all(
            here.get(f) is not None and here.get(f) == named.get(f) for f in fws)

    return {k: v for k, v in table.parse_markdown(md).items()
            if k[0] in CPU_SECTIONS and checkable(k)}


def test_committed_table_matches_a_fresh_probe(fresh):
    committed = _cpu_cells((ROOT / "conversion_table.md").read_text(), fresh)
    now = _cpu_cells(table.markdown(fresh), fresh)
    if not committed:
        pytest.skip("no CPU cell of conversion_table.md involves only frameworks installed "
                    f"here at the versions it names ({probed_with(table.markdown(fresh))})")
    changed = {k: (committed.get(k), now.get(k)) for k in committed.keys() | now.keys()
               if committed.get(k) != now.get(k)}
    assert not changed, (
        "conversion_table.md is stale; regenerate it with "
        f"`{table.REGENERATE}`. Changed cells "
        "(section, source, target): (committed, fresh):\n"
        + "\n".join(f"  {k}: {v}" for k, v in sorted(changed.items())))


def test_every_cpu_pair_is_probed(fresh):
    cells = {(c["source"], c["target"]): c for c in fresh["pairs"]}
    for s in HERE:
        for t in HERE:
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
    for s in HERE:
        for t in HERE:
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
        cpu = c["source"] in HERE + list(table.OPTIONAL) and c["target"] in HERE + list(
            table.OPTIONAL)
        if cpu and {c["source"], c["target"]} & set(table.OPTIONAL):
            assert c["status"] == table.NOT_PROBED and "skipped" in c["reason"], c


def test_retired_frameworks_have_a_row_and_a_column_saying_why(fresh):
    md = table.markdown(fresh)
    cells = table.parse_markdown(md)
    why = "not supported (MXNet is retired upstream (Apache attic, 2023) and needs NumPy < 2)"
    for name in table.host_side(fresh["targets"]):
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
    assert not {k for k in cells if k[0] == "Every pair" and {k[1], k[2]} & set(table.GPU)}
    assert table.GPU_HEADING in md
    assert "[^" not in "".join(cells.values())


# ---- the GPU section: its cells come only from a device run ---------------------------------
DEVICE = {"name": "Stand-in GPU", "count": 1, "driver": "1.2.3", "cuda_driver": "13.0",
          "cuda_runtime": "13.0"}


def _device_run(fresh: dict) -> dict:
    """A record as a device run writes it, from this machine's probe with the GPU cells
    replaced by stand-in outcomes (this test checks the rendering, not a GPU)."""
    data = json.loads(json.dumps(fresh))
    for i, c in enumerate(c for c in data["pairs"] if table.is_gpu_pair(c)):
        c.update(status=table.ZERO_COPY, reason=None) if i % 2 else c.update(
            status=table.COPY, reason=f"reason {i % 3}")
    return table.gpu_record(data, DEVICE, "2026-11-24")


def test_gpu_section_renders_every_cell_of_a_device_run(fresh):
    record = _device_run(fresh)
    assert record["pairs"] and all(table.is_gpu_pair(c) for c in record["pairs"])
    md = table.markdown(fresh, record)
    assert "Verified on GPU: probed on Stand-in GPU (NVIDIA driver 1.2.3, CUDA 13.0) on " \
           "2026-11-24" in md
    cells = table.parse_markdown(md)
    gpu = {(c["source"], c["target"]): c for c in record["pairs"]}
    seen = {(k[1], k[2]): v for k, v in cells.items()
            if k[0] in ("GPU sources", "Into GPU targets")}
    assert seen.keys() == gpu.keys()
    for key, text in seen.items():
        c = gpu[key]
        assert text == c["status"] + (f" ({c['reason']})" if c["reason"] else ""), (key, text)
    # the CPU part is the same with or without a device run
    assert _cpu_cells(md, fresh) == _cpu_cells(table.markdown(fresh), fresh)


def test_the_gpu_section_is_replaced_not_appended(fresh):
    record = _device_run(fresh)
    none = table.markdown(fresh)
    with_run = table.with_gpu_section(none, record)
    assert with_run == table.markdown(fresh, record)
    assert table.with_gpu_section(with_run, None) == none
    assert with_run.count(table.GPU_HEADING) == 1


def test_committed_gpu_section_comes_from_the_recorded_device_run():
    """The committed section is the rendering of docs/gpu-cells.json (written on a CUDA
    machine by ``--save-gpu``), or says no device run is recorded: never typed by hand."""
    md = (ROOT / "conversion_table.md").read_text()
    record = table.load_gpu_record(str(ROOT / table.GPU_CELLS))
    assert md.count(table.GPU_HEADING) == 1
    assert md[md.index(table.GPU_HEADING):] == table.gpu_markdown(record)
    if record is None:
        assert "No device run is recorded" in md


@pytest.mark.gpu
def test_gpu_cells_match_the_recorded_device_run():
    """On a CUDA machine: this machine's GPU cells agree with the recorded run, for the
    frameworks installed here at the versions the record names."""
    record = table.load_gpu_record(str(ROOT / table.GPU_CELLS))
    if record is None:
        pytest.skip(f"no device run is recorded in {table.GPU_CELLS}: "
                    "./scripts/gpu-check.sh records one")
    fresh = table.build(skip=table.OPTIONAL)
    here = fresh["versions"]
    now = {(c["source"], c["target"]): c for c in fresh["pairs"] if table.is_gpu_pair(c)}
    compared = 0
    for c in record["pairs"]:
        fws = table.frameworks_of("", c["source"], c["target"])
        if fws & set(table.OPTIONAL) or any(
                here.get(f) is None or here.get(f) != record["versions"].get(f) for f in fws):
            continue
        got = now[(c["source"], c["target"])]
        assert (got["status"], got["reason"]) == (c["status"], c["reason"]), (c, got)
        compared += 1
    if not compared:
        pytest.skip("no recorded GPU cell involves only frameworks installed here at the "
                    "recorded versions")


def test_cli_renders_a_recorded_run_and_records_only_on_a_device(fresh, monkeypatch, tmp_path,
                                                                 capsys):
    """``--gpu-cells`` renders a recorded run where there is no device; ``--save-gpu`` needs
    one (stand-ins for the probe and the device: the flags are under test, not the GPU)."""
    import datetime

    monkeypatch.setattr(table, "build", lambda gpu, skip: fresh)
    monkeypatch.setattr(table, "cuda_devices", lambda: (0, "no CUDA device (stand-in)"))
    record = _device_run(fresh)
    cells = tmp_path / "cells.json"
    cells.write_text(json.dumps(record))
    assert table.main(["--markdown", "--gpu-cells", str(cells)]) == 0
    assert capsys.readouterr().out == table.markdown(fresh, record)
    with pytest.raises(SystemExit) as e:
        table.main(["--save-gpu", str(tmp_path / "new.json")])
    assert e.value.code == 2 and "--save-gpu needs a CUDA device: no CUDA device (stand-in)" in (
        capsys.readouterr().err)
    assert not (tmp_path / "new.json").exists()
    monkeypatch.setattr(table, "cuda_devices", lambda: (1, "1 CUDA device(s)"))
    monkeypatch.setattr(table, "device_info", lambda: DEVICE)
    assert table.main(["--save-gpu", str(tmp_path / "new.json")]) == 0
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    assert json.loads((tmp_path / "new.json").read_text()) == json.loads(
        json.dumps(table.gpu_record(fresh, DEVICE, today)))


def test_every_note_is_referenced_and_every_reference_defined(fresh):
    """Cells left out of a grid (GPU pairs of the CPU grid) leave no orphan note behind."""
    import re

    for md in (table.markdown(fresh), table.markdown(fresh, _device_run(fresh))):
        defined = set(re.findall(r"^\[\^(g?\d+)\]:", md, flags=re.M))
        used = set(re.findall(r"\[\^(g?\d+)\](?!:)", md))
        assert defined == used, (defined ^ used)
