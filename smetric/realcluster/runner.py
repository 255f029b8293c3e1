"""Replay validation specs on the model and score the published numbers: ``smetric validate``.

For every spec, each router runs on the same generated requests (same generator seed; the policy's random draws
use the spec's seed too). Drained stage ladders (inference-perf: a stage is sent, *all* its requests finish, the
harness sleeps ``interval_s``, then the next stage starts; queues never carry over, the prefix cache does) are
replayed exactly: stage ``k``'s start is the simulated finish of stage ``k - 1`` plus the interval, found by
simulating stages ``0..k-1`` first (later arrivals cannot change earlier requests, so the prefix run is exact).
A spec replays a ladder only up to its last measured stage; replays are memoised within a run (the longest
first), so specs that measure different stages of one ladder share its simulations.

Quick mode (``quick=True``, the tests' mode) scales every stage's duration and request count by
:data:`QUICK_SCALE` and runs only the first trace seed of ``load.seeds``: same code paths, smaller runs, numbers
not comparable with the published ones.

Independent cold runs (``load.seeds`` with ``load.summary: seed-mean``): each router replays once per trace seed
(the seed of the workload and of the policy's random draws), and the summary is the mean of the per-run metrics
(:func:`run_metrics` holds the runs, :func:`seed_summary` their mean and sample s.d., as a report of mean +- s.d.
over seeds gives them).

A ``recorded-requests`` spec (a real run replayed exactly as recorded) is also scored request by request:
:func:`recorded_request_errors` pairs each modelled request with the recorded one and summarises the errors
(:func:`.metrics.recorded_request_summary`) beside LLMServingSim's own (``source.lss_error_pct``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..workload.harness import harness_workload
from .metrics import harness_metrics, recorded_request_summary, recorded_request_table
from .spec import ExperimentSpec, efficiency_overrides

__all__ = ["QUICK_SCALE", "cluster_for", "replay_router", "run_metrics", "seed_summary", "predict", "predict_cases",
           "predict_all", "recorded_request_errors"]

QUICK_SCALE = 0.1
_APART = 1e6  # s between stage starts in the generated ladder, before the drained starts replace them


def _scaled_load(load: dict, scale: float) -> dict:
    if scale == 1.0:
        return dict(load)
    stages = []
    for stage in load["stages"]:
        stage = dict(stage)
        if "duration" in stage:
            stage["duration"] = stage["duration"] * scale
        if "requests" in stage:
            stage["requests"] = max(1, int(round(stage["requests"] * scale)))
        stages.append(stage)
    return {**load, "stages": stages}


def cluster_for(spec: ExperimentSpec, label: str, *, closed: bool = False, engine=None):
    """The :class:`~smetric.cluster.ClusterConfig` of ``spec``'s cluster as router ``label`` sees it, with the router's
    own ``cluster`` keys over the spec's (``engine``: a serving-stack row name or
    :class:`~smetric.cluster.serving_stack.ServingStack` instead of the spec's own)."""
    from ..cluster.config import ClusterConfig
    from ..cluster.serving_stack import parse

    router = spec.routers[label]
    c = {**spec.cluster, **router.get("cluster", {})}
    extra = spec.engine_behaviour()
    if not c.get("chunked_prefill", True):  # vLLM V0 without chunked prefill: whole prompts, apart from the decodes
        extra.update(chunked_prefill=False, prefill_first=True)
    if engine is not None:
        extra["engine"] = parse(engine) if isinstance(engine, str) else engine
    if "router_info" in router:
        from ..cluster.router_info import RouterInfo

        extra["router"] = RouterInfo(**router["router_info"])
    return ClusterConfig(model=c["model"], gpu=c["gpu"], tp=int(c["tp"]), n_instances=int(c["instances"]),
                         max_num_seqs=int(c["max_num_seqs"]), max_batched_tokens=int(c["max_num_batched_tokens"]),
                         gpu_mem_util=float(c["gpu_memory_utilization"]), block_size=int(c["block_size"]),
                         dram_gb=float(c["cpu_offload"] or 0.0), dram_policy=c.get("dram_policy", "spill"),
                         replay="closed" if closed else "open",
                         weight_dtype=c["weight_dtype"], kv_dtype=c["kv_dtype"],
                         kv_capacity_tokens=None if c["kv_tokens"] is None else int(c["kv_tokens"]),
                         efficiency_overrides=efficiency_overrides(c),
                         hybrid_kv_manager=c.get("hybrid_kv_manager", True), **extra)


