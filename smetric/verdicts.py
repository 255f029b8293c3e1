"""Verdicts from paired multi-seed statistics: SMETRIC's gain per workload seed, its confidence interval, the rule.

**Pairing.** A seed fixes the workload (and the policies' random draws), so SMETRIC and every
baseline see the same requests under one seed (common random numbers). :func:`paired_gains` picks
the best baseline *once per group* (e.g. per load) by its mean over seeds -- never per seed, which
would bias the comparison towards the baseline -- then takes SMETRIC's relative gain over it seed by
seed: ``gain_s = ours_s / baseline_s - 1``. :func:`seed_peaks` first reduces a load sweep to each
seed's peak (max over loads), for the claims about peak goodput; the best baseline is then the one
with the highest mean peak.

**Interval.** :func:`gain_interval` reports the mean of the per-seed gains, a 95 % interval and n.
The default is the paired t-interval ``mean +- t(0.975, n-1) s / sqrt(n)``; ``method="bca"`` or
``"percentile"`` runs :func:`scipy.stats.bootstrap` (seeded) instead. Why t: the claims use about 8
seeds, and at n = 8 the bootstrap intervals are too narrow. A simulation (300 samples each, true
mean known) gave coverage of a nominal 95 % interval, t / percentile / BCa:

* normal gains, n = 8: 0.95 / 0.88 / 0.87;  n = 4: 0.95 / 0.81 / 0.81;
* heavy-tailed (t with 3 d.o.f.), n = 8: 0.93 / 0.84 / 0.81;
* strongly skewed (lognormal, sigma 0.8), n = 8: 0.86 / 0.83 / 0.85.

The bootstrap only catches up near n = 16. With n < 2 no interval exists: the bounds are NaN and
the verdict is ``undetermined``. When every seed gives the same gain (zero variance), the interval
is that single value (t-interval of width zero; the bootstrap, which scipy leaves undefined there,
is given the same).

**Rules** (:func:`verdict`), from the interval ``[lo, hi]`` and the paper's value ``p`` (a point;
a paper range ``[a, b]`` of one sign is treated alike), with the paper's band ``[0.5 |p|, 1.5 |p|]``
(with p's sign; ``[0.5 a, 1.5 b]`` for a range), checked in this order:

* ``contradicted``: the interval excludes 0 on the other side of the paper's value;
* ``smaller than claimed``: the interval lies wholly below the band (nearer 0 than ``0.5 |p|``), whether or
  not it contains 0: the claimed magnitude is refuted;
* ``inconclusive``: the interval contains 0 and overlaps the band (the data cannot tell);
* ``reproduced``: it excludes 0 on the paper's side and overlaps the band;
* ``direction only``: it excludes 0 on the paper's side and lies wholly above the band (larger than claimed).

**Bounds** (:func:`bound_verdict`; "within 7 %" is a lower bound ``L = -0.07`` on the gain, "no regression"
an upper bound 0 on a latency change): ``reproduced`` when the whole interval satisfies the bound,
``contradicted`` when the whole interval violates it, ``inconclusive`` when it straddles the bound.
**Equivalence** (:func:`equivalence_verdict`; a paper range straddling 0 such as C12's "within 1 %" at 6x,
``-0.01-+0.01``): two one-sided tests at 5 % (:func:`tost_p`; the 90 % interval inside the margin) ->
``reproduced``; the 95 % interval wholly outside the margin -> ``contradicted``; else ``inconclusive``.
**Robust** conditions (C17 against baselines): each condition is a ``positive`` point -- reproduced when its
gain is significantly above 0, contradicted when significantly below, inconclusive otherwise.

**p-values and power** (:func:`point_table`): each point's standard error is recovered from its t-interval
(:func:`standard_error`), its p-value is the rule's test (two-sided vs 0; TOST; the bound, two-sided
convention), and its **minimal detectable effect** (:func:`min_detectable_effect`) is the true gain a
two-sided 5 % test of that n and spread detects with 80 % power; ``paper_detectable`` says whether the
paper's value reached it (gain rules).

**Several points** (C12's four loads, C15's two testbeds, C17's conditions): the p-values of one claim's
points are **Holm-Bonferroni** adjusted (:func:`holm`); the adjusted decision replaces "excludes 0" (or
"clears the bound", or TOST) in the point's ``verdict``, the interval's own decision stays in
``verdict_uncorrected`` (the bands are always read from the uncorrected 95 % interval). A robustness map
over many cells (fig14) uses **Benjamini-Hochberg** (:func:`benjamini_hochberg`). The claim's verdict is the
weakest point's (:data:`VERDICT_ORDER`). A figure's claims file stores a claim's per-point numbers joined by
``/`` (:func:`claim_columns`); ``claims.csv`` is tidy, one row per claim point (:func:`row_points`). Where
the paper value gives versions (C14: ``... (v1) / +0.09 peak (v2)``), the latest version is judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "percent",
    "ALPHA",
    "CI_METHODS",
    "POINT_COLUMNS",
    "POWER",
    "UNDETERMINED",
    "VERDICT_ORDER",
    "Interval",
    "PaperValue",
    "benjamini_hochberg",
    "bound_verdict",
    "claim_columns",
    "combine_verdicts",
    "equivalence_verdict",
    "format_values",
    "gain_interval",
    "gain_intervals",
    "holm",
    "min_detectable_effect",
    "p_value",
    "paired_gains",
    "parse_paper_value",
    "parse_values",
    "point_table",
    "point_verdict",
    "row_points",
    "row_verdict",
    "seed_peaks",
    "standard_error",
    "tost_p",
    "verdict",
    "verdict_violations",
]

#: Verdicts of comparative claims, strongest first; a multi-point claim takes the weakest of its points.
VERDICT_ORDER = ("reproduced", "direction only", "inconclusive", "smaller than claimed", "contradicted")
#: The verdict when fewer than two seeds leave no interval.
UNDETERMINED = "undetermined"
CI_METHODS = ("t", "bca", "percentile")
_BAND = (0.5, 1.5)  # the paper's magnitude times these


@dataclass(frozen=True)
class Interval:
    """Mean of the per-seed gains, its ``confidence`` interval ``[low, high]`` (NaN when n < 2) and n."""

    mean: float
    low: float
    high: float
    n: int
    method: str = "t"
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"Interval.n must be >= 0, got {self.n}")
        if self.method not in CI_METHODS:
            raise ValueError(f"Interval.method must be one of {CI_METHODS}, got {self.method!r}")
        if self.n >= 2 and not (np.isfinite(self.low) and np.isfinite(self.high) and self.low <= self.high):
            raise ValueError(f"an interval of n={self.n} needs finite low <= high, got [{self.low}, {self.high}]")

    @property
    def determined(self) -> bool:
        """True when the interval exists (n >= 2)."""
        return self.n >= 2


# ------------------------------------------------------------------------------------------ pairing
def seed_peaks(frame: pd.DataFrame, value: str = "goodput_tps", over: str = "rpm_per_instance",
               keys: Sequence[str] = ("policy", "seed"), *, how: str = "seed", seed: str = "seed") -> pd.DataFrame:
    """Reduce a load sweep to one row per ``keys`` group (policy and seed, say): its value at the peak.

    ``how="seed"`` (default): each seed's own maximum over the loads (ties: the lowest load) -- the peak
    goodput of that workload realisation, as fig09's per-seed ablation gains use it. ``how="mean"``: the
    peak load of each policy (``keys`` without ``seed``) is where its seed-mean curve peaks, and each
    seed contributes its value at that load (the mean gain then tracks the gain of the seed-mean peaks).
    Near the knee some seeds collapse at a load where others do not, so ``"mean"`` pairs a collapsed
    seed with a live one and widens the interval (30B, 32 instances, 6 min, 8 seeds: +3.1 % [-8.4,
    +14.7] vs +5.1 % [+1.9, +8.4] per seed); a max over a noisy grid is biased upwards, but alike for both
    policies of a pair. The load is returned as ``peak_<over>``.
    """
    keys = list(keys)
    missing = [c for c in (*keys, value, over) if c not in frame.columns]
    if missing:
        raise ValueError(f"seed_peaks: frame has no column(s) {missing}")
    if how not in ("mean", "seed"):
        raise ValueError(f"seed_peaks: how must be 'mean' or 'seed', got {how!r}")
    if how == "mean" and seed not in keys:
        raise ValueError(f"seed_peaks: how='mean' needs the seed column {seed!r} among keys {keys}")
    frame = frame.sort_values(over, kind="stable")
    if how == "seed":
        picked = frame.loc[frame.groupby(keys, sort=False)[value].idxmax()]
    else:
        outer = [k for k in keys if k != seed]
        curve = frame.groupby([*outer, over], sort=False, as_index=False)[value].mean()
        at = curve.loc[curve.groupby(outer, sort=False)[value].idxmax(), [*outer, over]]
        picked = frame.merge(at, on=[*outer, over])
    return picked[[*keys, over, value]].rename(columns={over: f"peak_{over}"}).reset_index(drop=True)


def paired_gains(frame: pd.DataFrame, value: str = "goodput_tps", *, by: Sequence[str] = (), ours: str = "smetric",
                 baselines: Sequence[str] | None = None, seed: str = "seed", policy: str = "policy") -> pd.DataFrame:
    """Per seed, the relative gain of ``ours`` over the best baseline of each ``by`` group (e.g. each load).

    The best baseline is the policy other than ``ours`` with the highest mean ``value`` over seeds in
    the group (ties: the first name in sorted order); ``baselines`` restricts the candidates, else every
    other policy whose name does not start with ``ideal`` (bounds are not baselines) competes. Each
    (group, policy, seed) must have one row, and the best baseline every seed ``ours`` has (pairing).
    Returns ``*by, seed, best_baseline, ours, baseline, gain`` with ``gain = ours / baseline - 1``.
    A non-positive baseline value makes the gain undefined and raises.
    """
    by = list(by)
    frame = frame.reset_index(drop=True)
    missing = [c for c in (*by, seed, policy, value) if c not in frame.columns]
    if missing:
        raise ValueError(f"paired_gains: frame has no column(s) {missing}")
    dup = frame.duplicated([*by, policy, seed])
    if dup.any():
        raise ValueError(f"paired_gains: several rows per ({', '.join([*by, policy, seed])}), e.g. "
                         f"{frame.loc[dup, [*by, policy, seed]].iloc[0].to_dict()}; reduce them first (seed_peaks)")
    if baselines is None:
        candidates = frame[(frame[policy] != ours) & ~frame[policy].astype(str).str.startswith("ideal")]
    else:
        if ours in set(baselines):
            raise ValueError(f"paired_gains: {ours!r} cannot be its own baseline")
        candidates = frame[frame[policy].isin(list(baselines))]
    if candidates.empty:
        raise ValueError("paired_gains: no baseline policy in the frame")
    if not (frame[policy] == ours).any():
        raise ValueError(f"paired_gains: no rows of {ours!r}")
    groups = list(frame.groupby(by, sort=True)) if by else [((), frame)]
    rows = []
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        base = candidates.loc[candidates.index.intersection(sub.index)]
        if base.empty:
            raise ValueError(f"paired_gains: no baseline in group {dict(zip(by, key))}")
        means = base.groupby(policy)[value].mean().sort_index()
        best = str(means.idxmax())
        mine = sub[sub[policy] == ours].set_index(seed)[value]
        theirs = base[base[policy] == best].set_index(seed)[value]
        lost = sorted(set(mine.index) - set(theirs.index))
        if lost:
            raise ValueError(f"paired_gains: best baseline {best!r} has no row for seed(s) {lost} in group "
                             f"{dict(zip(by, key))}; pairing needs the same seeds")
        for s in sorted(mine.index):
            if not theirs[s] > 0:
                raise ValueError(f"paired_gains: {best!r} has {value}={theirs[s]!r} at seed {s} in group "
                                 f"{dict(zip(by, key))}; a relative gain needs a positive baseline")
            rows.append({**dict(zip(by, key)), seed: s, "best_baseline": best, "ours": float(mine[s]),
                         "baseline": float(theirs[s]), "gain": float(mine[s]) / float(theirs[s]) - 1.0})
    return pd.DataFrame(rows, columns=[*by, seed, "best_baseline", "ours", "baseline", "gain"])


# ------------------------------------------------------------------------------------------ interval
def gain_interval(gains: Iterable[float], *, confidence: float = 0.95, method: str = "t", n_resamples: int = 9999,
                  seed: int = 0) -> Interval:
    """Mean of the per-seed ``gains`` and its two-sided ``confidence`` interval (see the module docstring).

    ``method``: ``"t"`` (paired t-interval, the default), ``"bca"`` or ``"percentile"`` (scipy's
    bootstrap, ``n_resamples`` resamples from a generator seeded with ``seed``). n < 2 gives NaN bounds;
    equal gains give the zero-width interval at their value. Non-finite gains raise.
    """
    x = np.asarray(list(gains), dtype=np.float64)
    if method not in CI_METHODS:
        raise ValueError(f"method must be one of {CI_METHODS}, got {method!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if x.size == 0:
        raise ValueError("gain_interval needs at least one gain")
    if not np.isfinite(x).all():
        raise ValueError(f"gains must be finite, got {x.tolist()}")
    mean = float(x.mean())
    if x.size < 2:
        return Interval(mean, np.nan, np.nan, int(x.size), method, confidence)
    if np.ptp(x) == 0.0:
        return Interval(mean, mean, mean, int(x.size), method, confidence)
    if method == "t":
        half = float(stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
        return Interval(mean, mean - half, mean + half, int(x.size), method, confidence)
    res = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples, method=method,
                          random_state=np.random.default_rng(seed))
    ci = res.confidence_interval
    return Interval(mean, float(ci.low), float(ci.high), int(x.size), method, confidence)


def percent(x: float) -> str:
    """A relative gain as signed percent with one decimal (``0.09`` -> ``+9.0``); ``n/a`` when not finite."""
    return f"{100 * x:+.1f}" if np.isfinite(x) else "n/a"


def gain_intervals(gains: pd.DataFrame, by: Sequence[str] = (), **kwargs) -> pd.DataFrame:
    """:func:`gain_interval` of the ``gain`` column of a :func:`paired_gains` frame per ``by`` group:
    ``*by, best_baseline, gain_mean, ci_low, ci_high, n_seeds``."""
    by = list(by)
    parts = [((), gains)] if not by else list(gains.groupby(by, sort=False))
    rows = []
    for key, sub in parts:
        key = key if isinstance(key, tuple) else (key,)
        iv = gain_interval(sub["gain"], **kwargs)
        rows.append({**dict(zip(by, key)), "best_baseline": "/".join(dict.fromkeys(sub["best_baseline"])),
                     "gain_mean": iv.mean, "ci_low": iv.low, "ci_high": iv.high, "n_seeds": iv.n})
    return pd.DataFrame(rows, columns=[*by, "best_baseline", "gain_mean", "ci_low", "ci_high", "n_seeds"])


# ------------------------------------------------------------------------------------------ tests from an interval
def _check_interval(low: float, high: float) -> bool:
    """True if ``[low, high]`` is an interval; False if undetermined (NaN); raises on nonsense."""
    if np.isnan(low) or np.isnan(high):
        return False
    if not (np.isfinite(low) and np.isfinite(high)) or low > high:
        raise ValueError(f"an interval needs finite low <= high, got [{low}, {high}]")
    return True


def standard_error(low: float, high: float, n: int, confidence: float = 0.95) -> float:
    """The standard error of a paired t-interval ``[low, high]`` of ``n`` seeds: ``(high - low) / (2 t(q, n-1))``
    with ``q = (1 + confidence) / 2``; NaN when undetermined (n < 2 or NaN bounds)."""
    if n < 2 or not _check_interval(low, high):
        return np.nan
    return float((high - low) / (2.0 * stats.t.ppf(0.5 + confidence / 2, n - 1)))


def p_value(mean: float, se: float, n: int, null: float = 0.0, side: str = "two") -> float:
    """The t-test p-value of ``mean`` (standard error ``se``, ``n`` seeds) against ``null``: ``side="two"``
    (two-sided), ``"greater"`` (H1: above ``null``) or ``"less"``. A zero ``se`` gives 0 when the mean is on
    H1's side of ``null`` and 1 otherwise; NaN ``se`` gives NaN."""
    if side not in ("two", "greater", "less"):
        raise ValueError(f"side must be 'two', 'greater' or 'less', got {side!r}")
    if not np.isfinite(se) or n < 2:
        return np.nan
    diff = mean - null
    if se == 0.0:
        hit = diff != 0 if side == "two" else (diff > 0 if side == "greater" else diff < 0)
        return 0.0 if hit else 1.0
    t = diff / se
    if side == "two":
        return float(2.0 * stats.t.sf(abs(t), n - 1))
    return float(stats.t.sf(t, n - 1) if side == "greater" else stats.t.cdf(t, n - 1))


