"""Figures 6-8: the main results -- goodput vs load, PD-disaggregated prefill TPS, latency distributions.

Load axis. The paper reports trace-rate multipliers ("6x, 8x, 9x, past saturation") of traces we do
not have, on hardware whose capacity our performance model does not match: its 8x is ~360 requests
per minute per instance, far beyond what one instance serves in our model (~12-20). We therefore
measure in absolute offered load (requests per minute per instance, the x axis of every figure; set
by the session arrival rate of the generated workload, :func:`~smetric.experiments.setups.offered_point`,
so the tool/think gaps stay as calibrated) and map the paper's multipliers onto it with one anchor per
testbed:

    rpm_per_instance = multiplier / ANCHOR_MULTIPLIER x ANCHOR_RPM[testbed]

``ANCHOR_MULTIPLIER`` is 8 because the paper's own numbers put the best baseline's peak there:
SMETRIC is +13 % over the best baseline at 9x but only +9 % at the peak, so the best baseline
already declines at 9x, while at 8x the gain is +4 %. ``ANCHOR_RPM`` is the offered load at which the
best baseline's goodput peaks in our model (measured on the default workloads; the notebooks
report where it actually peaked in each run, so a drifted anchor is visible). "Past saturation" is
read at 10x. Multipliers are therefore plain load levels: ``load_max=12`` sweeps up to 1.5x the
anchor.

* :func:`tps_vs_load` (Fig. 6): goodput TPS vs load, colocated with a provisioned global store,
  SMETRIC vs every baseline, both testbeds; :func:`peak_table`, :func:`gains_at_paper_loads`.
* :func:`pd_prefill_vs_load` (Fig. 7): the same sweep disaggregated, prefill TPS (prompt tokens of
  requests meeting the TTFT SLO per second).
* :func:`latency_distributions` (Fig. 8): TTFT and TPOT quantiles per policy at one high load;
  :func:`latency_table` (p50/p90/p99).
* ``*_claims`` functions turn each frame into the rows of :func:`~smetric.experiments.claims.record_claims`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .setups import BASELINES, TESTBEDS, agent_workload, offered_point, paper_cluster
from .sweep import sweep

__all__ = [
    "ANCHOR_MULTIPLIER", "ANCHOR_RPM", "PAPER_POINTS", "MAIN_BASELINES", "PD_SPLIT",
    "paper_multipliers", "rpm_of", "split_label", "select_testbeds", "tps_vs_load", "pd_prefill_vs_load",
    "latency_distributions",
    "peak_table", "gains_at_paper_loads", "latency_table", "plot_vs_load",
    "plot_latency", "main_result_claims", "pd_claims", "latency_claims",
]

ANCHOR_MULTIPLIER = 8.0  # the paper's load level mapped onto ANCHOR_RPM
# Offered load (requests/min/instance) at which the best baseline's seed-mean goodput peaks in our model
# (default workloads, seeds 0-1): 30B, least-load at 12 (probed at 9-18 rpm and in fig06); 235B, dynamo
# at 22.5 in fig06 (a probe at 14-28 rpm in steps of 2 put least-load's peak at 20, within 5 % over 18-24).
ANCHOR_RPM = {"30b": 12.0, "235b": 22.5}
# The paper's load levels of claim C12 (x) -> the multiplier we read them at.
PAPER_POINTS = {"6x": 6.0, "8x": 8.0, "9x": 9.0, "past saturation": 10.0}
# The baselines the paper's notes name (LMetric, BAILIAN, Dynamo, llm-d session-sticky, load-balance
# only) plus Mooncake's scheduler (the paper's global tier is Mooncake Store).
MAIN_BASELINES = ("lmetric", "bailian", "dynamo", "session-sticky", "least-load", "mooncake")
# Fig. 7's prefill:decode split of the 32 instances (chosen on the earlier compressed-timeline axis). At the
# 30B anchor load, 20P+12D starves the
# prefill pool (TTFT p50 ~ 10 s) and 28P+4D the decode pool (KV of ~12 agent contexts per decode
# instance: TPOT p50 ~ 8 s); 24P+8D keeps both pools just below saturation.
PD_SPLIT = (24, 8)
_KNEE = (6.0, 7.0, 8.0, 9.0, 10.0, 11.0)  # dense multipliers around the anchor
_QUANTILES = np.round(np.linspace(0.0, 1.0, 201), 3)


def paper_multipliers(load_max: float = 12.0) -> list[float]:
    """The load grid in the paper's units: every even multiplier from 2 plus 6-11, up to ``load_max``."""
    if not load_max >= 2:
        raise ValueError(f"load_max must be >= 2 (paper load multipliers), got {load_max!r}")
    grid = set(_KNEE) | set(np.arange(2.0, float(load_max) + 1e-9, 2.0).tolist())
    return sorted(m for m in grid if m <= load_max)


