"""Arrival processes: burstiness statistics of a trace's arrival times, and session-start processes beyond Poisson.

Statistics (:func:`burstiness`, of a sorted array of times in s):

* ``iat_cv`` -- coefficient of variation (std / mean, ddof 0) of the inter-arrival times (1 for Poisson);
* ``iod_<w>s`` -- index of dispersion of counts, variance / mean (ddof 0) of the arrival counts in
  consecutive windows of ``w`` s laid from the first arrival, complete windows only (1 for Poisson; a
  renewal process tends to ``iat_cv**2`` for long windows);
* ``peak_to_mean_60s`` -- the busiest complete minute's count over the mean count per minute.
A statistic needs at least two complete windows (or two gaps) and is NaN otherwise.
:func:`workload_burstiness` gives them for a workload's request arrivals (``arrival_*``) and session
starts (``session_start_*``: the requests with turn 0; in a time window, sessions begun before it do not
count), and ``session_gap_cv``, the CV of the gaps between consecutive requests of the same session, pooled
over sessions (the within-session call timing; in a loaded trace without absolute times, such as
kv-cache-tester's, the only recorded timing).

Processes (:class:`ArrivalProcess`, the ``arrival`` field of
:class:`~smetric.workload.synthetic.SessionWorkloadConfig`), all with the configured mean rate:

* ``poisson`` -- exponential gaps (the default; over a span, a Poisson count of uniform points);
* ``gamma`` -- a renewal process with Gamma gaps of coefficient of variation ``cv`` (shape ``1 / cv**2``),
  started in equilibrium (the first point a uniform fraction of a length-biased gap);
* ``mmpp`` -- a two-state Markov-modulated Poisson process whose rate has stationary coefficient of
  variation ``rate_cv`` and autocorrelation time ``switch_s`` (= 1 / (r_hi + r_lo), the switching rates).
  With ``rate_cv <= 1`` the states are symmetric (half the time each, rates ``mean * (1 +- rate_cv)``);
  above 1 it is on-off (rate 0 when off, on a share ``1 / (1 + rate_cv**2)`` of the time). Its index of
  dispersion is ``1 + 2 rate_cv**2 * mean * switch_s * (1 - switch_s / w * (1 - exp(-w / switch_s)))``
  (:func:`mmpp_dispersion`), which :func:`fit_mmpp` matches to measured ``iod_*`` by least squares in log.

Any of them can be modulated by a **diurnal profile**: the rate is multiplied by
``1 + diurnal_amplitude * cos(2 pi (t - diurnal_peak_s) / diurnal_period_s)`` (a time change of the
process generated in operational time, so the mean rate over whole periods is unchanged).
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core import Workload

__all__ = ["ARRIVAL_KINDS", "BURSTINESS_WINDOWS", "POISSON", "ArrivalProcess", "burstiness", "fit_gamma",
           "fit_mmpp", "fitted_arrival", "fitted_arrivals_path", "mmpp_dispersion", "session_starts",
           "workload_burstiness"]

ARRIVAL_KINDS = ("poisson", "gamma", "mmpp")
BURSTINESS_WINDOWS: tuple[float, ...] = (1.0, 10.0, 60.0)


# ---------------------------------------------------------------------------- statistics
def _counts(times: np.ndarray, window: float) -> np.ndarray:
    n_bins = int(np.floor((times[-1] - times[0]) / window)) if len(times) else 0
    if n_bins < 2:
        return np.zeros(0)
    idx = ((times - times[0]) // window).astype(np.int64)
    return np.bincount(idx[idx < n_bins], minlength=n_bins).astype(float)


def burstiness(times: np.ndarray, windows: Sequence[float] = BURSTINESS_WINDOWS) -> dict[str, float]:
    """Burstiness statistics of the arrival ``times`` (s, any order; see the module docstring)."""
    t = np.sort(np.asarray(times, dtype=float))
    gaps = np.diff(t)
    out = {"iat_cv": float(gaps.std() / gaps.mean()) if len(gaps) >= 2 and gaps.mean() > 0 else float("nan")}
    for w in windows:
        c = _counts(t, float(w))
        out[f"iod_{w:g}s"] = float(c.var() / c.mean()) if len(c) and c.mean() > 0 else float("nan")
    minute = _counts(t, 60.0)
    out["peak_to_mean_60s"] = float(minute.max() / minute.mean()) if len(minute) and minute.mean() > 0 \
        else float("nan")
    return out


def workload_burstiness(workload: Workload) -> dict[str, float]:
    """Burstiness of ``workload``'s request arrivals and session starts, and its within-session gap CV."""
    out = {f"arrival_{k}": v for k, v in burstiness(workload.arrival).items()}
    out.update({f"session_start_{k}": v for k, v in burstiness(workload.arrival[workload.turn == 0]).items()})
    order = np.lexsort((workload.arrival, workload.session))
    same = workload.session[order][1:] == workload.session[order][:-1]
    gaps = np.diff(workload.arrival[order])[same]
    out["session_gap_cv"] = float(gaps.std() / gaps.mean()) if len(gaps) >= 2 and gaps.mean() > 0 else float("nan")
    return out


