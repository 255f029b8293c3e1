"""Shared pieces of the engine benchmarks: a result row, timing, and the printed table."""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Row:
    """One measured number; ``target`` is ``"<= x"``, ``">= x"`` (a note may follow) or ``"report"`` (no target)."""

    group: str
    metric: str
    value: float
    unit: str
    target: str = "report"

    @property
    def verdict(self) -> str:
        """``ok`` / ``MISSED`` against the target, or empty when there is none."""
        if self.target == "report":
            return ""
        op, bound = self.target.split()[:2]
        ok = self.value <= float(bound) if op == "<=" else self.value >= float(bound)
        return "ok" if ok else "MISSED"


def timed(fn):
    """(wall seconds, process CPU seconds, result) of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


@dataclass(frozen=True)
class ProcessRun:
    """One child process timed from outside: wall and user + system CPU seconds, peak RSS (MB), exit code."""

    wall: float
    cpu: float
    rss_mb: float
    code: int


def process_env() -> dict[str, str]:
    """The environment of a timed process: this one's, less ``PYTHONDONTWRITEBYTECODE``. A Python process as a
    user runs it writes its modules' bytecode on the first run and loads it afterwards; with that variable set
    (some CI and sandbox images set it) every run compiles every module from source again (~0.1 s of this
    package's start-up, and as much of a Python peer's)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_process(argv: list[str], cwd=None) -> ProcessRun:
    """Run ``argv`` (output discarded; environment :func:`process_env`) and return its own accounting
    (``os.wait4``: this child only)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=process_env())
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ProcessRun(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1e3, proc.returncode)


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def print_rows(rows: list[Row]) -> None:
    """Print the rows as a markdown table."""
    print("| group | metric | value | unit | target | |")
    print("|---|---|---:|---|---|---|")
    for r in rows:
        print(f"| {r.group} | {r.metric} | {_fmt(r.value)} | {r.unit} | {r.target if r.target != 'report' else ''} "
              f"| {r.verdict} |")


#: The record ``python -m benchmarks`` writes (one row per measured number, with the machine and the date).
RESULTS = Path(__file__).resolve().parent / "results.csv"
RESULT_COLUMNS = ("date", "machine", "mode", "group", "metric", "value", "unit", "target", "verdict")


def write_rows(rows: list[Row], path: str | os.PathLike = RESULTS, *, mode: str = "full") -> Path:
    """Write ``rows`` as the benchmark record ``path`` (:data:`RESULT_COLUMNS`), replacing the previous record:
    today's date, the machine (:func:`smetric.machine.describe_machine`) and ``mode`` (``full`` or ``quick``)
    on every row."""
    from smetric.machine import describe_machine

    path = Path(path)
    stamp = {"date": datetime.date.today().isoformat(), "machine": describe_machine(), "mode": mode}
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=RESULT_COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow({**stamp, "group": r.group, "metric": r.metric, "value": f"{r.value:.10g}",
                             "unit": r.unit, "target": "" if r.target == "report" else r.target,
                             "verdict": r.verdict})
    return path


def run_main(doc: str, run, argv: list[str] | None = None) -> int:
    """Entry point of a benchmark module without options: ``--help`` shows ``doc``; run and print the table."""
    argparse.ArgumentParser(description=doc.splitlines()[0]).parse_args(argv)
    print_rows(run())
    return 0
