"""Robustness of the verdicts: each headline claim's paired gain and verdict across the uncertain model choices.

A verdict is only as good as the model under it. A :class:`Variant` names one choice on each axis
of :data:`AXES` (workload preset, KV-connector preset, GPU, Hopper attention calibration, global
store, replay, router information, session-start process, serving engine); :func:`variant_setup` turns it into
the setup of a :class:`~smetric.experiments.comparison.Comparison` panel, and :func:`knee_anchor` probes its knee.
A :class:`ClaimSpec` says how a claim is judged on a variant's per-seed results (the per-seed peak over loads,
or per paper point; :meth:`ClaimSpec.cells`); :func:`adjust_map` corrects the map of every claim and variant
for multiplicity and :func:`plot_robustness` draws it (colour = verdict, text = gain and interval).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from ..verdicts import (
    UNDETERMINED,
    VERDICT_ORDER,
    PaperValue,
    benjamini_hochberg,
    claim_columns,
    gain_interval,
    paired_gains,
    percent,
    point_table,
    point_verdict,
    seed_peaks,
)

__all__ = [
    "AXES",
    "MAP_COLUMNS",
    "ROUTERS",
    "VERDICT_COLOURS",
    "ClaimSpec",
    "arrival_process",
    "router_info",
    "adjust_map",
    "short_names",
    "row_label",
    "Variant",
    "knee_anchor",
    "one_at_a_time",
    "variant_setup",
    "plot_robustness",
]

#: The model choices a verdict may depend on (columns of the map).
AXES = ("workload", "kv_connector", "gpu", "attention", "store", "replay", "router", "arrival", "engine")
#: The first columns of the robustness CSV, in order.
MAP_COLUMNS = ("claim_id", "workload", "kv_connector", "gpu", "attention", "store", "gain_mean", "ci_low", "ci_high",
               "n_seeds", "verdict", "replay", "router", "arrival", "engine")
#: Router information models of a variant: every policy exact, or each with its sourced preset
#: (``data/routers/as_deployed.json``, :meth:`~smetric.cluster.router_info.RouterInfo.as_deployed`).
ROUTERS = ("exact", "as-deployed")
#: Cell colours of the map (colour-blind safe: blue = holds, grey = inconclusive, orange/red = refuted).
VERDICT_COLOURS = {"reproduced": "#2166ac", "direction only": "#92c5de", "inconclusive": "#d9d9d9",
                   "smaller than claimed": "#f4a582", "contradicted": "#d6604d", UNDETERMINED: "#ffffff"}
assert set(VERDICT_COLOURS) == {*VERDICT_ORDER, UNDETERMINED}


@dataclass(frozen=True)
class Variant:
    """One model choice per axis; ``name`` labels it in tables and plots. Defaults = the testbed's model
    (:data:`~smetric.testbeds.TESTBED_DEFAULTS`, the ``bailian-coder`` workload, FA3 attention, exact
    router information, Poisson session starts, the testbed's serving engine). ``router`` is one of
    :data:`ROUTERS`; ``arrival`` is ``poisson`` or ``TRACE:KIND``, a process fitted to a public trace
    (:func:`arrival_process`); ``engine`` a serving-stack row (:mod:`smetric.cluster.serving_stack`)."""

    name: str = "default"
    workload: str = "bailian-coder"
    kv_connector: str = "lmcache-mooncake"
    gpu: str = "h20"
    attention: str = "fa3"
    store: str = "provisioned"
    replay: str = "closed"
    router: str = "exact"
    arrival: str = "poisson"
    engine: str = "paper-testbed"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Variant.{f.name} must be a non-empty string, got {value!r}")

    def axes(self) -> dict[str, str]:
        """The axis values (without the name)."""
        return {axis: getattr(self, axis) for axis in AXES}


def arrival_process(name: str):
    """The session-start process a variant's ``arrival`` names: ``poisson``, or ``TRACE:KIND`` (the ``KIND``
    process fitted to ``TRACE`` in ``data/presets/arrivals.json``, e.g. ``azure-code:mmpp``)."""
    from ..workload.arrivals import POISSON, fitted_arrival

    if name == "poisson":
        return POISSON
    trace, sep, kind = name.partition(":")
    if not sep:
        raise ValueError(f"Variant.arrival must be 'poisson' or 'TRACE:KIND' (data/presets/arrivals.json), "
                         f"got {name!r}")
    return fitted_arrival(trace, kind)


def router_info(router: str, policy: str):
    """The :class:`~smetric.cluster.router_info.RouterInfo` of ``policy`` under a variant's ``router``."""
    from ..cluster.router_info import RouterInfo
    from ..policies import registry

    if router not in ROUTERS:
        raise ValueError(f"Variant.router must be one of {ROUTERS}, got {router!r}")
    return RouterInfo() if router == "exact" else RouterInfo.as_deployed(registry.get(policy).name)


