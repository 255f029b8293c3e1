"""Figure 12: queue disciplines inside an instance (fcfs vs the S-Metric score vs multi-level queues).

The router decides where a turn runs, the queue discipline when (:mod:`smetric.cluster.queueing`).
Setup: the 30B testbed in **closed replay** (a session's next turn arrives only after its previous
turn finished plus the recorded tool/think gap, so a turn that waits delays its whole session), the
calibrated agent workload at several offered loads (requests/min/instance), the SMETRIC and
least-load routers. The measured window starts ``warmup_frac`` into the workload's own arrival span
(fixed in trace time, the same for every discipline: in closed replay the realised arrivals move).

* :func:`discipline_comparison`: every (load, router, discipline, seed) -> session completion time,
  turn latency, starvation (queue wait), goodput.
  ``long_wait_p99`` / ``short_wait_p99``: the queue wait of the long turns (top decile of GPU time:
  the prefill of the tokens each computed plus its decode estimate, what the score's E[T] estimates)
  and of the others.
* :func:`weight_sweep`: the S score's urgency weight alpha against its waiting-time weight gamma, on
  one 30B instance fed a stream of short turns past its capacity plus a long turn every few
  seconds (:func:`short_long_stream`; open replay, no cache reuse): the mechanism in isolation.
* :func:`plot_queue_discipline`, :func:`queue_findings` (the claims cell's lines; there is no paper
  claim for this figure: the scheduler blueprint is a design note, not a measured result).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..cluster.queueing import DISCIPLINES, QueueDiscipline, decode_estimates
from ..hardware.kernel import prefill_time_nb
from ..workload.core import Workload
from .setups import DEFAULT_WORKLOAD, REFERENCE_RPM, WORKLOADS, agent_workload, paper_cluster, trace_workload
from .sweep import sweep

__all__ = ["METRICS", "gpu_time", "short_long_stream", "discipline_comparison", "weight_sweep", "plot_queue_discipline",
           "comparison_table",
           "queue_findings"]

# summary columns a point reports (and their labels in the figure)
METRICS = {
    "session_time_mean": "session completion time, mean (s)",
    "latency_p99": "turn latency p99 (s)",
    "queue_wait_max": "max queue wait (s)",
    "goodput_tps": "goodput (k tokens/s)",
}
_EXTRA = ("session_time_p99", "ttft_p99", "queue_wait_p99", "sessions_starved_frac", "n_sessions_completed",
          "throughput_tps", "busy_cv", "slo_attainment")
LONG_QUANTILE = 0.9  # "long turns": GPU time at or above this quantile of the measured turns


def gpu_time(requests: pd.DataFrame, coef: np.ndarray) -> np.ndarray:
    """Each turn's GPU time as the S score estimates it: prefill of its computed tokens + decode estimate."""
    new = requests["prefill_tokens"].to_numpy(dtype=float)
    cached = requests["input_len"].to_numpy(dtype=float) - new
    prefill = np.array([prefill_time_nb(coef, n, c) for n, c in zip(new, cached)])
    return prefill + decode_estimates(coef, requests["input_len"].to_numpy(), requests["output_len"].to_numpy())


