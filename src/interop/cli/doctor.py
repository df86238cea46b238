"""``python -m interop doctor``: what this machine has, and what to watch out for.

Reports the frameworks interop found (version, devices, protocols), the CUDA devices CuPy
sees, whether a ``mempool`` RMM pool is active, and the known pitfalls of the installed
framework versions (:mod:`interop.cli.pitfalls`: each checked by a harmless probe, or by a
probe in a child process, and saying whether interop guards it). Nothing here ever crashes:
a failing probe is reported, not raised.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..devices import cuda_devices
from .pitfalls import NOT_INSTALLED, SKIPPED, UNKNOWN, check_pitfalls
from .probes import ABSENT, PRESENT


def pool_status() -> dict[str, Any]:
    """Whether a mempool RMM pool is active; never raises."""
    try:
        import mempool
    except Exception as e:
        why = f"mempool not importable: {e}"
        return {"available": False, "active": False, "detail": why, "error": why}
    status = getattr(mempool, "status", None)
    if status is None:
        why = "mempool has no status()"
        return {"available": True, "active": False, "detail": why, "error": why}
    try:
        s = status()
        d = s.to_dict() if hasattr(s, "to_dict") else {"detail": str(s)}
        active = bool(getattr(s, "active", d.get("active", False)))
        routed = list(s.routed()) if hasattr(s, "routed") else []
        return {"available": True, "active": active, "pool": d.get("pool"), "routed": routed,
                "detail": str(s)}
    except Exception as e:
        why = f"mempool.status() failed: {type(e).__name__}: {e}"
        return {"available": True, "active": False, "detail": why, "error": why}


def collect(skip: tuple[str, ...] = ()) -> dict[str, Any]:
    import platform

    import interop

    n, why = cuda_devices()
    return {
        "interop": interop.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "frameworks": interop.frameworks(),
        "gpus": {"count": n, "detail": why},
        "pool": pool_status(),
        "transpose": transpose_status(),
        "pitfalls": check_pitfalls(skip),
    }


def transpose_status() -> dict[str, Any]:
    """Which kernel a large AoS <-> SoA transpose runs here, and from which size (without
    loading it)."""
    from interop.transpose import cpu

    k = cpu.kernel(1 << 40)
    return {"kernel": k.name, "why": k.why, "from_bytes": cpu.KERNEL_MIN_BYTES}


def render(d: dict[str, Any]) -> str:
    lines = [f"interop {d['interop']} on Python {d['python']} ({d['platform']})", "",
             "frameworks:"]
    w = max([len(f["name"]) for f in d["frameworks"]] + [8])
    for f in d["frameworks"]:
        if not f["importable"]:
            lines.append(f"  {f['name']:<{w}} not installed")
            continue
        lines.append(f"  {f['name']:<{w}} {f['version'] or '?':<12} devices: "
                     f"{', '.join(f['devices']):<10} protocols: "
                     f"{', '.join(f['protocols']) or 'native calls only (no DLPack)'}"
                     + ("" if f.get("target", True) else " (a source only)"))
    g = d["gpus"]
    lines += ["", f"GPUs: {g['count']}" + ("" if g["count"] else f" ({g['detail']})")]
    p = d["pool"]
    if p["active"]:
        lines.append(f"RMM pool: active ({p.get('pool')}); routed: "
                     f"{', '.join(p.get('routed') or []) or 'none'}")
    else:
        why = p.get("error") or "mempool.use_rmm_pool() has not been called"
        lines.append(f"RMM pool: not active ({why})")
    t = d["transpose"]
    lines.append(f"AoS <-> SoA transpose: {t['kernel']} kernel from {t['from_bytes'] >> 20} MiB "
                 f"({t['why']})" if t["kernel"] == "llvm" else
                 f"AoS <-> SoA transpose: NumPy's copies ({t['why']})")
    lines += ["", "known pitfalls of the installed versions:"]
    for q in d["pitfalls"]:
        mark = {PRESENT: "!", ABSENT: "ok", NOT_INSTALLED: "-", SKIPPED: "-",
                UNKNOWN: "?"}[q["state"]]
        lines.append(f"  [{mark}] {q['framework']}: {q['summary']}")
        lines.append(f"       {q['state']}: {q['evidence']}")
        if q["interop"]:
            lines.append(f"       interop: {q['interop']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m interop doctor",
                                description="frameworks, GPUs, the pool, and known pitfalls")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--skip", default="", metavar="NAMES",
                   help="comma-separated frameworks whose pitfalls are not probed "
                        "(tensorflow, paddle)")
    args = p.parse_args(argv)
    skip = tuple(n.strip() for n in args.skip.split(",") if n.strip())
    unknown = [n for n in skip if n not in ("tensorflow", "paddle")]
    if unknown:
        p.error(f"--skip takes tensorflow, paddle; got {', '.join(unknown)}")
    d = collect(skip)
    if args.json:
        print(json.dumps(d, indent=2))
    else:
        sys.stdout.write(render(d))
    return 0