def min_detectable_effect(se: float, n: int, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest true gain a two-sided ``alpha`` paired t-test of ``n`` seeds detects with probability
    ``power``: ``(t(1 - alpha/2, n-1) + t(power, n-1)) * se`` (the usual normal-approximation formula with t
    quantiles; ``se`` is the observed standard error). NaN when undetermined."""
    if not np.isfinite(se) or n < 2:
        return np.nan
    return float((stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1)) * se)


def _adjusted(pvalues: Sequence[float], step) -> np.ndarray:
    """``pvalues`` adjusted by ``step`` (the ascending finite p-values -> their monotone adjusted values), capped
    at 1; NaN entries stay NaN and do not count among the hypotheses."""
    p = np.asarray(pvalues, dtype=np.float64)
    ok = np.isfinite(p)
    if ((p[ok] < 0) | (p[ok] > 1)).any():
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    q = p[ok]
    order = np.argsort(q, kind="stable")
    res = np.empty(q.size)
    res[order] = np.minimum(step(q[order]), 1.0)
    out = np.full(p.shape, np.nan)
    out[ok] = res
    return out


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1); NaN entries stay NaN and do not
    count among the hypotheses."""
    return _adjusted(pvalues, lambda q: np.maximum.accumulate((q.size - np.arange(q.size)) * q))


def benjamini_hochberg(pvalues: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false-discovery rate, step-up, capped at 1); NaN entries stay NaN."""
    return _adjusted(pvalues, lambda q: np.minimum.accumulate((q * q.size / np.arange(1, q.size + 1))[::-1])[::-1])


# ------------------------------------------------------------------------------------------ rules
def _band(a: float, b: float) -> tuple[float, float]:
    """The paper's band: ``[0.5 a, 1.5 b]`` for a positive value or range, mirrored for a negative one."""
    return (_BAND[0] * a, _BAND[1] * b) if a > 0 else (_BAND[1] * a, _BAND[0] * b)


def verdict(low: float, high: float, paper: float | tuple[float, float], significant: bool | None = None) -> str:
    """The verdict of the interval ``[low, high]`` against the paper's gain (a number or a one-signed range).

    ``significant`` (default: the interval excludes 0) says whether the gain differs from 0; a multiplicity
    correction passes its adjusted decision here (:func:`point_table`). Rules in the module docstring.
    """
    a, b = (float(paper), float(paper)) if np.isscalar(paper) else (float(paper[0]), float(paper[1]))
    if not (np.isfinite(a) and np.isfinite(b)) or a > b:
        raise ValueError(f"the paper's value must be a finite number or range (low <= high), got {paper!r}")
    if a < 0 < b or a == 0 or b == 0:
        raise ValueError(f"the paper's value {paper!r} has no sign; state it as a bound (bound_verdict) or an "
                         "equivalence range (equivalence_verdict)")
    if not _check_interval(low, high):
        return UNDETERMINED
    positive = a > 0
    if significant is None:
        nonzero, opposite = not (low <= 0.0 <= high), (high < 0) if positive else (low > 0)
    else:
        nonzero = bool(significant)
        opposite = nonzero and ((low + high < 0) if positive else (low + high > 0))
    if opposite:
        return "contradicted"
    band_lo, band_hi = _band(a, b)
    if (positive and high < band_lo) or (not positive and low > band_hi):
        return "smaller than claimed"
    if not nonzero:
        return "inconclusive"
    return "reproduced" if low <= band_hi and high >= band_lo else "direction only"


def bound_verdict(low: float, high: float, bound: float, kind: str, significant: bool | None = None) -> str:
    """The verdict of ``[low, high]`` against a ``kind`` (``"lower"`` or ``"upper"``) bound on the gain:
    reproduced when the whole interval satisfies it (or ``significant``, a corrected decision, says so),
    contradicted when the whole interval violates it, inconclusive when it straddles the bound."""
    if kind not in ("lower", "upper"):
        raise ValueError(f"bound kind must be 'lower' or 'upper', got {kind!r}")
    if not np.isfinite(bound):
        raise ValueError(f"bound must be finite, got {bound!r}")
    if not _check_interval(low, high):
        return UNDETERMINED
    inside, outside = (low >= bound, high < bound) if kind == "lower" else (high <= bound, low > bound)
    inside = inside if significant is None else bool(significant)
    return "reproduced" if inside else "contradicted" if outside else "inconclusive"


def equivalence_verdict(mean: float, low: float, high: float, n: int, margin: tuple[float, float],
                        confidence: float = 0.95, alpha: float = 0.05, p_adjusted: float | None = None) -> str:
    """An equivalence claim ("within 1 %": the gain lies in ``margin = (lo, hi)``, lo < 0 < hi) by TOST at
    ``alpha``: reproduced when both one-sided tests reject (p = :func:`tost_p` < alpha, or ``p_adjusted`` <
    alpha), contradicted when the two-sided interval ``[low, high]`` lies wholly outside the margin,
    inconclusive otherwise."""
    m_lo, m_hi = float(margin[0]), float(margin[1])
    if not m_lo < 0 < m_hi:
        raise ValueError(f"an equivalence margin must straddle 0, got {margin!r}")
    if not _check_interval(low, high):
        return UNDETERMINED
    p = tost_p(mean, standard_error(low, high, n, confidence), n, margin) if p_adjusted is None else p_adjusted
    if p < alpha:
        return "reproduced"
    return "contradicted" if high < m_lo or low > m_hi else "inconclusive"


def tost_p(mean: float, se: float, n: int, margin: tuple[float, float]) -> float:
    """The p-value of two one-sided t-tests that the gain lies inside ``margin``: the larger of the two."""
    return max(p_value(mean, se, n, margin[0], "greater"), p_value(mean, se, n, margin[1], "less"))


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """The weakest of several points' verdicts (:data:`VERDICT_ORDER`); any undetermined point -> undetermined."""
    if not verdicts:
        raise ValueError("combine_verdicts needs at least one verdict")
    bad = sorted(set(verdicts) - set(VERDICT_ORDER) - {UNDETERMINED})
    if bad:
        raise ValueError(f"unknown verdicts {bad}")
    if UNDETERMINED in verdicts:
        return UNDETERMINED
    return max(verdicts, key=VERDICT_ORDER.index)


# ------------------------------------------------------------------------------------------ paper values
@dataclass(frozen=True)
class PaperValue:
    """A paper value as judged: ``kind`` is ``gain`` (``points``: one ``(low, high)`` per point, low == high
    for a number), ``lower bound`` / ``upper bound`` (one point), ``robust`` (conditions measured, no
    number) or ``text`` (not comparative: no rule). ``every``: a one-point gain judged at every measured
    point (a unit saying ``at every point``; fig17's levels), as a bound is."""

    kind: str
    points: tuple[tuple[float, float], ...]
    text: str
    every: bool = False

    def __post_init__(self) -> None:
        kinds = ("gain", "lower bound", "upper bound", "robust", "text")
        if self.kind not in kinds:
            raise ValueError(f"PaperValue.kind must be one of {kinds}, got {self.kind!r}")
        if self.kind in ("gain", "lower bound", "upper bound") and not self.points:
            raise ValueError(f"a {self.kind} needs at least one number, got {self.text!r}")
        if self.kind.endswith("bound") and len(self.points) != 1:
            raise ValueError(f"a bound is one number (held at every measured point), got {self.points} from "
                             f"{self.text!r}")
        if self.every and (self.kind != "gain" or len(self.points) != 1):
            raise ValueError(f"'at every point' applies to a one-number gain, got a {self.kind} {self.text!r}")

    @property
    def comparative(self) -> bool:
        """True when a rule decides the verdict."""
        return self.kind != "text"


_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)"
_RANGE = re.compile(rf"^\s*({_NUM})\s*-\s*({_NUM})\s*(.*)$")
_VS = re.compile(rf"^\s*({_NUM})\s+vs\.?\s+({_NUM})\s*(.*)$")
_ONE = re.compile(rf"^\s*({_NUM})\s*(.*)$")
_VERSION = re.compile(r"\(v(\d+)\)")


