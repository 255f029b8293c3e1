"""Figure 11 (beyond the paper): where SMETRIC wins and where it loses.

A phase diagram over three axes the paper holds fixed: the global KV store's per-instance read
bandwidth (capacity unlimited), the session length (the synthetic generator's median turns per
session) and the offered load (requests per minute per instance, set by the session arrival rate).
:func:`phase_diagram` simulates SMETRIC and the baselines in every
cell and workload seed and sets each run against the ideal bound of its workload
(:func:`smetric.policies.bounds.ideal_bound`: perfect balance *and* every reusable token hit, capped
by the offered token rate); :func:`phase_cells` gives SMETRIC's gain over the best baseline per
cell, paired per seed with its t-interval, and :func:`phase_regimes` summarises where each regime lies.
The session-length axis is a knob of the synthetic generator. A real trace (the ``claude-code``
workload, or a ``trace`` file) has its own, fixed session lengths: on it the axis collapses to one
value, the trace's sessions (``turns_source == "trace"``; ``turns_median`` / ``mean_turns`` are its
median / mean calls per session), over the same bandwidths and loads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..cluster.config import GlobalStore
from ..policies.bounds import ideal_bound
from ..testbeds import (
    DEFAULT_WORKLOAD,
    TRACE_WORKLOADS,
    agent_workload,
    paper_cluster,
    trace_conversations,
    trace_file,
    trace_workload,
)
from ..verdicts import gain_intervals, paired_gains
from ..workload.synthetic import PRESETS, expected_turns, with_overrides
from .comparison import run_cases
from .workload_rows import row_grid, row_title, workload_frames

__all__ = ["PHASE_POLICIES", "TIE_BAND", "SLO_FLOOR", "session_lengths", "phase_diagram", "phase_cells",
           "phase_regimes", "phase_findings", "plot_phase"]

#: SMETRIC and the three strongest baselines at the 30B knee (see ``ablation.SENSITIVITY_BASELINES``).
PHASE_POLICIES = ("smetric", "lmetric", "dynamo", "least-load")

#: With one seed (no interval), gains within +-TIE_BAND count as a tie; with several seeds a cell is a tie
#: when the paired t-interval of SMETRIC's gain contains 0.
TIE_BAND = 0.03

#: A cell where no policy meets the SLO for this share of its requests is overloaded (past saturation:
#: open-loop queues grow, goodput heads to 0 and ratios of small goodputs are noise).
SLO_FLOOR = 0.5

_REGIMES = ("smetric wins", "tie", "smetric loses", "overloaded")


def session_lengths(workload: str, trace: str | None = None) -> tuple[float, float]:
    """Median and mean calls per session of a real trace: the ``trace`` file's sessions (the whole file), else
    the conversations of the ``workload`` catalog trace (one of ``testbeds.TRACE_WORKLOADS``; sub-agent calls
    included)."""
    if trace is not None:
        sessions = trace_file(str(trace)).session
    elif workload in TRACE_WORKLOADS:
        sessions = trace_conversations(workload).conversation
    else:
        raise ValueError(f"{workload!r} is not a real trace ({', '.join(TRACE_WORKLOADS)}) and no trace file is given")
    counts = np.unique(sessions, return_counts=True)[1]
    return float(np.median(counts)), float(counts.mean())


def phase_diagram(bandwidths: Sequence[float] = (1.5, 6.0, 24.0), turns_medians: Sequence[float] = (1, 4, 16),
                  rpm_per_instance: Sequence[float] = (40.0, 52.0),
                  policies: Sequence[str] = PHASE_POLICIES,
                  testbed: str = "30b", n_instances: int = 16, minutes: float = 5.0, warmup_minutes: float = 360.0,
                  seeds: Sequence[int] = (0,), workload: str = DEFAULT_WORKLOAD, trace: str | None = None,
                  warmup_frac: float = 0.25, kv_connector: str = "ideal", jobs: int | None = None) -> pd.DataFrame:
    """Every policy in every (bandwidth GB/s, median turns, offered load) cell and seed; one row per run.

    The global store has unlimited capacity and ``bandwidth`` GB/s per instance, reached through ``kv_connector``
    (default ``ideal``, a per-instance link of that bandwidth: ``lmcache-mooncake`` ignores the store's
    per-instance bandwidth, so the axis needs the ideal link); sessions have a log-normal number of turns with the
    given median (the sigma of ``workload``, a synthetic preset), arriving so that the cluster is offered
    ``rpm_per_instance`` requests per minute per instance. A real trace -- ``workload`` one of
    ``testbeds.TRACE_WORKLOADS`` (conversations start at the offered rate) or ``trace``, a timestamped file or
    catalog name replayed at the offered rate (the same for every seed) -- keeps its own sessions:
    ``turns_medians`` is ignored and the turns axis is the one value of :func:`session_lengths`.
    Columns: ``seed, bandwidth_gbs, turns_median, mean_turns, turns_source`` (``generator`` or ``trace``),
    ``rpm_per_instance`` (nominal), ``offered_rpm_per_instance`` (the generated workload's own rate in the
    window), ``policy``, the summary metrics, then ``ideal_tps`` (the bound), ``offered_tps`` (the workload's
    token rate), ``ideal_goodput_tps`` (their minimum) and ``frac_ideal`` = goodput / ideal goodput.
    """
    if "smetric" not in policies or len(policies) < 2:
        raise ValueError(f"policies must include smetric and at least one baseline, got {list(policies)}")
    real = trace is not None or workload in TRACE_WORKLOADS
    if not bandwidths or not rpm_per_instance or not (turns_medians or real):
        raise ValueError("phase_diagram needs at least one bandwidth, one turns median and one offered load")
    if not real and workload not in PRESETS:
        raise ValueError(f"the phase diagram varies the generator's session length: workload must be a synthetic "
                         f"preset ({', '.join(PRESETS)}) or a real trace ({', '.join(TRACE_WORKLOADS)}, or trace=), "
                         f"got {workload!r}")
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and at least one, got {seeds!r}")
    if real:
        median, mean = session_lengths(workload, trace)
        turns_axis = {median: mean}
    else:
        config = PRESETS[workload].config
        turns_axis = {float(m): expected_turns(with_overrides(config, turns_median=m)) for m in turns_medians}
    setups, bounds, rates, points = {}, {}, {}, []
    coef = paper_cluster(testbed, n_instances=n_instances).hardware_spec().coef_array
    top = float(max(rpm_per_instance))
    for seed in seeds:
        for turns in turns_axis:
            overrides = {"warmup_minutes": float(warmup_minutes), "preset": workload, "reference_rpm": top,
                         **({} if real else {"turns_median": turns})}
            for rpm in rpm_per_instance:
                key = (int(seed), turns, float(rpm))
                w = (trace_workload(trace, n_instances, minutes, float(rpm)) if trace is not None
                     else agent_workload(n_instances, minutes, int(seed), rpm_per_instance=float(rpm), **overrides))
                bounds[key] = ideal_bound(w, coef, n_instances)
                rates[key] = len(w) / (w.duration / 60.0) / n_instances
                for bw in bandwidths:
                    setup = f"{bw:g} GB/s, turns {turns:g}"
                    setups[setup] = {"testbed": testbed, "n_instances": n_instances, "minutes": minutes,
                                     "global_store": GlobalStore(capacity_gb=math.inf, bandwidth_gbs=float(bw)),
                                     "workload_overrides": overrides, "trace": trace,
                                     "cluster_overrides": {"kv_connector": kv_connector}}
                    for policy in policies:
                        points.append({"seed": int(seed), "bandwidth_gbs": float(bw), "turns_median": turns,
                                       "rpm_per_instance": float(rpm), "case": policy, "setup": setup})
    cases = {p: (p, {}) for p in policies}
    frame = run_cases(points, cases, setups, warmup_frac=warmup_frac, jobs=jobs)
    key = pd.Series(list(zip(frame["seed"], frame["turns_median"], frame["rpm_per_instance"])), index=frame.index)
    frame.insert(3, "mean_turns", frame["turns_median"].map(turns_axis))
    frame.insert(4, "turns_source", "trace" if real else "generator")
    frame.insert(frame.columns.get_loc("rpm_per_instance") + 1, "offered_rpm_per_instance", key.map(rates.get))
    frame["ideal_tps"] = key.map(lambda k: bounds[k].tps)
    frame["offered_tps"] = key.map(lambda k: bounds[k].offered_tps)
    frame["ideal_goodput_tps"] = np.minimum(frame["ideal_tps"], frame["offered_tps"])
    frame["frac_ideal"] = frame["goodput_tps"] / frame["ideal_goodput_tps"]
    return frame.drop(columns=["case", "setup"])


def phase_cells(frame: pd.DataFrame, tie_band: float = TIE_BAND, slo_floor: float = SLO_FLOOR) -> pd.DataFrame:
    """One row per cell of a :func:`phase_diagram` frame (seed means): SMETRIC vs the best baseline.

    A cell is (``workload`` and ``turns_source`` where the frame has them, bandwidth, turns, load).

    The best baseline has the highest seed-mean goodput in the cell; ``gain`` is the mean of SMETRIC's
    per-seed ``goodput / baseline - 1`` with its paired t-interval ``ci_low..ci_high`` (NaN in overloaded
    cells and, for the interval, with one seed). ``regime``: ``overloaded`` (no policy meets the SLO for
    ``slo_floor`` of its requests, seed mean), else with >= 2 seeds ``smetric wins`` / ``smetric loses``
    when the interval excludes 0 above / below and ``tie`` when it contains 0; with one seed the gain
    against +-``tie_band``.
    """
    labels = [c for c in ("workload", "turns_source") if c in frame.columns]
    cell = [*labels, "bandwidth_gbs", "turns_median", "mean_turns", "rpm_per_instance"]
    cols = ["goodput_tps", "ideal_goodput_tps", "frac_ideal", "hit_ratio_hbm", "slo_attainment"]
    means = frame.groupby([*cell, "policy"], sort=False)[cols].mean().reset_index()
    ours = means[means["policy"] == "smetric"].set_index(cell)
    others = means[means["policy"] != "smetric"]
    best = others.loc[others.groupby(cell, sort=False)["goodput_tps"].idxmax()].set_index(cell)
    out = pd.DataFrame({
        "smetric_goodput": ours["goodput_tps"], "best_baseline": best["policy"],
        "best_goodput": best["goodput_tps"], "ideal_goodput": ours["ideal_goodput_tps"],
        "smetric_frac_ideal": ours["frac_ideal"], "best_frac_ideal": best["frac_ideal"],
        "smetric_hit_hbm": ours["hit_ratio_hbm"], "best_hit_hbm": best["hit_ratio_hbm"],
        "best_slo_attainment": means.groupby(cell, sort=False)["slo_attainment"].max(),
    }).reset_index()
    overloaded = out["best_slo_attainment"] < slo_floor
    live = out.loc[~overloaded, cell]
    out["gain"] = out["ci_low"] = out["ci_high"] = np.nan
    out["n_seeds"] = frame["seed"].nunique()
    if len(live):
        runs = frame.merge(live, on=cell)
        ivs = gain_intervals(paired_gains(runs, by=cell), by=cell)
        out = out.drop(columns=["gain", "ci_low", "ci_high"]).merge(
            ivs.rename(columns={"gain_mean": "gain"})[[*cell, "gain", "ci_low", "ci_high"]],
            on=cell, how="left")
    one = out["n_seeds"] < 2
    wins = np.where(one, out["gain"] > tie_band, out["ci_low"] > 0)
    loses = np.where(one, out["gain"] < -tie_band, out["ci_high"] < 0)
    out["regime"] = np.select([overloaded, wins, loses], ["overloaded", "smetric wins", "smetric loses"], "tie")
    return out


def phase_regimes(cells: pd.DataFrame) -> pd.DataFrame:
    """Cells per regime and SMETRIC's mean gain and fraction of ideal along each axis (margins), per workload.

    Columns (``workload`` where ``cells`` has one) ``axis, value, cells`` and one count column per regime,
    ``mean_gain`` (over non-overloaded cells), ``smetric_frac_ideal`` and ``best_frac_ideal`` (means over all cells).
    """
    rows = []
    for workload, frame in workload_frames(cells):
        label = {"workload": workload} if "workload" in cells.columns else {}
        for axis in ("bandwidth_gbs", "turns_median", "rpm_per_instance", "all"):
            groups = [("all", frame)] if axis == "all" else frame.groupby(axis, sort=True)
            for value, sub in groups:
                counts = sub["regime"].value_counts()
                rows.append({**label, "axis": axis, "value": value, "cells": len(sub),
                             **{r: int(counts.get(r, 0)) for r in _REGIMES},
                             "mean_gain": sub["gain"].mean(), "smetric_frac_ideal": sub["smetric_frac_ideal"].mean(),
                             "best_frac_ideal": sub["best_frac_ideal"].mean()})
    return pd.DataFrame(rows)


def _from_trace(cells: pd.DataFrame) -> bool:
    """Whether the turns axis of ``cells`` (one workload) is a real trace's own sessions."""
    return "turns_source" in cells.columns and bool((cells["turns_source"] == "trace").all())


