"""Figure 16: the model against published real-cluster experiments (router benchmarks and loaded vLLM runs)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

from ...realcluster import scoring
from ...realcluster.mechanisms import MECHANISMS, mechanism_cases, mechanism_errors
from ...realcluster.plot import plot_real_clusters
from ...realcluster.runner import predict_cases
from ...realcluster.spec import load_specs, spec_paths
from ..figure import FigureParams, param

_FMT = {"float_format": lambda x: f"{x:,.3g}"}


@dataclass(frozen=True)
class Params(FigureParams):
    specs: tuple[str, ...] = param((), "spec names of data/validation/ to replay (empty: every spec)")
    scaled: bool = param(False, "scale every stage to 10 % of its duration and requests (quick; not comparable)")
    mechanisms: bool = param(True, "also replay every spec with the legacy serving stack (before/after) and the "
                                   "single-engine runs with each serving-stack mechanism alone")

    @classmethod
    def quick(cls) -> Params:
        return cls(specs=("blis-16", "kubeai-8xl4-c800", "sglang-v04-cache-aware", "llmd-73-capacity-qps20"),
                   scaled=True)


def _specs(p: Params):
    specs = load_specs(spec_paths())
    if not p.specs:
        return specs
    by_name = {s.name: s for s in specs}
    unknown = [n for n in p.specs if n not in by_name]
    if unknown:
        raise ValueError(f"unknown validation spec {unknown[0]!r}; known: {', '.join(by_name)}")
    return [by_name[n] for n in p.specs]


def compute(p: Params, *, jobs: int | None = None) -> pd.DataFrame:
    """The error frame of every spec as specified (``mechanism`` ``all``), then, with ``p.mechanisms``, every spec
    with the legacy serving stack (``none``) and the single-engine (``blis`` harness) specs with each mechanism
    alone (:mod:`smetric.realcluster.mechanisms`); every replay in one pool of ``jobs`` workers (default: one per
    core)."""
    specs = _specs(p)
    cases = []
    if p.mechanisms:
        alone = [m for m in MECHANISMS if m not in ("none", "all")]
        cases = (mechanism_cases(specs, ("none",))
                 + mechanism_cases([s for s in specs if s.harness == "blis"], alone))
    predicted = predict_cases([(spec, None) for spec in specs] + [(spec, engine) for _, spec, engine in cases],
                              quick=p.scaled, jobs=jobs or os.cpu_count() or 1)
    frame = scoring.error_frame(specs, {s.name: q for s, q in zip(specs, predicted)}).assign(mechanism="all")
    if not cases:
        return frame
    return pd.concat([frame, mechanism_errors(cases, predicted[len(specs):])], ignore_index=True)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    return scoring.targets(scoring.as_specified(df))


def plot(df: pd.DataFrame):
    return plot_real_clusters(scoring.as_specified(df))


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Router ratios, rankings, the BLIS and LLMServingSim comparisons and the validation targets (and, where
    replayed, the targets before and after the serving stack and its mechanisms one at a time)."""
    full, df = df, scoring.as_specified(df)
    extra = {}
    if "mechanism" in full.columns and (full["mechanism"] == "none").any():
        extra = {"fig16_real_clusters_before_after": scoring.before_after(full),
                 "fig16_real_clusters_mechanisms": scoring.mechanism_table(full)}
    return {**extra, "fig16_real_clusters_ratios": scoring.ratio_table(df),
            "fig16_real_clusters_rankings": scoring.ranking_table(df),
            "fig16_real_clusters_blis": scoring.blis_table(df),
            "fig16_real_clusters_recorded": scoring.recorded_table(df),
            "fig16_real_clusters_targets": scoring.targets(df)}


def claims(df: pd.DataFrame) -> list[dict]:
    """No paper claim: the validation targets (:func:`scoring.targets`) are this package's, in their own CSV."""
    return []


def findings(df: pd.DataFrame) -> str:
    """Errors per metric family, the rankings and the targets."""
    df = scoring.as_specified(df)
    pub = df[df["measured"].notna()]
    per_metric = (pub.assign(abs_error=pub["rel_error"].abs()).groupby("metric")["abs_error"]
                  .agg(["median", "count"]).reset_index())
    return "\n".join([
        "Median |relative error| per metric:", per_metric.to_string(index=False, **_FMT), "",
        f"Rankings by throughput (router pairs measured < {100 * scoring.RANK_TIE:g} % apart are ties: either "
        "predicted order counts as right):", scoring.ranking_table(df).to_string(index=False, **_FMT), "",
        "Targets:", scoring.targets(df).to_string(index=False, **_FMT)])
