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
a paper range ``[a, b]`` of one sign is treated alike with band ``[0.5 a, 1.5 b]``):

* ``tie``: the interval contains 0 (checked first: such a row is never reproduced or direction only);
* ``reproduced``: it excludes 0 on the paper's side and overlaps ``[0.5 |p|, 1.5 |p|]`` (with p's sign);
* ``direction only``: it excludes 0 on the paper's side but misses that band;
* ``contradicted``: it excludes 0 on the other side.

**Bounds** (:func:`bound_verdict`; the paper says "within 7 %", a lower bound ``L = -0.07`` on the
gain, or an upper bound ``U``): ``reproduced`` when the whole interval satisfies the bound
(``lo >= L``), ``contradicted`` when the whole interval violates it (``hi < L``), ``tie`` when it
straddles the bound (the data cannot tell). An interval containing 0 *does* reproduce "within 7 %".

**Qualitative claims.** "no regression" (C16, "with a better per-token latency") is an upper bound
0 on SMETRIC's relative latency change vs the best baseline: reproduced when the interval is at or
below 0. "robust" (C17) holds over a set of conditions (SLO scales, hyperparameter values), each an
interval of SMETRIC's gain: ``reproduced`` when every interval lies above 0, ``contradicted`` when
any lies below 0, ``tie`` otherwise (:func:`robust_verdict`).

**Several points** (C12's four loads, C15's two testbeds): each point gets its verdict, the claim
the weakest (:data:`VERDICT_ORDER`); a claims table stores the per-point numbers joined by ``/``,
in the order of the paper's value (:func:`claim_columns`, :func:`format_values`). Where the paper
value gives versions (C14: ``... (v1) / +0.09 peak (v2)``), the latest version is judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "CI_METHODS",
    "UNDETERMINED",
    "VERDICT_ORDER",
    "Interval",
    "PaperValue",
    "bound_verdict",
    "claim_columns",
    "combine_verdicts",
    "format_values",
    "gain_interval",
    "gain_intervals",
    "paired_gains",
    "parse_paper_value",
    "parse_values",
    "robust_verdict",
    "row_verdict",
    "seed_peaks",
    "verdict",
    "verdict_violations",
]

#: Verdicts of comparative claims, strongest first; a multi-point claim takes the weakest of its points.
VERDICT_ORDER = ("reproduced", "direction only", "tie", "contradicted")
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
    frame = frame.sort_values(over, kind="stable")
    if how == "seed":
        idx = frame.groupby(keys, sort=False)[value].idxmax()
        return frame.loc[idx, [*keys, over, value]].rename(columns={over: f"peak_{over}"}).reset_index(drop=True)
    if seed not in keys:
        raise ValueError(f"seed_peaks: how='mean' needs the seed column {seed!r} among keys {keys}")
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
    group = by or None
    groups = [((), frame)] if group is None else list(frame.groupby(by, sort=True))
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


# ------------------------------------------------------------------------------------------ rules
def _check_interval(low: float, high: float) -> bool:
    """True if ``[low, high]`` is an interval; False if undetermined (NaN); raises on nonsense."""
    if np.isnan(low) or np.isnan(high):
        return False
    if not (np.isfinite(low) and np.isfinite(high)) or low > high:
        raise ValueError(f"an interval needs finite low <= high, got [{low}, {high}]")
    return True


def verdict(low: float, high: float, paper: float | tuple[float, float]) -> str:
    """The verdict of the interval ``[low, high]`` against the paper's gain (a number or a one-signed range)."""
    a, b = (float(paper), float(paper)) if np.isscalar(paper) else (float(paper[0]), float(paper[1]))
    if not (np.isfinite(a) and np.isfinite(b)) or a > b:
        raise ValueError(f"the paper's value must be a finite number or range (low <= high), got {paper!r}")
    if a < 0 < b or a == 0 or b == 0:
        raise ValueError(f"the paper's value {paper!r} has no sign; state it as a bound (bound_verdict)")
    if not _check_interval(low, high):
        return UNDETERMINED
    if low <= 0.0 <= high:
        return "tie"
    if (low > 0) != (a > 0):  # the whole interval on the other side of 0
        return "contradicted"
    band_lo, band_hi = (_BAND[0] * a, _BAND[1] * b) if a > 0 else (_BAND[1] * a, _BAND[0] * b)
    return "reproduced" if low <= band_hi and high >= band_lo else "direction only"


def bound_verdict(low: float, high: float, bound: float, kind: str) -> str:
    """The verdict of ``[low, high]`` against a ``kind`` (``"lower"`` or ``"upper"``) bound on the gain."""
    if kind not in ("lower", "upper"):
        raise ValueError(f"bound kind must be 'lower' or 'upper', got {kind!r}")
    if not np.isfinite(bound):
        raise ValueError(f"bound must be finite, got {bound!r}")
    if not _check_interval(low, high):
        return UNDETERMINED
    inside, outside = (low >= bound, high < bound) if kind == "lower" else (high <= bound, low > bound)
    return "reproduced" if inside else "contradicted" if outside else "tie"