def _segment(text: str) -> tuple[tuple[float, float], str]:
    """One ``/``-separated segment: ``+0.09``, ``+0.02-+0.34`` (range), ``0.74 vs 0.45`` (relative
    change from the first to the second: 0.45 / 0.74 - 1); trailing words are its label."""
    m = _VS.match(text)
    if m:
        ref, other = float(m.group(1)), float(m.group(2))
        if ref <= 0:
            raise ValueError(f"'A vs B' needs A > 0, got {text!r}")
        g = other / ref - 1.0
        return (g, g), m.group(3).strip()
    m = _RANGE.match(text)
    if m:
        lo, hi = float(m.group(1)), float(m.group(2))
        if lo > hi:
            raise ValueError(f"range {text!r} runs downwards")
        return (lo, hi), m.group(3).strip()
    m = _ONE.match(text)
    if m:
        v = float(m.group(1))
        return (v, v), m.group(2).strip()
    raise ValueError(f"no number in paper value segment {text!r}")


def parse_paper_value(text: str, unit: str = "") -> PaperValue:
    """Parse a ``paper_value`` of ``data/paper_claims.csv`` (with its ``unit``) into what the rules judge.

    ``+0.09`` -> one point; ``+0.01/+0.04/+0.13/+0.26`` and ``+0.042 / +0.019`` -> several points in
    order; ``0.74 vs 0.45`` -> the relative change 0.45/0.74 - 1; ``+0.02-+0.34`` -> a range; segments
    tagged ``(v1)``, ``(v2)`` -> only the latest version's; a unit containing ``lower bound`` / ``upper
    bound`` -> a bound (e.g. C9's ``-0.07``); ``no regression`` -> upper bound 0 (on the latency change);
    ``robust`` -> robust; ``qualitative`` units otherwise, or a unit ``ratio``/``share`` (absolute values, not
    gains) -> text; a one-number gain whose unit says ``at every point`` is judged at every measured point.
    """
    raw, unit_l = str(text).strip(), str(unit).lower()
    key = raw.lower()
    if key == "no regression":
        return PaperValue("upper bound", ((0.0, 0.0),), raw)
    if key == "robust":
        return PaperValue("robust", (), raw)
    if "relative" not in unit_l and " vs " not in key:  # absolute ratios and shares (C1-C5, C10), qualitative
        return PaperValue("text", (), raw)
    segments = [s.strip() for s in raw.split("/")]
    parsed = [_segment(s) for s in segments]
    versions = [int(v.group(1)) if (v := _VERSION.search(label)) else None for _, label in parsed]
    if any(v is not None for v in versions):
        latest = max(v for v in versions if v is not None)
        parsed = [p for p, v in zip(parsed, versions) if v == latest]
    points = tuple(p for p, _ in parsed)
    for kind in ("lower bound", "upper bound"):
        if kind in unit_l:
            return PaperValue(kind, points, raw)
    return PaperValue("gain", points, raw, every="at every point" in unit_l)