def one_at_a_time(base: Variant | None = None, **axis_values: Sequence[str]) -> list[Variant]:
    """``base`` and, for each axis, each other value with the rest at ``base`` (named ``axis=value``)."""
    base = base or Variant()
    bad = sorted(set(axis_values) - set(AXES))
    if bad:
        raise ValueError(f"unknown axes {bad}; axes are {AXES}")
    for axis, values in axis_values.items():
        if isinstance(values, str) or not len(values):
            raise ValueError(f"{axis} needs a non-empty list of values, got {values!r}")
    out = [base]
    for axis, values in axis_values.items():
        for value in values:
            if value != getattr(base, axis):
                out.append(Variant(name=f"{axis}={value}", **{**base.axes(), axis: value}))
    return out


@dataclass(frozen=True)
class ClaimSpec:
    """How a claim is judged on one variant's per-seed results.

    The results have columns ``seed``, ``policy``, the ``value`` metric and, for ``statistic="peak"``, ``load``
    (the gain is that of each seed's peak over loads), or for ``statistic="points"``, ``point`` (a label of
    ``points``, one per paper point in the paper's order; one row per policy, seed and point). ``ours`` is the
    policy whose gain is judged; ``baselines`` restricts the candidates for the best baseline. ``paper`` defaults
    to the claim's row of ``data/paper_claims.csv``. ``peak`` is :func:`~smetric.verdicts.seed_peaks`'s
    ``how``.
    """

    claim_id: str
    statistic: str = "peak"
    value: str = "goodput_tps"
    load: str = "rpm_per_instance"
    points: tuple[str, ...] = ()
    ours: str = "smetric"
    baselines: tuple[str, ...] | None = None
    paper: PaperValue | None = None
    peak: str = "seed"

    def __post_init__(self) -> None:
        if self.peak not in ("seed", "mean"):
            raise ValueError(f"ClaimSpec.peak must be 'seed' or 'mean', got {self.peak!r}")
        if self.statistic not in ("peak", "points"):
            raise ValueError(f"ClaimSpec.statistic must be 'peak' or 'points', got {self.statistic!r}")
        if (self.statistic == "points") != bool(self.points):
            raise ValueError("ClaimSpec.points (labels in the paper's order) go with statistic='points' only")
        paper = self.paper
        if paper is None:
            from .claims import paper_claims, paper_value

            if self.claim_id not in paper_claims().index:
                raise ValueError(f"unknown claim {self.claim_id!r}; see data/paper_claims.csv")
            paper = paper_value(self.claim_id)
            object.__setattr__(self, "paper", paper)
        if paper.kind not in ("gain", "lower bound", "upper bound"):
            raise ValueError(f"{self.claim_id}: a {paper.kind!r} paper value has no per-cell rule")
        n_expected = len(self.points) if self.statistic == "points" else 1
        if len(paper.points) != n_expected:
            raise ValueError(f"{self.claim_id}: the paper value {paper.text!r} has {len(paper.points)} point(s), "
                             f"the spec measures {n_expected}")

    def cells(self, results: pd.DataFrame, comparator: str | None = None) -> list[dict]:
        """The judged points of one variant's per-seed results: ``point, best_baseline, gain_mean, ci_low,
        ci_high, n_seeds, verdict, peaks_at_edge`` each. ``comparator`` (a baseline fixed beforehand, e.g. on
        screening seeds) replaces the best baseline chosen on these results' mean. ``peaks_at_edge`` (peak
        statistic only, else NaN) counts the per-seed peaks of ``ours`` and the best baseline at the lowest or
        highest load swept: there the grid may not contain the peak, so extend it."""
        edge = np.nan
        baselines = [comparator] if comparator is not None else self.baselines
        if self.statistic == "peak":
            reduced = seed_peaks(results, self.value, over=self.load, how=self.peak)
            gains = paired_gains(reduced, self.value, ours=self.ours, baselines=baselines)
            groups = [("", gains)]
            compared = reduced[reduced["policy"].isin([self.ours, gains["best_baseline"].iloc[0]])]
            edge = int(compared[f"peak_{self.load}"].isin([results[self.load].min(), results[self.load].max()]).sum())
        else:
            unknown = sorted(set(results["point"]) - set(self.points))
            if unknown:
                raise ValueError(f"{self.claim_id}: results name points {unknown} not in {self.points}")
            gains = paired_gains(results, self.value, by=["point"], ours=self.ours, baselines=baselines)
            groups = [(p, gains[gains["point"] == p]) for p in self.points]
        rows = []
        for i, (label, sub) in enumerate(groups):
            if sub.empty:
                raise ValueError(f"{self.claim_id}: no results at point {label!r}")
            iv = gain_interval(sub["gain"])
            one = PaperValue(self.paper.kind, (self.paper.points[i],), self.paper.text)
            cols = claim_columns([iv], one)
            rows.append({"point": label, "best_baseline": sub["best_baseline"].iloc[0], "gain_mean": iv.mean,
                         "ci_low": iv.low, "ci_high": iv.high, "n_seeds": iv.n, "verdict": cols["verdict"],
                         "peaks_at_edge": edge})
        return rows


