"""The paper's experimental setups, shared by every figure: clusters, the agent workload, sizes, one sweep point.

Testbeds (the paper's Evaluation section, arXiv 2607.08565):

* ``30b``: 32 instances of Qwen3-Coder-30B-A3B (the model shape of ``qwen3-30b-a3b``), TP 1 on
  H20 96 GB — the LMetric group's testbed GPU; the SMetric paper does not state GPU or TP.
* ``235b``: 8 instances of Qwen3-235B-A22B. Our choice: TP 8 on H20 (one 8-GPU node per
  instance; 470 GB of bf16 weights leave ~230 GB of KV per instance). The paper does not say.

Both are colocated with a provisioned global KV store (Mooncake + LMCache in the paper) unless a
figure says otherwise. Workloads are the calibrated synthetic agent sessions (the paper's
BAILIAN agent traces are not public).

**Offered load** (every figure): requests per minute per instance, set by how many sessions
start per unit time (:func:`offered_point`); the tool/think gaps between turns stay as generated,
so the calibrated reuse-in-time (paper Finding 4: ~90 % of reuses within ~100 s) holds at every
load. Compressing a fixed trace's timeline instead (``simulate(load=x)``) would also stretch or
shrink those gaps and change the workload along with the load.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..cluster.config import ClusterConfig, GlobalStore
from ..workload.core import Workload

__all__ = ["TESTBEDS", "REFERENCE_RPM", "paper_cluster", "agent_workload", "run_point",
           "offered_point", "BASELINES", "PROVISIONED"]

#: ``paper_cluster``'s default store: the testbed's provisioned global store (``GlobalStore.provisioned``).
PROVISIONED = "provisioned"

# name -> (model, gpu, tp, instances)
TESTBEDS = {
    "30b": ("qwen3-30b-a3b", "h20", 1, 32),
    "235b": ("qwen3-235b-a22b", "h20", 8, 8),
}

# The routers SMETRIC is compared against in the evaluation figures (registry names).
BASELINES = ("lmetric", "bailian", "dynamo", "sglang", "llm-d", "vllm-prefix", "vllm-session",
             "aibrix", "preble", "mooncake", "least-load", "round-robin", "session-sticky",
             "cache-affinity")


def paper_cluster(testbed: str = "30b", *, n_instances: int | None = None,
                  global_store: GlobalStore | None | str = PROVISIONED, **overrides) -> ClusterConfig:
    """The cluster of a paper testbed; ``global_store`` is a :class:`GlobalStore`, ``None`` (no store) or
    :data:`PROVISIONED` (``GlobalStore.provisioned`` for the testbed's TP, the default)."""
    if testbed not in TESTBEDS:
        raise ValueError(f"testbed must be one of {sorted(TESTBEDS)}, got {testbed!r}")
    model, gpu, tp, n = TESTBEDS[testbed]
    if isinstance(global_store, str):
        if global_store != PROVISIONED:
            raise TypeError(f"global_store must be a GlobalStore, None or {PROVISIONED!r}, got {global_store!r}")
        global_store = GlobalStore.provisioned(tp)
    elif global_store is not None and not isinstance(global_store, GlobalStore):
        raise TypeError(f"global_store must be a GlobalStore, None or {PROVISIONED!r}, got {global_store!r}")
    cfg = ClusterConfig(model=model, gpu=gpu, tp=tp, n_instances=n_instances or n, global_store=global_store)
    return replace(cfg, **overrides) if overrides else cfg


#: Offered loads at or below this many requests/min/instance are thinned from one workload
#: generated at this rate (the top of the paper's 43-48 requests/min/instance, Finding 6).
REFERENCE_RPM = 48.0


@lru_cache(maxsize=4)
def _generated(n_instances: int, minutes: float, seed: int, rpm_per_instance: float, warmup_minutes: float,
               preset: str, overrides: tuple) -> Workload:
    from ..workload.synthetic import synth_agent_workload

    return synth_agent_workload(duration=60.0 * minutes, warmup=60.0 * warmup_minutes, seed=seed, preset=preset,
                                requests_per_minute=rpm_per_instance * n_instances, **dict(overrides))


@lru_cache(maxsize=16)
def agent_workload(n_instances: int, minutes: float, seed: int = 0, rpm_per_instance: float = 45.0,
                   warmup_minutes: float = 30.0, preset: str = "long-context", **overrides) -> Workload:
    """Synthetic sessions of ``preset`` (:data:`smetric.workload.synthetic.PRESETS`) arriving at
    ``rpm_per_instance × n_instances`` requests per minute.

    The window ``[0, minutes)`` is cut from sessions that started up to ``warmup_minutes`` before
    it, so follow-ups in the window belong to sessions already under way (as in a real trace).
    Loads up to :data:`REFERENCE_RPM` are **thinned** from one workload generated at that rate:
    each session is kept when its own seeded uniform is below ``rpm / REFERENCE_RPM``. Thinning a
    Poisson stream of independent sessions gives a Poisson stream at the lower rate, and a lower
    load is then a subset of a higher one (common random numbers), so curves over load are smooth
    and not redrawn at every rate. Higher loads are generated directly. Cached per argument set.
    """
    if not rpm_per_instance > 0:
        raise ValueError(f"rpm_per_instance must be > 0, got {rpm_per_instance!r}")
    key = tuple(sorted(overrides.items()))
    if rpm_per_instance > REFERENCE_RPM:
        return _generated(n_instances, minutes, seed, rpm_per_instance, warmup_minutes, preset, key)
    full = _generated(n_instances, minutes, seed, REFERENCE_RPM, warmup_minutes, preset, key)
    sessions, index = np.unique(full.session, return_inverse=True)
    keep_session = np.random.default_rng([seed, 0x7417]).random(len(sessions)) < rpm_per_instance / REFERENCE_RPM
    return full.select(keep_session[index])


def run_point(workload: Workload, cluster: ClusterConfig, policy: str, load: float = 1.0, seed: int = 0,
              params: dict | None = None, warmup_frac: float = 0.0, **param_overrides) -> dict:
    """One simulation → its summary dict (a module-level function, so sweeps can ship it to workers).

    ``params`` and any ``param_*`` keywords (``param_hit_ratio=0.7`` → ``hit_ratio``) are policy
    parameters. ``warmup_frac`` of the (load-scaled) arrival span is simulated but not measured.
    The engine's wall time is left out, so a sweep's results depend only on its inputs.
    """
    from ..cluster.simulate import simulate

    merged = dict(params or {})
    for key, val in param_overrides.items():
        if not key.startswith("param_"):
            raise TypeError(f"run_point() got an unexpected keyword {key!r}")
        merged[key[len("param_"):]] = val
    if not 0.0 <= warmup_frac < 1.0:
        raise ValueError(f"warmup_frac must be in [0, 1), got {warmup_frac!r}")
    result = simulate(workload, cluster, policy, merged or None, load=load, seed=seed, progress=False)
    arrivals = result.requests["arrival"]
    since = float(arrivals.min() + warmup_frac * (arrivals.max() - arrivals.min())) if warmup_frac else None
    summary = result.summary(since=since)
    summary.pop("wall_time_s")  # a timing, not a result: figure CSVs stay byte-identical across runs
    return summary


def offered_point(rpm_per_instance: float, policy: str, *, testbed: str = "30b", n_instances: int | None = None,
                  minutes: float = 10.0, seed: int = 0, warmup_frac: float = 0.25,
                  global_store: GlobalStore | None | str = PROVISIONED, params: dict | None = None,
                  cluster_overrides: dict | None = None, workload_overrides: dict | None = None) -> dict:
    """Summary of ``policy`` at an offered load of ``rpm_per_instance`` requests/min/instance (a sweep point).

    The workload is generated at that rate (cached per worker process) and replayed as is
    (``load=1``); ``seed`` picks the workload and seeds the policy's random draws.
    """
    cluster = paper_cluster(testbed, n_instances=n_instances, global_store=global_store,
                            **(cluster_overrides or {}))
    workload = agent_workload(cluster.n_instances, minutes, seed, rpm_per_instance=float(rpm_per_instance),
                              **(workload_overrides or {}))
    return run_point(workload, cluster, policy, load=1.0, seed=seed, params=params, warmup_frac=warmup_frac)