def rpm_of(multiplier: float, testbed: str, anchor_rpm: Mapping[str, float] | None = None) -> float:
    """The offered load (requests/min/instance) of a paper load multiplier on ``testbed``."""
    anchors = dict(ANCHOR_RPM, **(anchor_rpm or {}))
    if testbed not in anchors:
        raise ValueError(f"no anchor rpm for testbed {testbed!r}; known: {sorted(anchors)}")
    if not multiplier > 0:
        raise ValueError(f"load multiplier must be > 0, got {multiplier!r}")
    return float(multiplier) / ANCHOR_MULTIPLIER * anchors[testbed]


def select_testbeds(testbeds: Sequence[str] = ("30b", "235b"), model: str | None = None) -> list[str]:
    """The testbeds to run: ``model`` (a testbed key such as ``235b`` or a model name such as
    ``qwen3-235b-a22b``) selects one and overrides ``testbeds``."""
    if model is None:
        return list(testbeds)
    for key, (name, *_rest) in TESTBEDS.items():
        if model.lower() in (key, name):
            return [key]
    raise ValueError(f"model {model!r} is not a paper testbed; use one of {sorted(TESTBEDS)} or "
                     f"{sorted(v[0] for v in TESTBEDS.values())}")


def _per_testbed(value, testbeds: Sequence[str], name: str) -> dict:
    """A scalar applies to every testbed; a mapping must name each one."""
    if isinstance(value, Mapping):
        missing = [t for t in testbeds if t not in value]
        if missing:
            raise ValueError(f"{name} has no entry for testbed(s) {missing}")
        return {t: value[t] for t in testbeds}
    return {t: value for t in testbeds}


def _check_names(testbeds: Sequence[str], policies: Sequence[str]) -> None:
    from ..policies import available

    bad = [t for t in testbeds if t not in TESTBEDS]
    if bad or not testbeds:
        raise ValueError(f"testbeds must be a non-empty list from {sorted(TESTBEDS)}, got {list(testbeds)}")
    known = {spec.name for spec in available()}
    unknown = [p for p in policies if p not in known]
    if unknown or not policies:
        raise ValueError(f"policies must be a non-empty list of registered policies, unknown: {unknown}")


def _load_point(testbed: str, policy: str, multiplier: float, rpm_per_instance: float, seed: int, *, setups: dict,
                warmup_frac: float) -> dict:
    """One sweep point: the summary of ``policy`` on ``testbed`` at ``rpm_per_instance`` (module level for Dask).

    ``seed`` picks the workload and seeds the policy's random draws (as in :func:`latency_distributions`)."""
    return offered_point(rpm_per_instance, policy, seed=seed, warmup_frac=warmup_frac, **setups[testbed])


def _load_sweep(setups: dict, policies: Sequence[str], multipliers: Sequence[float], seeds: Sequence[int], anchor_rpm,
                warmup_frac: float, jobs: int | None) -> pd.DataFrame:
    """Every (testbed, policy, multiplier, seed) point; ``setups`` maps a testbed to :func:`offered_point`
    keywords. Tidy, with both load axes (paper multiplier, requests/min/instance)."""
    if not multipliers:
        raise ValueError("multipliers must not be empty")
    # policies innermost: the points sharing a workload run one after the other (workers cache a few)
    grid = [{"testbed": t, "policy": p, "multiplier": float(m), "rpm_per_instance": rpm_of(m, t, anchor_rpm),
             "seed": int(s)} for t in setups for m in multipliers for s in seeds for p in policies]
    return sweep(grid, _load_point, shared={"setups": setups, "warmup_frac": warmup_frac}, jobs=jobs,
                 progress=False, on_error="raise")