def adjust_map(table: pd.DataFrame) -> pd.DataFrame:
    """A robustness map with its multiplicity correction: each cell's ``p_value`` and minimal detectable effect
    ``mde`` (:func:`~smetric.verdicts.point_table`, from its interval), ``p_adjusted`` by
    Benjamini-Hochberg over every determined cell of the map, ``verdict`` from the adjusted decision and the
    interval's own in ``verdict_uncorrected``. Recomputable from a stored map (it reads only ``claim_id,
    point, gain_mean, ci_low, ci_high, n_seeds``)."""
    from .claims import paper_value
    from .main_results import PAPER_POINTS

    table = table.reset_index(drop=True).copy()
    cells = []
    for r in table.itertuples():
        paper = paper_value(r.claim_id)
        if paper.kind == "gain" and len(paper.points) > 1:  # one paper point per cell (C12's loads)
            paper = PaperValue("gain", (paper.points[list(PAPER_POINTS).index(r.point)],), paper.text)
        cells.append(point_table(paper, [r.gain_mean], [r.ci_low], [r.ci_high], [int(r.n_seeds)]).iloc[0])
    pts = pd.DataFrame(cells).reset_index(drop=True)
    table["p_value"], table["mde"] = pts["p_value"].to_numpy(), pts["mde"].to_numpy()
    table["p_adjusted"] = benjamini_hochberg(table["p_value"].to_numpy())
    table["verdict_uncorrected"] = pts["verdict_uncorrected"].to_numpy()
    table["verdict"] = [point_verdict(c.rule, c.gain_mean, c.ci_low, c.ci_high, int(c.n_seeds), c.paper_low,
                                      c.paper_high, p if np.isfinite(p) else None)
                        for c, p in zip(pts.itertuples(), table["p_adjusted"])]
    return table


def short_names(table: pd.DataFrame) -> dict[str, str]:
    """Variant name -> a short label for a map's columns: the changed values alone (``claude-code``, ``open``;
    ``gpu=h20, store=x`` -> ``h20, store x``), shortened (``lmcache-mooncake-fast`` -> ``lmc-fast``)."""
    def one(part: str) -> str:
        if "=" not in part:
            return part
        axis, value = part.split("=", 1)
        value = value.replace("lmcache-mooncake", "lmc").replace("-borrowed", "")
        return f"store {value}" if axis == "store" else f"attn {value}" if axis == "attention" else value

    return {name: ", ".join(one(p) for p in name.split(", ")) for name in dict.fromkeys(table["variant"])}


def row_label(claim_id: str, point: str) -> str:
    """A map row's label: ``C12_gain_vs_load @ 8x``, or the claim alone for a one-point claim."""
    return f"{claim_id} @ {point}" if point else claim_id