def _workload_findings(cells: pd.DataFrame) -> list[str]:
    """:func:`phase_findings` of one workload's cells, one sentence a line."""
    trace = _from_trace(cells)
    turns = dict(zip(cells["turns_median"], cells["mean_turns"]))

    def where(row):
        length = "" if trace else f"median {row.turns_median:g} turns (mean {row.mean_turns:.0f}), "
        return f"{row.bandwidth_gbs:g} GB/s, {length}{row.rpm_per_instance:g} rpm/instance"

    counts = cells["regime"].value_counts()
    lines = [f"{len(cells)} cells: " + ", ".join(f"{counts.get(r, 0)} {r}" for r in _REGIMES) + "."]
    if trace:
        (median, mean), = turns.items()
        lines.append(f"Session length: the trace's own sessions (median {median:g} calls, mean {mean:.0f}; "
                     "no turns axis).")
    live = cells.dropna(subset=["gain"])
    if len(live):
        top, low = live.loc[live["gain"].idxmax()], live.loc[live["gain"].idxmin()]
        lines.append(f"Largest gain {top.gain:+.1%} ({where(top)}, vs {top.best_baseline}); "
                     f"largest loss {low.gain:+.1%} ({where(low)}, vs {low.best_baseline}).")
    regimes = phase_regimes(cells.drop(columns="workload", errors="ignore"))
    axes = [("bandwidth_gbs", "bandwidth (GB/s)"), ("rpm_per_instance", "offered load (rpm/instance)")]
    if not trace:
        axes.insert(1, ("turns_median", "median turns"))
    for axis, label in axes:
        sub = regimes[regimes["axis"] == axis]
        lines.append(f"Mean gain by {label}: " + ", ".join(f"{r.value:g}: {r.mean_gain:+.1%}" for r in sub.itertuples())
                     + ".")
    total = regimes[regimes["axis"] == "all"].iloc[0]
    lines.append(f"Fraction of the ideal goodput, mean over cells: SMETRIC {total.smetric_frac_ideal:.2f}, "
                 f"best baseline {total.best_frac_ideal:.2f}.")
    return lines