def tps_vs_load(testbeds: Sequence[str] = ("30b", "235b"), policies: Sequence[str] = ("smetric", *BASELINES),
                multipliers: Sequence[float] | None = None, load_max: float = 12.0,
                minutes: float | Mapping[str, float] = 6.0, n_instances: int | Mapping[str, int] | None = None,
                seeds: Sequence[int] = (0,), anchor_rpm: Mapping[str, float] | None = None,
                warmup_frac: float = 0.25, jobs: int | None = None) -> pd.DataFrame:
    """Fig. 6: goodput TPS vs load, colocated with a provisioned global store.

    One row per (testbed, policy, multiplier, seed): ``rpm_per_instance`` (offered load) and every
    :meth:`SimResult.summary` metric, measured after the first
    ``warmup_frac`` of the arrival span. ``multipliers`` (paper load units, see the module
    docstring) default to :func:`paper_multipliers` ``(load_max)``; ``minutes`` of agent workload
    and ``n_instances`` (None = the paper's 32 / 8) may be given per testbed.
    """
    _check_names(testbeds, policies)
    grid = paper_multipliers(load_max) if multipliers is None else list(multipliers)
    sizes = _per_testbed(n_instances, testbeds, "n_instances")
    windows = _per_testbed(minutes, testbeds, "minutes")
    setups = {t: {"testbed": t, "n_instances": sizes[t], "minutes": float(windows[t])} for t in testbeds}
    return _load_sweep(setups, policies, grid, seeds, anchor_rpm, warmup_frac, jobs)


def pd_prefill_vs_load(policies: Sequence[str] = ("smetric", *MAIN_BASELINES), multipliers: Sequence[float] = (
                       2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0), split: tuple[int, int] = PD_SPLIT,
                       minutes: float = 6.0, seeds: Sequence[int] = (0,), anchor_rpm: Mapping[str, float] | None = None,
                       warmup_frac: float = 0.25, jobs: int | None = None) -> pd.DataFrame:
    """Fig. 7: the 30B testbed disaggregated into ``split`` = (prefill, decode) instances.

    Same columns as :func:`tps_vs_load` (``testbed`` is ``"30b"``); the figure of merit is
    ``prefill_tps``. Loads use the colocated 30B anchor, so both figures share one load axis
    (requests per minute per instance, counting prefill and decode instances).
    """
    _check_names(["30b"], policies)
    n_prefill, n_decode = split
    setup = {"testbed": "30b", "n_instances": n_prefill + n_decode, "minutes": float(minutes),
             "cluster_overrides": {"mode": "disaggregated", "n_prefill": n_prefill, "n_decode": n_decode}}
    paper_cluster("30b", n_instances=n_prefill + n_decode, **setup["cluster_overrides"])  # a bad split fails here
    frame = _load_sweep({"30b": setup}, policies, list(multipliers), seeds, anchor_rpm, warmup_frac, jobs)
    return frame.assign(n_prefill=n_prefill, n_decode=n_decode)


def split_label(df: pd.DataFrame) -> str:
    """``24P+8D``: the prefill:decode split of a :func:`pd_prefill_vs_load` frame."""
    return f"{int(df['n_prefill'].iloc[0])}P+{int(df['n_decode'].iloc[0])}D"


def _latency_point(policy: str, seed: int, *, workload, cluster, warmup_frac: float) -> pd.DataFrame:
    """TTFT and TPOT quantiles of one policy's requests after the warm-up cut (module level for Dask)."""
    from ..cluster.simulate import simulate

    result = simulate(workload, cluster, policy, load=1.0, seed=seed, progress=False)
    rq = result.requests
    since = rq["arrival"].min() + warmup_frac * (rq["arrival"].max() - rq["arrival"].min())
    rq = rq[rq["arrival"] >= since]
    summary = result.summary(since=float(since))
    ttft = rq["ttft"].dropna().to_numpy()
    tpot = rq.loc[rq["finish"].notna() & (rq["output_len"] > 1), "tpot"].to_numpy()
    parts = []
    for metric, values in (("ttft_s", ttft), ("tpot_ms", 1e3 * tpot)):
        if len(values) == 0:
            raise ValueError(f"{policy}: no request has a {metric} after the warm-up cut; lower the load")
        parts.append(pd.DataFrame({"metric": metric, "quantile": _QUANTILES,
                                   "value": np.quantile(values, _QUANTILES), "n": len(values)}))
    out = pd.concat(parts, ignore_index=True)
    for key in ("goodput_tps", "slo_attainment", "n_requests", "n_unfinished"):
        out[key] = summary[key]
    return out


