"""Engine scaling: CPU time against the number of instances (8 -> 128, 15 min of arrivals at 45
requests per minute per instance) and against the trace length (1x -> 8x of 7.5 min on 32
instances); the fitted log-log slope is the measured complexity exponent.

Run: ``.venv/bin/python -m benchmarks.engine_scaling``.
"""

from __future__ import annotations

import sys

import numpy as np

from benchmarks.common import Row, run_main, timed

POLICY = "smetric"


def _cpu(instances: int, minutes: float) -> tuple[float, int]:
    from smetric.cluster.engine import run_engine
    from smetric.cluster.inputs import prepare
    from smetric.experiments.setups import agent_workload, paper_cluster

    wl = agent_workload(instances, minutes)
    inp = prepare(wl, paper_cluster("30b", n_instances=instances), POLICY)
    _, cpu, _ = timed(lambda: run_engine(inp))
    return cpu, len(wl)


def _slope(x: list[float], y: list[float]) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def run(instances=(8, 16, 32, 64, 128), lengths=(1, 2, 4, 8), base_minutes: float = 7.5) -> list[Row]:
    """Measure and return the table rows."""
    from smetric.cluster.engine import compile_engine

    compile_engine()
    rows: list[Row] = []
    cpus, reqs = [], []
    for n in instances:
        cpu, k = _cpu(n, 15.0)
        cpus.append(cpu)
        reqs.append(k)
        rows.append(Row("instances", f"{n} instances, 15 min ({k:,} requests): CPU", cpu, "s"))
    rows.append(Row("instances", "exponent of CPU vs instances (requests grow with instances)",
                    _slope(list(instances), cpus), ""))
    rows.append(Row("instances", "exponent of CPU per request vs instances",
                    _slope(list(instances), [c / k for c, k in zip(cpus, reqs)]), ""))
    cpus = []
    for m in lengths:
        cpu, k = _cpu(32, base_minutes * m)
        cpus.append(cpu)
        rows.append(Row("length", f"{m}x = {base_minutes * m:g} min on 32 instances ({k:,} requests): CPU", cpu, "s"))
    rows.append(Row("length", "exponent of CPU vs trace length", _slope(list(lengths), cpus), ""))
    return rows


if __name__ == "__main__":
    sys.exit(run_main(__doc__, run))
