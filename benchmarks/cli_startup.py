"""The whole ``smetric simulate`` process on the Azure 2023 conversation trace at 40 instances, as a user runs it:
interpreter start, imports, trace load, cached-kernel load, simulation and printing, timed from outside.

Rows: the whole process (wall, CPU, peak RSS), and the same interpreter doing only the imports the command needs
(``smetric.cli.simulate`` and the simulate path), which is the floor that no work on the run itself can lower.
SplitwiseSim is reported to take 15.5 s wall for the same trace on 40 instances (engine_peer.py; ``peers.py``
measures it side by side where it is installed). Targets: <= 1.0 s whole process on a quiet machine (>= 10x the
peer's whole process); on a busy machine wall time includes waiting for a core, so CPU is reported too. Medians of
``repeats`` runs after one warm-up run (which also fills numba's cache if it is cold).

Run: ``.venv/bin/python -m benchmarks.cli_startup``.
"""

from __future__ import annotations

import statistics
import sys

from benchmarks.common import Row, run_main, run_process

PEER_WALL_S = 15.5
COMMAND = ["simulate", "--trace", "azure-conv", "--policy", "smetric", "--instances", "40", "--model", "llama-2-70b",
           "--gpu", "h100", "--tp", "8", "--json"]
IMPORTS = ("import smetric.cli.simulate, smetric.cluster.simulate, smetric.cli.workload, "
           "smetric.workload.loaders, smetric.outputs")


def run(repeats: int = 5) -> list[Row]:
    """Measure (median of ``repeats`` after a warm-up) and return the table rows."""
    whole = [sys.executable, "-m", "smetric.cli", *COMMAND]
    imports = [sys.executable, "-c", IMPORTS]
    run_process(whole)
    runs = [(run_process(whole), run_process(imports)) for _ in range(repeats)]
    med = statistics.median
    wall = med(r.wall for r, _ in runs)
    group = "smetric simulate, azure-conv, 40 instances (whole process)"
    return [Row(group, "wall (median)", wall, "s", "<= 1.0"),
            Row(group, "CPU (median)", med(r.cpu for r, _ in runs), "s"),
            Row(group, "peak RSS (median)", med(r.rss_mb for r, _ in runs), "MB"),
            Row(group, "interpreter + imports only (separate process): wall (median)",
                med(i.wall for _, i in runs), "s"),
            Row(group, "speed-up over SplitwiseSim's reported whole process (wall)", PEER_WALL_S / wall, "x",
                ">= 10")]


if __name__ == "__main__":
    sys.exit(run_main(__doc__, run))
