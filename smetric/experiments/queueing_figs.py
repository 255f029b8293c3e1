"""Figure 12: queue disciplines inside an instance where queues form (fcfs vs the S-Metric score vs MLFQ).

The router decides where a turn runs, the queue discipline when (:mod:`smetric.cluster.queueing`). A
discipline can only matter where requests wait for admission, so both experiments run where they do:

* ``stream`` (:func:`stream_comparison`): one 30B instance, open replay, fed Poisson short turns near and past
  its capacity plus a long turn every few seconds (:func:`short_long_stream`; no cache reuse): the
  single-instance overload stream;
* ``cluster`` (:func:`cluster_comparison`): the 30B testbed in open replay fed the agent workload (or the real
  claude-code trace) near and past each instance's knee, routed by SMETRIC.

Each point runs every queue configuration of :data:`QUEUES` (the disciplines, the ranked ones with the
``oracle`` and the ``linear`` estimator) at each high-priority share (:mod:`smetric.workload.priority`), on
the same workload seed (paired). :func:`promise_claims` judges the S-Metric blueprint's promises with the
package's verdict rules (:mod:`smetric.verdicts`, paired per seed, 95 % t-intervals, Holm over
each promise's points):

* ``B1_session_jct_lower``: session completion time lower than FCFS -- per seed
  ``1 - session_time_mean / fcfs's`` (rule ``positive``: reproduced when significantly > 0);
* ``B2_no_starvation``: the p99 queue wait of long turns (top decile of GPU time) bounded. **The bound, stated
  before running: at most 1.5x FCFS's** -- per seed ``long_wait_p99 / fcfs's - 1``, upper bound +0.5;
* ``B3_priority_latency_lower``: the high-priority tier's latency lowered -- its mean turn latency over the
  normal tier's in the same run (``tier_ratio``) against FCFS's ratio on the same seed (FCFS ignores
  priority, so its ratio is what the tiers' own sessions cost): per seed ``1 - tier_ratio / fcfs's`` (share
  > 0; rule ``positive``). The ratio, not the raw tier latency, because the tiers are different sessions.

The priority weight ``beta`` = :data:`PRIORITY_BETA` is an assumption (the blueprint gives no value): it
adds 10 to a high-priority request's score, against urgency ``alpha / E[T]`` of ~0.1-20 and waiting
``gamma * L / L_max`` of ~0-1 at the defaults.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..cluster.queueing import QueueDiscipline, decode_estimates
from ..hardware.kernel import prefill_time_nb
from ..testbeds import DEFAULT_WORKLOAD, WORKLOADS, agent_workload, paper_cluster
from ..verdicts import combine_verdicts, gain_interval, parse_paper_value, point_table
from ..workload.core import Workload
from ..workload.priority import with_priority
from .sweep import sweep

__all__ = ["QUEUES", "PRIORITY_BETA", "STARVATION_BOUND", "METRICS", "PROMISES", "gpu_time", "short_long_stream",
           "stream_comparison", "cluster_comparison", "comparison_table", "promise_claims", "plot_queue_discipline",
           "queue_findings"]

#: (discipline, estimator) of every queue configuration a point runs; fcfs first (the comparator).
QUEUES = (("fcfs", "oracle"), ("smetric-score", "oracle"), ("smetric-score", "linear"), ("mlfq", "oracle"),
          ("mlfq", "linear"))
PRIORITY_BETA = 10.0  # an assumption: see the module docstring
STARVATION_BOUND = 0.5  # B2: long turns' p99 wait at most (1 + this) x FCFS's, stated before the run
LONG_QUANTILE = 0.9  # "long turns": GPU time at or above this quantile of the measured turns
#: metrics a point reports (and their labels in the figure)
METRICS = {
    "session_time_mean": "session completion time, mean (s)",
    "long_wait_p99": "long turns: queue wait p99 (s)",
    "tier_ratio": "high-tier / normal-tier mean latency",
    "goodput_tps": "goodput (k tokens/s)",
}
#: promise id -> (the blueprint's words, the rule's paper value, the metric, how the per-seed gain is taken)
PROMISES = {
    "B1_session_jct_lower": ("session completion time lower than FCFS", "robust", "session_time_mean", "lower"),
    "B2_no_starvation": (f"p99 queue wait of long turns at most {1 + STARVATION_BOUND:g}x FCFS's",
                         f"+{STARVATION_BOUND}", "long_wait_p99", "ratio"),
    "B3_priority_latency_lower": ("high-priority tier's latency lowered (relative to the normal tier, vs fcfs)",
                                  "robust", "tier_ratio", "lower"),
}
_POINT = ["part", "workload", "regime", "share"]  # a point, where FCFS is the comparator
_KEYS = [*_POINT, "queue", "estimator"]


def gpu_time(requests: pd.DataFrame, coef: np.ndarray) -> np.ndarray:
    """Each turn's GPU time as the S score estimates it: prefill of its computed tokens + true decode time."""
    new = requests["prefill_tokens"].to_numpy(dtype=float)
    cached = requests["input_len"].to_numpy(dtype=float) - new
    prefill = np.array([prefill_time_nb(coef, n, c) for n, c in zip(new, cached)])
    return prefill + decode_estimates(coef, requests["input_len"].to_numpy(), requests["output_len"].to_numpy())


