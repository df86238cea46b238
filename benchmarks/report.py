"""Write the results: ``<machine>.json``, a markdown summary ``<machine>.md`` and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from interop.transpose import cpu as _transpose

from . import fmt_bytes
from .aos_soa import BAR_FIRST_MS, BAR_MIXED, BAR_OUT

OVERHEAD_BAR_US = 0.3
"""Issue 31's bar: every CPU pair's median dispatch overhead (paired) within this of its
native call's."""


def gpu_host_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The dispatch table's GPU-host rows: host values where the frameworks see a GPU."""
    if not rows:
        return []
    from .dispatch import GPU_HOST_BAR_US, GPU_SEEN

    out = ["", "Host values on a GPU host: the same calls on a registry whose "
           f"{' and '.join(GPU_SEEN)} adapters say `gpu_present()` (patched: their values "
           "may then live on the host or a GPU, so the plan is chosen per value), against "
           "one that sees no GPU and the native call, interleaved (paired medians, us).", "",
           "| pair | native us | overhead, CPU host | overhead, GPU host | GPU host - CPU "
           f"host [q1-q3] | <= {GPU_HOST_BAR_US} us |", "|---|---|---|---|---|---|"]
    for r in rows:
        g = r["gpu_over_cpu_us"]
        out.append(f"| {r['pair']} | {r['native_us']['median']:.2f} | "
                   f"{r['cpu_host_overhead_us']['median']:+.2f} | "
                   f"{r['gpu_host_overhead_us']['median']:+.2f} | "
                   f"{g['median']:+.2f} [{g['q1']:+.2f}-{g['q3']:+.2f}] | "
                   f"{'PASS' if g['median'] <= GPU_HOST_BAR_US else 'FAIL'} |")
    return out


def dispatch_bar(d: dict[str, Any]) -> dict[str, Any]:
    """The dispatch bar: the worst pair, then every pair over the bar and every pair within it,
    by paired median (the difference of the medians and the single passes beside it)."""
    rows = [p for p in d["pairs"] if "overhead_us" in p]
    paired = {p["pair"]: p["overhead_paired_us"]["median"] for p in rows}
    ranked = sorted(paired, key=paired.__getitem__, reverse=True)
    failing = [p for p in ranked if paired[p] > OVERHEAD_BAR_US]
    passing = [p for p in ranked if paired[p] <= OVERHEAD_BAR_US]
    failing_m = [p["pair"] for p in rows if p["overhead_us"] > OVERHEAD_BAR_US]
    per_pass = [v for p in rows for v in p.get("overhead_paired_per_pass_us", ())]
    over_pass = sum(v > OVERHEAD_BAR_US for v in per_pass)
    value = "n/a"
    if ranked:
        worst = ranked[0]
        value = (f"paired: worst {worst} {paired[worst]:+.2f} us; {len(failing)}/{len(rows)} "
                 "pairs over: " + (", ".join(f"{p} {paired[p]:+.2f}" for p in failing) or "none")
                 + "; within: " + (", ".join(f"{p} {paired[p]:+.2f}" for p in passing) or "none")
                 + f" (difference of the medians: {len(failing_m)}/{len(rows)} over; "
                 f"{over_pass}/{len(per_pass)} single-pass medians over)")
    return {"bar": f"median dispatch overhead <= {OVERHEAD_BAR_US} us over native, every CPU pair",
            "value": value, "pass": bool(rows) and not failing,
            "failing": failing, "passing": passing, "worst": ranked[0] if ranked else None}


