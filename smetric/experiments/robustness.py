"""Robustness of the verdicts: each headline claim's paired gain and verdict across the uncertain model choices.

A verdict is only as good as the model under it. A :class:`Variant` names one choice on each axis
of :data:`AXES` (workload preset, KV-connector preset, GPU, Hopper attention calibration, global
store, replay, router information, session-start process); a :class:`ClaimSpec` says how a claim is
measured: a compute function ``compute(variant, seeds) -> per-seed results`` (one row per policy,
seed and load) and how those become gains (the per-seed peak over loads, or per paper point).
:func:`robustness_map` runs every (claim, variant, seed) through
:func:`~smetric.experiments.sweep.sweep`, pairs the seeds
(:func:`~smetric.experiments.verdicts.paired_gains`), and judges each cell with the rules of
:mod:`~smetric.experiments.verdicts`; :func:`plot_robustness` draws the map (colour = verdict, text =
gain and interval).

:func:`peak_compute` is a ready compute function on the engine: SMETRIC and baselines on the 30B or
235B testbed over a per-variant offered-load grid, every axis of the variant applied.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from .sweep import sweep
from .verdicts import (
    UNDETERMINED,
    VERDICT_ORDER,
    PaperValue,
    benjamini_hochberg,
    claim_columns,
    gain_interval,
    paired_gains,
    parse_paper_value,
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
    "Variant",
    "factorial",
    "knee_anchor",
    "one_at_a_time",
    "peak_compute",
    "plot_robustness",
    "robustness_map",
]

#: The model choices a verdict may depend on (columns of the map).
AXES = ("workload", "kv_connector", "gpu", "attention", "store", "replay", "router", "arrival", "engine")
#: Columns of the robustness CSV, in order, then ``replay``, ``router`` and ``arrival``;
#: :func:`robustness_map` adds ``point``, ``variant`` and ``best_baseline`` after ``claim_id``.
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


def factorial(base: Variant | None = None, **axis_values: Sequence[str]) -> list[Variant]:
    """Every combination of the given axis values (others from ``base``), named ``axis=value, ...``."""
    base = base or Variant()
    _check_axes(axis_values)
    names = list(axis_values)
    out = []
    for combo in itertools.product(*axis_values.values()):
        settings = dict(zip(names, combo))
        out.append(Variant(name=", ".join(f"{k}={v}" for k, v in settings.items()) or base.name,
                           **{**base.axes(), **settings}))
    return out


def one_at_a_time(base: Variant | None = None, **axis_values: Sequence[str]) -> list[Variant]:
    """``base`` and, for each axis, each other value with the rest at ``base`` (named ``axis=value``)."""
    base = base or Variant()
    _check_axes(axis_values)
    out = [base]
    for axis, values in axis_values.items():
        for value in values:
            if value != getattr(base, axis):
                out.append(Variant(name=f"{axis}={value}", **{**base.axes(), axis: value}))
    return out


def _check_axes(axis_values: Mapping) -> None:
    bad = sorted(set(axis_values) - set(AXES))
    if bad:
        raise ValueError(f"unknown axes {bad}; axes are {AXES}")
    for axis, values in axis_values.items():
        if isinstance(values, str) or not len(values):
            raise ValueError(f"{axis} needs a non-empty list of values, got {values!r}")


@dataclass(frozen=True)
class ClaimSpec:
    """How a claim is measured on one variant.

    ``compute(variant, seeds)`` returns per-seed results: columns ``seed``, ``policy``, the ``value`` metric and,
    for ``statistic="peak"``, ``load`` (the gain is that of each seed's peak over loads), or for
    ``statistic="points"``, ``point`` (a label of ``points``, one per paper point in the paper's order;
    one row per policy, seed and point). ``ours`` is the policy whose gain is judged; ``baselines``
    restricts the candidates for the best baseline. ``paper`` defaults to the claim's row of
    ``data/paper_claims.csv``. ``peak`` is :func:`~smetric.experiments.verdicts.seed_peaks`'s ``how``.
    """

    claim_id: str
    compute: Callable[[Variant, tuple[int, ...]], pd.DataFrame]
    statistic: str = "peak"
    value: str = "goodput_tps"
    load: str = "rpm_per_instance"
    points: tuple[str, ...] = ()
    ours: str = "smetric"
    baselines: tuple[str, ...] | None = None
    paper: PaperValue | None = None
    peak: str = "seed"

    def __post_init__(self) -> None:
        if not callable(self.compute):
            raise TypeError(f"ClaimSpec.compute must be callable, got {self.compute!r}")
        if self.peak not in ("seed", "mean"):
            raise ValueError(f"ClaimSpec.peak must be 'seed' or 'mean', got {self.peak!r}")
        if self.statistic not in ("peak", "points"):
            raise ValueError(f"ClaimSpec.statistic must be 'peak' or 'points', got {self.statistic!r}")
        if (self.statistic == "points") != bool(self.points):
            raise ValueError("ClaimSpec.points (labels in the paper's order) go with statistic='points' only")
        paper = self.paper
        if paper is None:
            from .claims import paper_claims

            table = paper_claims()
            if self.claim_id not in table.index:
                raise ValueError(f"unknown claim {self.claim_id!r}; see data/paper_claims.csv")
            row = table.loc[self.claim_id]
            paper = parse_paper_value(row["paper_value"], row["unit"])
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


def _cell_point(claim_id: str, variant: str, seeds: tuple, *, specs: Mapping[str, ClaimSpec],
                variants: Mapping[str, Variant]) -> pd.DataFrame:
    """One sweep point: a claim's per-seed results on one variant (module level for Dask)."""
    frame = specs[claim_id].compute(variants[variant], tuple(seeds))
    if not isinstance(frame, pd.DataFrame) or "seed" not in frame.columns:
        raise ValueError(f"{claim_id} on {variant}: compute must return a DataFrame with a 'seed' column")
    stray = sorted(set(frame["seed"]) - set(seeds))
    if stray:
        raise ValueError(f"{claim_id} on {variant}: compute returned seeds {stray}, asked for {list(seeds)}")
    return frame


def robustness_map(specs: Sequence[ClaimSpec], variants: Sequence[Variant], seeds: Sequence[int], *,
                   jobs: int | None = None, progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every claim on every variant: the map and the raw per-seed results.

    Runs one sweep point per (seed, claim, variant) -- seeds outermost, so the points sharing a
    workload run one after another -- and judges each cell (:meth:`ClaimSpec.cells`). Returns
    ``(table, results)``: ``table`` has ``claim_id, point, variant, workload, kv_connector, gpu, attention,
    store, best_baseline, gain_mean, ci_low, ci_high, n_seeds, verdict, peaks_at_edge`` (``point`` is empty
    for single-point claims), one row per claim, point and variant in input order; ``results`` is the
    concatenated output of the compute functions with ``claim_id`` and ``variant``.
    """
    specs, variants, seeds = list(specs), list(variants), [int(s) for s in seeds]
    if not specs or not variants or not seeds:
        raise ValueError("robustness_map needs at least one claim, one variant and one seed")
    for what, names in (("claim", [s.claim_id for s in specs]), ("variant", [v.name for v in variants]),
                        ("seed", seeds)):
        if len(set(names)) != len(names):
            raise ValueError(f"{what}s must be distinct, got {names}")
    by_claim, by_name = {s.claim_id: s for s in specs}, {v.name: v for v in variants}
    grid = [{"claim_id": c.claim_id, "variant": v.name, "seeds": (s,)} for s in seeds for c in specs for v in variants]
    results = sweep(grid, _cell_point, shared={"specs": by_claim, "variants": by_name}, jobs=jobs,
                    progress=progress, on_error="raise").drop(columns="seeds")
    rows = []
    for spec in specs:
        for variant in variants:
            sub = results[(results["claim_id"] == spec.claim_id) & (results["variant"] == variant.name)]
            for cell in spec.cells(sub.drop(columns=["claim_id", "variant"])):
                rows.append({"claim_id": spec.claim_id, "point": cell.pop("point"), "variant": variant.name,
                             **variant.axes(), **cell})
    return pd.DataFrame(rows), results.reset_index(drop=True)


def adjust_map(table: pd.DataFrame) -> pd.DataFrame:
    """A robustness map with its multiplicity correction: each cell's ``p_value`` and minimal detectable effect
    ``mde`` (:func:`~smetric.experiments.verdicts.point_table`, from its interval), ``p_adjusted`` by
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


def _pct(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{100 * x:+.1f}"


def plot_robustness(table: pd.DataFrame, title: str = ""):
    """Heat map of a :func:`robustness_map` table: one row per claim (and point), one column per variant;
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
            ax.text(j, i, f"{_pct(r['gain_mean'])}%{star}\n[{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]{note}",
                    ha="center", va="center", fontsize=7, color="white" if r["verdict"] == "reproduced" else "black")
    ax.imshow(np.ma.masked_invalid(codes), cmap=ListedColormap([VERDICT_COLOURS[v] for v in order]), vmin=-0.5,
              vmax=len(order) - 0.5, aspect="auto")
    first = table.drop_duplicates("variant").set_index("variant")
    short = short_names(table)
    ax.set_xticks(range(len(cols)), [short[v] for v in cols], fontsize=7, rotation=35, ha="right")
    ax.set_yticks(range(len(rows)), [f"{c} @ {p}" if p else c for c, p in rows], fontsize=7)
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


# ------------------------------------------------------------------------------------------ engine compute
def peak_compute(variant: Variant, seeds: tuple[int, ...], *,
                 rpm_grid: Mapping[str, Sequence[float]] | Callable[[Variant], Sequence[float]],
                 policies: Sequence[str], testbed: str = "30b", n_instances: int | None = None,
                 minutes: float = 6.0, warmup_frac: float = 0.25, metric: str = "goodput_tps",
                 cluster_overrides: Mapping | None = None, reference_rpm: float | None = None) -> pd.DataFrame:
    """Per-seed ``metric`` of ``policies`` over a grid of offered loads (requests/min/instance) on ``testbed`` with
    every axis of the variant applied: the workload preset (thinned from one workload at the grid's top,
    ``agent_workload(preset=, reference_rpm=)``; ``reference_rpm`` overrides that top; a workload that is not
    one of ``testbeds.WORKLOADS`` is a timestamped trace file or catalog name replayed at each load), the KV
    connector, the GPU,
    the Hopper attention calibration
    (``ClusterConfig.attention_calibration``), the global store (``provisioned``, ``none`` or
    ``CAP_GB:BW_GBPS``, :meth:`GlobalStore.parse`), the replay, the router information (each policy's own
    ``as-deployed`` preset, :func:`router_info`) and the session-start process (:func:`arrival_process`; generated
    workloads only). ``cluster_overrides`` are further
    ClusterConfig fields (e.g. a PD split). Columns ``seed, policy, rpm_per_instance, <metric>``.

    ``rpm_grid`` is a mapping from the variant's name or, failing that, its GPU to the loads, or a function
    of the variant: capacity moves with the GPU and the workload, so choose the grid from the baselines
    alone such that it contains their peak. Runs serially (it is itself a sweep point); bind the keywords
    with :func:`functools.partial`.
    """
    from ..cluster.config import GlobalStore
    from ..testbeds import TESTBEDS, WORKLOADS, offered_point

    if callable(rpm_grid):
        grid = [float(x) for x in rpm_grid(variant)]
    elif variant.name in rpm_grid or variant.gpu in rpm_grid:
        grid = [float(x) for x in rpm_grid[variant.name if variant.name in rpm_grid else variant.gpu]]
    else:
        raise ValueError(f"no offered-load grid for variant {variant.name!r} or gpu {variant.gpu!r}; "
                         f"have {sorted(rpm_grid)}")
    if not grid or min(grid) <= 0:
        raise ValueError(f"{variant.name}: the load grid must be positive loads, got {grid}")
    if testbed not in TESTBEDS:
        raise ValueError(f"testbed must be one of {sorted(TESTBEDS)}, got {testbed!r}")
    tp = TESTBEDS[testbed][2]
    store = variant.store if variant.store == "provisioned" else GlobalStore.parse(variant.store, tp=tp)
    cluster = {**(cluster_overrides or {}), "gpu": variant.gpu, "kv_connector": variant.kv_connector,
               "attention_calibration": variant.attention, "replay": variant.replay, "engine": variant.engine}
    if variant.workload in WORKLOADS:
        workload, trace = {"preset": variant.workload, "reference_rpm": float(reference_rpm or max(grid))}, None
        if variant.arrival != "poisson":
            workload["arrival"] = arrival_process(variant.arrival)
    elif variant.arrival != "poisson":
        raise ValueError(f"{variant.name}: arrival {variant.arrival!r} needs a generated workload "
                         f"(testbeds.WORKLOADS), "
                         f"not the timestamped trace {variant.workload!r}")
    else:  # a timestamped trace file or catalog name, replayed at each offered rate (the same for every seed)
        workload, trace = None, variant.workload
    routed = {p: cluster if variant.router == "exact" else {**cluster, "router": router_info(variant.router, p)}
              for p in policies}
    rows = []
    for seed in seeds:
        for rpm in grid:
            for policy in policies:
                summary = offered_point(rpm, policy, testbed=testbed, n_instances=n_instances, minutes=minutes,
                                        seed=int(seed), warmup_frac=warmup_frac, global_store=store,
                                        cluster_overrides=routed[policy], workload_overrides=workload, trace=trace)
                rows.append({"seed": int(seed), "policy": policy, "rpm_per_instance": rpm, metric: summary[metric]})
    return pd.DataFrame(rows)


def knee_anchor(variant: Variant, *, start: float, policy: str = "least-load", ratio: float = 1.25, steps: int = 3,
                max_extend: int = 4, seed: int = 0, metric: str = "goodput_tps",
                **compute_kw) -> tuple[float, pd.DataFrame]:
    """The offered load at which one baseline's ``metric`` peaks on ``variant`` (a cheap probe that fixes a grid).

    Rule: ``policy`` alone (SMETRIC is not run, so its results cannot move the grid), one ``seed``, on the
    geometric ladder ``start * ratio**k`` for ``k = -steps..steps``; while the peak sits at an end of the
    ladder, one more step is added beyond it (at most ``max_extend``). ``compute_kw`` go to
    :func:`peak_compute` (testbed, instances, minutes, cluster overrides; pass ``reference_rpm`` so that the
    probe and the measured grid thin one workload). Returns the anchor and the probe's rows.
    """
    if not start > 0 or not ratio > 1 or steps < 1:
        raise ValueError(f"knee_anchor needs start > 0, ratio > 1 and steps >= 1, got {start}, {ratio}, {steps}")
    ks = list(range(-steps, steps + 1))
    frames: dict[int, pd.DataFrame] = {}

    def value(k: int) -> float:
        if k not in frames:
            rpm = start * ratio ** k
            frames[k] = peak_compute(variant, (seed,), rpm_grid=lambda _v: (rpm,), policies=(policy,), metric=metric,
                                     **compute_kw)
        return float(frames[k][metric].iloc[0])

    for _ in range(max_extend + 1):
        values = [value(k) for k in ks]
        best = int(np.argmax(values))
        if 0 < best < len(ks) - 1:
            break
        if best == 0 and ks[0] > -steps - max_extend:
            ks.insert(0, ks[0] - 1)
        elif best == len(ks) - 1 and ks[-1] < steps + max_extend:
            ks.append(ks[-1] + 1)
        else:
            break
    k_best = ks[int(np.argmax([value(k) for k in ks]))]
    probe = pd.concat([frames[k] for k in sorted(frames)], ignore_index=True)
    return float(start * ratio ** k_best), probe
