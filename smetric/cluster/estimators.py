"""Decode-time estimators for the ranked queue disciplines: what a scheduler can know instead of an oracle.

The ranked disciplines (:mod:`smetric.cluster.queueing`) order waiting requests by E[T] = queued-prefill
cost + a decode estimate. The estimator chooses that decode estimate; it is computed once per request, at
its arrival (before routing), from the estimator state at that moment, and the state changes only when a
request finishes (both engines call :func:`observe_nb` in their finish path and :func:`estimate_nb` in
their arrival path, so the arithmetic is shared).

* ``oracle``: the true decode time (``n_out - 1`` solo decode steps at the mean context; an upper bound
  on what any scheduler knows).
* ``session-mean``: the same formula with the expected output E[out] = mean ``n_out`` of the session's
  finished requests, else the mean ``n_out`` of every request finished so far, else ``prior_output``.
* ``linear``: ``a * input + b * E[out] + c`` (E[out] as for ``session-mean``; the blueprint's per-model
  linear model), ``(a, b, c)`` the least-squares fit of the true decode time on (input, n_out) over the
  last ``window`` finished requests, refitted at every finish once three are in the window.
  A degenerate window (inputs or outputs all equal, or collinear) keeps the previous coefficients; until
  a fit exists the ``session-mean`` estimate is used. Estimates are clamped at 0.

The "true decode time" a finished request reports is its oracle estimate (the engine's own GPU-time
model of its decode), known once its output length is.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..hardware.kernel import iteration_time_nb
from ..numba_cache import refresh_module

__all__ = ["ESTIMATORS", "ORACLE", "SESSION_MEAN", "LINEAR", "EG_A", "EG_B", "EG_C", "estimator_state", "estimate_nb",
           "observe_nb", "decode_time_nb"]

ESTIMATORS = ("oracle", "session-mean", "linear")
ORACLE, SESSION_MEAN, LINEAR = range(3)
# layout of the global estimator vector: finished count and n_out sum, ring position and fill,
# fitted flag and coefficients a, b, c
EG_COUNT, EG_SUM, EG_POS, EG_FILL, EG_FITTED, EG_A, EG_B, EG_C = range(8)
N_EG = 8
_DEGENERATE = 1e-9  # relative determinant below which a window is collinear (numerical tolerance)


def estimator_state(kind: int, n_sessions: int, window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fresh state: per session (finished count, n_out sum), the ring of (input, n_out, decode time), globals
    (placeholders for the oracle, which keeps none)."""
    if kind == ORACLE:
        return np.zeros((1, 2)), np.zeros((1, 3)), np.zeros(N_EG)
    return np.zeros((int(n_sessions), 2)), np.zeros((max(int(window), 1), 3)), np.zeros(N_EG)


@njit(cache=True, _nrt=False)
def decode_time_nb(coef, input_len, n_out):
    """``n_out - 1`` solo decode steps at the mean context ``input_len + n_out / 2`` (n_out may be fractional)."""
    steps = n_out - 1.0
    if steps <= 0.0:
        return 0.0
    return steps * iteration_time_nb(coef, 1.0, 0.0, float(input_len) + 0.5 * n_out, 1.0)


@njit(cache=True, _nrt=False)
def _expected_output(sess, g, session, prior_output):
    if sess[session, 0] > 0.0:
        return sess[session, 1] / sess[session, 0]
    if g[EG_COUNT] > 0.0:
        return g[EG_SUM] / g[EG_COUNT]
    return prior_output


@njit(cache=True, _nrt=False)
def estimate_nb(kind, prior_output, coef, sess, g, session, input_len):
    """The decode estimate (GPU s) of a request of ``session`` with ``input_len`` prompt tokens (not oracle)."""
    e_out = _expected_output(sess, g, session, prior_output)
    if kind == LINEAR and g[EG_FITTED] > 0.0:
        return max(g[EG_A] * float(input_len) + g[EG_B] * e_out + g[EG_C], 0.0)
    return decode_time_nb(coef, input_len, e_out)


@njit(cache=True, _nrt=False)
def _refit(ring, g):
    m = int(g[EG_FILL])
    if m < 3:
        return
    mx = 0.0
    mz = 0.0
    my = 0.0
    for k in range(m):
        mx += ring[k, 0]
        mz += ring[k, 1]
        my += ring[k, 2]
    mx /= m
    mz /= m
    my /= m
    sxx = 0.0
    szz = 0.0
    sxz = 0.0
    sxy = 0.0
    szy = 0.0
    for k in range(m):
        dx = ring[k, 0] - mx
        dz = ring[k, 1] - mz
        dy = ring[k, 2] - my
        sxx += dx * dx
        szz += dz * dz
        sxz += dx * dz
        sxy += dx * dy
        szy += dz * dy
    det = sxx * szz - sxz * sxz
    if sxx <= 0.0 or szz <= 0.0 or det <= _DEGENERATE * sxx * szz:
        return
    a = (sxy * szz - szy * sxz) / det
    b = (szy * sxx - sxy * sxz) / det
    g[EG_A] = a
    g[EG_B] = b
    g[EG_C] = my - a * mx - b * mz
    g[EG_FITTED] = 1.0


@njit(cache=True, _nrt=False)
def observe_nb(kind, sess, ring, g, session, input_len, n_out, decode_time):
    """A request finished: update the session and global output means and (``linear``) the fit."""
    sess[session, 0] += 1.0
    sess[session, 1] += float(n_out)
    g[EG_COUNT] += 1.0
    g[EG_SUM] += float(n_out)
    if kind != LINEAR:
        return
    w = ring.shape[0]
    p = int(g[EG_POS])
    ring[p, 0] = float(input_len)
    ring[p, 1] = float(n_out)
    ring[p, 2] = decode_time
    g[EG_POS] = (p + 1) % w
    g[EG_FILL] = min(g[EG_FILL] + 1.0, float(w))
    _refit(ring, g)


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
