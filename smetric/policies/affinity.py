"""Affinity baselines: session-sticky (a session stays where it started) and cache-affinity (max local hit).

* **session-sticky** (llm-d session affinity, the SMetric paper's sticky baseline): the first
  request of a session goes to the instance with the fewest in-flight requests (lowest index on
  ties); every later request of the session goes there too. The map lives in ``state``
  (``state[s]`` = instance + 1, 0 = not placed yet), so a follow-up whose first turn was not seen
  (a cut trace) is placed like a first turn.
* **cache-affinity**: the instance with the longest local hit (HBM + host DRAM), ties by fewer
  in-flight requests, then the lowest index -- pure cache-affinity routing with no load check.

Freshness: the session map and in-flight counts are router-side (exact); cache-affinity reads
exact engine hits, as a KV-event-fed router would.
"""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module
from .base import R_SESSION, V_IN_FLIGHT
from .selection import argmin_first
from .signals import local_hit
from .spec import PolicySpec

PID_SESSION_STICKY = 14
PID_CACHE_AFFINITY = 15

SESSION_STICKY = PolicySpec(
    "session-sticky", PID_SESSION_STICKY, "pin each session to the least-loaded instance at its first request",
    "llm-d session-affinity scorer / SMetric paper's llm-d session-sticky baseline (§4.2)",
    "session id (router-side map), in-flight requests at first placement (router-side, exact)",
    state_size=lambda ctx: ctx.n_sessions)
CACHE_AFFINITY = PolicySpec(
    "cache-affinity", PID_CACHE_AFFINITY, "max local hit, ties by fewer in-flight requests, then lowest index",
    "pure cache-affinity routing (e.g. vLLM kvaware without fallback); the paper's KV-favouring extreme",
    "local HBM/DRAM hit (KV events: exact), in-flight requests for ties",
)


@njit(cache=True)
def session_sticky(view, req, blocks, params, state, rand):
    """The session's instance, placing it on the least-loaded instance at its first sighting."""
    s = int(req[R_SESSION])
    if s < 0 or s >= state.shape[0]:
        raise ValueError("session-sticky needs dense session indices below PolicyContext.n_sessions")
    if state[s] == 0.0:
        state[s] = argmin_first(view[:, V_IN_FLIGHT]) + 1.0
    return int(state[s]) - 1


@njit(cache=True)
def cache_affinity(view, req, blocks, params, state, rand):
    """argmax local hit; ties by fewer in-flight requests, then the lowest index."""
    best = 0
    for i in range(1, view.shape[0]):
        hit, top = local_hit(view, i), local_hit(view, best)
        if hit > top or (hit == top and view[i, V_IN_FLIGHT] < view[best, V_IN_FLIGHT]):
            best = i
    return best


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