def latency_distributions(policies: Sequence[str] = ("smetric", *MAIN_BASELINES), testbed: str = "30b",
                          multiplier: float = ANCHOR_MULTIPLIER, minutes: float = 6.0, n_instances: int | None = None,
                          seeds: Sequence[int] = (0,), anchor_rpm: Mapping[str, float] | None = None,
                          warmup_frac: float = 0.25, jobs: int | None = None) -> pd.DataFrame:
    """Fig. 8: TTFT (s) and TPOT (ms) quantiles per policy at one load (default: the anchor, 8x).

    One row per (policy, seed, metric, quantile) with ``value`` and the point's ``goodput_tps``,
    ``slo_attainment``, ``n_requests``, ``n_unfinished`` (requests never finished have no TPOT; those
    never prefilled no TTFT: both are excluded from the quantiles and counted in ``n_unfinished``).
    """
    _check_names([testbed], policies)
    rpm = rpm_of(multiplier, testbed, anchor_rpm)
    cluster = paper_cluster(testbed, n_instances=n_instances)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {list(seeds)}")
    frames = []
    for seed in seeds:  # one workload per seed; each is scattered to the workers once
        workload = agent_workload(cluster.n_instances, float(minutes), int(seed), rpm_per_instance=rpm)
        frames.append(sweep({"policy": list(policies), "seed": [int(seed)]}, _latency_point,
                            shared={"workload": workload, "cluster": cluster, "warmup_frac": warmup_frac},
                            jobs=jobs, progress=False, on_error="raise"))
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "testbed", testbed)
    out.insert(2, "multiplier", float(multiplier))
    out.insert(3, "rpm_per_instance", rpm)
    return out


