"""Figure 14: the headline verdicts (C12, C13, C14) across the uncertain model choices.

One-at-a-time variations around the testbed's model: each axis of :data:`~smetric.experiments.robustness.AXES`
moved to each of its other values with the rest at the default. Per variant and claim, the 30B testbed's load
grid is in multiples of a per-variant **anchor** that plays the paper's 8x: the goodput peak (prefill-TPS peak
for C14) of a baseline-only probe (:func:`~smetric.experiments.robustness.knee_anchor`, :data:`PROBE`); SMETRIC
and the baselines then run at every (load, seed). **The comparator** of each claim and variant is fixed on
``screening_seeds`` (disjoint from ``seeds``, baselines only): the highest peak over the grid of the
screening-seed mean, held at every C12 load. The gains over it are paired per seed, judged by the rules of
:mod:`~smetric.verdicts` and **Benjamini-Hochberg** corrected over the whole map
(:func:`~smetric.experiments.robustness.adjust_map`; the uncorrected verdict in ``verdict_uncorrected``).
C12 is read at 6x/8x/9x/10x of the anchor, C13 is each seed's peak over the colocated grid, C14 each
seed's peak prefill TPS over the PD grid.

The under-provisioned store is 2 GB and 6 GB/s per instance (64 GB on 32 instances). Assumption, sized
from the committed fig06 runs: SMETRIC writes ~7.5 GB per instance per minute to the store on 30B at 48
requests/min/instance, ~20 GB per instance over a 2-minute window and its warm-up, so a 2 GB store fills
during the warm-up and evicts throughout the window. Its bandwidth binds only the ``ideal`` connector:
``lmcache-mooncake`` reads at its own rates.

Two axes of router information and arrivals: ``router=as-deployed`` gives each policy its sourced information model
(``data/routers/as_deployed.json``); SMETRIC, LMetric, Dynamo and least-load have no published refresh interval
or read router-local counters, so their presets are exact (labelled assumptions there) and the cell equals the
default -- fig17 adds llm-d, whose 50 ms refresh is sourced. ``arrival=azure-code:mmpp`` starts the sessions by
the two-state MMPP fitted to the Azure 2023 code trace, the burstiest shipped trace and the match for the coding
presets (``data/presets/arrivals.json``); it applies to the generated workloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import pandas as pd

from ...testbeds import TRACE_WORKLOADS
from .. import main_results as mr
from ..comparison import Comparison, Panel, run_comparison
from ..figure import FigureParams, param
from ..robustness import (
    AXES,
    MAP_COLUMNS,
    ClaimSpec,
    Variant,
    adjust_map,
    knee_anchor,
    one_at_a_time,
    plot_robustness,
    row_label,
    short_names,
    variant_setup,
)
from ..screening import top_by_name
from ..sweep import sweep

_HOLDS = ("reproduced", "direction only")


@dataclass(frozen=True)
class Params(FigureParams):
    variations: dict = param({"workload": ("long-context", "toolagent", "claude-code"),
                              "kv_connector": ("ideal", "lmcache-mooncake-fast", "lmcache-mooncake-slow"),
                              "attention": ("a100-borrowed",), "gpu": ("h200", "h800"),
                              "store": ("under-provisioned",), "replay": ("open",), "router": ("as-deployed",),
                              "arrival": ("azure-code:mmpp",), "engine": ("vllm-v1-async",)},
                             "axis -> values varied one at a time around the default variant")
    trace: str | None = param(None, "a timestamped trace file or catalog name run as one more workload variant "
                                    "(replayed at each offered rate; the probe starts at bailian-coder's guess)")
    under_provisioned: str = param("2:6", "the under-provisioned store per instance (capacity GB:GB/s), full "
                                          "within the window (module docstring)")
    policies: tuple[str, ...] = param(("smetric", "lmetric", "dynamo", "least-load"),
                                      "smetric and the baselines: LMetric and Dynamo (fig06's best on bailian-coder "
                                      "and on claude-code), least-load (load-only)")
    split: tuple[int, int] = param((20, 12), "prefill, decode instances of C14 (the split fig07's rule chose)")
    n_instances: int = param(32, "instances of the 30B testbed")
    multipliers: tuple[float, ...] = param((6, 8, 9, 10, 12), "loads in paper multipliers of the anchor (8x)")
    probe_start: dict = param({"bailian-coder": 40, "toolagent": 48, "long-context": 24, "claude-code": 4},
                              "workload -> first guess of the anchor (requests/min/instance) the probe ladders from")
    minutes: float = param(2, "measured window of the agent workload (2 min: 8 seeds fit the make-figures budget)")
    trace_minutes: float = param(10, "measured window of a real-trace workload variant (claude-code: ~6 requests "
                                     "per minute per instance at its peak, cheap to simulate)")
    seeds: tuple[int, ...] = param(tuple(range(8)), "workload seeds (paired)")
    screening_seeds: tuple[int, ...] = param((100, 101), "seeds on which the baselines alone fix each comparator "
                                                         "(disjoint from seeds)")
    warmup_frac: float = param(0.25, "share of the arrival span simulated but not measured")

    @classmethod
    def quick(cls) -> Params:
        return cls(variations={"gpu": ("h200",), "replay": ("open",)}, n_instances=8, split=(6, 2), minutes=1.5,
                   policies=("smetric", "least-load"), multipliers=(6, 8, 9, 10), seeds=(0, 1),
                   screening_seeds=(100,))

    def __post_init__(self) -> None:
        super().__post_init__()
        if set(self.seeds) & set(self.screening_seeds) or not self.screening_seeds:
            raise ValueError(f"screening_seeds {list(self.screening_seeds)} must be non-empty and disjoint from "
                             f"seeds {list(self.seeds)}")


#: The probe: least-load alone, seed 0, ladder ratio 1.25, three steps each side (extended while the peak is at an end).
PROBE = {"policy": "least-load", "ratio": 1.25, "steps": 3, "seed": 0}


#: claim kind -> the metric its claims judge.
METRICS = {"colocated": "goodput_tps", "pd": "prefill_tps"}


def _start(p: Params, workload: str) -> float:
    """The probe's first guess for a workload (a trace file without one starts at bailian-coder's)."""
    return float(p.probe_start.get(workload, p.probe_start["bailian-coder"]))


def _setups(p: Params, v: Variant) -> dict[str, dict]:
    """claim kind -> :func:`~smetric.experiments.robustness.variant_setup` keywords of variant ``v``: a real-trace
    workload is measured over ``trace_minutes``; every load is thinned from ``reference_rpm``, the top of the probe
    ladder plus one step."""
    n_p, n_d = p.split
    common = {"testbed": "30b", "minutes": float(p.trace_minutes if v.workload in TRACE_WORKLOADS else p.minutes),
              "reference_rpm": _start(p, v.workload) * PROBE["ratio"] ** (PROBE["steps"] + 1)}
    return {"colocated": {**common, "n_instances": p.n_instances},
            "pd": {**common, "n_instances": n_p + n_d,
                   "cluster_overrides": {"mode": "disaggregated", "n_prefill": n_p, "n_decode": n_d}}}


def _probe_point(variant: str, kind: str, *, variants: dict, setups: dict, starts: dict, warmup_frac: float) -> dict:
    v = variants[variant]
    anchor, probe = knee_anchor(v, start=starts[v.workload], **PROBE, metric=METRICS[kind], warmup_frac=warmup_frac,
                                **setups[variant][kind])
    return {"anchor_rpm": anchor, "probe_loads": len(probe)}


def variants(p: Params) -> list[Variant]:
    """The default variant and the one-at-a-time variations (``under-provisioned`` resolved to ``CAP:BW`` of the
    whole cluster: the capacity scales with the instances)."""
    variations = {a: tuple(vals) for a, vals in p.variations.items()}
    if p.trace is not None:
        variations["workload"] = (*variations.get("workload", ()), str(p.trace))
    cap, bw = (float(x) for x in p.under_provisioned.split(":"))
    stores = {"under-provisioned": f"{cap * p.n_instances:g}:{bw:g}"}
    return [Variant(**{**v.__dict__, "store": stores.get(v.store, v.store)}) for v in one_at_a_time(**variations)]


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    """The map: one row per claim (C12 per paper point) and variant, MAP_COLUMNS first, then ``point, variant,
    best_baseline, peaks_at_edge, anchor_rpm`` (the variant's anchor for that claim's grid)."""
    vs = variants(p)
    setups = {v.name: _setups(p, v) for v in vs}
    shared = {"variants": {v.name: v for v in vs}, "setups": setups, "warmup_frac": p.warmup_frac,
              "starts": {v.workload: _start(p, v.workload) for v in vs}}
    probes = sweep([{"variant": v.name, "kind": k} for v in vs for k in METRICS], _probe_point, shared=shared,
                   jobs=jobs, on_error="raise")
    anchors = {(r.variant, r.kind): r.anchor_rpm for r in probes.itertuples()}
    panels = {(v.name, k): Panel(partial(variant_setup, v, **setups[v.name][k]),
                                 tuple(anchors[(v.name, k)] * m / mr.ANCHOR_MULTIPLIER for m in p.multipliers))
              for v in vs for k in METRICS}
    results = run_comparison(Comparison(panels, p.policies, p.seeds, ("variant", "kind"),
                                        screen_seeds=p.screening_seeds,
                                        loops=("seed", "panel", "rpm_per_instance", "policy"),
                                        warmup_frac=p.warmup_frac), jobs=jobs)
    return judge(results, vs, anchors, p.multipliers, screening=p.screening_seeds)


def _specs(multipliers) -> dict[str, tuple[str, ClaimSpec]]:
    """claim -> (kind of run, spec). C12's points are the paper's load levels present in the grid."""
    labels = tuple(k for k, m in mr.PAPER_POINTS.items() if m in multipliers)
    specs = {"C13_peak_30b": ("colocated", ClaimSpec("C13_peak_30b")),
             "C14_pd_prefill": ("pd", ClaimSpec("C14_pd_prefill", value="prefill_tps"))}
    if len(labels) == len(mr.PAPER_POINTS):
        specs = {"C12_gain_vs_load": ("colocated", ClaimSpec("C12_gain_vs_load", statistic="points",
                                                             points=labels)), **specs}
    return specs


def judge(results: pd.DataFrame, vs: list[Variant], anchors: dict, multipliers,
          screening: tuple[int, ...] = ()) -> pd.DataFrame:
    """The map from the per-seed runs (``kind, variant, seed, policy, rpm_per_instance`` and the metrics): per claim
    and variant, the comparator fixed on the ``screening`` seeds' rows (the highest peak over loads of the
    screening-seed mean, :func:`~smetric.experiments.screening.top_by_name`), the cells judged on the
    other seeds, then the map corrected (:func:`~smetric.experiments.robustness.adjust_map`)."""
    rows = []
    for claim, (kind, spec) in _specs(multipliers).items():
        for v in vs:
            sub = results[(results["kind"] == kind) & (results["variant"] == v.name)].drop(columns=["kind", "variant"])
            screen = sub[sub["seed"].isin(list(screening))]
            sub = sub[~sub["seed"].isin(list(screening))]
            fixed = top_by_name(screen, spec.value) if screening else None
            anchor = anchors[(v.name, kind)]
            if spec.statistic == "points":
                mult = (sub["rpm_per_instance"] / anchor * mr.ANCHOR_MULTIPLIER).round(6)
                label = {m: k for k, m in mr.PAPER_POINTS.items()}
                sub = sub.assign(point=mult.map(label)).dropna(subset=["point"])
            for cell in spec.cells(sub, comparator=fixed):
                rows.append({"claim_id": claim, **v.axes(), **cell, "variant": v.name, "anchor_rpm": anchor})
    table = adjust_map(pd.DataFrame(rows))
    return table[[*MAP_COLUMNS, "point", "variant", "best_baseline", "peaks_at_edge", "anchor_rpm", "p_value",
                  "p_adjusted", "mde", "verdict_uncorrected"]]


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return df[["claim_id", "point", "variant", "anchor_rpm", "best_baseline", "gain_mean", "ci_low", "ci_high",
               "verdict"]]


def plot(df: pd.DataFrame):
    return plot_robustness(df)


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The legend of the map's short column names."""
    short = short_names(df)
    first = df.drop_duplicates("variant")
    return {"fig14_claim_robustness_variants": pd.DataFrame(
        {"short_name": [short[v] for v in first["variant"]], "variant": first["variant"],
         **{a: first[a] for a in AXES}})}


def findings(df: pd.DataFrame) -> str:
    """One sentence per claim (and C12 point): the variants where it holds (reproduced or direction only)
    and where it fails (inconclusive, smaller than claimed or contradicted), from the table's corrected
    verdicts."""
    df = df.assign(point=df["point"].fillna(""))

    def where(verb: str, frame: pd.DataFrame) -> str:
        return f"{verb} in no variant" if frame.empty else f"{verb} when " + ", ".join(
            f"{n} ({v}, {100 * g:+.1f} %)" for n, v, g in zip(frame["variant"], frame["verdict"], frame["gain_mean"]))

    lines = []
    for (claim, point), sub in df.groupby(["claim_id", "point"], sort=False):
        held = sub["verdict"].isin(_HOLDS)
        lines.append(f"{row_label(claim, point)}: {where('holds', sub[held])}; {where('fails', sub[~held])}.")
    return "\n".join(lines)


def claims(df: pd.DataFrame) -> list[dict]:
    """None: fig06 and fig07 record C12-C14 at the default model; this figure maps their robustness."""
    return []