# ------------------------------------------------------------------------------------------ claims table
#: Significance level of every test (two-sided 5 %; TOST at 5 %) and the power of the minimal detectable effect.
ALPHA, POWER = 0.05, 0.8
#: The columns of :func:`point_table`, one row per claim point.
POINT_COLUMNS = ("point", "comparator", "rule", "paper_low", "paper_high", "gain_mean", "ci_low", "ci_high",
                 "n_seeds", "p_value", "p_adjusted", "mde", "paper_detectable", "verdict", "verdict_uncorrected")


def format_values(values: Sequence[float]) -> str:
    """Per-point numbers as a claims-table cell: ``/``-joined, 4 decimals (``nan`` when undetermined)."""
    return "/".join("nan" if not np.isfinite(v) else f"{v:+.4f}" for v in values)


def parse_values(cell) -> list[float]:
    """Inverse of :func:`format_values` (also takes a plain number)."""
    if isinstance(cell, (int, float, np.floating, np.integer)):
        return [float(cell)]
    return [float(s) for s in str(cell).split("/")]


def _rules(paper: PaperValue, n_points: int) -> list[tuple[str, float, float]]:
    """Per measured point: the rule (``gain``, ``equivalence``, ``lower bound``, ``upper bound``, ``positive``)
    and the paper's low/high value it judges against."""
    if paper.kind == "robust":
        return [("positive", np.nan, np.nan)] * n_points
    if paper.kind.endswith("bound"):  # one bound, held at every measured point
        return [(paper.kind, paper.points[0][0], paper.points[0][0])] * n_points
    if paper.kind != "gain":
        raise ValueError(f"paper value {paper.text!r} is not comparative: no rule applies")
    if paper.every:
        paper = PaperValue("gain", paper.points * n_points, paper.text)
    if n_points != len(paper.points):
        raise ValueError(f"{n_points} measured point(s) for the {len(paper.points)} of paper value {paper.text!r}")
    return [("equivalence" if a < 0 < b else "gain", a, b) for a, b in paper.points]