def _queue_point(rpm: float, router: str, queue: str, seed: int, *, testbed: str, n_instances: int | None,
                 minutes: float, warmup_frac: float, workload: str = DEFAULT_WORKLOAD, trace: str | None = None,
                 reference_rpm: float = REFERENCE_RPM, alpha: float = 1.0, gamma: float = 1.0) -> dict:
    """One closed-replay simulation -> the figure's metrics (a sweep point)."""
    from ..cluster.simulate import simulate

    discipline = QueueDiscipline(queue, alpha=float(alpha), gamma=float(gamma))
    cluster = paper_cluster(testbed, n_instances=n_instances, replay="closed", queue=discipline)
    if trace is not None:
        served = trace_workload(trace, cluster.n_instances, minutes, float(rpm))
    else:
        served = agent_workload(cluster.n_instances, minutes, seed, rpm_per_instance=float(rpm), preset=workload,
                                reference_rpm=float(reference_rpm))
    result = simulate(served, cluster, router, load=1.0, seed=seed, progress=False)
    t0, t1 = float(served.arrival.min()), float(served.arrival.max())
    since = t0 + warmup_frac * (t1 - t0)
    summary = result.summary(since=since)
    rq = result.measured(since)
    wait = (rq["admit"] - rq["arrival"]).to_numpy()
    admitted = ~np.isnan(wait)
    est = gpu_time(rq, cluster.hardware_spec().coef_array)
    long = est >= np.quantile(est[admitted], LONG_QUANTILE) if admitted.any() else np.zeros(len(rq), bool)
    out = {k: summary[k] for k in (*METRICS, *_EXTRA)}
    out["long_wait_p99"] = float(np.percentile(wait[long & admitted], 99)) if (long & admitted).any() else np.nan
    out["short_wait_p99"] = float(np.percentile(wait[~long & admitted], 99)) if (~long & admitted).any() else np.nan
    return out


