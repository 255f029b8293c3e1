"""The whole ``smetric simulate`` process on the Azure 2023 conversation trace at 40 instances, as a user runs it:
interpreter start, imports, trace load, cached-kernel load, simulation and printing, timed from outside.

SplitwiseSim is reported to take 15.5 s wall for the same trace on 40 instances (engine_peer.py).
Targets: <= 1.0 s whole process on a quiet machine (>= 10x the peer's whole process); the CPU seconds
are reported too, since on a busy machine wall time includes waiting for a core. Medians of
``repeats`` runs after one warm-up run (which also fills numba's cache if it is cold).

Run: ``.venv/bin/python -m benchmarks.cli_startup``.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time

from benchmarks.common import Row, run_main

PEER_WALL_S = 15.5
COMMAND = ["simulate", "--trace", "azure-conv", "--policy", "smetric", "--instances", "40", "--model", "llama-2-70b",
           "--gpu", "h100", "--tp", "8", "--json"]


def _one_run() -> tuple[float, float]:
    """(wall s, CPU s of the child) of one ``python -m smetric.cli simulate ...`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "smetric.cli", *COMMAND], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(repeats: int = 5) -> list[Row]:
    """Measure (median of ``repeats`` after a warm-up) and return the table rows."""
    _one_run()
    walls, cpus = zip(*(_one_run() for _ in range(repeats)))
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    group = "smetric simulate, azure-conv, 40 instances (whole process)"
    return [Row(group, "wall (median)", wall, "s", "<= 1.0"),
            Row(group, "CPU (median)", cpu, "s"),
            Row(group, "speed-up over SplitwiseSim's whole process (wall)", PEER_WALL_S / wall, "x", ">= 10")]


if __name__ == "__main__":
    sys.exit(run_main(__doc__, run))