def bars(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each bar of issue 6 with its measured value and pass/fail (``None``: not measured)."""
    out = []
    d = results.get("dispatch")
    if d and "pairs" in d:
        out.append(dispatch_bar(d))
    s = results.get("sizes")
    if s and "flat_bar" in s:
        fb = s["flat_bar"]
        ratios = ", ".join(f"{k} {v:.3f}" for k, v in fb["ratios"].items())
        out.append({"bar": f"{fmt_bytes(fb['largest'])} within 10% of {fmt_bytes(fb['smallest'])}",
                    "value": ratios + " (median of the per-round ratios)"
                    + ("" if fb["full_range"] else " (quick: not up to 1 GiB)"),
                    "pass": fb["pass"]})
    st = results.get("structures")
    if st and "weights" in st:
        w = st["weights"]
        out.append({"bar": f"1,000-leaf state_dict within {st['bars']['leaves_ratio']}x of the "
                           "native loop (NumPy, JAX)",
                    "value": "; ".join(f"{t} x{v['ratio']:.2f} (ratio of the medians "
                                       f"x{v['ratio_of_medians']:.2f}; nested "
                                       f"x{v['ratio_nested']:.2f}; "
                                       f"the leaves' own to_framework calls x"
                                       f"{v['leaves_ratio']:.2f})" for t, v in w.items()),
                    "pass": all(v["pass"] for v in w.values())})
        b = st["batch"]
        out.append({"bar": f"3-leaf batch within {st['bars']['batch_us']} us of its leaves' own "
                           "conversions",
                    "value": "; ".join(f"{t} {v['over_leaves_us']:+.2f} us "
                                       f"({v['over_native_us']:+.2f} us over native)"
                                       for t, v in b.items()),
                    "pass": all(v["pass"] for v in b.values())})
    c = results.get("composite")
    if c and "rows" in c:
        rows = c["rows"]
        out.append({"bar": "composite values within their bars of the hand-written route ("
                           + ", ".join(f"{k} {v['bar']}x" for k, v in rows.items()) + ")",
                    "value": "; ".join(f"{k} x{v['ratio']:.2f}" for k, v in rows.items())
                    + " (ratio of the best samples)",
                    "pass": all(v["pass"] for v in rows.values())})
    a = results.get("aos_soa")
    if a and "bar" in a:
        b = a["bar"]
        out.append({"bar": f"AoS<->SoA into out= (8 float32 fields) >= {BAR_OUT} of memcpy both "
                           f"ways; 100 mixed fields into fresh columns >= {BAR_MIXED} of a fresh "
                           "memcpy",
                    "value": f"AoS->SoA {b['aos_to_soa_out']:.2f}, SoA->AoS "
                             f"{b['soa_to_aos_out']:.2f}, mixed {b['mixed_fresh']:.2f} "
                             f"({a['kernel']['name']} kernel)",
                    "pass": b["pass"]})
        f = a["first_call"]
        out.append({"bar": "first large transpose in a fresh process <= import of the kernel's "
                           f"library (llvmlite) + {BAR_FIRST_MS:.0f} ms over steady state",
                    "value": f"{f['first_ms']:.0f} ms first vs {f['steady_ms']:.0f} ms steady "
                             f"+ {f['import_llvmlite_ms']:.0f} ms import llvmlite: "
                             f"{f['first_over_steady_minus_import_ms']:+.0f} ms",
                    "pass": f["pass"]})
    i = results.get("import_time")
    if i and "bar" in i:
        reg = i["import_and_registry_ms"]["median"]
        out.append({"bar": "import interop < 50 ms, no framework imported",
                    "value": f"{i['import_ms']['median']:.1f} ms "
                             f"(+ registry on first use: {reg:.1f} ms); "
                             f"frameworks imported: {i['frameworks_imported'] or 'none'}",
                    "pass": i["bar"]["pass"]})
    f = (i or {}).get("first_call")
    if f and "bar" in f:
        worst = max(f["pairs"].items(), key=lambda kv: kv[1]["over_native_ms"])
        out.append({"bar": f["bar"]["bar"],
                    "value": f"worst {worst[0]} +{worst[1]['over_native_ms']:.1f} ms "
                             f"({worst[1]['interop_ms']:.1f} vs {worst[1]['native_ms']:.2f} ms)",
                    "pass": f["bar"]["pass"]})
    return out


def aos_markdown(a: dict[str, Any]) -> list[str]:
    """Section 4: AoS <-> SoA against memcpy and the anchors, mixed records, sweeps, first call."""
    lines = ["", f"## 4. AoS <-> SoA ({fmt_bytes(a['nbytes'])}, {a['rows']} rows x "
             f"{a['columns']} {a['dtype']} fields)", "", a["note"] + ".",
             f" Other processes kept {a['other_load_cores']} cores busy during the timing.", "",
             "| contender | median ms | GB/s | compared with | ratio |", "|---|---|---|---|---|"]
    for k, v in a["gb_per_s"].items():
        base = a["compared_with"].get(k, "")
        r = f"{a['ratio_to_memcpy'][k]:.2f}" if base else ""
        lines.append(f"| {k} | {a['median_ms'][k]:.2f} | {v:.2f} | {base} | {r} |")
    fa, ra = a["fastest_anchor"], a["ratio_to_fastest_anchor"]
    lines += ["", f"Against the fastest anchor (fresh output both): AoS->SoA "
              f"x{ra['aos_to_soa']:.2f} of `{fa['aos_to_soa']}`, SoA->AoS x{ra['soa_to_aos']:.2f} "
              f"of `{fa['soa_to_aos']}` (above 1: interop is faster)."]
    m = a["mixed"]
    lines += ["", f"Mixed records: {m['fields']} fields (float64 ... bool, aligned: "
              f"{m['itemsize']} bytes a record, {m['field_bytes']} of them data), "
              f"{m['rows']} rows, into fresh columns ({m['kernel']['name']} kernel):", "",
              "| contender | median ms | GB/s | ratio to memcpy_fresh |", "|---|---|---|---|"]
    for k, v in m["gb_per_s"].items():
        r = v / m["gb_per_s"]["memcpy_fresh"]
        lines.append(f"| {k} | {m['median_ms'][k]:.2f} | {v:.2f} | {r:.2f} |")
    lines += ["", f"Fastest anchor: `{m['fastest_anchor']}`, interop x"
              f"{m['ratio_to_fastest_anchor']:.2f} of it."]
    for key in ("rows", "fields"):
        pts = a["sweeps"][key]
        lines += ["", f"Sweep over {key} (AoS->SoA into out=, float32; ms, medians):", "",
                  "| rows | fields | bytes | kernel picked | interop | NumPy kernel | memcpy | "
                  "ratio to memcpy |", "|---|---|---|---|---|---|---|---|"]
        for p in pts:
            t = p["median_ms"]
            lines.append(f"| {p['rows']} | {p['fields']} | {fmt_bytes(p['nbytes'])} | "
                         f"{p['kernel']} | {t['kernel']:.3f} | {t['numpy']:.3f} | "
                         f"{t['memcpy']:.3f} | {t['memcpy'] / t['kernel']:.2f} |")
    gpu = a.get("gpu", {})
    if gpu.get("skipped"):
        lines += ["", f"GPU (CuPy RawKernel): skipped: {gpu['reason']}."]
    elif gpu:
        r = gpu["ratio_to_d2d"]
        lines += ["", f"GPU (CuPy RawKernel, into out=): AoS->SoA {r['aos_to_soa_out']:.2f}, "
                  f"SoA->AoS {r['soa_to_aos_out']:.2f} of a device-to-device copy "
                  f"({gpu['gb_per_s']['d2d_copy']:.0f} GB/s); values correct: {gpu['correct']}."]
    f = a["first_call"]
    lines += ["", f"First call (medians of {f['runs']} fresh interpreters, compiled code in "
              f"the on-disk cache): `import llvmlite.binding` {f['import_llvmlite_ms']:.0f} ms; "
              "the first "
              f"{fmt_bytes(f['nbytes'])} transpose {f['first_ms']:.0f} ms against "
              f"{f['steady_ms']:.0f} ms steady state: "
              f"{f['first_over_steady_minus_import_ms']:+.0f} ms beyond the import."]
    return lines


def nested_markdown(n: dict[str, Any] | None) -> list[str]:
    """The nested section (``benchmarks/nested.py``): list and tensor columns to torch."""
    if not n or "embeddings" not in n:
        return []
    e, r, small = n["embeddings"], n["ragged"], n["python_baseline_rows"]

    def ms(x: dict[str, Any]) -> str:
        return f"{x['median_s'] * 1e3:.3f}"

    base = e["interop_to_framework"]["median_s"]
    lines = ["", f"## 3c. Nested columns: {n['rows']:,} x {n['dim']} float32 embeddings, "
             f"{n['rows']:,} ragged token rows (lengths 1-512) to torch", "",
             f"Medians; the Python baselines ran on the first {small:,} rows (a Python object "
             "per element: the full size would take minutes and gigabytes), scaled linearly "
             f"to {n['rows']:,} rows in the last column. Zero-copy: embeddings "
             f"{e['zero_copy']}, tokens {r['zero_copy']}.", "",
             "| embeddings to an (n, d) tensor | ms | x interop | at full size, s |",
             "|---|---|---|---|"]
    for label, key in (("interop.to_framework(table, 'torch')", "interop_to_framework"),
                       ("FixedShapeTensorArray.to_numpy_ndarray() + torch.from_numpy",
                        "arrow_tensor_to_numpy_ndarray"),
                       ("to_numpy(zero_copy_only=False) + np.stack", "to_numpy_then_np_stack")):
        lines.append(f"| `{label}` | {ms(e[key])} | x{e[key]['median_s'] / base:,.1f} | |")
    p = e["np_stack_to_pylist_small"]
    lines.append(f"| `np.stack(column.to_pylist())`, {small:,} rows | {ms(p)} | "
                 f"x{p['median_s'] / base:,.0f} | {e['np_stack_to_pylist_estimated_full_s']:.1f} |")
    lines.append(f"| HuggingFace `with_format('torch')` | "
                 f"{e.get('huggingface', 'see JSON')} | | |")
    rb = r["interop_jagged"]["median_s"]
    lines += ["", "| tokens to torch | ms | x interop | at full size, s |", "|---|---|---|---|",
              f"| `interop.to_framework(column, 'torch')` (jagged nested tensor) | "
              f"{ms(r['interop_jagged'])} | x1.0 | |",
              f"| `torch.nested.nested_tensor_from_jagged(values, offsets)` (native, same "
              f"buffers) | {ms(r['native_nested_tensor_from_jagged'])} | "
              f"x{r['native_nested_tensor_from_jagged']['median_s'] / rb:.2f} | |",
              f"| `pad_sequence([torch.tensor(r) for r in to_pylist()])`, {small:,} rows | "
              f"{ms(r['python_pad_small'])} | x{r['python_pad_small']['median_s'] / rb:,.0f} | "
              f"{r['python_pad_estimated_full_s']:.1f} |",
              f"| `interop.to_framework(column, 'torch', ragged='pad')`, {small:,} rows | "
              f"{ms(r['interop_pad_small'])} | x{r['interop_pad_small']['median_s'] / rb:,.0f} "
              "| |", "",
              "interop's hand-over by rows (us, median of 201 calls; each size its own array; "
              "embeddings of 128 float32):", "",
              "| rows | " + " | ".join(f"{p['rows']:,}" for p in n["scaling"]["embeddings_us"])
              + " | largest / smallest |",
              "|---" * (len(n["scaling"]["embeddings_us"]) + 2) + "|"]
    for kind, label in (("embeddings_us", "fixed_size_list -> tensor"),
                        ("ragged_us", "list -> jagged tensor")):
        lines.append(f"| {label} | " + " | ".join(f"{p['median_us']:.1f}"
                                                  for p in n["scaling"][kind])
                     + f" | x{n['largest_over_smallest'][kind]:.2f} |")
    return lines


def sparse_markdown(sp: dict[str, Any]) -> list[str]:
    """Section 3d: a SciPy CSR matrix to torch and JAX, against the hand-written routes."""
    fmt = lambda n: f"{n / (1 << 20):.1f} MiB" if n else "0"  # noqa: E731
    lines = ["", "## 3d. Sparse values (interleaved rounds, medians; bytes copied read from "
             "the frameworks' own pointers)", "",
             "| matrix | route | time | bytes copied |", "|---|---|---|---|"]
    names = {"interop_torch": "`interop.to_framework(m, 'torch')`",
             "hand_torch": "`torch.sparse_csr_tensor(from_numpy(...) x 3)`",
             "interop_jax": "`interop.to_framework(m, 'jax')`",
             "hand_jax": "`BCSR.from_scipy_sparse(m)`",
             "check": "interop's invariant check alone"}
    for key in ("big", "tenth"):
        c = sp[key]
        what = f"{c['shape'][0]:,} x {c['shape'][1]:,}, {c['nnz']:,} entries"
        for route, label in names.items():
            copied = c["copied_bytes"].get(route)
            lines.append(f"| {what} | {label} | {c['ms'][route]['median']:.3f} ms | "
                         f"{'' if copied is None else fmt(copied)} |")
    d = sp["dense"]
    what = f"{d['shape'][0]:,} x {d['shape'][1]:,}, {d['nnz']:,} entries"
    for route, label in (("interop_csr", "`interop.to_framework(m, 'torch')`"),
                         ("interop_dense", "`interop.to_framework(m, 'torch', format='dense')`"),
                         ("hand_dense", "`torch.from_numpy(m.toarray())`")):
        lines.append(f"| {what} | {label} | {d['ms'][route]['median']:.3f} ms | "
                     f"{fmt(d['dense_bytes']) if route != 'interop_csr' else '0'} |")
    big = sp["big"]
    gbps = big["index_bytes"] / (big["ms"]["check"]["median"] * 1e-3) / 1e9
    lines.append(f"\nThe check reads the index arrays once ({gbps:.1f} GB/s here); the buffers "
                 "themselves are handed over without a byte copied, whatever their size.")
    return lines


def composite_markdown(c: dict[str, Any] | None) -> list[str]:
    """Section 3e (``benchmarks/composite.py``): composite values against the hand route."""
    if not c or "rows" not in c:
        return []
    lines = ["", "## 3e. Composite values against the hand-written route (kept plans, "
             "interleaved rounds; best samples, the ratio of the best, and the median of the "
             "per-round ratios)", "",
             "| hand-over | interop us | hand-written route | hand us | ratio | per-round "
             "median | bar |", "|---|---|---|---|---|---|---|"]
    for v in c["rows"].values():
        lines.append(f"| {v['label']} | {v['us']['interop']['min']:.1f} | `{v['hand']}` | "
                     f"{v['us']['hand']['min']:.1f} | x{v['ratio']:.2f} | "
                     f"x{v['paired_ratio']:.2f} | {v['bar']}x "
                     f"{'PASS' if v['pass'] else 'FAIL'} |")
    return lines


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    lines = [f"# interop benchmarks: {meta['machine']}", "",
             f"Command: `{meta['command']}`  ", f"Date: {meta['date']}  ",
             f"Machine: {meta['cpu']}, {meta['cpus']} CPUs, Python {meta['python']}  ",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()), "",
             "## Bars", "", "| bar | measured | result |", "|---|---|---|"]
    for b in bars(results):
        lines.append(f"| {b['bar']} | {b['value']} | {'PASS' if b['pass'] else 'FAIL'} |")
    d = results.get("dispatch")
    if d and "pairs" in d:
        lines += ["", f"## 1. Dispatch overhead ({d['n_elements']} x {d['dtype']}, "
                  "interleaved, per call, medians [q1-q3])", "",
                  "interop and the native call are timed in alternating samples, each round in "
                  "the other order (ABBA). The overhead is the median of the per-round "
                  "differences (paired), which cancels the drift between rounds; the "
                  "difference of the two medians is shown beside it. Samples are short "
                  "(about 0.3 ms) and many, since the noise here comes in bursts longer "
                  "than that, and taken in passes over all the pairs, spread over the run "
                  "(each pass's paired median: `overhead_paired_per_pass_us` in the JSON).",
                  "",
                  f"| pair | interop us | native us | overhead us (paired) [q1-q3] | "
                  f"<= {OVERHEAD_BAR_US} us | per pass | difference of medians | ratio | "
                  "native call | zero-copy (interop/native) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for p in d["pairs"]:
            if "overhead_us" not in p:
                lines.append(f"| {p['pair']} | skipped: {p.get('skipped')} | | | | | | | | |")
                continue
            i, n, o = p["interop_us"], p["native_us"], p["overhead_paired_us"]
            lines.append(
                f"| {p['pair']} | {i['median']:.2f} [{i['q1']:.2f}-{i['q3']:.2f}] | "
                f"{n['median']:.2f} [{n['q1']:.2f}-{n['q3']:.2f}] | "
                f"{o['median']:+.2f} [{o['q1']:+.2f}-{o['q3']:+.2f}] | "
                f"{'PASS' if o['median'] <= OVERHEAD_BAR_US else 'FAIL'} | "
                f"{' / '.join(f'{v:+.2f}' for v in p.get('overhead_paired_per_pass_us', ()))} | "
                f"{p['overhead_us']:+.2f} | "
                f"{p['ratio']:.2f} | `{p['native']}` | "
                f"{'yes' if p['interop_zero_copy'] else 'NO'}/"
                f"{'yes' if p['native_zero_copy'] else 'NO'} |")
        f = d.get("floor")
        if f:
            lines += ["", f"Floor: a minimal pure-Python dispatch (one dict lookup keyed like "
                      f"interop's, then the call) costs {f['overhead_us']:+.2f} us over "
                      f"`torch.from_numpy` here: that much of any overhead is unavoidable "
                      f"in Python."]
        c = d.get("control")
        if c:
            o = c["overhead_paired_us"]
            lines += ["", f"Control (A/A): the slowest native call, `{c['native']}` "
                      f"({c['pair']}), timed against itself the same way, {c['repeat']} "
                      f"samples: {o['median']:+.2f} us paired [{o['q1']:+.2f}-{o['q3']:+.2f}], "
                      f"what the method reports when there is no overhead to find."]
        lines += gpu_host_lines(d.get("gpu_host") or [])
    s = results.get("sizes")
    if s and "pairs" in s:
        lines += ["", "## 2. Size sweep (interop median us; memcpy = np.copyto of the same bytes)",
                  "", "The bar compares the largest size with the smallest by the median of "
                  "their per-round ratio: they are timed next to each other in every round "
                  "(short samples, as in section 1).", "",
                  "| size | " + " | ".join(s["pairs"]) + " | memcpy us | memcpy GB/s |",
                  "|---" * (len(s["pairs"]) + 3) + "|"]
        for k, n in enumerate(s["sizes"]):
            cells = [f"{v['rows'][k]['interop_us']['median']:.2f}" for v in s["pairs"].values()]
            m = s["memcpy"]["rows"][k]
            lines.append(f"| {fmt_bytes(n)} | " + " | ".join(cells)
                         + f" | {m['copy_us']['median']:.1f} | {m['gb_per_s']:.2f} |")
    t = results.get("tables")
    if t and "per_column_us" in t:
        pc = t["per_column_us"]
        lines += ["", f"## 3. Tables: {t['columns']} columns x {t['rows']} rows {t['dtype']} "
                  f"({t['table_bytes'] / 2**20:.0f} MiB)", "", f"Path: {t['path']}.  ",
                  f"Zero-copy forward: {t['zero_copy_forward']}, back: {t['zero_copy_back']}.",
                  "", "| step | total ms | per column us |", "|---|---|---|"]
        for k, v in pc.items():
            lines.append(f"| {k} | {t['total_ms'][k]:.3f} | {v:.2f} |")
        lines.append(f"\nForward per column vs pyarrow's own `to_numpy(zero_copy_only=True)`: "
                     f"x{t['forward_vs_pyarrow_to_numpy']:.2f}; vs native torch: "
                     f"x{t['forward_vs_native_torch']:.2f}; back vs native: "
                     f"x{t['back_vs_native']:.2f}.")
    lines += nested_markdown(results.get("nested"))
    st = results.get("structures")
    if st and "weights" in st:
        lines += ["", "## 3b. Structures (interleaved rounds; ratios and differences are "
                  "medians of the per-round values)", "",
                  "| value | target | interop | native | ratio | leaves' own calls | native "
                  "call |", "|---|---|---|---|---|---|---|"]
        for t, v in st["weights"].items():
            ms = v["ms"]
            lines.append(f"| state_dict, {v['leaves']} leaves | {t} | "
                         f"{ms['interop']['median']:.2f} ms | {ms['native']['median']:.2f} ms | "
                         f"x{v['ratio']:.2f} | x{v['leaves_ratio']:.2f} | `{v['native']}` |")
            lines.append(f"| nested, {v['leaves']} leaves | {t} | "
                         f"{ms['interop_nested']['median']:.2f} ms | "
                         f"{ms['native_nested']['median']:.2f} ms | x{v['ratio_nested']:.2f} | "
                         f" | `{v['native_nested']}` |")
        for t, v in st["batch"].items():
            us = v["us"]
            lines.append(f"| batch, 3 leaves | {t} | {us['interop']['median']:.2f} us | "
                         f"{us['native']['median']:.2f} us | x{v['ratio_to_native']:.2f} | "
                         f"{us['leaves']['median']:.2f} us ({v['over_leaves_us']:+.2f} us) | "
                         f"`{v['native']}` |")
    sp = results.get("sparse")
    if sp and "big" in sp:
        lines += sparse_markdown(sp)
    lines += composite_markdown(results.get("composite"))
    a = results.get("aos_soa")
    if a and "gb_per_s" in a:
        lines += aos_markdown(a)
    i = results.get("import_time")
    if i and "import_ms" in i:
        lines += ["", f"## 5. Import and first call (medians of {i['runs']} fresh interpreters)",
                  "", f"- `import interop`: {i['import_ms']['median']:.1f} ms "
                  f"(min {i['import_ms']['min']:.1f}); frameworks imported: "
                  f"{i['frameworks_imported'] or 'none'}",
                  f"- `import interop; interop.to_framework` (the registry loads lazily on first "
                  f"attribute access): {i['import_and_registry_ms']['median']:.1f} ms "
                  f"(min {i['import_and_registry_ms']['min']:.1f}); frameworks imported: "
                  f"{i['frameworks_imported_after_registry'] or 'none'}",
                  f"- bare interpreter (`python -c pass`, wall): "
                  f"{i['bare_interpreter_wall_ms']:.1f} ms", ""]
        c = i.get("cold_plan", {})
        if c:
            lines += [f"Registry load with frameworks already imported: "
                      f"{c['registry_load_ms']:.1f} ms.", "",
                      "| pair | first call (cold plan) us | cached us |", "|---|---|---|"]
            for k, v in c["pairs"].items():
                lines.append(f"| {k} | {v['cold_us']:.1f} | {v['cached_us']:.2f} |")
        f = i.get("first_call", {})
        if f.get("pairs"):
            lines += ["", f"The first call as a user meets it (medians of {f['runs']} fresh "
                      "interpreters, bytecode cached, the frameworks of the pair already "
                      "imported): `import interop` plus the first `to_framework`, against "
                      "the native call's own first call.", "",
                      "| pair | import + first call ms | native first call ms | over native ms |",
                      "|---|---|---|---|"]
            for k, v in f["pairs"].items():
                lines.append(f"| {k} | {v['interop_ms']:.2f} | {v['native_ms']:.2f} | "
                             f"{v['over_native_ms']:+.2f} |")
    g = results.get("gpu")
    if g:
        lines += ["", "## 6. GPU", ""] + gpu_lines(g)
    p = results.get("pool")
    if p:
        from .pool import markdown as pool_markdown

        lines += pool_markdown(p) if "error" not in p else ["", "## 7. GPU pool", "",
                                                            f"Error: {p['error']}"]
    dl = results.get("dali")
    if dl:
        from .dali import markdown as dali_markdown

        lines += dali_markdown(dl) if "error" not in dl else ["", "## 8. DALI", "",
                                                              f"Error: {dl['error']}"]
    md = results.get("mldata")
    if md:
        from .mldata import markdown as mldata_markdown

        lines += mldata_markdown(md) if "error" not in md else ["", "## 9. ML data libraries",
                                                                "", f"Error: {md['error']}"]
    if results.get("profile"):
        lines += ["", "## Profile", "", results["profile"]]
    return "\n".join(lines) + "\n"


def gpu_lines(g: dict[str, Any]) -> list[str]:
    """Markdown for the ``gpu`` section: each device pair against its native call."""
    lines = []
    conv = g.get("conversions", {})
    if conv.get("skipped"):
        lines.append(f"- conversions: skipped: {conv.get('reason')}")
    elif conv:
        lines += [f"Device: {conv['device']}. float32, {conv['elements']} elements; every call "
                  "followed by a device synchronize; medians of "
                  f"{conv['repeat']} interleaved samples (us per call).", "",
                  "| pair | native call | native | interop | overhead (paired) |",
                  "|---|---|---|---|---|"]
        for p in conv["pairs"]:
            if p.get("skipped"):
                lines.append(f"| {p['pair']} | skipped: {p['reason']} | | | |")
            else:
                lines.append(f"| {p['pair']} | `{p['native']}` | {p['native_us']['median']:.1f} "
                             f"| {p['interop_us']['median']:.1f} "
                             f"| {p['overhead_paired_us']:+.1f} |")
        lines.append("")
    return lines


def plots(results: dict[str, Any], out: Path, machine: str) -> list[str]:
    """PNG plots next to the JSON; returns their names (none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    d = results.get("dispatch")
    if d and d.get("pairs"):
        rows = [p for p in d["pairs"] if "overhead_us" in p]
        fig, ax = plt.subplots(figsize=(10, 0.3 * len(rows) + 1.5))
        names = [p["pair"] for p in rows]
        ax.barh(names, [p["overhead_paired_us"]["median"] for p in rows], color="tab:blue")
        ax.axvline(OVERHEAD_BAR_US, color="red", ls="--", label=f"bar {OVERHEAD_BAR_US} us")
        ax.set_xlabel("to_framework overhead over native call (us, paired median)")
        ax.invert_yaxis()
        ax.legend()
        fig.tight_layout()
        name = f"{machine}-dispatch.png"
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        made.append(name)
    s = results.get("sizes")
    if s and s.get("pairs"):
        fig, ax = plt.subplots(figsize=(8, 5))
        for pair, v in s["pairs"].items():
            ax.plot(s["sizes"], [r["interop_us"]["median"] for r in v["rows"]], marker="o",
                    label=f"interop {pair}")
        ax.plot(s["sizes"], [r["copy_us"]["median"] for r in s["memcpy"]["rows"]], "k--",
                marker="s", label="memcpy (np.copyto)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes")
        ax.set_ylabel("time per call (us)")
        ax.set_title("zero-copy conversion is O(1); a copy is O(n)")
        ax.legend()
        fig.tight_layout()
        name = f"{machine}-sizes.png"
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        made.append(name)
    a = results.get("aos_soa")
    if a and a.get("sweeps"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, (key, xlabel) in zip(axes, (("rows", "rows (8 float32 fields)"),
                                            ("fields", "fields (same bytes)"))):
            pts = a["sweeps"][key]
            xs = [p[key] for p in pts]
            for k, style in (("kernel", "o-"), ("numpy", "s-"), ("memcpy", "k--")):
                ax.plot(xs, [p["median_ms"][k] for p in pts], style,
                        label={"kernel": "interop (kernel it picks)", "numpy": "NumPy kernel",
                               "memcpy": "memcpy"}[k])
            ax.set_xscale("log", base=2)
            if key == "rows":
                ax.set_yscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("ms per AoS->SoA into out=")
            ax.legend()
        fig.tight_layout()
        name = f"{machine}-aos_soa.png"
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        made.append(name)
    return made


def write(results: dict[str, Any], out: Path, machine: str, with_plots: bool = True
          ) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    results["bars"] = bars(results)
    results["plots"] = plots(results, out, machine) if with_plots else []
    js = out / f"{machine}.json"
    js.write_text(json.dumps(results, indent=1, default=str) + "\n")
    md = out / f"{machine}.md"
    text = markdown(results)
    if results["plots"]:
        text += "\n## Plots\n\n" + "\n".join(f"![{p}]({p})" for p in results["plots"]) + "\n"
    md.write_text(text)
    return {"json": js, "md": md}


AOS_KERNELS = (
    "## Which kernel runs an AoS <-> SoA transpose\n\n"
    "`interop.transpose_kernel(nbytes)` says which, and why (one decision, "
    "`interop/transpose/cpu.py`; `kernel=` names one). From "
    f"{_transpose.KERNEL_MIN_BYTES >> 20} MiB of records on "
    f"({_transpose.KERNEL_LOADED_MIN_BYTES >> 20} MiB once the kernel is "
    "loaded in the process), the llvm kernel (`interop/transpose/llvm.py`: LLVM IR built with "
    "llvmlite and compiled for this CPU; per block of rows, each field's values are staged in "
    "L1 and streamed out with non-temporal stores of whole cache lines while the next block is "
    "prefetched), its pieces of rows shared among the CPUs from "
    f"{_transpose.THREAD_MIN_BYTES >> 20} MiB on (the kernel runs "
    "without the GIL); otherwise, and wherever llvmlite is absent, NumPy's blocked copies (the "
    "`*_numpy` rows of section 4). A smaller transpose never imports llvmlite, and no "
    "transpose imports Numba. The first large transpose of a process pays `import "
    "llvmlite.binding` and reads the machine code from the on-disk cache (`INTEROP_CACHE_DIR`, "
    "else `~/.cache/interop`; compiled once per machine, CPU and llvmlite version, about half "
    "a second): the first-call row of section 4. Device arrays (CuPy, CUDA tensors, Numba "
    "device arrays) are transposed by one CuPy kernel on their GPU.")

GPU_POOL_SOURCE = (
    "## GPU pool: where the figures come from\n\n"
    "Section 7 is this run's `pool` section (`python -m benchmarks --only pool` runs it "
    "alone): per framework its own allocator, `use_rmm_pool()`, `backend=\"async\"`, its "
    "cache over the pool and `cudaMalloc`, 4 KiB to 1 GiB, and the memory a CuPy-then-torch "
    "pipeline holds under each, side by side. On a machine without a GPU it is skipped, as "
    "here. The only hardware figures so far come from one H100 run of the code before this "
    "section existed (4 KiB allocate+free: CuPy 4.2 us own pool vs 10.5 us through the pool, "
    "torch 4.7 vs 12.4 us, cudaMalloc 82.7 us; 2 GiB in CuPy then 2 GiB in torch held 4096 "
    "MiB without the pool, 2304 MiB with it), quoted in `docs/pool.md`; the current design "
    "(the async backend; a framework cache over the pool, measured as an option) awaits a "
    "run on hardware."
)


def write_docs(results: dict[str, Any], docs: Path, results_dir: Path, machine: str) -> Path:
    """``docs/performance.md``: this run's report, and the dispatch overhead per pair against
    ``results_dir/before.json`` (the run before the dispatch work) when it exists."""
    rel = Path("..") / results_dir.relative_to(docs.parent)
    body = markdown(results).replace("\n#", "\n##").replace("# interop benchmarks", "## Run")
    lines = ["# Performance", "",
             f"Written by `.venv/bin/{results['meta']['command']}` (the full run, about "
             "a minute here; `--quick` for a smoke run, which leaves this page "
             "alone). Raw data: "
             f"`{rel / (machine + '.json')}`. Timings on this shared 2-core machine are noisy: "
             "compare the ratios and paired differences, not absolute times.", "", body]
    before = results_dir / "before.json"
    d = results.get("dispatch") or {}
    if before.exists() and d.get("pairs"):
        prior = json.loads(before.read_text())
        old = {p["pair"]: p["overhead_paired_us"]["median"] for p in
               prior.get("dispatch", {}).get("pairs", []) if "overhead_paired_us" in p}
        lines += ["", "## Dispatch overhead before and after the fast paths", "",
                  f"Before: `{rel / 'before.json'}`, "
                  f"{prior['meta'].get('library', 'an earlier run')}, measured on "
                  f"{prior['meta']['date']}. Overhead over the native call, us (paired "
                  "median).", "",
                  "| pair | before | now |", "|---|---|---|"]
        for p in d["pairs"]:
            if "overhead_us" not in p:
                continue
            b = old.get(p["pair"])
            lines.append(f"| {p['pair']} | {'' if b is None else f'{b:+.2f}'} | "
                         f"{p['overhead_paired_us']['median']:+.2f} |")
    lines += first_call_before_after(results_dir, rel)
    lines += ["", AOS_KERNELS]
    lines += ["", GPU_POOL_SOURCE]
    if results.get("plots"):
        lines += ["", "## Plots", ""] + [f"![{p}]({rel / p})" for p in results["plots"]]
    path = docs / "performance.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def first_call_before_after(results_dir: Path, rel: Path) -> list[str]:
    """The section on ``results_dir/first_call_before_after.json`` (the first call before and
    after it loaded less, measured side by side), or nothing when it is absent."""
    path = results_dir / "first_call_before_after.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    lines = ["", "## The first call before and after loading less", "",
             f"`{rel / path.name}`: {data['how']}", "",
             "| pair | before ms | after ms | native first call ms | before over native | "
             "after over native |", "|---|---|---|---|---|---|"]
    for pair, v in data["pairs"].items():
        lines.append(f"| {pair} | {v['before']:.2f} | {v['after']:.2f} | {v['native']:.2f} | "
                     f"{v['before_over']:+.2f} | {v['after_over']:+.2f} |")
    return lines