def plot_robustness(table: pd.DataFrame, title: str = ""):
    """Heat map of a robustness map (:func:`adjust_map`): one row per claim (and point), one column per variant;
    colour = verdict (the corrected one where the table has ``verdict_uncorrected``; a cell whose uncorrected
    verdict differs is marked ``*``), text = mean gain and 95 % interval (%) and, where some per-seed peaks sit at
    an end of the load grid, how many. Columns carry short names (:func:`short_names`), spelled out in a legend
    table under the map."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    from matplotlib.transforms import ScaledTranslation

    from ..plotting import set_style

    set_style()
    table = table.assign(point=table["point"].fillna(""))
    rows = list(dict.fromkeys(zip(table["claim_id"], table["point"])))
    cols = list(dict.fromkeys(table["variant"]))
    order = list(VERDICT_COLOURS)
    codes = np.full((len(rows), len(cols)), np.nan)
    cells = table.set_index(["claim_id", "point", "variant"])
    varying = [a for a in AXES if table[a].nunique() > 1]
    fig, ax = plt.subplots(figsize=(1.0 + 1.55 * len(cols), 0.9 + 0.62 * len(rows)))
    for i, (claim, point) in enumerate(rows):
        for j, variant in enumerate(cols):
            if (claim, point, variant) not in cells.index:
                continue
            r = cells.loc[(claim, point, variant)]
            codes[i, j] = order.index(r["verdict"])
            edge = r.get("peaks_at_edge", np.nan)
            note = f"\n{int(edge)} at edge" if np.isfinite(edge) and edge > 0 else ""
            star = "*" if r.get("verdict_uncorrected", r["verdict"]) != r["verdict"] else ""
            ax.text(j, i, f"{percent(r['gain_mean'])}%{star}\n[{percent(r['ci_low'])}, {percent(r['ci_high'])}]{note}",
                    ha="center", va="center", fontsize=7, color="white" if r["verdict"] == "reproduced" else "black")
    ax.imshow(np.ma.masked_invalid(codes), cmap=ListedColormap([VERDICT_COLOURS[v] for v in order]), vmin=-0.5,
              vmax=len(order) - 0.5, aspect="auto")
    first = table.drop_duplicates("variant").set_index("variant")
    short = short_names(table)
    ax.set_xticks(range(len(cols)), [short[v] for v in cols], fontsize=7, rotation=35, ha="right")
    ax.set_yticks(range(len(rows)), [row_label(c, p) for c, p in rows], fontsize=7)
    ax.set_xticks(np.arange(-0.5, len(cols)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(rows)), minor=True)
    ax.grid(which="minor", color="white", lw=2)
    ax.grid(which="major", visible=False)
    ax.tick_params(which="minor", length=0)
    n_lo, n_hi = int(table["n_seeds"].min()), int(table["n_seeds"].max())
    seeds = f"{n_lo} seeds" if n_lo == n_hi else f"{n_lo}-{n_hi} seeds"
    corrected = "Benjamini-Hochberg over the map; * = the uncorrected verdict differs" \
        if "verdict_uncorrected" in table.columns else "uncorrected"
    ax.set_title(title or f"SMETRIC's gain vs the comparator (%): mean [95 % CI], {seeds}; verdicts {corrected}",
                 fontsize=9)
    def spelled(v) -> str:
        moved = [a for a in varying if str(first.loc[v, a]) != str(first.iloc[0][a])] or varying
        return ", ".join(f"{a}={first.loc[v, a]}" for a in moved)

    legend = [f"{short[v]}: {spelled(v)}" for v in cols]
    text = "\n".join("     ".join(legend[k:k + 3]) for k in range(0, len(legend), 3))
    fig.tight_layout()
    # under the axes, outside the figure box: savefig(bbox_inches="tight") takes them in at any map size
    fig.legend(handles=[Patch(facecolor=VERDICT_COLOURS[v], edgecolor="0.6", label=v) for v in order],
               loc="upper center", ncol=len(order), frameon=False, fontsize=7, bbox_to_anchor=(0.5, 0.0))
    fig.text(0.01, 0.0, text, fontsize=6.5, va="top", ha="left", family="monospace",
             transform=fig.transFigure + ScaledTranslation(0, -0.3, fig.dpi_scale_trans))
    return fig


# ------------------------------------------------------------------------------------------ engine setup
def variant_setup(variant: Variant, policy: str, *, reference_rpm: float, testbed: str = "30b",
                  n_instances: int | None = None, minutes: float = 6.0,
                  cluster_overrides: Mapping | None = None) -> dict:
    """The :func:`~smetric.testbeds.offered_point` keywords of ``policy`` on ``testbed`` with every axis of the
    variant applied: the workload preset (thinned from one workload generated at ``reference_rpm``; a workload
    that is not one of ``testbeds.WORKLOADS`` is a timestamped trace file or catalog name replayed at each load,
    the same for every seed), the KV connector, the GPU, the Hopper attention calibration, the global store
    (``provisioned``, ``none`` or ``CAP_GB:BW_GBPS``, :meth:`GlobalStore.parse`), the replay, the engine, the
    router information (the policy's own ``as-deployed`` preset, :func:`router_info`) and the session-start
    process (:func:`arrival_process`; generated workloads only). ``cluster_overrides`` are further ClusterConfig
    fields (e.g. a PD split)."""
    from ..cluster.config import GlobalStore
    from ..testbeds import TESTBEDS, WORKLOADS

    if testbed not in TESTBEDS:
        raise ValueError(f"testbed must be one of {sorted(TESTBEDS)}, got {testbed!r}")
    store = variant.store if variant.store == "provisioned" else GlobalStore.parse(variant.store,
                                                                                  tp=TESTBEDS[testbed][2])
    cluster = {**(cluster_overrides or {}), "gpu": variant.gpu, "kv_connector": variant.kv_connector,
               "attention_calibration": variant.attention, "replay": variant.replay, "engine": variant.engine}
    if variant.router != "exact":
        cluster["router"] = router_info(variant.router, policy)
    if variant.workload in WORKLOADS:
        workload, trace = {"preset": variant.workload, "reference_rpm": float(reference_rpm)}, None
        if variant.arrival != "poisson":
            workload["arrival"] = arrival_process(variant.arrival)
    elif variant.arrival != "poisson":
        raise ValueError(f"{variant.name}: arrival {variant.arrival!r} needs a generated workload "
                         f"(testbeds.WORKLOADS), not the timestamped trace {variant.workload!r}")
    else:
        workload, trace = None, variant.workload
    return {"testbed": testbed, "n_instances": n_instances, "minutes": minutes, "global_store": store,
            "cluster_overrides": cluster, "workload_overrides": workload, "trace": trace}


def knee_anchor(variant: Variant, *, start: float, policy: str = "least-load", ratio: float = 1.25, steps: int = 3,
                max_extend: int = 4, seed: int = 0, metric: str = "goodput_tps", warmup_frac: float = 0.25,
                **setup_kw) -> tuple[float, pd.DataFrame]:
    """The offered load at which one baseline's ``metric`` peaks on ``variant`` (a cheap probe that fixes a grid).

    Rule: ``policy`` alone (SMETRIC is not run, so its results cannot move the grid), one ``seed``, on the
    geometric ladder ``start * ratio**k`` for ``k = -steps..steps``; while the peak sits at an end of the
    ladder, one more step is added beyond it (at most ``max_extend``). ``setup_kw`` go to :func:`variant_setup`
    (``reference_rpm``, so that the probe and the measured grid thin one workload; testbed, instances, minutes,
    cluster overrides). Returns the anchor and the probe's rows (``rpm_per_instance, <metric>``).
    """
    from ..testbeds import offered_point

    if not start > 0 or not ratio > 1 or steps < 1:
        raise ValueError(f"knee_anchor needs start > 0, ratio > 1 and steps >= 1, got {start}, {ratio}, {steps}")
    ks = list(range(-steps, steps + 1))
    setup = variant_setup(variant, policy, **setup_kw)
    values: dict[int, float] = {}

    def value(k: int) -> float:
        if k not in values:
            values[k] = float(offered_point(start * ratio ** k, policy, seed=seed, warmup_frac=warmup_frac,
                                            **setup)[metric])
        return values[k]

    for _ in range(max_extend + 1):
        curve = [value(k) for k in ks]
        best = int(np.argmax(curve))
        if 0 < best < len(ks) - 1:
            break
        if best == 0 and ks[0] > -steps - max_extend:
            ks.insert(0, ks[0] - 1)
        elif best == len(ks) - 1 and ks[-1] < steps + max_extend:
            ks.append(ks[-1] + 1)
        else:
            break
    k_best = ks[int(np.argmax([value(k) for k in ks]))]
    probe = pd.DataFrame({"rpm_per_instance": [start * ratio ** k for k in sorted(values)],
                          metric: [values[k] for k in sorted(values)]})
    return float(start * ratio ** k_best), probe
