"""Session patience and abandonment: a session whose request waits too long for admission leaves.

A :class:`Patience` is the distribution of a session's patience (seconds a request of the session is
willing to wait on an instance's queue before its first admission). :func:`draw_patience` draws one
value per session from a dedicated seeded stream (the policies' random numbers and every other draw
stay those of a run without abandonment). The engines apply the rule stated in ``docs/engine.md``
("Abandonment"): a waiting, never-admitted request whose ``arrival + patience`` lies before a batch
formation of its instance leaves at that formation unserved, and its session releases no further turn.

The patience parameters are **assumptions** (no public measurement of how long agent users or agent
frameworks wait for an LLM request is known to this project): the default log-normal has a median of
60 s (a typical client-side request timeout of agent frameworks) and sigma 1 (patience spread over
roughly an order of magnitude); fig12 sweeps what it needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ranges import AT_LEAST_0, POSITIVE
from .result_raw import REASON_ABANDONED

__all__ = ["PATIENCE_KINDS", "Patience", "draw_patience", "mark_unreleased"]

PATIENCE_KINDS = ("fixed", "lognormal")
_STREAM = 0xABA5  # the seed stream of the patience draws (any constant distinct from the others)


@dataclass(frozen=True)
class Patience:
    """How long a session's requests wait for admission before the session abandons (seconds).

    Args:
        kind: ``fixed`` (every session waits ``median_s``) or ``lognormal`` (median ``median_s``,
            log-space standard deviation ``sigma``).
        median_s: the median patience (an assumption: 60 s).
        sigma: log-normal shape (an assumption: 1.0); unused with ``fixed``.
    """

    kind: str = "lognormal"
    median_s: float = 60.0
    sigma: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in PATIENCE_KINDS:
            raise ValueError(f"patience kind must be one of {PATIENCE_KINDS}, got {self.kind!r}")
        object.__setattr__(self, "median_s", POSITIVE.check("patience median_s", self.median_s))
        object.__setattr__(self, "sigma", AT_LEAST_0.check("patience sigma", self.sigma))

    @classmethod
    def parse(cls, text: str) -> "Patience":
        """``fixed:30`` / ``lognormal:60`` / ``lognormal:60:1.5`` (kind, median seconds, sigma)."""
        parts = str(text).split(":")
        if len(parts) not in (2, 3) or parts[0] not in PATIENCE_KINDS or (parts[0] == "fixed" and len(parts) == 3):
            raise ValueError(f"patience must be 'fixed:SECONDS' or 'lognormal:MEDIAN[:SIGMA]', got {text!r}")
        return cls(parts[0], *parts[1:])

    def describe(self) -> str:
        """One short phrase, e.g. ``patience lognormal median 60 s sigma 1``."""
        if self.kind == "fixed":
            return f"patience fixed {self.median_s:g} s"
        return f"patience lognormal median {self.median_s:g} s sigma {self.sigma:g}"


def draw_patience(patience: Patience, n_sessions: int, seed: int) -> np.ndarray:
    """One patience (s, float64) per dense session index, from the stream ``[seed, _STREAM]``."""
    if patience.kind == "fixed" or patience.sigma == 0.0:
        return np.full(int(n_sessions), float(patience.median_s))
    rng = np.random.default_rng([int(seed), _STREAM])
    return rng.lognormal(math.log(patience.median_s), patience.sigma, int(n_sessions))


def mark_unreleased(reason: np.ndarray, session: np.ndarray) -> np.ndarray:
    """``reason`` with every row that never arrived (reason < 0) of a session that abandoned marked abandoned.

    In closed replay an abandoned turn's descendants are never released; they are the session's abandoned
    remaining turns, counted, not dropped. Both engines call this on their raw reasons before they label
    what is left as stalled.
    """
    reason = np.asarray(reason).copy()
    gone = np.unique(session[reason == REASON_ABANDONED])
    reason[(reason < 0) & np.isin(session, gone)] = REASON_ABANDONED
    return reason