def _p(rule: str, mean: float, se: float, n: int, a: float, b: float) -> float:
    """The p-value a point's rule tests: vs 0 (gain, positive), TOST (equivalence), or that the bound holds
    (two-sided convention: p < 0.05 exactly when the 95 % interval clears the bound)."""
    if rule == "equivalence":
        return tost_p(mean, se, n, (a, b))
    if rule.endswith("bound"):
        p = p_value(mean, se, n, a, "greater" if rule == "lower bound" else "less")
        return min(1.0, 2.0 * p) if np.isfinite(p) else p
    return p_value(mean, se, n)


def point_verdict(rule: str, mean: float, low: float, high: float, n: int, a: float, b: float,
                   p: float | None) -> str:
    """The verdict of one point under its ``rule`` (:func:`point_table`'s column) against the paper's ``a..b``;
    ``p`` (an adjusted p-value) replaces the interval's own decision when given."""
    sig = None if p is None else bool(p < ALPHA)
    if rule == "gain":
        return verdict(low, high, (a, b), sig)
    if rule == "equivalence":
        return equivalence_verdict(mean, low, high, n, (a, b), p_adjusted=p)
    if rule.endswith("bound"):
        return bound_verdict(low, high, a, rule.split()[0], sig)
    if not _check_interval(low, high):
        return UNDETERMINED
    nonzero = not (low <= 0.0 <= high) if sig is None else sig
    return "inconclusive" if not nonzero else "reproduced" if mean > 0 else "contradicted"


