"""``simulate(workload, cluster, policy)``: the library's entry point to the cluster engine."""

from __future__ import annotations

import dataclasses
import time

from ..workload.core import Workload
from .config import ClusterConfig
from .connector import KVConnector
from .inputs import prepare
from .queueing import QueueDiscipline
from .result import SimResult, build_result

__all__ = ["simulate", "ENGINES"]

ENGINES = ("numba", "reference")


def simulate(workload: Workload, cluster: ClusterConfig, policy: str = "round-robin", params: dict | None = None,
             *, load: float = 1.0, seed: int = 0, engine: str = "numba", progress: bool | None = None,
             n_samples: int = 200, queue: QueueDiscipline | str | None = None,
             kv_connector: KVConnector | str | None = None) -> SimResult:
    """Replay ``workload`` on ``cluster`` with routing ``policy`` and return a :class:`SimResult`.

    Args:
        workload: the requests (any block size; coarsened to the cluster's engine block).
        cluster: instances, limits, KV tiers, SLO and replay mode.
        policy: a registered policy name (``_`` may stand for ``-``); ``params`` overrides its defaults.
        load: arrival-rate multiplier (trace times and think gaps are divided by it).
        seed: seeds the random numbers a policy may draw (same seed, same result).
        engine: ``numba`` (default) or ``reference`` (the slow pure-Python oracle).
        progress: show a progress bar (default: only for runs of >= 100,000 requests).
        n_samples: slots of the per-instance time series (>= 2); the samples cover first arrival to
            last finish with between ``n_samples / 2`` and ``n_samples`` points (:mod:`.sampling`).
        queue: the instances' queue discipline (a :class:`QueueDiscipline` or a name); None keeps
            ``cluster.queue`` (default FCFS).
        kv_connector: the KV connector to the global store (a :class:`KVConnector` or a preset name);
            None keeps ``cluster.kv_connector`` (default ``ideal``).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if not isinstance(cluster, ClusterConfig):
        raise TypeError(f"cluster must be a ClusterConfig, got {type(cluster).__name__}")
    if queue is not None:
        cluster = dataclasses.replace(cluster, queue=queue)
    if kv_connector is not None:
        cluster = dataclasses.replace(cluster, kv_connector=kv_connector)
    inp = prepare(workload, cluster, policy, params, load=load, seed=seed, n_samples=n_samples)
    if progress is None:
        progress = inp.n >= 100_000
    if engine == "reference":
        from .reference import run_reference as run
    else:
        from .engine import ensure_compiled, run_engine

        ensure_compiled()  # wall_time measures the simulation, not numba's compilation

        def run(inp):
            return run_engine(inp, progress=progress)
    start = time.perf_counter()
    raw = run(inp)
    wall = time.perf_counter() - start
    return build_result(raw, inp, cluster, policy=policy, params=params, load=load, seed=seed,
                        engine=engine, wall_time=wall)
