"""Figure 17: SMETRIC's gain as hot-spot mechanisms strengthen, one at a time.

**The claim and its rules, stated before running.** The paper's argument is that cache-affine routers pile
agent sessions onto a few instances and cap TPS, and that the turn number, read from the request, lets a
stateless router avoid it: *SMETRIC's gain over the best baseline grows as hot-spot mechanisms strengthen*.
Two claims of ``data/paper_claims.csv`` judge it by the package's rules (:mod:`~smetric.verdicts`):

* ``C18_hot_spots`` -- at every level of every axis, SMETRIC's gain over the comparator against the paper's
  headline **+9 %** (C13's magnitude), by the gain rule (reproduced / direction only / smaller than claimed /
  inconclusive / contradicted), Holm over the claim's points (both workloads, every level);
* ``C18_hot_spot_growth`` -- at every non-default level, the per-seed change of that gain from the testbed
  default, against the lower bound 0 (reproduced: the interval lies above 0, the gain grew; contradicted: it
  lies below, the gain shrank; inconclusive otherwise), Holm alike.

The same rules are applied, in the CSV only, to the gains over LMetric and over Dynamo each (``comparator``).

**Axes** (:data:`~smetric.experiments.hot_spots.AXES`, which lists every level with its source): burstiness,
router refresh interval, router replicas, the "as deployed" information model, fan-out and context growth, each
moving one mechanism from the testbed default. A level that names its workloads (``only``) runs on those alone. No
diurnal level: the measured windows are minutes long, and no shipped trace spans a day to fit an amplitude
(data/presets/arrivals.json), so a diurnal profile would only shift the offered rate, which the load already sets.

**Setup.** The 30B testbed on 16 instances (half the paper's 32, to fit the budget: sessions per instance, and so
the per-instance load, do not depend on the count), ``bailian-coder`` over a 2-minute window and the Claude Code
trace (``claude-code``) over 10 minutes (few, long requests: cheap to simulate). The offered load of each
workload is fixed before SMETRIC runs, by fig14's probe (least-load alone, seed 0, a 1.25x ladder; its goodput
peak is the anchor and plays the paper's 8x) at ``multiplier`` x anchor / 8 -- by default 9x, just past the
knee, where hot spots cap TPS -- and held at every level: each axis changes a mechanism, not the load. The
comparator of each workload is fixed on ``screening_seeds`` (disjoint from ``seeds``) at the default level, where
only the baselines run: the one with the highest mean goodput, held at every level of that workload (a comparator
re-chosen per level would mix its switch into the level's effect); the gains over it are paired per seed (8 seeds).
The mechanism diagnostics of SMETRIC and of the comparator (imbalance over time of queued prefill and of the
running batch, the share of follow-ups that left their instance, the local reuse lost by moving) are seed means
beside each point.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from ...plotting import set_style
from ...verdicts import claim_columns, percent
from .. import hot_spots as hs
from .. import main_results as mr
from ..claims import paper_value
from ..comparison import Comparison, Panel, row_interval, run_comparison
from ..figure import FigureParams, param
from ..robustness import Variant, knee_anchor
from ..sweep import sweep
from .fig14_claim_robustness import PROBE

#: The claims this figure records (data/paper_claims.csv) and the statistic each judges.
CLAIMS = {"gain": "C18_hot_spots", "growth": "C18_hot_spot_growth"}
_HOLDS = ("reproduced", "direction only")


@dataclass(frozen=True)
class Params(FigureParams):
    axes: dict = param(hs.AXES, "axis -> levels (label and overrides); the first level of each is the default")
    workloads: tuple[str, ...] = param(("bailian-coder", "claude-code"), "workloads (testbeds.WORKLOADS)")
    policies: tuple[str, ...] = param(("smetric", "lmetric", "dynamo", "llm-d", "least-load"),
                                      "smetric and the baselines: LMetric and Dynamo (fig06's best on bailian-coder "
                                      "and claude-code), llm-d (the deployed router with a sourced refresh), "
                                      "least-load")
    n_instances: int = param(16, "instances of the 30B testbed (16: fits the budget; the per-instance load is kept)")
    minutes: float = param(2.0, "measured window of a synthetic workload")
    trace_minutes: float = param(10.0, "measured window of the Claude Code trace (few, long requests)")
    multiplier: float = param(9.0, "offered load in paper multipliers of the probe's anchor (8x)")
    probe_start: dict = param({"bailian-coder": 40, "claude-code": 4},
                              "workload -> first guess of the anchor (requests/min/instance)")
    seeds: tuple[int, ...] = param(tuple(range(8)), "workload seeds (paired)")
    screening_seeds: tuple[int, ...] = param((100, 101), "seeds on which the baselines alone fix each comparator "
                                                         "(disjoint from seeds)")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(axes={"burstiness": hs.AXES["burstiness"][::2], "refresh": hs.AXES["refresh"][::2],
                         "replicas": hs.AXES["replicas"][:2], "information": hs.AXES["information"],
                         "fan-out": hs.AXES["fan-out"][::2], "context growth": hs.AXES["context growth"]},
                   policies=("smetric", "lmetric", "dynamo", "llm-d"), n_instances=4, minutes=1.0,
                   trace_minutes=3.0, seeds=(0, 1), screening_seeds=(100,))

    def __post_init__(self) -> None:
        super().__post_init__()
        if set(self.seeds) & set(self.screening_seeds) or not self.screening_seeds or len(self.seeds) < 2:
            raise ValueError(f"screening_seeds {list(self.screening_seeds)} must be non-empty and disjoint from "
                             f"seeds {list(self.seeds)} (at least two)")
        missing = sorted({"smetric", *hs.COMPARATORS[1:]} - set(self.policies))
        if missing:
            raise ValueError(f"policies must include {missing} (SMETRIC and the named comparators)")
        unknown = sorted(set(self.workloads) - set(self.probe_start))
        if unknown:
            raise ValueError(f"probe_start has no first guess for workload(s) {unknown}")
        hs.levels(self.axes)  # validates


def _minutes(p: Params) -> dict[str, float]:
    from ...testbeds import TRACE_WORKLOADS

    return {w: float(p.trace_minutes if w in TRACE_WORKLOADS else p.minutes) for w in p.workloads}


def _reference(p: Params, workload: str) -> float:
    """The rate every load of a workload is thinned from: the top of the probe ladder plus one step (fig14's)."""
    return float(p.probe_start[workload]) * PROBE["ratio"] ** (PROBE["steps"] + 1)


def _probe(workload: str, *, p: Params) -> dict:
    anchor, probe = knee_anchor(Variant(workload=workload), start=float(p.probe_start[workload]), **PROBE,
                                reference_rpm=_reference(p, workload), n_instances=p.n_instances,
                                minutes=_minutes(p)[workload], warmup_frac=p.warmup_frac)
    return {"anchor_rpm": anchor, "probe_loads": len(probe)}


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    """The table of :func:`~smetric.experiments.hot_spots.judge` with ``anchor_rpm`` and ``rpm_per_instance``
    (the offered load) per workload."""
    probes = sweep([{"workload": w} for w in p.workloads], _probe, shared={"p": p}, jobs=jobs, on_error="raise")
    anchors = dict(zip(probes["workload"], probes["anchor_rpm"]))
    rpm = {w: a * p.multiplier / mr.ANCHOR_MULTIPLIER for w, a in anchors.items()}
    minutes = _minutes(p)
    panels = {(w, a, lab): Panel(partial(hs.level_setup, overrides=o, workload=w, minutes=minutes[w],
                                         reference_rpm=max(_reference(p, w), rpm[w]), n_instances=p.n_instances),
                                 (rpm[w],), screened_by=None if a == hs.DEFAULT else (w, hs.DEFAULT, hs.DEFAULT))
              for w in p.workloads for a, lab, o in hs.levels(p.axes) if hs.applies(o, w)}
    results = run_comparison(Comparison(panels, p.policies, p.seeds, ("workload", "axis", "level"),
                                        screen_seeds=p.screening_seeds, loops=("seed", "panel", "rpm_per_instance",
                                                                                "policy"),
                                        warmup_frac=p.warmup_frac), jobs=jobs)  # screened at the default level
    table = judge(results, p.screening_seeds)
    return table.assign(anchor_rpm=table["workload"].map(anchors), rpm_per_instance=table["workload"].map(rpm))


def judge(results: pd.DataFrame, screening) -> pd.DataFrame:
    """The figure's table from the per-seed runs (``workload, axis, level, seed, policy, goodput_tps`` and the
    diagnostics), judged by the rules of the module docstring."""
    return hs.judge(hs.gains(results, screening), paper_value(CLAIMS["gain"]), paper_value(CLAIMS["growth"]))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    best = df[df["comparator"] == "best"]
    return best[["statistic", "workload", "axis", "level", "baseline", "gain_mean", "ci_low", "ci_high", "verdict",
                 "baseline_imbalance_waiting_time_avg", "smetric_imbalance_waiting_time_avg"]]


#: Gain ticks (%) of the panels.
_TICKS = (-200, -100, -50, -20, -10, -5, 0, 5, 10, 20, 50, 100, 200, 500)


def plot(df: pd.DataFrame):
    """One panel per axis (rows) and workload (columns): SMETRIC's gain (%, mean and 95 % interval) at the default
    and at each level, over the best baseline, LMetric and Dynamo; the paper's +9 % dashed; the y axis is linear
    within +-10 % and logarithmic beyond (a baseline that herds on stale state loses several-fold)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter

    set_style()
    gain = df[df["statistic"] == "gain"]
    workloads = list(dict.fromkeys(gain["workload"]))
    axes = [a for a in dict.fromkeys(gain["axis"]) if a != hs.DEFAULT]
    fig, grid = plt.subplots(len(axes), len(workloads), figsize=(5.2 * len(workloads), 2.6 * len(axes)),
                             squeeze=False, sharey="row")
    colours = dict(zip(hs.COMPARATORS, ("#1b9e77", "#d95f02", "#7570b3")))
    for i, axis in enumerate(axes):
        for j, w in enumerate(workloads):
            ax = grid[i, j]
            sub = gain[(gain["workload"] == w) & gain["axis"].isin([hs.DEFAULT, axis])]
            labels = list(dict.fromkeys(sub["level"]))
            for k, comp in enumerate(hs.COMPARATORS):
                c = sub[sub["comparator"] == comp].set_index("level").loc[labels]
                x = np.arange(len(labels)) + (k - 1) * 0.18
                ax.errorbar(x, 100 * c["gain_mean"], yerr=[100 * (c["gain_mean"] - c["ci_low"]),
                                                           100 * (c["ci_high"] - c["gain_mean"])],
                            fmt="o", ms=4, capsize=2, color=colours[comp], label=comp if comp != "best" else
                            "best baseline (screened)")
            ax.axhline(0, color="0.5", lw=0.8)
            ax.axhline(9, color="0.3", lw=0.8, ls="--")
            ax.set_yscale("symlog", linthresh=10)  # linear within +-10 %: a collapsed baseline stays on the panel
            ax.yaxis.set_major_locator(FixedLocator(_TICKS))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xticks(range(len(labels)), labels, fontsize=7)
            ax.set_title(f"{w}: {axis}", fontsize=9)
            if j == 0:
                ax.set_ylabel("SMETRIC gain (%)")
    grid[0, 0].legend(fontsize=7, loc="best")
    n = int(gain["n_seeds"].min())
    fig.suptitle(f"SMETRIC's goodput gain as one hot-spot mechanism strengthens (mean, 95 % CI, {n} seeds)\n"
                 f"dashed: the paper's +9 %; y linear within +-10 %, logarithmic beyond", fontsize=10)
    fig.tight_layout()
    return fig


def claims(df: pd.DataFrame) -> list[dict]:
    """``C18_hot_spots`` and ``C18_hot_spot_growth`` over the best baseline, one point per workload and level."""
    first = df.drop_duplicates("workload")
    loads = ", ".join(f"{w} {r:.3g} rpm/instance" for w, r in zip(first["workload"], first["rpm_per_instance"]))
    rows = []
    for statistic, claim in CLAIMS.items():
        sub = df[(df["statistic"] == statistic) & (df["comparator"] == "best")]
        if sub.empty:
            continue
        points = [hs.point_label(r) for _, r in sub.iterrows()]
        cols = claim_columns([row_interval(r) for _, r in sub.iterrows()], paper_value(claim), points=points,
                             comparators=list(sub["baseline"]))
        held = sub[sub["verdict"].isin(_HOLDS)]
        text = "; ".join(f"{hs.point_label(r)} {percent(r['gain_mean'])} %" for _, r in held.iterrows()) or "no point"
        what = "gain" if statistic == "gain" else "change of the gain from the default"
        rows.append({"claim_id": claim, "reproduced": f"{what} holds at: {text}", **cols,
                     "reason": f"{len(sub)} points (both workloads, each level; comparator fixed on screening "
                               f"seeds), Holm over them; load {loads}"})
    return rows


def findings(df: pd.DataFrame) -> str:
    """Per workload and axis: the gain over the best baseline at each level (and its growth verdict), and the
    comparator's and SMETRIC's queued-prefill imbalance beside it."""
    best = df[df["comparator"] == "best"]
    gain = best[best["statistic"] == "gain"].set_index(["workload", "axis", "level"])
    growth = best[best["statistic"] == "growth"].set_index(["workload", "axis", "level"])
    lines = []
    for w in dict.fromkeys(best["workload"]):
        d = gain.loc[(w, hs.DEFAULT, hs.DEFAULT)]
        lines.append(f"{w} at {d['rpm_per_instance']:.3g} rpm/instance: default {percent(d['gain_mean'])} % vs "
                     f"{d['baseline']} ({d['verdict']}; imbalance of queued prefill "
                     f"{d['baseline_imbalance_waiting_time_avg']:.2f}x vs SMETRIC "
                     f"{d['smetric_imbalance_waiting_time_avg']:.2f}x)")
        for axis in [a for a in dict.fromkeys(best["axis"]) if a != hs.DEFAULT]:
            parts = []
            for (ww, a, level), r in gain.iterrows():
                if ww != w or a != axis:
                    continue
                key = (w, axis, level)
                change = (f"change {percent(growth.loc[key, 'gain_mean'])} pts: {growth.loc[key, 'verdict']}"
                          if key in growth.index else "runs as at the default")
                parts.append(f"{level} {percent(r['gain_mean'])} % vs {r['baseline']} [{r['verdict']}; {change}; "
                             f"imbalance {r['baseline_imbalance_waiting_time_avg']:.2f}x/"
                             f"{r['smetric_imbalance_waiting_time_avg']:.2f}x]")
            lines.append(f"  {axis}: " + "; ".join(parts))
    return "\n".join(lines)