def point_table(paper: PaperValue, means: Sequence[float], lows: Sequence[float], highs: Sequence[float],
                ns: Sequence[int], points: Sequence[str] | None = None, comparators: Sequence[str] | None = None,
                adjust: str = "holm") -> pd.DataFrame:
    """One row per point of a claim (:data:`POINT_COLUMNS`): its rule, p-value, the p-value adjusted over the
    claim's points (``adjust``: ``"holm"``, ``"bh"`` or ``"none"``), the minimal detectable effect (80 %
    power, two-sided 5 %, from the interval's standard error), whether the paper's value was detectable
    (``|paper| >= mde``, gain rules only), the verdict from the adjusted decision and the uncorrected one.
    A single point is never adjusted (its verdict is the interval's); identical points count once."""
    k = len(means)
    if not (len(lows) == len(highs) == len(ns) == k) or k == 0:
        raise ValueError(f"point_table needs equally many means, lows, highs and ns (>= 1), got "
                         f"{len(means)}, {len(lows)}, {len(highs)}, {len(ns)}")
    if adjust not in ("holm", "bh", "none"):
        raise ValueError(f"adjust must be 'holm', 'bh' or 'none', got {adjust!r}")
    points = list(points) if points is not None else ([""] if k == 1 else [str(i + 1) for i in range(k)])
    comparators = list(comparators) if comparators is not None else [""] * k
    if len(points) != k or len(comparators) != k:
        raise ValueError(f"{len(points)} point label(s) and {len(comparators)} comparator(s) for {k} point(s)")
    rules = _rules(paper, k)
    rows = []
    for i, (rule, a, b) in enumerate(rules):
        n = int(ns[i])
        se = standard_error(lows[i], highs[i], n)
        mde = min_detectable_effect(se, n, POWER, ALPHA)
        detectable = bool(min(abs(a), abs(b)) >= mde) if rule == "gain" and np.isfinite(mde) else None
        rows.append({"point": points[i], "comparator": comparators[i], "rule": rule, "paper_low": a, "paper_high": b,
                     "gain_mean": float(means[i]), "ci_low": float(lows[i]), "ci_high": float(highs[i]),
                     "n_seeds": n, "p_value": _p(rule, means[i], se, n, a, b), "mde": mde,
                     "paper_detectable": detectable})
    table = pd.DataFrame(rows)
    # identical points (two paper levels read at one grid load, a default condition listed twice) are one test
    key = table[["rule", "gain_mean", "ci_low", "ci_high", "n_seeds"]].round(12).apply(lambda r: repr(tuple(r)), axis=1)
    first = ~key.duplicated()
    pv = table.loc[first, "p_value"].to_numpy(dtype=float)
    adjusted = pv if adjust == "none" or k == 1 else holm(pv) if adjust == "holm" else benjamini_hochberg(pv)
    table["p_adjusted"] = key.map(dict(zip(key[first], adjusted)))
    k = int(first.sum())
    table["verdict_uncorrected"] = [point_verdict(r.rule, r.gain_mean, r.ci_low, r.ci_high, r.n_seeds,
                                                   r.paper_low, r.paper_high, None) for r in table.itertuples()]
    table["verdict"] = [u if k == 1 or adjust == "none" else
                        point_verdict(r.rule, r.gain_mean, r.ci_low, r.ci_high, r.n_seeds, r.paper_low,
                                       r.paper_high, r.p_adjusted if np.isfinite(r.p_adjusted) else None)
                        for u, r in zip(table["verdict_uncorrected"], table.itertuples())]
    return table[list(POINT_COLUMNS)]