def phase_findings(cells: pd.DataFrame) -> str:
    """The regimes of a :func:`phase_cells` frame in a few sentences (counts, extremes, axis margins), per workload."""
    blocks = []
    for workload, sub in workload_frames(cells):
        lines = _workload_findings(sub)
        blocks.append("\n".join([f"{workload}:", *(f"  {line}" for line in lines)] if workload else lines))
    return "\n\n".join(blocks)


def _heatmap(ax, values: pd.DataFrame, annot, title: str, ticks: list[str], ylabel: str, **style) -> None:
    """One annotated heatmap panel of :func:`plot_phase` (bandwidth across, turns down)."""
    import seaborn as sns

    sns.heatmap(values, annot=annot, fmt="", ax=ax, linewidths=0.5, **style)
    ax.set(title=title, xlabel="global-store GB/s per instance", ylabel=ylabel)
    ax.set_yticklabels(ticks, rotation=0)


def plot_phase(cells: pd.DataFrame):
    """One row of heatmaps per workload: one column per offered load of SMETRIC's gain over the best baseline
    (%; grey = overloaded), then one per load of SMETRIC's / the best baseline's fraction of the ideal goodput.
    A real trace's row has one turns value, its own sessions."""
    from ..plotting import set_style

    set_style()
    ncols = max(sub["rpm_per_instance"].nunique() for _, sub in workload_frames(cells))
    fig, rows = row_grid(cells, 2 * ncols, width=4.5 * 2 * ncols, height=3.9)
    for workload, frame, axes in rows:
        trace = _from_trace(frame)
        rpms = sorted(frame["rpm_per_instance"].unique())
        lim = max(5.0, float(np.nanmax(np.abs(frame["gain"]))) * 100 if frame["gain"].notna().any() else 5.0)
        ylabel = "" if trace else "median turns per session (mean)"  # a trace's one tick names its sessions
        for ax in axes[len(rpms):ncols].tolist() + axes[ncols + len(rpms):].tolist():
            ax.set_visible(False)
        for col, rpm in enumerate(rpms):
            sub = frame[frame["rpm_per_instance"] == rpm]

            def grid(values, sub=sub):
                table = sub.assign(v=values).pivot(index="turns_median", columns="bandwidth_gbs", values="v")
                return table.sort_index(ascending=False)

            turns = dict(zip(sub["turns_median"], sub["mean_turns"]))
            ticks = [f"trace\n(median {m:g}\ncalls)" if trace else f"{m:g} ({turns[m]:.0f})"
                     for m in grid(sub["gain"]).index]
            gain = grid(100 * sub["gain"])
            text = grid(np.where(sub["gain"].isna(), "x", (100 * sub["gain"]).map("{:+.0f}".format)))
            axes[col].set_facecolor("0.8")  # NaN cells (overloaded) stay grey
            _heatmap(axes[col], gain, text, row_title(workload, f"{rpm:g} requests / min / instance"), ticks, ylabel,
                     cmap="RdBu", vmin=-lim, vmax=lim, center=0, cbar_kws={"label": "SMETRIC vs best baseline (%)"})
            frac = grid(sub["smetric_frac_ideal"])
            both = grid([f"{a:.2f}\n{b:.2f}" for a, b in zip(sub["smetric_frac_ideal"], sub["best_frac_ideal"])])
            _heatmap(axes[ncols + col], frac, both,
                     f"{rpm:g} rpm/instance: fraction of ideal goodput\n(top SMETRIC, bottom best baseline)", ticks,
                     ylabel, cmap="viridis", vmin=0, vmax=1, annot_kws={"fontsize": 7},
                     cbar_kws={"label": "SMETRIC goodput / ideal"})
            axes[ncols + col].title.set_fontsize(8)
    fig.suptitle("SMETRIC vs the best baseline of each cell, one row per workload\n"
                 f"(grey: overloaded, no policy meets the SLO for {SLO_FLOOR:.0%} of requests)", fontsize=10)
    fig.tight_layout()
    return fig
