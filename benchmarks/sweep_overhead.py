"""Benchmark: speed-up of a 64-point fig06-style sweep on 1 vs 2 Dask workers, and the per-point overhead Dask adds.

Run: ``.venv/bin/python benchmarks/sweep_overhead.py [--instances N] [--minutes M] [--repeats R]``.

The grid is 4 policies × 16 load factors = 64 points, each one ``smetric.simulate`` run
(:func:`smetric.testbeds.run_point`) of the synthetic agent workload on a small
30B-testbed cluster; the workload and cluster are ``shared`` (scattered once). Timings reported:

- serial: ``sweep(..., jobs=1)`` (no Dask), and the mean time of one point;
- dask-1 / dask-2: one and two worker processes on pre-started, warmed-up LocalClusters
  (speed-up = serial / dask-2), interleaved with the serial runs so a busy machine slows all
  alike; CPU time is summed over this process (client, scheduler, nannies) and the workers;
- cold: ``sweep(..., jobs=2)`` end to end, cluster start-up included;
- overhead per point: the round trip of an empty point on one worker (Dask's own cost:
  scheduling, pickling, result transfer), and as a cross-check ``(dask-1 - serial) / 64``,
  which on a shared machine also absorbs other processes' load.

Every Dask run is checked to equal the serial DataFrame exactly (``run_point`` leaves out the
engine's own timing).
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import ExitStack

import pandas as pd
from distributed import Client

from smetric.experiments.sweep import local_cluster, sweep
from smetric.testbeds import agent_workload, paper_cluster, run_point

POLICIES = ["smetric", "cache-affinity", "least-load", "round-robin"]
LOADS = [round(0.1 + 0.05 * i, 2) for i in range(16)]


def noop_point(i: int) -> dict:
    """An empty point: measures Dask's round-trip cost alone."""
    return {"out": i}


def _check_same(df: pd.DataFrame, reference: pd.DataFrame) -> None:
    """Equal bit for bit."""
    pd.testing.assert_frame_equal(df, reference, check_exact=True)


def _cpu_seconds(client) -> tuple[float, dict]:
    """CPU time so far of this process (client, scheduler, nannies) and of each worker process."""
    return time.process_time(), ({} if client is None else client.run(time.process_time))


def _measure(run, client) -> tuple[float, float, float, pd.DataFrame]:
    """Wall time, total CPU time and the busiest worker's CPU time of one sweep, and its result."""
    cpu0, workers0 = _cpu_seconds(client)
    t0 = time.perf_counter()
    df = run()
    wall = time.perf_counter() - t0
    cpu1, workers1 = _cpu_seconds(client)
    worker_cpu = [workers1[w] - workers0[w] for w in workers1]
    return wall, cpu1 - cpu0 + sum(worker_cpu), max(worker_cpu, default=cpu1 - cpu0), df


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the timings table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=8, help="instances of the simulated cluster")
    parser.add_argument("--minutes", type=float, default=10.0, help="workload length (sets a point's cost)")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats per configuration (best kept)")
    args = parser.parse_args(argv)

    grid = {"policy": POLICIES, "load": LOADS}
    shared = {"workload": agent_workload(args.instances, args.minutes), "cluster": paper_cluster(
        "30b", n_instances=args.instances)}
    n = len(POLICIES) * len(LOADS)
    warm_grid = {"policy": POLICIES, "load": LOADS[:1]}
    sweep(warm_grid, run_point, shared=shared, jobs=1, progress=False)  # compile / load the numba cache, untimed
    load_before = os.getloadavg()[0]
    names = {0: "serial (jobs=1, no dask)", 1: "dask, 1 worker, pre-started", 2: "dask, 2 workers, pre-started"}
    best = {k: [float("inf")] * 3 for k in names}  # wall, total CPU, busiest worker's CPU
    reference = None
    t_noop = float("inf")
    for _ in range(args.repeats):  # interleaved, so a busy machine slows every configuration alike
        for workers in names:
            with ExitStack() as stack:  # only the measured cluster is alive (no idle cluster's background CPU)
                client = None
                if workers:
                    client = stack.enter_context(Client(stack.enter_context(local_cluster(workers))))
                    client.run(sweep, warm_grid, run_point, shared=shared, jobs=1, progress=False)  # same, per worker
                kwargs = {"client": client} if client else {"jobs": 1}
                *times, df = _measure(lambda kw=kwargs: sweep(grid, run_point, shared=shared, progress=False, **kw),
                                       client)
                best[workers] = [min(b, t) for b, t in zip(best[workers], times)]
                reference = df if reference is None else reference
                _check_same(df, reference)
                if workers == 1:
                    def noop_sweep(client=client):
                        return sweep({"i": list(range(200))}, noop_point, client=client, progress=False)
                    t_noop = min(t_noop, _measure(noop_sweep, client)[0])
    t_cold, *_, df = _measure(lambda: sweep(grid, run_point, shared=shared, jobs=2, progress=False), None)
    _check_same(df, reference)

    wall_serial, cpu_serial, _ = best[0]
    wall_d1, cpu_d1, _ = best[1]
    _, cpu_d2, busiest_d2 = best[2]
    print(f"{n}-point grid ({len(POLICIES)} policies x {len(LOADS)} loads), {len(shared['workload'].arrival)} "
          f"requests on {args.instances} instances per point, {os.cpu_count()} cores, best of {args.repeats}, "
          f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'configuration':58s} {'workers':>7s} {'wall s':>7s} {'speed-up':>8s} {'CPU s':>7s} {'busiest':>7s}")
    for workers, name in names.items():
        wall, cpu, busiest = best[workers]
        print(f"{name:58s} {max(workers, 1):7d} {wall:7.2f} {wall_serial / wall:8.2f} {cpu:7.2f} {busiest:7.2f}")
    print(f"{'dask, 2 workers, cold (sweep(jobs=2), start-up included)':58s} {2:7d} {t_cold:7.2f} "
          f"{wall_serial / t_cold:8.2f}")
    point_cpu = cpu_serial / n
    print(f"mean point: {wall_serial / n * 1e3:.0f} ms wall, {point_cpu * 1e3:.0f} ms CPU (serial)")
    print(f"no-op point round trip on 1 worker: {t_noop / 200 * 1e3:.2f} ms "
          f"= {100 * t_noop / 200 / point_cpu:.1f}% of a point's CPU time (target < 5%)")
    print(f"CPU dask adds per point (1 worker vs serial, all processes): {(cpu_d1 - cpu_serial) / n * 1e3:.1f} ms "
          f"= {100 * (cpu_d1 - cpu_serial) / cpu_serial:.1f}%")
    print(f"wall-clock overhead per point (1 worker vs serial): {(wall_d1 - wall_serial) / n * 1e3:.1f} ms "
          f"= {100 * (wall_d1 - wall_serial) / wall_serial:.1f}% (includes other processes' load)")
    print(f"idle-machine estimate of the 2-worker speed-up, serial CPU / max(busiest worker, CPU / 2): "
          f"{cpu_serial / max(busiest_d2, cpu_d2 / 2):.2f}")
    print("all dask results equal the serial DataFrame bit for bit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
