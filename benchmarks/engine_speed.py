"""Engine speed: the reference scenario, the speed-up over the pure-Python reference,
compile time (cold and cached) and peak memory.

Scenario: the default synthetic agent workload (``smetric.testbeds.agent_workload``),
one hour at 45 requests per minute per instance, 32 instances of the paper's 30B testbed
(Qwen3-30B-A3B, TP 1, H20), colocated, provisioned global store, policy ``smetric``. The "full stack"
row runs the same hour with every KV-path mechanism on (:func:`full_stack`).

Run: ``.venv/bin/python -m benchmarks.engine_speed [--minutes M] [--reference-minutes R]``.
Times are wall clock and process CPU (the machine may be shared: CPU time is the steadier number).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile

from benchmarks.common import Row, print_rows, timed

INSTANCES = 32
POLICY = "smetric"

# Run in a fresh interpreter: time to compile the engine (or load it from cache), then the hour's
# peak memory. NUMBA_CACHE_DIR selects a cold or a warm cache.
_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from smetric.cluster.engine import compile_engine
compile_engine()
compile_s = time.perf_counter() - t0
out = {"compile_s": compile_s}
if sys.argv[1] == "memory":
    from benchmarks.engine_speed import scenario
    from smetric.cluster.engine import run_engine, state_bytes
    from smetric.cluster.inputs import prepare
    wl, cluster = scenario(float(sys.argv[2]))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    inp = prepare(wl, cluster, "smetric")
    out["state_mb"] = state_bytes(inp) / 1e6
    run_engine(inp)
    out["rss_before_mb"] = base / 1e3
    out["rss_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
print(json.dumps(out))
"""


def scenario(minutes: float):
    """(workload, cluster) of the reference scenario for ``minutes`` of arrivals."""
    from smetric.testbeds import agent_workload, paper_cluster

    return agent_workload(INSTANCES, minutes), paper_cluster("30b", n_instances=INSTANCES)


def full_stack(cluster):
    """``cluster`` with every KV-path mechanism on: replies cached locally and in the store, 16-token
    partial-tail hits, the ``lmcache-mooncake`` connector (blocking loads, lookups, shared node NICs, writes)."""
    return dataclasses.replace(cluster, cache_replies=True, global_store_replies=True, hit_granularity=16,
                               kv_connector="lmcache-mooncake")


def _child(mode: str, cache_dir: str | None = None, minutes: float = 0.0) -> dict:
    """Run ``_CHILD`` in a fresh interpreter (``cache_dir``: numba cache to use; None = the default one)."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    proc = subprocess.run([sys.executable, "-c", _CHILD, mode, str(minutes)], env=env, capture_output=True,
                          text=True, check=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(minutes: float = 60.0, reference_minutes: float = 10.0) -> list[Row]:
    """Measure and return the table rows."""
    from smetric.cluster.engine import compile_engine, run_engine
    from smetric.cluster.inputs import prepare
    from smetric.cluster.reference import run_reference

    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as cache:
        cold = _child("compile", cache)["compile_s"]
        warm = _child("compile", cache)["compile_s"]
    rows += [Row("compile", "engine compile, cold cache", cold, "s", "report"),
             Row("compile", "engine load, cached", warm, "s", "report")]

    compile_engine()
    wl, cluster = scenario(minutes)
    inp = prepare(wl, cluster, POLICY)
    wall, cpu, raw = timed(lambda: run_engine(inp))
    rate = len(wl) / wall
    rows += [Row("hour", f"{len(wl):,} requests, {INSTANCES} instances, {minutes:g} min: wall", wall, "s", "<= 10"),
             Row("hour", "same, CPU", cpu, "s", "<= 10"),
             Row("hour", "simulated requests per wall-second", rate, "req/s", "report"),
             Row("hour", "instance-iterations simulated", float(raw.inst_iterations.sum()), "", "report"),
             Row("hour", "simulated span (last finish - first arrival)",
                 float(raw.finish.max() - raw.arrival.min()), "s", "report")]
    full = prepare(wl, full_stack(cluster), POLICY)
    f_wall, f_cpu, _ = timed(lambda: run_engine(full))
    rows += [Row("hour", "full KV-path stack (lmcache-mooncake, replies, 16-token tails): wall", f_wall, "s",
                 f"<= {1.5 * wall:.2f} (1.5x)"),
             Row("hour", "full stack, CPU", f_cpu, "s", f"<= {1.5 * cpu:.2f} (1.5x)")]

    head = wl.window(wl.arrival[0], wl.arrival[0] + 60.0 * reference_minutes)
    small = prepare(head, cluster, POLICY)
    e_wall, e_cpu, _ = timed(lambda: run_engine(small))
    r_wall, r_cpu, _ = timed(lambda: run_reference(small))
    rows += [Row("vs reference", f"first {reference_minutes:g} min ({len(head):,} requests): reference CPU",
                 r_cpu, "s", "report"),
             Row("vs reference", "same input: engine CPU", e_cpu, "s", "report"),
             Row("vs reference", "speed-up (CPU)", r_cpu / e_cpu, "x", ">= 100")]

    mem = _child("memory", minutes=minutes)
    rows += [Row("memory", "engine state arrays", mem["state_mb"], "MB", "report"),
             Row("memory", "process peak RSS (after imports and compile)", mem["rss_before_mb"], "MB", "report"),
             Row("memory", "process peak RSS (after the run)", mem["rss_peak_mb"], "MB", "report")]
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--reference-minutes", type=float, default=10.0)
    args = parser.parse_args(argv)
    print_rows(run(args.minutes, args.reference_minutes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