# ---------------------------------------------------------------------------------------- tables
def _mean_over_seeds(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    keys = ["testbed", "policy", "multiplier", "rpm_per_instance"]
    return df.groupby(keys, as_index=False, sort=False)[metric].mean()


def _best_baseline(frame: pd.DataFrame, metric: str, by: Sequence[str]) -> pd.DataFrame:
    """Per group of ``by``: the baseline (non-smetric policy) with the highest ``metric`` and its value."""
    base = frame[frame["policy"] != "smetric"]
    if base.empty:
        raise ValueError("no baseline policy in the frame: a gain over the best baseline needs one")
    idx = base.groupby(list(by), sort=False)[metric].idxmax()
    return base.loc[idx, [*by, "policy", metric]].rename(columns={"policy": "best_baseline", metric: "baseline"})


def peak_table(df: pd.DataFrame, metric: str = "goodput_tps") -> pd.DataFrame:
    """Peak (max over loads of the seed-mean ``metric``) per testbed and policy, best first.

    Columns ``testbed, policy, peak, peak_rpm_per_instance, peak_multiplier, gain_vs_best_baseline``
    (smetric's row: its peak over the best baseline's peak - 1; baselines' rows: their peak over
    smetric's - 1, i.e. how far below SMETRIC they are; NaN without smetric).
    """
    mean = _mean_over_seeds(df, metric)
    at_peak = mean.loc[mean.groupby(["testbed", "policy"], sort=False)[metric].idxmax()]
    table = at_peak.rename(columns={metric: "peak", "rpm_per_instance": "peak_rpm_per_instance",
                                    "multiplier": "peak_multiplier"})
    table = table[["testbed", "policy", "peak", "peak_rpm_per_instance", "peak_multiplier"]]
    gains = []
    for _testbed, sub in table.groupby("testbed", sort=False):
        peaks = sub.set_index("policy")["peak"]
        if "smetric" not in peaks:
            gains.append(pd.Series(np.nan, index=sub.index))
            continue
        best_base = peaks.drop("smetric").max() if len(peaks) > 1 else np.nan
        gains.append(pd.Series(np.where(sub["policy"] == "smetric", peaks["smetric"] / best_base - 1.0,
                                        sub["peak"] / peaks["smetric"] - 1.0), index=sub.index))
    table["gain_vs_best_baseline"] = pd.concat(gains)
    return table.sort_values(["testbed", "peak"], ascending=[True, False]).reset_index(drop=True)


def gains_at_paper_loads(df: pd.DataFrame, metric: str = "goodput_tps",
                         points: Mapping[str, float] = PAPER_POINTS) -> pd.DataFrame:
    """SMETRIC vs the best baseline at each of the paper's load levels (seed means).

    Columns ``testbed, paper_load, multiplier, rpm_per_instance, smetric, best_baseline, baseline,
    gain`` (smetric / baseline - 1). Levels whose multiplier was not swept are left out.
    """
    mean = _mean_over_seeds(df, metric)
    best = _best_baseline(mean, metric, ["testbed", "multiplier"])
    ours = mean[mean["policy"] == "smetric"][["testbed", "multiplier", "rpm_per_instance", metric]]
    both = ours.merge(best, on=["testbed", "multiplier"]).rename(columns={metric: "smetric"})
    labels = pd.DataFrame({"paper_load": list(points), "multiplier": [float(m) for m in points.values()]})
    out = labels.merge(both, on="multiplier")
    out["gain"] = out["smetric"] / out["baseline"] - 1.0
    cols = ["testbed", "paper_load", "multiplier", "rpm_per_instance", "smetric", "best_baseline", "baseline", "gain"]
    return out[cols].sort_values(["testbed", "multiplier"]).reset_index(drop=True)


def _quantile_column(metric: str, q: float) -> str:
    """``("ttft_s", 0.9)`` -> ``"ttft_p90_s"``."""
    name, unit = metric.split("_", 1)
    return f"{name}_p{round(q * 100):d}_{unit}"


def latency_table(frame: pd.DataFrame, quantiles: Sequence[float] = (0.5, 0.9, 0.99)) -> pd.DataFrame:
    """p50/p90/p99 of TTFT (s) and TPOT (ms) per policy (seed means), with goodput and SLO attainment."""
    picked = frame[np.isin(frame["quantile"], np.round(quantiles, 3))]
    wide = picked.pivot_table(index="policy", columns=["metric", "quantile"], values="value", aggfunc="mean",
                              sort=False)
    wide.columns = [_quantile_column(metric, q) for metric, q in wide.columns]
    extra = frame.groupby("policy", sort=False)[["goodput_tps", "slo_attainment"]].mean()
    return wide.join(extra).sort_values("goodput_tps", ascending=False).reset_index()


# ---------------------------------------------------------------------------------------- plots
def _styles(policies) -> tuple[list[str], dict, dict]:
    """Policy order (SMETRIC first), colours (SMETRIC black) and line widths (SMETRIC thick)."""
    import seaborn as sns

    order = list(dict.fromkeys(["smetric", *policies] if "smetric" in set(policies) else policies))
    baselines = [p for p in order if p != "smetric"]
    colours = sns.color_palette("tab20" if len(baselines) > 10 else "colorblind", len(baselines))
    palette = {"smetric": (0.0, 0.0, 0.0), **dict(zip(baselines, colours))}
    sizes = {p: (2.6 if p == "smetric" else 1.2) for p in order}
    return order, palette, sizes


def plot_vs_load(df: pd.DataFrame, metric: str = "goodput_tps", ylabel: str = "goodput (k tokens/s within SLO)",
                 title: str = "", points: Mapping[str, float] = PAPER_POINTS):
    """One panel per testbed: seed-mean ``metric`` vs requests per minute per instance, one line per policy.

    The top axis gives the paper's load multiplier; dotted lines mark the paper's load levels.
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..plotting import set_style

    set_style()
    mean = _mean_over_seeds(df, metric)
    mean["k"] = mean[metric] / 1e3
    order, palette, sizes = _styles(mean["policy"])
    testbeds = list(dict.fromkeys(mean["testbed"]))
    fig, axes = plt.subplots(1, len(testbeds), figsize=(6.2 * len(testbeds) + 2.2, 4.6), squeeze=False)
    for ax, testbed in zip(axes[0], testbeds):
        sub = mean[mean["testbed"] == testbed]
        sns.lineplot(sub, x="rpm_per_instance", y="k", hue="policy", hue_order=order, palette=palette,
                     size="policy", sizes=sizes, size_order=order, marker="o", markersize=4, ax=ax,
                     legend=ax is axes[0][-1])
        rpm_per_x = float((sub["rpm_per_instance"] / sub["multiplier"]).iloc[0])
        top = ax.secondary_xaxis("top", functions=(lambda r, k=rpm_per_x: r / k, lambda m, k=rpm_per_x: m * k))
        top.set_xlabel("paper load multiplier (x), anchored at the best baseline's peak = 8x")
        for label, m in points.items():
            if sub["multiplier"].min() <= m <= sub["multiplier"].max():
                ax.axvline(m * rpm_per_x, color="0.5", ls=":", lw=1)
                ax.annotate(label, (m * rpm_per_x, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -10),
                            textcoords="offset points", fontsize=7, color="0.35", rotation=90, va="top")
        model = TESTBEDS[testbed][0]
        ax.set(xlabel="offered load (requests / min / instance)", ylabel=ylabel, ylim=(0, None),
               title=f"{testbed.upper()}: {model}")
    handles, labels = axes[0][-1].get_legend_handles_labels()
    axes[0][-1].get_legend().remove()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, title="policy")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_latency(frame: pd.DataFrame, tpot_slo_ms: float = 20.0, ttft_base_s: float = 1.0):
    """CDFs of TTFT and TPOT per policy (quantile functions averaged over seeds), SLO lines dashed."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..plotting import set_style

    set_style()
    curves = frame.groupby(["testbed", "policy", "multiplier", "rpm_per_instance", "metric", "quantile"],
                           as_index=False,
                          sort=False)["value"].mean()
    order, palette, sizes = _styles(curves["policy"])
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 4.6))
    panels = (("ttft_s", "TTFT (s)", ttft_base_s, f"TTFT SLO base {ttft_base_s:g} s (+ per prompt token)"),
              ("tpot_ms", "TPOT (ms per output token)", tpot_slo_ms, f"TPOT SLO {tpot_slo_ms:g} ms"))
    for ax, (metric, label, slo, slo_label) in zip(axes, panels):
        sub = curves[curves["metric"] == metric].assign(value=lambda d: d["value"].clip(lower=1e-3))
        sns.lineplot(sub, x="value", y="quantile", hue="policy", hue_order=order, palette=palette, size="policy",
                     sizes=sizes, size_order=order, estimator=None, ax=ax, legend=ax is axes[-1])
        ax.axvline(slo, color="0.3", ls="--", lw=1, label=slo_label)
        ax.set(xscale="log", xlabel=f"{label}, log scale", ylabel="CDF of requests", ylim=(0, 1.01))
        ax.text(slo, 0.03, " " + slo_label, fontsize=7, color="0.3", rotation=90, va="bottom")
    rpm = float(curves["rpm_per_instance"].iloc[0])
    mult = float(curves["multiplier"].iloc[0])
    testbed = str(curves["testbed"].iloc[0])
    fig.suptitle(f"Latency at a high load: {testbed.upper()}, {rpm:.1f} requests/min/instance (paper {mult:g}x)")
    handles, labels = axes[-1].get_legend_handles_labels()
    axes[-1].get_legend().remove()
    keep = [i for i, lab in enumerate(labels) if lab in palette]
    fig.legend([handles[i] for i in keep], [labels[i] for i in keep], loc="center left",
               bbox_to_anchor=(1.0, 0.5), frameon=False, title="policy")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------- claims