def robust_verdict(intervals: Sequence[tuple[float, float]]) -> str:
    """"Robust" over conditions: every interval above 0 -> reproduced, any below 0 -> contradicted, else tie."""
    if not intervals:
        raise ValueError("robust_verdict needs at least one condition")
    if not all(_check_interval(lo, hi) for lo, hi in intervals):
        return UNDETERMINED
    if any(hi < 0 for _, hi in intervals):
        return "contradicted"
    return "reproduced" if all(lo > 0 for lo, _ in intervals) else "tie"


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
    number) or ``text`` (not comparative: no rule)."""

    kind: str
    points: tuple[tuple[float, float], ...]
    text: str

    def __post_init__(self) -> None:
        kinds = ("gain", "lower bound", "upper bound", "robust", "text")
        if self.kind not in kinds:
            raise ValueError(f"PaperValue.kind must be one of {kinds}, got {self.kind!r}")
        if self.kind in ("gain", "lower bound", "upper bound") and not self.points:
            raise ValueError(f"a {self.kind} needs at least one number, got {self.text!r}")
        if self.kind.endswith("bound") and len(self.points) != 1:
            raise ValueError(f"a bound is one number, got {self.points} from {self.text!r}")

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
    gains) -> text.
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
    return PaperValue("gain", points, raw)


# ------------------------------------------------------------------------------------------ claims table
def format_values(values: Sequence[float]) -> str:
    """Per-point numbers as a claims-table cell: ``/``-joined, 4 decimals (``nan`` when undetermined)."""
    return "/".join("nan" if not np.isfinite(v) else f"{v:+.4f}" for v in values)


def parse_values(cell) -> list[float]:
    """Inverse of :func:`format_values` (also takes a plain number)."""
    if isinstance(cell, (int, float, np.floating, np.integer)):
        return [float(cell)]
    return [float(s) for s in str(cell).split("/")]


def _judge(paper: PaperValue, lows: Sequence[float], highs: Sequence[float]) -> str:
    if paper.kind == "robust":
        return robust_verdict(list(zip(lows, highs)))
    if len(lows) != len(paper.points):
        raise ValueError(f"{len(lows)} measured point(s) for the {len(paper.points)} of paper value {paper.text!r}")
    if paper.kind == "gain":
        return combine_verdicts([verdict(lo, hi, p) for lo, hi, p in zip(lows, highs, paper.points)])
    if paper.kind.endswith("bound"):
        return bound_verdict(lows[0], highs[0], paper.points[0][0], paper.kind.split()[0])
    raise ValueError(f"paper value {paper.text!r} is not comparative: no rule applies")


def claim_columns(intervals: Sequence[Interval], paper: PaperValue) -> dict:
    """The claims-table columns ``gain_mean, ci_low, ci_high, n_seeds, verdict`` of one claim.

    ``intervals``: one per point of ``paper`` in its order (per condition for ``robust``).
    ``n_seeds`` is the smallest n over the points.
    """
    if not intervals:
        raise ValueError("claim_columns needs at least one interval")
    lows, highs = [iv.low for iv in intervals], [iv.high for iv in intervals]
    return {"gain_mean": format_values([iv.mean for iv in intervals]), "ci_low": format_values(lows),
            "ci_high": format_values(highs), "n_seeds": min(iv.n for iv in intervals),
            "verdict": _judge(paper, lows, highs)}


def row_verdict(row: pd.Series) -> str:
    """The verdict the rules give a claims-table row (``paper_value``, ``unit``, ``ci_low``, ``ci_high``)."""
    paper = parse_paper_value(row["paper_value"], row.get("unit", ""))
    return _judge(paper, parse_values(row["ci_low"]), parse_values(row["ci_high"]))


def verdict_violations(table: pd.DataFrame) -> list[str]:
    """Problems of a claims table's rows that carry ``ci_low``/``ci_high`` (rows without them are skipped).

    A row's verdict must equal :func:`row_verdict`; independently of that function, a gain claim whose
    interval (any point) contains 0 must not be reproduced or direction only. Returns one message per
    problem (empty when the table follows the rules).
    """
    cols = {"paper_value", "ci_low", "ci_high", "verdict"}
    if not cols <= set(table.columns):
        return []
    problems = []
    for _, row in table.iterrows():
        if pd.isna(row["ci_low"]) or pd.isna(row["ci_high"]):
            continue
        name = row.get("claim_id", row.name)
        try:
            expected = row_verdict(row)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
            continue
        if row["verdict"] != expected:
            problems.append(f"{name}: verdict {row['verdict']!r}, the rules give {expected!r}")
        paper = parse_paper_value(row["paper_value"], row.get("unit", ""))
        zero = any(lo <= 0 <= hi for lo, hi in zip(parse_values(row["ci_low"]), parse_values(row["ci_high"])))
        if paper.kind == "gain" and zero and row["verdict"] in ("reproduced", "direction only"):
            problems.append(f"{name}: an interval contains 0 but the verdict is {row['verdict']!r}")
    return problems
