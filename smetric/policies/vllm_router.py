"""vLLM production-stack router: ``prefixaware`` (vllm-prefix) and ``session`` (vllm-session).

* **vllm-prefix**: longest prefix match over the router's hash trie of the prompts it routed
  (no eviction, no load awareness); uniformly random among the instances sharing the longest
  match -- all of them when nothing matches; the prompt is then inserted under the choice.
  ``cache_view=engine`` matches the exact local hit instead.
* **vllm-session**: a consistent-hash ring (``VNODES`` = 160 points per instance, ketama-style as
  ``uhashring``'s default) keyed by the session id; the ring is built on the first call and kept
  in ``state``. A request without a session id (``R_SESSION < 0``) goes to the instance with the
  fewest requests routed in the last ``qps_window`` seconds (first index on ties: "the first endpoint
  with no stats"). Load is never looked at.

Freshness: the trie and the QPS counts are router-side bookkeeping (exact); nothing is read from engines.
"""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module
from ..ranges import POSITIVE
from .base import R_INPUT_LEN, R_NOW, R_SESSION
from .hashing import hash52
from .ring import build_ring, first_point, point_owner, ring_size
from .router_index import CACHE_VIEWS, index_size, prefix_hits, remember
from .selection import argmax_random, argmin_first
from .spec import PolicySpec
from .windows import window_add, window_size, window_sums

PID_PREFIX = 9
PID_SESSION = 10
VNODES = 160
_RING_SALT = 0x5E55
_SESSION_SALT = -3

PREFIX = PolicySpec(
    "vllm-prefix", PID_PREFIX, "random among the instances with the longest prefix match; no load check",
    "vllm-project/production-stack src/vllm_router/routers/routing_logic.py (prefixaware, prefix/hashtrie.py)",
    "the router's own trie of routed prompts (no eviction, no engine feedback); cache_view=engine: exact local hit",
    params={"cache_view": "router"}, choices={"cache_view": CACHE_VIEWS},
    context=("block_size",), state_size=index_size)
SESSION = PolicySpec(
    "vllm-session", PID_SESSION, "consistent hash of the session id; lowest windowed QPS without a session",
    "vllm-project/production-stack routing_logic.py (session: uhashring ring; _qps_routing fallback)",
    "session id only (plus router-side request counts for the fallback); no load or cache signal",
    params={"qps_window": 60.0}, ranges={"qps_window": POSITIVE},
    state_size=lambda ctx: 1 + ring_size(ctx.n_instances, VNODES) + window_size(ctx.n_instances))

_VIEW, _B = PREFIX.slots("cache_view", "block_size")
_ROUTER = PREFIX.code("cache_view", "router")
_QPS_WINDOW = SESSION.slot("qps_window")


@njit(cache=True)
def prefix_choose(view, req, blocks, params, state, rand):
    """vllm-prefix: uniformly random among the longest matches, then the prompt is recorded."""
    use_router = params[_VIEW] == _ROUTER
    hits = prefix_hits(view, req[R_INPUT_LEN], blocks, state, state.shape[0], use_router, req[R_NOW],
                       0.0, 0, params[_B])
    return remember(state, use_router, blocks, argmax_random(hits, rand[0]), req[R_NOW])


@njit(cache=True)
def ring_owner(state, n, session):
    """The instance owning ``session`` on the consistent-hash ring kept at ``state[1:]``."""
    m = VNODES * n
    return point_owner(state, 1, m, first_point(state, 1, m, hash52(session, _SESSION_SALT)))


@njit(cache=True)
def session_choose(view, req, blocks, params, state, rand):
    """vllm-session: the ring owner of the session, or the lowest windowed QPS without a session."""
    n = view.shape[0]
    if state[0] == 0.0:
        build_ring(state, 1, n, VNODES, _RING_SALT)
        state[0] = 1.0
    window = 1 + ring_size(n, VNODES)
    now = req[R_NOW]
    if req[R_SESSION] >= 0:
        chosen = ring_owner(state, n, int(req[R_SESSION]))
    else:
        chosen = argmin_first(window_sums(state, window, n, params[_QPS_WINDOW], now))
    window_add(state, window, n, params[_QPS_WINDOW], now, chosen, 1.0)
    return chosen


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