# Gains at or below this are ties: across 4 workload seeds the 235B peak gain spread over -2.8..+0.1 %
# and the 30B one over +2.0..+5.5 % (10-min / 20-min windows).
TIE = 0.02


def _verdict(measured: float, paper: float) -> str:
    """``reproduced`` within half the paper's gain (at least 3 points), ``direction only`` for any other
    gain above :data:`TIE`, ``not reproduced`` otherwise."""
    if not np.isfinite(measured) or measured <= TIE:
        return "not reproduced"
    return "reproduced" if abs(measured - paper) <= max(0.5 * abs(paper), 0.03) else "direction only"


def _pct(x: float) -> str:
    return f"{x:+.1%}" if np.isfinite(x) else "n/a"


def _anchor_note(df: pd.DataFrame, metric: str, testbed: str) -> str:
    peaks = peak_table(df[df["testbed"] == testbed], metric)
    base = peaks[peaks["policy"] != "smetric"].iloc[0]
    return (f"best baseline {base['policy']} peaked at {base['peak_rpm_per_instance']:.1f} rpm/instance "
            f"(= paper {base['peak_multiplier']:g}x; anchor 8x = {ANCHOR_RPM[testbed]:g})")


_TYPICAL_PROMPT = 25_000  # tokens: mean prompt of the synthetic agent workload (~24.9k)
_TYPICAL_NEW = 0.2  # share of it not found in any cache (agent reuse ~80 %)


