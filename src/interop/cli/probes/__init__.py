"""The doctor's probes that run in a child process, one module each.

Some pitfalls abort the interpreter when present, and importing paddle after tensorflow
segfaults, so these probes never run in the doctor's own process: :func:`run` starts each as
``python -m interop.cli.probes.<name>``, side by side. A probe module imports its framework
inside its ``main()`` only, so importing it (a test does) imports no framework.

A probe either dies, and its exit code is the evidence, or prints one line that
:func:`read_report` reads back: the JSON object ``{pitfall id: [state, evidence, interop]}``
that a :class:`Report` collects.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterable
from typing import Any

PRESENT, ABSENT = "present", "absent"


class Report:
    """What a probe found, printed as the one JSON line the doctor reads."""

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}

    def add(self, pitfall_id: str, present: bool, evidence: str, interop: str) -> None:
        """Record pitfall ``pitfall_id``: present or not, what showed it, and what interop
        does about it."""
        self.found[pitfall_id] = [PRESENT if present else ABSENT, evidence, interop]

    def print(self) -> None:
        print(json.dumps(self.found))


def report_checks(framework: str, checks: Iterable[Callable[[Report, Any], None]]) -> None:
    """In a probe: import ``framework`` (warnings silenced), run each of ``checks`` with the
    report and the framework's module, and print the report."""
    warnings.simplefilter("ignore")
    module = importlib.import_module(framework)
    report = Report()
    for check in checks:
        check(report, module)
    report.print()


def read_report(line: str) -> dict[str, list[str]]:
    """The findings a probe printed on its last line; ``{}`` when it printed none."""
    if not line.startswith("{"):
        return {}
    try:
        return json.loads(line)
    except ValueError:
        return {}


def run(names: set[str], timeout: float = 300) -> dict[str, tuple[int | None, str]]:
    """Run the probe modules ``names`` side by side: ``{name: (exit code, last stdout line)}``,
    the exit code ``None`` for a probe that ran past ``timeout`` seconds (it is killed)."""
    procs = {}
    for name in sorted(names):
        procs[name] = subprocess.Popen([sys.executable, "-m", f"{__name__}.{name}"],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True)
    out: dict[str, tuple[int | None, str]] = {}
    for name, proc in procs.items():
        try:
            stdout, _ = proc.communicate(timeout=timeout)
            lines = stdout.strip().splitlines()
            out[name] = (proc.returncode, lines[-1] if lines else "")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            out[name] = (None, "")
    return out
