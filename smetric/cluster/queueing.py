"""Queue disciplines for an instance's waiting queue: FCFS, the S-Metric score and multi-level queues.

The router decides *where* a request runs; the discipline decides *when*: in which order an
instance's batch formation tries its waiting requests. The S-Metric score and the multi-level queues are
this project's design of a session-centric discipline (its weights are assumptions, swept in fig12).

* ``fcfs``: routing order, head-of-line blocking (the first candidate whose KV does not fit stops
  admission) -- vLLM's default and the engine's historic behaviour.
* ``smetric-score``: at each batch formation every waiting request gets

      S = alpha / E[T] + beta * P + gamma * L / L_max - delta * R

  and candidates are tried in decreasing S; one whose KV does not fit is skipped (never a deadlock).
* ``mlfq``: three levels tried in strict priority -- high (first turns, E[T] < ``short_s``, or
  sessions with priority > 1; oldest arrival first), medium (by S), low (E[T] > ``long_s``; by S).
  A request that waited ``t_low`` is at least medium, one that waited ``t_medium`` is high
  (anti-starvation: it is then ordered by arrival among the high ones).

Estimates are GPU occupancy, never wall time: E[T] = prefill time of the prompt tokens not hit at
routing time (the request's queued-prefill cost) + a decode estimate: with the ``oracle`` estimator
that of :func:`decode_estimates` (its true ``n_out - 1`` tokens, each a solo decode step at the mean
context), otherwise one of :mod:`smetric.cluster.estimators`; a turn's tool/think gap never enters.
P is the workload's ``priority`` column, L the time since the request arrived,
R = (blocks beyond its routing-time prefix hit) / (free HBM blocks at the start of the formation).

The scalar functions are numba-compiled and called by both engines (the numba engine and the
pure-Python reference), so the two order candidates identically; each engine implements the
selection loop on its own data structures.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0, POSITIVE, integer
from .estimators import ESTIMATORS, decode_time_nb

__all__ = ["DISCIPLINES", "QUEUE_PARAMS", "QueueDiscipline", "decode_estimates", "rank_nb", "queue_order",
           "LEVEL_LOW", "LEVEL_MEDIUM", "LEVEL_HIGH"]

DISCIPLINES = ("fcfs", "smetric-score", "mlfq")
FCFS, SCORE, MLFQ = range(3)
LEVEL_LOW, LEVEL_MEDIUM, LEVEL_HIGH = range(3)
# layout of the float parameter vector the engines read
(Q_KIND, Q_ALPHA, Q_BETA, Q_GAMMA, Q_DELTA, Q_LMAX, Q_SHORT, Q_LONG, Q_TLOW, Q_TMED, Q_EST, Q_PRIOR,
 Q_WINDOW) = range(13)
N_Q = 13
_MIN_EST = 1e-6  # seconds: E[T] floor so 1/E[T] stays finite

RANKED = ("smetric-score", "mlfq")  # the disciplines that read E[T], hence the ``estimator`` parameter
# parameter -> (allowed values, the disciplines that read it); l_max is also the starvation threshold
# of every discipline (SimResult's sessions_starved_frac)
QUEUE_PARAMS = {
    "alpha": (AT_LEAST_0, ("smetric-score", "mlfq")),
    "beta": (AT_LEAST_0, ("smetric-score", "mlfq")),
    "gamma": (AT_LEAST_0, ("smetric-score", "mlfq")),
    "delta": (AT_LEAST_0, ("smetric-score", "mlfq")),
    "l_max": (POSITIVE, DISCIPLINES),
    "short_s": (POSITIVE, ("mlfq",)),
    "long_s": (POSITIVE, ("mlfq",)),
    "t_low": (POSITIVE, ("mlfq",)),
    "t_medium": (POSITIVE, ("mlfq",)),
    "prior_output": (POSITIVE, RANKED),
    "window": (integer(3), RANKED),
}


@dataclass(frozen=True)
class QueueDiscipline:
    """A queue discipline and its parameters (seconds for every time).

    Args:
        name: ``fcfs``, ``smetric-score`` or ``mlfq`` (``_`` may stand for ``-``).
        alpha, beta, gamma, delta: weights of urgency 1/E[T], priority, waited/L_max, resource demand.
        l_max: tolerated wait L_max.
        short_s: E[T] below which a turn is high level (mlfq).
        long_s: E[T] above which a turn is low level (mlfq).
        t_low: wait after which a low request is promoted to medium (mlfq).
        t_medium: wait after which any request is promoted to high (mlfq).
        estimator: where the decode part of E[T] comes from (:mod:`smetric.cluster.estimators`):
            ``oracle`` (the true output length, an upper bound), ``session-mean`` or ``linear``.
        prior_output: expected output tokens before any request has finished (an assumption: 256,
            a typical chat reply; it only applies until the first finish).
        window: finished requests the ``linear`` estimator fits over (an assumption).
    """

    name: str = "fcfs"
    alpha: float = 1.0
    beta: float = 0.0
    gamma: float = 1.0
    delta: float = 0.5
    l_max: float = 10.0
    short_s: float = 0.1
    long_s: float = 2.0
    t_low: float = 5.0
    t_medium: float = 10.0
    estimator: str = "oracle"
    prior_output: float = 256.0
    window: int = 256

    def __post_init__(self) -> None:
        name = str(self.name).replace("_", "-")
        if name not in DISCIPLINES:
            raise ValueError(f"queue discipline must be one of {DISCIPLINES}, got {self.name!r}")
        object.__setattr__(self, "name", name)
        estimator = str(self.estimator).replace("_", "-")
        if estimator not in ESTIMATORS:
            raise ValueError(f"queue parameter estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        if estimator != "oracle" and name not in RANKED:
            raise ValueError(f"queue parameter estimator does not apply to {name} (it ranks nothing)")
        object.__setattr__(self, "estimator", estimator)
        for field, (allowed, _) in QUEUE_PARAMS.items():
            value = getattr(self, field)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"queue parameter {field} must be {allowed.describe()}, got {value!r}")
            allowed.check(f"queue parameter {field}", value)
        if self.short_s >= self.long_s:
            raise ValueError(f"short_s ({self.short_s}) must be below long_s ({self.long_s})")
        if self.t_low > self.t_medium:
            raise ValueError(f"t_low ({self.t_low}) must not exceed t_medium ({self.t_medium})")

    @classmethod
    def parse(cls, name: str, params: dict | None = None) -> "QueueDiscipline":
        """``name`` with ``params`` (field -> value, values may be strings) overriding the defaults.

        A parameter the discipline does not read (e.g. ``alpha`` with ``fcfs``) is an error.
        """
        discipline = str(name).replace("_", "-")
        if discipline not in DISCIPLINES:
            raise ValueError(f"queue discipline must be one of {DISCIPLINES}, got {name!r}")
        values = {}
        for key, value in (params or {}).items():
            if key == "estimator":
                if discipline not in RANKED:
                    raise ValueError(f"queue parameter estimator does not apply to {discipline} (it ranks nothing)")
                values[key] = value
                continue
            if key not in QUEUE_PARAMS:
                raise ValueError(f"unknown queue parameter {key!r}; known: {sorted([*QUEUE_PARAMS, 'estimator'])}")
            allowed, users = QUEUE_PARAMS[key]
            if discipline not in users:
                takes = [k for k, (_, u) in QUEUE_PARAMS.items() if discipline in u]
                raise ValueError(f"queue parameter {key} does not apply to {discipline} (it takes: {', '.join(takes)})")
            values[key] = allowed.check(f"queue parameter {key}", value)
            if allowed.integer:
                values[key] = int(values[key])
        return cls(name=discipline, **values)

    def vector(self) -> np.ndarray:
        """The float64 parameter vector the engines read (layout ``Q_*``)."""
        q = np.zeros(N_Q)
        q[Q_KIND] = DISCIPLINES.index(self.name)
        q[Q_ALPHA], q[Q_BETA], q[Q_GAMMA], q[Q_DELTA] = self.alpha, self.beta, self.gamma, self.delta
        q[Q_LMAX], q[Q_SHORT], q[Q_LONG] = self.l_max, self.short_s, self.long_s
        q[Q_TLOW], q[Q_TMED] = self.t_low, self.t_medium
        q[Q_EST], q[Q_PRIOR], q[Q_WINDOW] = ESTIMATORS.index(self.estimator), self.prior_output, self.window
        return q


@njit(cache=True)
def _decode_estimates_nb(coef, input_len, n_out):
    out = np.zeros(input_len.shape[0])
    for r in range(input_len.shape[0]):
        out[r] = decode_time_nb(coef, input_len[r], float(n_out[r]))
    return out


def decode_estimates(coef: np.ndarray, input_len: np.ndarray, n_out: np.ndarray) -> np.ndarray:
    """Expected decode GPU time of each request: ``n_out - 1`` solo decode steps at the mean context."""
    input_len = np.asarray(input_len, dtype=np.int64)
    n_out = np.asarray(n_out, dtype=np.int64)
    if input_len.shape != n_out.shape:
        raise ValueError(f"input_len and n_out differ in shape: {input_len.shape} vs {n_out.shape}")
    return _decode_estimates_nb(np.asarray(coef, dtype=np.float64), input_len, n_out)


@njit(cache=True, _nrt=False)
def rank_nb(q, est, priority, turn, arrival, now, need, free):
    """(level, key) of a waiting request; candidates are tried by decreasing level, then key.

    ``est`` = E[T] (GPU seconds), ``arrival`` its arrival time, ``need`` the KV blocks it needs,
    ``free`` the instance's free blocks (>= 1). ``fcfs`` ranks everybody equal (routing order).
    """
    kind = int(q[Q_KIND])
    if kind == FCFS:
        return LEVEL_MEDIUM, 0.0
    waited = now - arrival
    e = max(est, _MIN_EST)
    score = q[Q_ALPHA] / e + q[Q_BETA] * priority + q[Q_GAMMA] * (waited / q[Q_LMAX]) - q[Q_DELTA] * (need / free)
    if kind == SCORE:
        return LEVEL_MEDIUM, score
    level = LEVEL_MEDIUM
    if e > q[Q_LONG]:
        level = LEVEL_LOW
    if turn == 0 or e < q[Q_SHORT] or priority > 1.0:
        level = LEVEL_HIGH
    if waited >= q[Q_TLOW] and level == LEVEL_LOW:
        level = LEVEL_MEDIUM
    if waited >= q[Q_TMED]:
        level = LEVEL_HIGH
    if level == LEVEL_HIGH:
        return level, -arrival
    return level, score


def queue_order(q: np.ndarray, est, priority, turn, arrival, now: float, need, free: float) -> list[int]:
    """Positions of a waiting queue (given in routing order) in the order a formation tries them.

    Ties keep routing order. Used by the reference engine and the tests.
    """
    ranks = [rank_nb(q, float(est[k]), float(priority[k]), int(turn[k]), float(arrival[k]), float(now),
                     float(need[k]), float(free)) for k in range(len(est))]
    return sorted(range(len(ranks)), key=lambda k: (-ranks[k][0], -ranks[k][1], k))


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