def replay_router(spec: ExperimentSpec, label: str, *, quick: bool = False, seed: int | None = None,
                  engine=None, upto: int | None = None) -> pd.DataFrame:
    """The simulated requests of router ``label`` (SimResult columns plus ``stage``), every stage; ``seed``: the
    run's trace seed (default ``workload.seed``); ``engine``: a serving-stack row instead of the spec's
    (:func:`cluster_for`); ``upto``: a drained ladder replays only its stages ``0..upto`` (the later ones cannot
    change them)."""
    from ..cluster.simulate import simulate

    load = _scaled_load(spec.load, QUICK_SCALE if quick else 1.0)
    kind, params = spec.workload["kind"], dict(spec.workload["params"])
    seed = int(spec.workload["seed"]) if seed is None else int(seed)
    router = spec.routers[label]
    policy, policy_params = router["policy"], dict(router.get("params") or {})
    stages = {"arrival": load["arrival"], "stages": load["stages"]}
    if not spec.drain:
        hw = harness_workload(kind, params, stages, seed)
        result = simulate(hw.workload, cluster_for(spec, label, closed=hw.closed, engine=engine), policy,
                          policy_params, seed=seed)
        return result.requests.assign(stage=hw.stage)
    n_stages = len(load["stages"])
    last = n_stages - 1 if upto is None else min(int(upto), n_stages - 1)
    apart = _APART * np.arange(n_stages)  # stages far apart: no stage's sends can run into the next one's
    hw = harness_workload(kind, params, stages, seed, stage_starts=list(apart))
    cluster = cluster_for(spec, label, closed=hw.closed, engine=engine)
    interval = float(spec.load.get("interval_s", 1.0))
    starts = np.zeros(n_stages)
    for k in range(last + 1):
        rows = int(np.searchsorted(hw.stage, k, side="right"))
        head = hw.workload.head(rows)
        arrival = head.arrival + (starts - apart)[hw.stage[:rows]]
        result = simulate(dataclasses.replace(head, arrival=arrival), cluster, policy, policy_params, seed=seed)
        requests = result.requests.assign(stage=hw.stage[:rows])
        if k < last:
            mine = requests[requests["stage"] == k]
            end = float(mine["finish"].fillna(mine["arrival"]).max()) if len(mine) else starts[k]
            starts[k + 1] = end + interval
    return requests


#: ``source.lss_error_pct`` keys per quantity of :func:`recorded_request_errors`: (median, mean).
_LSS_KEYS = {"ttft": ("ttft_p50_s", "ttft_mean_s"), "tpot": ("tpot_p50_s", "tpot_mean_s"),
             "latency": ("e2e_p50_s", "e2e_mean_s")}