def claim_columns(intervals: Sequence[Interval], paper: PaperValue, points: Sequence[str] | None = None,
                  comparators: Sequence[str] | None = None) -> dict:
    """The claims-table columns ``point, comparator, gain_mean, ci_low, ci_high, n_seeds, verdict`` of one claim.

    ``intervals``: one per point of ``paper`` in its order (per condition for ``robust``); ``points`` labels
    them and ``comparators`` names what each compares against (``/``-joined; :func:`point_table` explodes
    them). ``n_seeds`` is the smallest n over the points that have an interval (0 when none has: a point without
    one is undetermined and must not take the others' n with it); the verdict the weakest Holm-corrected point's.
    """
    if not intervals:
        raise ValueError("claim_columns needs at least one interval")
    table = point_table(paper, [iv.mean for iv in intervals], [iv.low for iv in intervals],
                        [iv.high for iv in intervals], [iv.n for iv in intervals], points, comparators)
    return {"point": "/".join(table["point"]), "comparator": "/".join(table["comparator"]),
            "gain_mean": format_values(table["gain_mean"]), "ci_low": format_values(table["ci_low"]),
            "ci_high": format_values(table["ci_high"]), "n_seeds": _determined_n(table),
            "verdict": combine_verdicts(list(table["verdict"]))}