def _locality_note(testbed: str) -> str:
    """What a local hit saves on ``testbed``: loading a typical prompt from the global store vs prefilling its new
    tokens."""
    from ..hardware import kernel

    cluster = paper_cluster(testbed)
    spec = cluster.hardware_spec()
    load_s = _TYPICAL_PROMPT * spec.kv_bytes_per_token / (cluster.global_store.bandwidth_gbs * 1e9)
    new = _TYPICAL_NEW * _TYPICAL_PROMPT
    prefill_s = kernel.prefill_time_nb(spec.coef_array, new, _TYPICAL_PROMPT - new)
    return (f"a local hit saves loading a {_TYPICAL_PROMPT / 1e3:.0f}k-token prefix from the global store: "
            f"{1e3 * load_s:.0f} ms at {cluster.global_store.bandwidth_gbs:g} GB/s vs {1e3 * prefill_s:.0f} ms "
            f"to prefill its {new / 1e3:.0f}k new tokens")


def _last_level_note(df: pd.DataFrame, last: pd.Series, testbed: str) -> str:
    """What limits SMETRIC and the best baseline at the highest paper level swept (SLO attainment, TPOT, local hits)."""
    cols = ["slo_attainment", "tpot_p50", "ttft_p50", "hit_ratio_hbm"]
    at = df[(df["testbed"] == testbed) & (df["multiplier"] == last["multiplier"])]
    m = at.groupby("policy")[cols].mean()

    def desc(policy: str) -> str:
        r = m.loc[policy]
        return (f"{policy} SLO met {r['slo_attainment']:.0%}, TPOT p50 {1e3 * r['tpot_p50']:.0f} ms, "
                f"TTFT p50 {r['ttft_p50']:.1f} s, HBM hit {r['hit_ratio_hbm']:.0%}")

    return f"At {last.name}: {desc('smetric')}; {desc(last['best_baseline'])} (TPOT SLO 20 ms)."


def main_result_claims(df: pd.DataFrame) -> list[dict]:
    """Rows for C12 (gains vs load, on the 30B testbed if swept, else the first) and C13 (peak per testbed)."""
    rows = []
    gains = gains_at_paper_loads(df)
    testbeds = list(dict.fromkeys(df["testbed"]))
    primary = "30b" if "30b" in testbeds else testbeds[0]
    g = gains[gains["testbed"] == primary].set_index("paper_load")
    if len(g) >= 2:  # levels not swept are left out of the text and make "reproduced" impossible
        paper = {"6x": 0.01, "8x": 0.04, "9x": 0.13, "past saturation": 0.26}
        text = ", ".join(f"{k} ({g.loc[k, 'rpm_per_instance']:.1f} rpm/inst) {_pct(g.loc[k, 'gain'])} vs "
                         f"{g.loc[k, 'best_baseline']}" for k in g.index)
        close = len(g) == len(paper) and all(abs(g.loc[k, "gain"] - v) <= max(0.5 * v, 0.03) for k, v in paper.items())
        grows = g["gain"].iloc[-1] > max(g["gain"].iloc[0], TIE)
        verdict = "reproduced" if close else ("direction only" if grows else "not reproduced")
        rows.append({"claim_id": "C12_gain_vs_load", "reproduced": f"{primary}: {text}", "verdict": verdict,
                     "reason": ("paper x mapped to an offered load of x/8 of the best baseline's peak (requests/min/"
                                "instance, set by the session arrival rate) in our model; "
                                + _anchor_note(df, "goodput_tps", primary) + "; past saturation = 10x. "
                                + _last_level_note(df, g.iloc[-1], primary))})
    peaks = peak_table(df)
    for testbed, claim, paper in (("30b", "C13_peak_30b", 0.09), ("235b", "C13_peak_235b", 0.15)):
        sub = peaks[peaks["testbed"] == testbed].set_index("policy")
        if "smetric" not in sub.index or len(sub) < 2:
            continue
        best = sub.drop("smetric")["peak"].idxmax()
        gain = float(sub.loc["smetric", "gain_vs_best_baseline"])
        rows.append({"claim_id": claim, "verdict": _verdict(gain, paper),
                     "reproduced": (f"peak goodput smetric {sub.loc['smetric', 'peak'] / 1e3:.1f}k tok/s vs "
                                    f"{best} {sub.loc[best, 'peak'] / 1e3:.1f}k: {_pct(gain)}"),
                     "reason": (f"max over {df['multiplier'].nunique()} loads, {len(sub) - 1} baselines, "
                                f"{df['seed'].nunique()} seed(s), gains <= {TIE:.0%} count as ties; "
                                + _anchor_note(df, "goodput_tps", testbed) + "; " + _locality_note(testbed))})
    return rows