def recorded_request_errors(spec: ExperimentSpec, *, quick: bool = False, label: str | None = None
                            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A ``recorded-requests`` spec replayed (router ``label``, default the baseline) and paired with the recorded
    run request by request: the per-request table (:func:`.metrics.recorded_request_table`) and its summary, with
    LLMServingSim's published signed errors on the same run (``lss_median_error``, ``lss_mean_error``) beside it."""
    from ..workload.recorded import bundle_of

    if spec.workload["kind"] != "recorded-requests":
        raise ValueError(f"{spec.path}: workload.kind: request-by-request scoring needs recorded-requests, "
                         f"got {spec.workload['kind']!r}")
    label = spec.baseline if label is None else label
    table = recorded_request_table(replay_router(spec, label, quick=quick), bundle_of(spec.workload["params"]))
    summary = recorded_request_summary(table)
    lss = spec.source.get("lss_error_pct", {}) or {}
    for column, pick in (("lss_median_error", 0), ("lss_mean_error", 1)):
        summary[column] = [lss.get(_LSS_KEYS[q][pick], np.nan) / 100.0 if q in _LSS_KEYS else np.nan
                           for q in summary["quantity"]]
    return table, summary


def _key(spec: ExperimentSpec, label: str, quick: bool, seed: int, engine=None) -> str:
    load = {k: v for k, v in spec.load.items() if k not in ("measured_stages", "seeds", "summary")}
    return json.dumps([spec.cluster, {**spec.workload, "seed": seed}, load, spec.routers[label], quick, engine],
                      sort_keys=True, default=str)


def _run_summary(spec: ExperimentSpec, requests: pd.DataFrame) -> dict[str, float]:
    """One run's metrics over the measured stages, each by its rule (:meth:`ExperimentSpec.summary_of`): pooled
    over the stages' requests, or the mean of the per-stage metrics (a report's summary row as the mean of its
    per-stage rows)."""
    pooled = harness_metrics(requests[requests["stage"].isin(spec.measured_stages)], spec.harness,
                             spec.client_output_mean)
    if all(spec.summary_of(m) != "stage-mean" for m in pooled):
        return pooled
    per_stage = [harness_metrics(requests[requests["stage"] == k], spec.harness, spec.client_output_mean)
                 for k in spec.measured_stages]
    return {m: float(np.mean([v[m] for v in per_stage])) if spec.summary_of(m) == "stage-mean" else pooled[m]
            for m in pooled}


def run_metrics(spec: ExperimentSpec, label: str, *, quick: bool = False, cache: dict | None = None,
                engine=None) -> pd.DataFrame:
    """Router ``label``'s metrics per independent run: one row per trace seed (:meth:`ExperimentSpec.run_seeds`,
    the index), one column per metric. Replays are memoised in ``cache`` (a drained ladder up to its last measured
    stage; a longer replay of the same ladder serves a shorter one)."""
    cache = {} if cache is None else cache
    upto = max(spec.measured_stages) if spec.drain else None
    rows = {}
    for seed in spec.run_seeds(quick):
        key = _key(spec, label, quick, seed, engine)
        held = cache.get(key)
        if held is None or (upto is not None and held[0] < upto):
            held = cache[key] = (upto, replay_router(spec, label, quick=quick, seed=seed, engine=engine, upto=upto))
        rows[seed] = _run_summary(spec, held[1])
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("seed")


def seed_summary(spec: ExperimentSpec, *, quick: bool = False, cache: dict | None = None) -> pd.DataFrame:
    """Mean and sample s.d. (n - 1; NaN for one run) of each router's per-run metrics: one row per (router,
    metric), columns ``router, metric, runs, mean, sd``."""
    rows = []
    for label in spec.routers:
        runs = run_metrics(spec, label, quick=quick, cache=cache)
        for metric in runs.columns:
            values = runs[metric].to_numpy(dtype=float)
            rows.append({"router": label, "metric": metric, "runs": len(values), "mean": float(values.mean()),
                         "sd": float(values.std(ddof=1)) if len(values) > 1 else float("nan")})
    return pd.DataFrame(rows, columns=["router", "metric", "runs", "mean", "sd"])


def predict(spec: ExperimentSpec, *, quick: bool = False, cache: dict | None = None, engine=None
            ) -> dict[str, dict[str, float]]:
    """Predicted metrics of every router of ``spec`` over its measured stages: ``{label: {metric: value}}`` (with
    ``load.seeds``: the mean over the independent runs, one per seed)."""
    cache = {} if cache is None else cache
    return {label: {m: float(v) for m, v in run_metrics(spec, label, quick=quick, cache=cache, engine=engine)
                    .mean(skipna=False).items()} for label in spec.routers}


def _predict_chunk(cases: list[tuple[ExperimentSpec, object]], quick: bool) -> list:
    """A worker's share of :func:`predict_cases`: ``(spec, engine)`` pairs (the specs as checked, changed ones
    included), one replay cache."""
    cache: dict = {}
    return [predict(spec, quick=quick, cache=cache, engine=engine) for spec, engine in cases]


def predict_cases(cases: Sequence[tuple[ExperimentSpec, object]], *, quick: bool = False, jobs: int = 1,
                  progress: bool = False) -> list[dict[str, dict[str, float]]]:
    """Predicted metrics of each ``(spec, engine)`` case, in order: ``{router: {metric: value}}`` (``engine``: a
    serving-stack row, by name, as ``ROW:FIELD=VALUE,...`` or a :class:`ServingStack`, instead of the spec's own;
    ``None``: the spec's own). ``jobs`` worker processes; cases that share a ladder and an engine go to the same
    worker, so its replays are shared."""
    from tqdm.auto import tqdm

    # the longest replay of a drained ladder first: the specs measuring its earlier stages reuse it
    def reach(i: int) -> int:
        return -max(cases[i][0].measured_stages) if cases[i][0].drain else 0

    out: list = [None] * len(cases)
    if jobs <= 1 or len(cases) <= 1:
        cache: dict = {}
        for i in tqdm(sorted(range(len(cases)), key=reach), desc="validate", unit="spec", disable=not progress):
            out[i] = predict(cases[i][0], quick=quick, cache=cache, engine=cases[i][1])
        return out
    from concurrent.futures import ProcessPoolExecutor

    groups: dict[str, list[int]] = {}
    for i, (spec, engine) in enumerate(cases):  # one group per workload + cluster + engine: one ladder replays once
        key = json.dumps([spec.workload, spec.cluster, engine], sort_keys=True, default=str)
        groups.setdefault(key, []).append(i)
    chunks: list[list[int]] = [[] for _ in range(jobs)]
    for members in sorted(groups.values(), key=len, reverse=True):
        min(chunks, key=len).extend(members)
    chunks = [sorted(c, key=reach) for c in chunks if c]
    with ProcessPoolExecutor(jobs) as pool:
        parts = pool.map(_predict_chunk, [[cases[i] for i in c] for c in chunks],
                         [quick] * len(chunks))
        for chunk, part in tqdm(zip(chunks, parts), total=len(chunks), desc="validate", unit="worker",
                                disable=not progress):
            for i, predicted in zip(chunk, part):
                out[i] = predicted
    return out


def predict_all(specs: Sequence[ExperimentSpec], *, quick: bool = False, jobs: int = 1, progress: bool = False,
                engine=None) -> dict[str, dict[str, dict[str, float]]]:
    """Predicted metrics of every spec: ``{experiment: {router: {metric: value}}}`` (:func:`predict_cases` with one
    ``engine`` for every spec, ``None``: each spec's own)."""
    predicted = predict_cases([(spec, engine) for spec in specs], quick=quick, jobs=jobs, progress=progress)
    return {spec.name: p for spec, p in zip(specs, predicted)}