def _determined_n(table: pd.DataFrame) -> int:
    n = table.loc[table["n_seeds"] > 0, "n_seeds"]
    return int(n.min()) if len(n) else 0


def _split(cell, k: int) -> list[str]:
    parts = [] if cell is None or (isinstance(cell, float) and np.isnan(cell)) else str(cell).split("/")
    return parts if len(parts) == k else [""] * k if k > 1 or not parts else parts


def row_points(row: pd.Series) -> pd.DataFrame:
    """:func:`point_table` of a figure-level claims row (``paper_value``, ``unit``, the ``/``-joined interval
    columns and, when recorded, ``point`` and ``comparator``)."""
    paper = parse_paper_value(row["paper_value"], row.get("unit", ""))
    means, lows, highs = (parse_values(row[c]) for c in ("gain_mean", "ci_low", "ci_high"))
    k = len(lows)
    return point_table(paper, means, lows, highs, [int(row["n_seeds"])] * k, _split(row.get("point"), k),
                       _split(row.get("comparator"), k))


def row_verdict(row: pd.Series) -> str:
    """The verdict the rules give a figure-level claims row: the weakest of its points' corrected verdicts."""
    return combine_verdicts(list(row_points(row)["verdict"]))


def verdict_violations(table: pd.DataFrame) -> list[str]:
    """Problems of a tidy claims table (one row per claim point, :data:`POINT_COLUMNS`; rows without an interval
    are skipped): each point's ``verdict`` and ``verdict_uncorrected`` must equal the rules' given its claim's
    points (Holm within a claim), and, independently of those functions, a ``gain`` point whose interval
    contains 0 must not be reproduced or direction only. Returns one message per problem."""
    need = {"claim_id", "paper_value", "ci_low", "ci_high", "verdict", "verdict_uncorrected", "point"}
    if not need <= set(table.columns):
        return [f"claims table lacks column(s) {sorted(need - set(table.columns))}"]
    problems = []
    rows = table[table["ci_low"].notna() & table["ci_high"].notna()]
    for claim, sub in rows.groupby("claim_id", sort=False):
        first = sub.iloc[0]
        try:
            paper = parse_paper_value(first["paper_value"], first.get("unit", ""))
            ruled = point_table(paper, sub["gain_mean"].astype(float).tolist(), sub["ci_low"].astype(float).tolist(),
                                sub["ci_high"].astype(float).tolist(), sub["n_seeds"].astype(int).tolist(),
                                sub["point"].astype(object).fillna("").astype(str).tolist())
        except ValueError as exc:
            problems.append(f"{claim}: {exc}")
            continue
        for (_, got), (_, want) in zip(sub.iterrows(), ruled.iterrows()):
            name = f"{claim} {got['point']}".strip()
            for col in ("verdict", "verdict_uncorrected"):
                if got[col] != want[col]:
                    problems.append(f"{name}: {col} {got[col]!r}, the rules give {want[col]!r}")
            if want["rule"] == "gain" and got["ci_low"] <= 0 <= got["ci_high"] and \
                    got["verdict"] in ("reproduced", "direction only"):
                problems.append(f"{name}: an interval contains 0 but the verdict is {got['verdict']!r}")
    return problems