def pd_claims(df: pd.DataFrame) -> list[dict]:
    """C14: peak prefill-TPS gain (v2: +9 %) and the range of per-load gains (v1: +2-34 %)."""
    peaks = peak_table(df, "prefill_tps").set_index("policy")
    gain = float(peaks.loc["smetric", "gain_vs_best_baseline"])
    best = peaks.drop("smetric")["peak"].idxmax()
    per_load = gains_at_paper_loads(df, "prefill_tps", {f"{m:g}x": m for m in sorted(df["multiplier"].unique())})
    live = per_load[per_load["baseline"] > 0]
    return [{"claim_id": "C14_pd_prefill", "verdict": _verdict(gain, 0.09),
             "reproduced": (f"peak prefill TPS smetric {peaks.loc['smetric', 'peak'] / 1e3:.1f}k vs {best} "
                            f"{peaks.loc[best, 'peak'] / 1e3:.1f}k: {_pct(gain)} (v2: +9%); per-load gains "
                            f"{_pct(live['gain'].min())} to {_pct(live['gain'].max())} (v1: +2% to +34%)"),
             "reason": (f"{split_label(df)} of 30B on H20 with a provisioned global store; verdict "
                        "against v2's peak number; " + _anchor_note(df, "prefill_tps", "30b"))}]


def latency_claims(frame: pd.DataFrame) -> list[dict]:
    """C16: SMETRIC's TPOT p50 and p90 at most every baseline's (``reproduced``), at most the best-goodput
    baseline's (``direction only``), else ``not reproduced``."""
    table = latency_table(frame).set_index("policy")
    base = table.drop("smetric")
    best = base["goodput_tps"].idxmax()
    cols = ["tpot_p50_ms", "tpot_p90_ms"]
    ours = table.loc["smetric", cols]
    if (ours <= base[cols].min()).all():
        verdict = "reproduced"
    elif (ours <= base.loc[best, cols]).all():
        verdict = "direction only"
    else:
        verdict = "not reproduced"
    s, b = table.loc["smetric"], table.loc[best]
    return [{"claim_id": "C16_latency", "verdict": verdict,
             "reproduced": (f"TPOT p50/p90/p99 smetric {s['tpot_p50_ms']:.1f}/{s['tpot_p90_ms']:.1f}/"
                            f"{s['tpot_p99_ms']:.1f} ms vs {best} {b['tpot_p50_ms']:.1f}/{b['tpot_p90_ms']:.1f}/"
                            f"{b['tpot_p99_ms']:.1f}; TTFT p50/p99 {s['ttft_p50_s']:.2f}/{s['ttft_p99_s']:.1f} s vs "
                            f"{b['ttft_p50_s']:.2f}/{b['ttft_p99_s']:.1f}"),
             "reason": (f"{frame['testbed'].iloc[0]} at {frame['rpm_per_instance'].iloc[0]:.1f} rpm/instance "
                        f"(paper {frame['multiplier'].iloc[0]:g}x); best baseline = highest goodput there; "
                        "reproduced = TPOT p50 and p90 no worse than every baseline's")}]