def short_long_stream(seed: int, duration: float = 120.0, short_rate: float = 24.0, long_every: float = 4.0,
                      short: tuple[int, int] = (600, 30), long: tuple[int, int] = (12_000, 300),
                      block_size: int = 256) -> Workload:
    """Single-turn requests: Poisson short turns (``short_rate``/s) and a long one every ``long_every`` s.

    ``short`` / ``long`` are (prompt tokens, output tokens); no two requests share a block.
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
    return Workload(arrival=arrival, input_len=input_len, output_len=np.where(is_long, long[1], short[1]),
                    session=np.arange(n), turn=np.ones(n, dtype=np.int64), parent=np.full(n, -1), gap=np.zeros(n),
                    block_offsets=offsets, block_ids=np.arange(offsets[-1]), block_size=block_size,
                    name="short-long-stream")


def _stream_point(alpha: float, gamma: float, seed: int, *, short_rate: float, duration: float,
                  long_every: float) -> dict:
    """The ``smetric-score`` discipline on one instance fed :func:`short_long_stream` (a sweep point)."""
    from ..cluster.simulate import simulate

    workload = short_long_stream(seed, duration, short_rate, long_every)
    cluster = paper_cluster("30b", n_instances=1, global_store=None,
                            queue=QueueDiscipline("smetric-score", alpha=float(alpha), gamma=float(gamma)))
    result = simulate(workload, cluster, "round-robin", seed=seed, progress=False)
    rq = result.requests
    wait = (rq["admit"] - rq["arrival"]).to_numpy()
    long = (rq["input_len"] == rq["input_len"].max()).to_numpy()
    summary = result.summary()
    return {"long_wait_p99": float(np.percentile(wait[long], 99)), "long_wait_max": float(wait[long].max()),
            "short_wait_p99": float(np.percentile(wait[~long], 99)), "short_wait_mean": float(wait[~long].mean()),
            "sessions_starved_frac": summary["sessions_starved_frac"], "throughput_tps": summary["throughput_tps"]}


def _check(disciplines: Sequence[str], loads: Sequence[float], warmup_frac: float) -> None:
    unknown = [q for q in disciplines if q not in DISCIPLINES]
    if unknown:
        raise ValueError(f"unknown queue disciplines {unknown}; known: {list(DISCIPLINES)}")
    if not loads or min(loads) <= 0:
        raise ValueError(f"loads must be positive requests/min/instance, got {list(loads)}")
    if not 0.0 <= warmup_frac < 1.0:
        raise ValueError(f"warmup_frac must be in [0, 1), got {warmup_frac!r}")


def discipline_comparison(loads: Sequence[float] = (36.0, 48.0, 56.0),
                          routers: Sequence[str] = ("smetric", "least-load"),
                          disciplines: Sequence[str] = DISCIPLINES, seeds: Sequence[int] = (0, 1), *,
                          testbed: str = "30b", n_instances: int | None = None, minutes: float = 10.0,
                          warmup_frac: float = 0.25, workload: str = DEFAULT_WORKLOAD, trace: str | None = None,
                          jobs: int | None = None) -> pd.DataFrame:
    """Tidy frame: one row per (rpm, router, queue, seed) with :data:`METRICS` and the starvation columns.

    ``workload`` (a preset or real trace; every load thinned from one generation at the top load) or
    ``trace`` (a timestamped file replayed at each load) is served.
    """
    _check(disciplines, loads, warmup_frac)
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    grid = {"rpm": [float(x) for x in loads], "router": list(routers), "queue": list(disciplines),
            "seed": list(seeds)}
    shared = dict(testbed=testbed, n_instances=n_instances, minutes=minutes, warmup_frac=warmup_frac,
                  workload=workload, trace=trace, reference_rpm=float(max(loads)))
    return sweep(grid, _queue_point, shared=shared, jobs=jobs, on_error="raise")


def weight_sweep(alphas: Sequence[float] = (0.0, 1.0, 10.0, 100.0), gammas: Sequence[float] = (0.0, 1.0, 10.0),
                 seeds: Sequence[int] = (0, 1), *, short_rate: float = 24.0, duration: float = 120.0,
                 long_every: float = 4.0, jobs: int | None = None) -> pd.DataFrame:
    """Tidy frame: long- and short-turn queue waits of ``smetric-score`` for every (alpha, gamma, seed)."""
    if min(alphas) < 0 or min(gammas) < 0:
        raise ValueError(f"weights must be >= 0, got alphas {list(alphas)}, gammas {list(gammas)}")
    grid = {"alpha": [float(a) for a in alphas], "gamma": [float(g) for g in gammas], "seed": list(seeds)}
    shared = dict(short_rate=float(short_rate), duration=float(duration), long_every=float(long_every))
    return sweep(grid, _stream_point, shared=shared, jobs=jobs, on_error="raise")


def comparison_table(df: pd.DataFrame) -> pd.DataFrame:
    """Seed means per (``workload`` where ``df`` has one, rpm, router, queue) of the figure's metrics and the
    starvation columns."""
    cols = [c for c in (*METRICS, "session_time_p99", "sessions_starved_frac", "throughput_tps") if c in df]
    keys = [*(["workload"] if "workload" in df.columns else []), "rpm", "router", "queue"]
    return df.groupby(keys, sort=False)[cols].mean().reset_index()


def _alpha_axis(ax, ylabel: str) -> None:
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0.0)
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    ax.set(xlabel="urgency weight alpha", ylabel=ylabel)


def plot_queue_discipline(df: pd.DataFrame, weights: pd.DataFrame):
    """One row per workload: the four metrics vs load (colour = discipline, dashes = router); last row: the
    weight sweep."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..plotting import set_style
    from .workload_rows import workload_frames

    set_style()
    frames = workload_frames(df)
    fig, axes = plt.subplots(len(frames) + 1, 4, figsize=(17, 3.75 * (len(frames) + 1)), squeeze=False)
    for i, (workload, frame) in enumerate(frames):
        plot = frame.assign(goodput_tps=frame["goodput_tps"] / 1e3)
        for ax, (metric, label) in zip(axes[i], METRICS.items()):
            sns.lineplot(data=plot, x="rpm", y=metric, hue="queue", style="router", markers=True, errorbar=None,
                         ax=ax, legend=i == 0 and ax is axes[0][0])
            ax.set(xlabel="offered load (requests/min/instance)", ylabel=label, title=workload)
            if metric in ("queue_wait_max", "latency_p99") and (plot[metric] > 0).all():
                ax.set_yscale("log")
            elif metric in ("queue_wait_max", "latency_p99"):  # a load that never queued (a wait of 0)
                ax.set_yscale("symlog", linthresh=1.0)
                ax.set_ylim(bottom=0.0)
    w = weights.melt(id_vars=["alpha", "gamma", "seed"], value_vars=["long_wait_p99", "short_wait_p99"],
                     var_name="turns", value_name="wait")
    w["turns"] = w["turns"].map({"long_wait_p99": "long turns (12k-token prompts)", "short_wait_p99": "short turns"})
    for ax, turns in zip(axes[-1][:2], sorted(w["turns"].unique())):
        sns.lineplot(data=w[w["turns"] == turns], x="alpha", y="wait", hue="gamma", marker="o", errorbar=None,
                     palette="viridis", ax=ax)
        _alpha_axis(ax, f"queue wait p99 (s): {turns}")
    for ax, metric, label in ((axes[-1][2], "short_wait_mean", "short turns: mean queue wait (s)"),
                              (axes[-1][3], "throughput_tps", "throughput (k tokens/s)")):
        data = weights.assign(throughput_tps=weights["throughput_tps"] / 1e3)
        sns.lineplot(data=data, x="alpha", y=metric, hue="gamma", marker="o", errorbar=None, palette="viridis", ax=ax)
        _alpha_axis(ax, label)
    fig.suptitle("Queue disciplines inside an instance. Top row(s), one per workload: 30B testbed, closed replay, "
                 "fcfs vs S-score vs MLFQ under two routers.\nLast row: S-score weights (alpha: urgency 1/E[T], "
                 "gamma: waiting time) on one instance fed short turns past its capacity and a long turn every few "
                 "seconds")
    fig.tight_layout()
    return fig