# ---------------------------------------------------------------------------- processes
@dataclass(frozen=True)
class ArrivalProcess:
    """A session-start process (see the module docstring); parameters a kind does not use stay at their defaults."""

    kind: str = "poisson"
    cv: float = 1.0                  # gamma: coefficient of variation of the gaps
    rate_cv: float = 0.0             # mmpp: coefficient of variation of the modulating rate
    switch_s: float = 60.0           # mmpp: autocorrelation time of the rate (s)
    diurnal_amplitude: float = 0.0   # 0 = no diurnal profile
    diurnal_period_s: float = 86_400.0
    diurnal_peak_s: float = 0.0      # time of the peak rate (s, on the workload's clock)

    def __post_init__(self) -> None:
        if self.kind not in ARRIVAL_KINDS:
            raise ValueError(f"ArrivalProcess.kind must be one of {ARRIVAL_KINDS}, got {self.kind!r}")
        for name in ("cv", "rate_cv", "switch_s", "diurnal_amplitude", "diurnal_period_s", "diurnal_peak_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (isinstance(v, numbers.Real) and np.isfinite(v)):
                raise ValueError(f"ArrivalProcess.{name} must be a finite number, got {v!r}")
        if not self.cv > 0:
            raise ValueError(f"ArrivalProcess.cv must be > 0, got {self.cv!r}")
        if not self.rate_cv >= 0 or not self.switch_s > 0 or not self.diurnal_period_s > 0:
            raise ValueError(f"ArrivalProcess: rate_cv must be >= 0 and switch_s, diurnal_period_s > 0, got "
                             f"{self.rate_cv!r}, {self.switch_s!r}, {self.diurnal_period_s!r}")
        if not 0 <= self.diurnal_amplitude < 1:
            raise ValueError(f"ArrivalProcess.diurnal_amplitude must be in [0, 1), got {self.diurnal_amplitude!r}")
        if self.kind != "gamma" and self.cv != 1.0:
            raise ValueError(f"ArrivalProcess.cv applies to kind 'gamma' only, got cv={self.cv!r} "
                             f"with kind {self.kind!r}")
        if self.kind != "mmpp" and self.rate_cv != 0.0:
            raise ValueError(f"ArrivalProcess.rate_cv applies to kind 'mmpp' only, got rate_cv={self.rate_cv!r} "
                             f"with kind {self.kind!r}")
        if self.kind == "mmpp" and self.rate_cv == 0:
            raise ValueError("ArrivalProcess.rate_cv must be > 0 for kind 'mmpp' (0 is Poisson)")


#: The default process: homogeneous Poisson session starts.
POISSON = ArrivalProcess()


def _mmpp_states(rate_cv: float, switch_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(rate multipliers, mean sojourns in s) of the two states (high, low) of an ``mmpp`` process."""
    if rate_cv <= 1.0:
        share = np.array([0.5, 0.5])
        mult = np.array([1.0 + rate_cv, 1.0 - rate_cv])
    else:
        on = 1.0 / (1.0 + rate_cv ** 2)
        share = np.array([on, 1.0 - on])
        mult = np.array([1.0 / on, 0.0])
    # leaving state i happens at rate gamma * share[other]; gamma = 1 / switch_s
    return mult, switch_s / share[::-1]


def mmpp_dispersion(rate: float, rate_cv: float, switch_s: float, window: np.ndarray | float) -> np.ndarray:
    """Index of dispersion of counts in ``window`` s of an ``mmpp`` process of mean ``rate`` (per s)."""
    w = np.asarray(window, dtype=float)
    return 1.0 + 2.0 * rate_cv ** 2 * rate * switch_s * (1.0 - switch_s / w * (1.0 - np.exp(-w / switch_s)))


def _renewal(draw, first, n: int | None, span: float | None, chunk: int) -> np.ndarray:
    """Points of a renewal process from 0: the first gap from ``first(size)``, the others from ``draw(size)``;
    the first ``n`` points, or those below ``span``."""
    parts = [np.cumsum(np.concatenate([first(1), draw(chunk - 1)]))]
    while (n is not None and sum(map(len, parts)) < n) or (span is not None and parts[-1][-1] < span):
        parts.append(parts[-1][-1] + np.cumsum(draw(chunk)))
    t = np.concatenate(parts)
    return t[:n] if n is not None else t[t < span]


def _mmpp(rng: np.random.Generator, rate: float, p: ArrivalProcess, n: int | None, span: float | None) -> np.ndarray:
    """Points of the two-state MMPP from 0, in blocks of 256 sojourns (first ``n``, or those below ``span``)."""
    mult, sojourn = _mmpp_states(p.rate_cv, p.switch_s)
    state = int(rng.random() >= sojourn[0] / sojourn.sum())  # stationary start: share = sojourn share
    edge, times, count = 0.0, [], 0
    while (n is not None and count < n) or (span is not None and edge < span):
        states = (state + np.arange(256)) % 2       # two states alternate
        length = rng.exponential(sojourn[states])
        begin = edge + np.concatenate([[0.0], np.cumsum(length)[:-1]])
        k = rng.poisson(rate * mult[states] * length)
        pts = np.repeat(begin, k) + rng.random(int(k.sum())) * np.repeat(length, k)
        times.append(np.sort(pts))
        count += len(pts)
        edge = begin[-1] + length[-1]
        state = (state + 256) % 2
    t = np.concatenate(times)
    return t[:n] if n is not None else t[t < span]


def _base_starts(rng: np.random.Generator, p: ArrivalProcess, rate: float, n: int | None,
                 span: float | None) -> np.ndarray:
    """Points of the homogeneous process in operational time from 0 (first ``n`` or those below ``span``)."""
    if p.kind == "poisson":
        if span is None:
            return np.cumsum(rng.exponential(1.0 / rate, n))
        return np.sort(rng.uniform(0.0, span, rng.poisson(rate * span)))
    if p.kind == "gamma":
        shape = 1.0 / p.cv ** 2
        scale = 1.0 / (rate * shape)
        chunk = max(64, int(1.1 * (n if n is not None else rate * span)) + 64)
        return _renewal(lambda k: rng.gamma(shape, scale, k),
                        lambda k: rng.random(k) * rng.gamma(shape + 1.0, scale, k), n, span, chunk)
    return _mmpp(rng, rate, p, n, span)


def _operational(p: ArrivalProcess, t: np.ndarray) -> np.ndarray:
    """The integrated rate multiplier from 0 to ``t`` (s of operational time)."""
    k = 2.0 * np.pi / p.diurnal_period_s
    return t + p.diurnal_amplitude / k * (np.sin(k * (t - p.diurnal_peak_s)) + np.sin(k * p.diurnal_peak_s))


def _clock(p: ArrivalProcess, tau: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_operational` (Newton from the identity; the map is increasing and smooth)."""
    k = 2.0 * np.pi / p.diurnal_period_s
    t = tau.copy()
    for _ in range(50):
        t -= (_operational(p, t) - tau) / (1.0 + p.diurnal_amplitude * np.cos(k * (t - p.diurnal_peak_s)))
    return t


def session_starts(rng: np.random.Generator, process: ArrivalProcess, rate: float, n_sessions: int | None,
                   duration: float | None, warmup: float) -> np.ndarray:
    """Sorted session start times (s): ``n_sessions`` from 0, or every start in ``[-warmup, duration)``."""
    if (n_sessions is None) == (duration is None):
        raise ValueError(f"give exactly one of n_sessions and duration, got n_sessions={n_sessions!r}, "
                         f"duration={duration!r}")
    diurnal = process.diurnal_amplitude > 0
    if duration is None:
        if int(n_sessions) != n_sessions or n_sessions < 1:
            raise ValueError(f"n_sessions must be a positive integer, got {n_sessions!r}")
        tau = _base_starts(rng, process, rate, int(n_sessions), None)
        return _clock(process, tau) if diurnal else tau
    if not (duration > 0 and np.isfinite(duration)) or not (warmup >= 0 and np.isfinite(warmup)):
        raise ValueError(f"duration must be > 0 and warmup >= 0 (s), got duration={duration!r}, warmup={warmup!r}")
    lo, hi = (_operational(process, np.array([-warmup, duration], dtype=float)) if diurnal
              else (-warmup, duration))
    span = float(hi - lo)
    tau = _base_starts(rng, process, rate, None, span)
    if len(tau) == 0:
        raise ValueError(f"no session starts in {span} s at {rate:.4g} sessions/s: raise the rate or the duration")
    return _clock(process, tau + lo) if diurnal else tau - warmup


# ---------------------------------------------------------------------------- fitting
def fit_gamma(stats: dict[str, float]) -> ArrivalProcess:
    """The ``gamma`` process with the measured ``iat_cv`` (method of moments)."""
    return ArrivalProcess(kind="gamma", cv=float(stats["iat_cv"]))


def fit_mmpp(stats: dict[str, float], rate: float, windows: Sequence[float] = BURSTINESS_WINDOWS) -> ArrivalProcess:
    """The ``mmpp`` process whose :func:`mmpp_dispersion` at mean ``rate`` best matches the measured
    ``iod_<w>s`` (least squares of log dispersion over ``windows``; the autocorrelation time is bounded
    to [0.1 s, 1 h]). Raises ``ValueError`` when no measured window is over-dispersed (Poisson fits)."""
    from scipy import optimize  # only for fitting (start-up: not on the simulate path)

    w = np.asarray(windows, dtype=float)
    target = np.array([stats[f"iod_{x:g}s"] for x in windows], dtype=float)
    keep = np.isfinite(target) & (target > 1.0)
    if not keep.any():
        raise ValueError(f"no over-dispersed window in {dict(zip(windows, target))}: a Poisson process fits")

    def resid(x: np.ndarray) -> np.ndarray:
        return np.log(mmpp_dispersion(rate, np.exp(x[0]), np.exp(x[1]), w[keep])) - np.log(target[keep])

    best = optimize.least_squares(resid, x0=np.array([0.0, np.log(10.0)]),
                                  bounds=([np.log(1e-3), np.log(0.1)], [np.log(1e3), np.log(3600.0)]))
    return ArrivalProcess(kind="mmpp", rate_cv=float(np.exp(best.x[0])), switch_s=float(np.exp(best.x[1])))


def fitted_arrivals_path() -> Path:
    """``presets/arrivals.json`` of the run context's data directory (the fitted processes and their sources)."""
    from .catalog import data_dir

    return data_dir() / "presets" / "arrivals.json"


def fitted_arrival(trace: str, kind: str, path: Path | str | None = None) -> ArrivalProcess:
    """The ``kind`` process fitted to ``trace``'s session starts, from ``data/presets/arrivals.json``."""
    file = Path(path) if path is not None else fitted_arrivals_path()
    table = json.loads(file.read_text())["fits"]
    if trace not in table:
        raise ValueError(f"{file}: no fitted arrivals for {trace!r}; known: {sorted(table)}")
    fits = table[trace]["processes"]
    if kind not in fits:
        raise ValueError(f"{file}: no {kind!r} process for {trace!r}; known: {sorted(fits)}")
    return ArrivalProcess(kind=kind, **fits[kind])
