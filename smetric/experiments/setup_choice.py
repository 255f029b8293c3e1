"""A setup a result is sensitive to (fig07's PD split), swept rather than picked: :func:`choose_setup` shows the
setup chosen by a rule fixed before looking at SMETRIC next to the gain in every setup."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..verdicts import PaperValue, claim_columns, gain_interval, paired_gains, seed_peaks
from .screening import screen_rank, split_screening

__all__ = ["SetupChoice", "choose_setup"]


@dataclass(frozen=True)
class SetupChoice:
    """The setup shown in a figure's main panel, the rule that chose it, and the gain in every setup."""

    chosen: object
    rule: str
    table: pd.DataFrame


def choose_setup(frame: pd.DataFrame, setup: str = "split", value: str = "prefill_tps",
                 load: str = "rpm_per_instance", *, choose_by: str | None = None, ours: str = "smetric",
                 baselines: Sequence[str] | None = None, paper: PaperValue | None = None,
                 each: bool = False) -> SetupChoice:
    """Choose the setup (e.g. the PD split) by a rule fixed before looking at ``ours``, and report every setup.

    Both the setup and each setup's comparator are fixed on the frame's **screening rows** (``screen_seed``,
    baselines only, :mod:`~smetric.experiments.screening`; a frame without them is read on its own rows,
    ``ours`` dropped). Rule: each seed's peak ``choose_by`` (default: ``value``) over ``load``; per setup, the
    best baseline (bounds named ``ideal*`` excluded) is the one with the highest mean of those peaks; the chosen
    setup maximises that mean (ties: the first in sorted order). The comparator of a setup is the baseline with
    the highest peak over ``load`` of its screening-seed mean ``value``
    (:func:`~smetric.experiments.screening.screen_rank`). ``choose_by="goodput_tps"`` with
    ``value="prefill_tps"`` keeps a split that starves the decode pool (prefill TPS ignores TPOT) from being chosen.
    ``table``: one row per setup with ``best_baseline`` (the comparator; ``each=True``: one row per baseline
    instead), ``baseline_peak`` (the setup's best seed-mean peak ``choose_by`` on the screening rows), the paired
    peak gain of ``ours`` in ``value`` on the compared rows (``gain_mean, ci_low, ci_high, n_seeds``),
    ``verdict`` (against ``paper``, if given) and ``chosen``.
    """
    choose_by = choose_by or value
    missing = [c for c in (setup, value, choose_by) if c not in frame.columns]
    if missing:
        raise ValueError(f"choose_setup: frame has no column(s) {missing}")
    screen, compared, _ = split_screening(frame)
    pool = screen[(screen["policy"] != ours) & ~screen["policy"].astype(str).str.startswith("ideal")]
    if baselines is not None:
        pool = pool[pool["policy"].isin(list(baselines))]
    if pool.empty:
        raise ValueError("choose_setup: no baseline rows")
    rule_peaks = seed_peaks(pool, choose_by, over=load, keys=[setup, "policy", "seed"])
    best = rule_peaks.groupby([setup, "policy"])[choose_by].mean().groupby(level=setup).max().sort_index()
    chosen = best.idxmax()
    ranks = screen_rank(pool, by=[setup], value=value, load=load)
    fixed = ranks[ranks["rank"] == 1].set_index(setup)["policy"]
    peaks = seed_peaks(compared, value, over=load, keys=[setup, "policy", "seed"])
    rows = []
    for key, sub in peaks.groupby(setup, sort=True):
        names = sorted(set(sub["policy"]) & set(pool["policy"])) if each else [fixed[key]]
        for name in names:
            gains = paired_gains(sub, value, ours=ours, baselines=[name])
            iv = gain_interval(gains["gain"])
            row = {setup: key, "best_baseline": name, "baseline_peak": float(best[key]),
                   "gain_mean": iv.mean, "ci_low": iv.low, "ci_high": iv.high, "n_seeds": iv.n}
            if paper is not None:
                row["verdict"] = claim_columns([iv], paper)["verdict"]
            rows.append({**row, "chosen": key == chosen})
    rule = (f"the {setup} whose best baseline (other than {ours}) has the highest seed-mean peak {choose_by} over "
            f"{load}, and in each {setup} the comparator (the baseline with the highest peak of its seed-mean "
            f"{value}); both fixed on the screening seeds, before and independently of {ours}'s results")
    return SetupChoice(chosen, rule, pd.DataFrame(rows))
