"""Benchmark: speed-up of a 64-point fig06-style sweep on 1 vs 2 Dask workers, and the per-point overhead Dask adds.

Run: ``.venv/bin/python benchmarks/sweep_overhead.py [--requests N] [--repeats R]``.

The grid is policies × load factors (4 × 16 = 64 points). Until the cluster engine
(``smetric.simulate``) lands, each point is a stand-in of comparable cost: a pure-Python
routing simulation of ``--requests`` requests over 8 FCFS instances (seeded, deterministic),
returning goodput-style summaries. Timings reported:

- serial: ``sweep(..., jobs=1)`` (no Dask), and the mean time of one point;
- dask-1 / dask-2: one and two worker processes on pre-started LocalClusters (speed-up =
  serial / dask-2), interleaved with the serial runs so a busy machine slows all alike;
- cold: ``sweep(..., jobs=2)`` end to end, cluster start-up included;
- overhead per point: the round trip of an empty point on one worker (Dask's own cost:
  scheduling, pickling, result transfer), and as a cross-check ``(dask-1 - serial) / 64``,
  which on a shared machine also absorbs other processes' load.

Every Dask run is checked to equal the serial DataFrame exactly.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd
from distributed import Client

from smetric.experiments.sweep import local_cluster, sweep

POLICIES = ["round_robin", "random", "least_backlog", "power_of_two"]
LOADS = [round(0.3 + 0.05 * i, 2) for i in range(16)]
N_INSTANCES = 8
SLO_S = 4.0


def route_point(policy: str, load: float, seed: int, n_requests: int) -> dict:
    """Route ``n_requests`` Poisson arrivals over FCFS instances; latency summaries (stand-in point)."""
    rng = np.random.default_rng([seed, int(load * 100), POLICIES.index(policy)])
    service = rng.lognormal(0.0, 0.6, size=n_requests)
    rate = load * N_INSTANCES / float(np.exp(0.6**2 / 2))  # offered load relative to capacity
    arrival = np.cumsum(rng.exponential(1.0 / rate, size=n_requests)).tolist()
    picks = rng.integers(0, N_INSTANCES, size=(n_requests, 2)).tolist()
    service = service.tolist()
    free_at = [0.0] * N_INSTANCES
    latency = [0.0] * n_requests
    for i in range(n_requests):
        t = arrival[i]
        backlog = [max(f - t, 0.0) for f in free_at]  # the per-instance view every policy gets
        if policy == "round_robin":
            k = i % N_INSTANCES
        elif policy == "random":
            k = picks[i][0]
        elif policy == "least_backlog":
            k = backlog.index(min(backlog))
        else:
            a, b = picks[i]
            k = a if backlog[a] <= backlog[b] else b
        start = max(t, free_at[k])
        free_at[k] = start + service[i]
        latency[i] = free_at[k] - t
    lat = np.asarray(latency)
    return {
        "mean_latency": float(lat.mean()),
        "p99_latency": float(np.quantile(lat, 0.99)),
        "goodput": float((lat <= SLO_S).sum() / arrival[-1]),
    }


def noop_point(i: int) -> dict:
    """An empty point: measures Dask's round-trip cost alone."""
    return {"out": i}


def _timed(fn) -> tuple[float, pd.DataFrame]:
    t0 = time.perf_counter()
    df = fn()
    return time.perf_counter() - t0, df


def _local_client(n_workers: int) -> tuple:
    cluster = local_cluster(n_workers)
    return cluster, Client(cluster)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the timings table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=150_000, help="requests per point (sets a point's cost)")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats per configuration (best kept)")
    args = parser.parse_args(argv)

    grid = {"policy": POLICIES, "load": LOADS, "seed": [0], "n_requests": [args.requests]}
    n = len(POLICIES) * len(LOADS)
    load_before = os.getloadavg()[0]
    cluster1, client1 = _local_client(1)
    cluster2, client2 = _local_client(2)
    runs = {
        "serial (jobs=1, no dask)": (1, lambda: sweep(grid, route_point, jobs=1, progress=False)),
        "dask, 1 worker, pre-started": (1, lambda: sweep(grid, route_point, client=client1, progress=False)),
        "dask, 2 workers, pre-started": (2, lambda: sweep(grid, route_point, client=client2, progress=False)),
    }
    best = {name: float("inf") for name in runs}
    reference = None
    with cluster1, client1, cluster2, client2:
        for _ in range(args.repeats):  # interleaved, so a busy machine slows every configuration alike
            for name, (_, run) in runs.items():
                t, df = _timed(run)
                best[name] = min(best[name], t)
                if reference is None:
                    reference = df
                pd.testing.assert_frame_equal(df, reference, check_exact=True)
        noop_grid = {"i": list(range(200))}
        t_noop = min(_timed(lambda: sweep(noop_grid, noop_point, client=client1, progress=False))[0]
                     for _ in range(args.repeats))
    rows = [(name, workers, best[name]) for name, (workers, _) in runs.items()]
    t_cold, df = _timed(lambda: sweep(grid, route_point, jobs=2, progress=False))
    pd.testing.assert_frame_equal(df, reference, check_exact=True)
    rows.append(("dask, 2 workers, cold (sweep(jobs=2), start-up included)", 2, t_cold))

    t_serial = rows[0][2]
    point_s = t_serial / n
    overhead_s = (rows[1][2] - t_serial) / n
    print(f"{n}-point grid ({len(POLICIES)} policies x {len(LOADS)} loads), {args.requests} requests/point, "
          f"{os.cpu_count()} cores, best of {args.repeats}, load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'configuration':58s} {'workers':>7s} {'wall s':>8s} {'speed-up':>8s}")
    for name, workers, t in rows:
        print(f"{name:58s} {workers:7d} {t:8.2f} {t_serial / t:8.2f}")
    print(f"mean point time (serial): {point_s * 1e3:.0f} ms")
    print(f"no-op point round trip on 1 worker: {t_noop / 200 * 1e3:.2f} ms "
          f"= {100 * t_noop / 200 / point_s:.1f}% of a point (target < 5%)")
    print(f"wall-clock overhead per point, 1 worker vs serial: {overhead_s * 1e3:.1f} ms "
          f"= {100 * overhead_s / point_s:.1f}% of a point")
    print("all dask results equal the serial DataFrame bit for bit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