def short_long_stream(seed: int, duration: float = 120.0, short_rate: float = 24.0, long_every: float = 4.0,
                      short: tuple[int, int] = (600, 30), long: tuple[int, int] = (12_000, 300),
                      block_size: int = 256, output_sigma: float = 0.0) -> Workload:
    """Single-turn requests: Poisson short turns (``short_rate``/s) and a long one every ``long_every`` s.

    ``short`` / ``long`` are (prompt tokens, median output tokens); with ``output_sigma`` > 0 each output is
    log-normal around its median (drawn from a stream of its own: the arrivals stay those of sigma 0), so a
    decode estimate from past outputs can be wrong where the oracle is not. No two requests share a block.
    """
    if not (duration > 0 and short_rate > 0 and long_every > 0):
        raise ValueError(f"duration, short_rate and long_every must be > 0, got {duration}, {short_rate}, {long_every}")
    rng = np.random.default_rng(seed)
    t_short = np.cumsum(rng.exponential(1.0 / short_rate, int(short_rate * duration * 1.5) + 10))
    t_short = t_short[t_short < duration]
    t_long = np.arange(0.5 * long_every, duration, long_every)
    arrival = np.concatenate([t_short, t_long])
    is_long = np.concatenate([np.zeros(len(t_short), bool), np.ones(len(t_long), bool)])
    order = np.argsort(arrival, kind="stable")
    arrival, is_long = arrival[order], is_long[order]
    n = len(arrival)
    input_len = np.where(is_long, long[0], short[0]).astype(np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(-(-input_len // block_size), out=offsets[1:])
    output = np.where(is_long, long[1], short[1]).astype(float)
    if output_sigma > 0:
        output *= np.random.default_rng([seed, 1]).lognormal(0.0, output_sigma, n)
    return Workload(arrival=arrival, input_len=input_len, output_len=np.maximum(np.round(output), 1).astype(np.int64),
                    session=np.arange(n), turn=np.ones(n, dtype=np.int64), parent=np.full(n, -1), gap=np.zeros(n),
                    block_offsets=offsets, block_ids=np.arange(offsets[-1]), block_size=block_size,
                    name="short-long-stream")


def _measure(served: Workload, queue: str, estimator: str, router: str, seed: int, since: float,
             **cluster) -> dict:
    """The figure's metrics of ``served`` routed by ``router`` on the 30B testbed (``cluster``: more
    :func:`~smetric.testbeds.paper_cluster` keywords) under one queue configuration, over the requests scheduled
    at or after ``since``."""
    from ..cluster.simulate import simulate

    discipline = QueueDiscipline("fcfs") if queue == "fcfs" else \
        QueueDiscipline(queue, beta=PRIORITY_BETA, estimator=estimator)
    result = simulate(served, paper_cluster("30b", queue=discipline, **cluster), router, seed=seed, progress=False)
    summary = result.summary(since=since)
    kpis = result.kpis(since=since)
    rq = result.measured(since)
    wait = (rq["admit"] - rq["arrival"]).to_numpy()
    admitted = ~np.isnan(wait)
    est = gpu_time(rq, result.cluster.hardware_spec().coef_array)
    long = est >= np.quantile(est[admitted], LONG_QUANTILE) if admitted.any() else np.zeros(len(rq), bool)
    done = (rq["status"] == "completed").to_numpy()
    latency = (rq["finish"] - rq["arrival"]).to_numpy()
    high = served.priority[rq.index.to_numpy()] > 1.0

    def mean(mask):
        return float(latency[mask].mean()) if mask.any() else np.nan

    def wait_p99(mask):
        return float(np.percentile(wait[mask & admitted], 99)) if (mask & admitted).any() else np.nan

    high_lat, normal_lat = mean(done & high), mean(done & ~high)
    return {**{k: summary[k] for k in ("session_time_mean", "session_time_p99", "latency_p50", "latency_p99",
                                       "queue_wait_p99", "queue_wait_max")},
            "long_wait_p99": wait_p99(long), "short_wait_p99": wait_p99(~long), "high_latency_mean": high_lat,
            "normal_latency_mean": normal_lat, "tier_ratio": high_lat / normal_lat if normal_lat > 0 else np.nan,
            **{k: summary[k] for k in ("goodput_tps", "throughput_tps", "n_sessions_completed")},
            **{k: kpis[k] for k in ("sessions_per_s", "gpu_busy_cv_instances")},
            "estimator_mae_s": summary.get("estimator_mae_s", np.nan)}


def _stream_point(short_rate: float, queue: str, estimator: str, share: float, seed: int, *, duration: float,
                  long_every: float, output_sigma: float, warmup_frac: float) -> dict:
    """One queue configuration on one 30B instance fed :func:`short_long_stream` (a sweep point)."""
    served = with_priority(short_long_stream(seed, duration, short_rate, long_every, output_sigma=output_sigma),
                           share, seed=seed)
    return _measure(served, queue, estimator, "round-robin", seed, warmup_frac * duration, n_instances=1,
                    global_store=None)


def _cluster_point(rpm: float, queue: str, estimator: str, share: float, seed: int, *, n_instances: int,
                   minutes: float, warmup_frac: float, workload: str, router: str, reference_rpm: float) -> dict:
    """One queue configuration on the 30B testbed (open replay) fed the agent workload (a sweep point)."""
    served = with_priority(agent_workload(n_instances, minutes, seed, rpm_per_instance=float(rpm),
                                          preset=workload, reference_rpm=float(reference_rpm)), share, seed=seed)
    t0, t1 = float(served.arrival.min()), float(served.arrival.max())
    return _measure(served, queue, estimator, router, seed, t0 + warmup_frac * (t1 - t0), n_instances=n_instances,
                    replay="open")


def _check(regimes: Sequence[float], shares: Sequence[float], seeds: Sequence[int], warmup_frac: float) -> None:
    if not regimes or min(regimes) <= 0:
        raise ValueError(f"loads must be positive, got {list(regimes)}")
    if not shares or min(shares) < 0 or max(shares) > 1:
        raise ValueError(f"high-priority shares must lie in [0, 1], got {list(shares)}")
    if len(seeds) < 1:
        raise ValueError("at least one seed is needed")
    if not 0.0 <= warmup_frac < 1.0:
        raise ValueError(f"warmup_frac must be in [0, 1), got {warmup_frac!r}")


def _run(point, loads, shares, seeds, load_key: str, unit: str, shared: dict, jobs: int | None, **labels):
    """``point`` at every load (column ``load_key``), queue configuration, share and seed, labelled with ``labels``
    and ``regime`` (``"<load> <unit>"``). Seed outermost: consecutive points share a seed's generated workload
    (testbeds' cache)."""
    grid = [{load_key: float(x), "queue": q, "estimator": e, "share": float(s), "seed": int(seed)}
            for seed in seeds for x in loads for q, e in QUEUES for s in shares]
    df = sweep(grid, point, shared=shared, jobs=jobs, on_error="raise")
    return df.assign(**labels, regime=[f"{r:g} {unit}" for r in df[load_key]])


def stream_comparison(short_rates: Sequence[float] = (16.0, 22.0), shares: Sequence[float] = (0.0, 0.2),
                      seeds: Sequence[int] = tuple(range(8)), *, duration: float = 60.0, long_every: float = 4.0,
                      output_sigma: float = 1.0, warmup_frac: float = 0.25, jobs: int | None = None) -> pd.DataFrame:
    """Tidy frame: one row per (short_rate, queue, estimator, share, seed) of the single-instance stream."""
    _check(short_rates, shares, seeds, warmup_frac)
    shared = dict(duration=float(duration), long_every=float(long_every), output_sigma=float(output_sigma),
                  warmup_frac=float(warmup_frac))
    return _run(_stream_point, short_rates, shares, seeds, "short_rate", "shorts/s", shared, jobs, part="stream",
                workload="short-long-stream")


def cluster_comparison(loads: Sequence[float] = (64.0, 80.0), shares: Sequence[float] = (0.0, 0.2),
                       seeds: Sequence[int] = tuple(range(8)), *, n_instances: int = 4, minutes: float = 3.0,
                       warmup_frac: float = 0.25, workload: str = DEFAULT_WORKLOAD, router: str = "smetric",
                       jobs: int | None = None) -> pd.DataFrame:
    """Tidy frame: one row per (rpm, queue, estimator, share, seed) of the 30B testbed in open replay."""
    _check(loads, shares, seeds, warmup_frac)
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    shared = dict(n_instances=int(n_instances), minutes=float(minutes), warmup_frac=float(warmup_frac),
                  workload=workload, router=router, reference_rpm=float(max(loads)))
    return _run(_cluster_point, loads, shares, seeds, "rpm", "rpm/inst", shared, jobs, part="cluster",
                workload=workload)


def comparison_table(df: pd.DataFrame) -> pd.DataFrame:
    """Seed means per (part, workload, regime, share, queue, estimator) of the figure's metrics."""
    cols = [c for c in (*METRICS, "session_time_p99", "short_wait_p99", "queue_wait_p99", "high_latency_mean",
                        "normal_latency_mean", "estimator_mae_s") if c in df]
    return df.groupby(_KEYS, sort=False)[cols].mean().reset_index()


def _paired(df: pd.DataFrame, metric: str, how: str) -> pd.DataFrame:
    """Per point (every non-FCFS configuration) and seed: the promise's gain, paired with FCFS of that seed."""
    base = df[df["queue"] == "fcfs"].set_index([*_POINT, "seed"])[metric]
    rows = df[df["queue"] != "fcfs"]
    ref = base.reindex(pd.MultiIndex.from_frame(rows[[*_POINT, "seed"]])).to_numpy(dtype=float)
    ours = rows[metric].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(ref > 0, 1.0 - ours / ref if how == "lower" else ours / ref - 1.0, np.nan)
    return rows[[*_KEYS, "seed"]].assign(gain=gain)


def promise_claims(df: pd.DataFrame) -> pd.DataFrame:
    """The blueprint's promises judged by the verdict rules: one row per promise point (module docstring).

    Columns: ``figure, claim_id`` and :func:`~smetric.verdicts.point_table`'s, ``claim_verdict``
    (the weakest point's), ``reason`` (the promise and how its gain is taken). A seed whose gain is undefined
    (FCFS's value 0, an empty tier) is left out of that point's n.
    """
    parts = []
    for claim, (words, paper_text, metric, how) in PROMISES.items():
        paper = parse_paper_value(paper_text, "relative change (upper bound)" if how == "ratio" else "")
        gains = _paired(df, metric, how).dropna(subset=["gain"])
        groups = [(key, g) for key, g in gains.groupby(_KEYS, sort=False) if len(g) >= 2]
        if not groups:
            continue
        intervals = [gain_interval(g["gain"]) for _, g in groups]
        labels = [f"{w}, {r}, high share {s:g}, {q}/{e}" for (_, w, r, s, q, e), _ in groups]
        table = point_table(paper, [iv.mean for iv in intervals], [iv.low for iv in intervals],
                            [iv.high for iv in intervals], [iv.n for iv in intervals], labels, ["fcfs"] * len(groups))
        how_text = {"lower": f"per seed 1 - {metric} / fcfs's", "ratio": f"per seed {metric} / fcfs's - 1"}[how]
        table.insert(0, "claim_id", claim)
        table.insert(0, "figure", "fig12")
        table["claim_verdict"] = combine_verdicts(list(table["verdict"]))
        table["reason"] = f"blueprint promise: {words}; {how_text}; paired per workload seed, 95 % t-interval, " \
                          f"Holm over the {len(groups)} points"
        parts.append(table)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def plot_queue_discipline(df: pd.DataFrame):
    """One row of panels per (part, workload): the four metrics per regime (colour = queue/estimator, panels'
    x = regime; high-priority share 0.2 where run, else the first share)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..plotting import set_style

    set_style()
    frame = df.assign(config=df["queue"] + "/" + df["estimator"], goodput_tps=df["goodput_tps"] / 1e3)
    rows = list(frame.groupby(["part", "workload"], sort=False))
    fig, axes = plt.subplots(len(rows), 4, figsize=(18, 3.9 * len(rows)), squeeze=False)
    order = [f"{q}/{e}" for q, e in QUEUES]
    for i, ((part, workload), g) in enumerate(rows):
        share = 0.2 if (g["share"] == 0.2).any() else g["share"].min()
        g = g[g["share"] == share]
        for ax, (metric, label) in zip(axes[i], METRICS.items()):
            sns.barplot(data=g, x="regime", y=metric, hue="config", hue_order=order, errorbar=("ci", 95), ax=ax,
                        seed=0, legend=i == 0 and metric == "session_time_mean")  # seeded bootstrap: same image
            ax.set(xlabel="", ylabel=label, title=f"{part}: {workload} (high share {share:g})")
    fig.suptitle("Queue disciplines where queues form (30B): fcfs vs S-score vs MLFQ, oracle vs linear decode "
                 "estimate. Bars: seed means, 95 % bootstrap intervals over the workload seeds (unpaired; the "
                 "seed-paired verdicts are in fig12_claims.csv)")
    fig.tight_layout()
    return fig


def _change(new: float, old: float) -> str:
    return f"{(new / old - 1.0):+.1%}" if old else "n/a"


def queue_findings(df: pd.DataFrame, claims: pd.DataFrame) -> list[str]:
    """Plain-text findings: each configuration's seed means against FCFS, then each promise's verdicts."""
    table = comparison_table(df)
    lines = []
    for (_, workload, regime, share), g in table.groupby(_POINT, sort=False):
        base = g[g["queue"] == "fcfs"].iloc[0]
        for _, row in g[g["queue"] != "fcfs"].iterrows():
            lines.append(
                f"{workload}, {regime}, high share {share:g}: {row['queue']}/{row['estimator']} vs fcfs: session time "
                f"{_change(row['session_time_mean'], base['session_time_mean'])}, long-turn p99 wait "
                f"{row['long_wait_p99']:.1f} s vs {base['long_wait_p99']:.1f} s, high/normal latency "
                f"{row['tier_ratio']:.3f} vs {base['tier_ratio']:.3f}, goodput "
                f"{_change(row['goodput_tps'], base['goodput_tps'])}"
                + (f", estimator MAE {row['estimator_mae_s']:.3f} s" if np.isfinite(row["estimator_mae_s"]) else ""))
    for claim, g in claims.groupby("claim_id", sort=False) if len(claims) else []:
        counts = g["verdict"].value_counts().to_dict()
        lines.append(f"{claim} ({PROMISES[claim][0]}): {g['claim_verdict'].iloc[0]} overall; points: "
                     + ", ".join(f"{v} {n}" for v, n in counts.items()))
    return lines