def _change(new: float, old: float) -> str:
    return f"{(new / old - 1.0):+.1%}" if old else "n/a"


def queue_findings(df: pd.DataFrame, weights: pd.DataFrame) -> list[str]:
    """Plain-text findings: what each discipline buys over FCFS (per workload, router and load), and the weight
    trade-off."""
    table = comparison_table(df)
    if "workload" not in table.columns:
        table.insert(0, "workload", "")
    lines = []
    for (workload, rpm, router), g in table.groupby(["workload", "rpm", "router"], sort=False):
        base = g[g["queue"] == "fcfs"].iloc[0]
        for _, row in g[g["queue"] != "fcfs"].iterrows():
            where = f"{workload}, " if workload else ""
            lines.append(
                f"{where}{rpm:g} rpm/inst, {router}: {row['queue']} vs fcfs: session time "
                f"{_change(row['session_time_mean'], base['session_time_mean'])}, "
                f"p99 turn latency {_change(row['latency_p99'], base['latency_p99'])}, "
                f"max wait {row['queue_wait_max']:.0f} s vs {base['queue_wait_max']:.0f} s, "
                f"goodput {_change(row['goodput_tps'], base['goodput_tps'])}")
    for workload, g in table.groupby("workload", sort=False):
        fcfs = g[g["queue"] == "fcfs"].set_index(["rpm", "router"])[list(METRICS)]
        others = [q.set_index(["rpm", "router"])[list(METRICS)] for _, q in g[g["queue"] != "fcfs"].groupby("queue")]
        if others and all(q.reindex(fcfs.index).equals(fcfs) for q in others):
            lines.append(f"{workload or 'the workload'}: every discipline equals fcfs exactly (seed means of "
                         f"{', '.join(METRICS)}) at every load and router: no discipline changed what is measured here")
    w = weights.groupby(["alpha", "gamma"])[["long_wait_p99", "short_wait_mean", "throughput_tps"]].mean()
    g_min = w.index.get_level_values("gamma").min()
    urgency = w.xs(g_min, level="gamma")
    best = w["long_wait_p99"].idxmin()
    worst = w["long_wait_p99"].idxmax()
    lines.append(
        f"weights (one instance, shorts past capacity): with gamma={g_min:g} long turns wait "
        f"{urgency['long_wait_p99'].min():.1f}-{urgency['long_wait_p99'].max():.1f} s (p99) for alpha in "
        f"{list(urgency.index)}; the shortest long-turn wait, {w.loc[best, 'long_wait_p99']:.1f} s, is at "
        f"alpha={best[0]:g}, gamma={best[1]:g}, where short turns wait {w.loc[best, 'short_wait_mean']:.2f} s on "
        f"average instead of {w.loc[worst, 'short_wait_mean']:.2f} s (alpha={worst[0]:g}, gamma={worst[1]:g}); "
        f"throughput {_change(w.loc[best, 'throughput_tps'], w.loc[worst, 'throughput_tps'])}")
    return lines
