"""SGLang router / model gateway ``cache_aware`` policy (CLI defaults).

Per request, with ``load`` = in-flight requests the router has outstanding per worker:

1. ``imbalanced = max - min > balance_abs and max > balance_rel * min`` -> argmin load (first index);
2. else the deepest prefix match: ``rate = matched / prompt``; if ``rate > cache_threshold`` route to
   the matched worker (one of the workers with the deepest match, an arbitrary one in the source:
   uniformly at random here), else argmin load (first index);
3. the prompt is inserted under the chosen worker whatever branch chose it.

Cache view (``cache_view``): ``router`` (default) models SGLang's own approximate tree -- the
router's history of where it sent each prefix, which sees a prefix as soon as it is routed and never
sees engine evictions (its size bound, 2^26 characters per worker, is far beyond HBM and is not
modelled: no TTL). This is what SGLang actually uses (no engine feedback), and the mismatch with the
engine's real cache is one of the failure modes the paper discusses. ``engine`` uses the exact local
hit instead, for comparison.

Below the threshold (``miss_route``): ``least_load`` (default; the gateway's argmin load) or ``smallest_tree``,
the worker with the fewest characters in the router's tree (``tree.get_smallest_tenant()``, strict ``<`` in map
order: first index here), which is what the v0.4 router did. Its tree size is modelled as the prompt tokens
newly inserted under each worker (index overwrites are not subtracted; v0.4 trimmed the tree only past 2^24
characters per worker).

SGLang v0.4's ``cache_aware`` v1 (sgl-project/sglang PR #2114, ``rust/src/router.rs``; defaults
cache_threshold 0.5, cache_routing_prob 1.0, no imbalance check: with probability ``cache_routing_prob`` the
cache branch, else the shortest queue) is ``cache_threshold=0.5 balance_abs=1e18 miss_route=smallest_tree``:
a ``balance_abs`` above any in-flight count disables the imbalance branch, and ``cache_routing_prob = 1``
never takes the shortest-queue branch.

Freshness: the in-flight count is the router's own, exact.
"""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0, FRACTION, at_least
from .base import R_INPUT_LEN, R_NOW, V_IN_FLIGHT
from .router_index import CACHE_VIEWS, index_insert, index_size, prefix_hits
from .selection import argmax_random, argmin_first
from .spec import PolicySpec

PID = 7
MISS_ROUTES = ("least_load", "smallest_tree")

SPEC = PolicySpec(
    "sglang", PID, "cache_aware: least load if imbalanced, else the deepest match if rate > threshold, else least load",
    "sgl-project/sglang sgl-model-gateway/src/policies/cache_aware.rs (CLI defaults 0.3/64/1.5)",
    "in-flight requests (router-side, exact); prefix match from the router's own tree of routed prompts "
    "(no eviction feedback) or, with cache_view=engine, the exact local hit",
    params={"cache_threshold": 0.3, "balance_abs": 64.0, "balance_rel": 1.5, "cache_view": "router",
            "miss_route": "least_load"},
    choices={"cache_view": CACHE_VIEWS, "miss_route": MISS_ROUTES},
    ranges={"cache_threshold": FRACTION, "balance_abs": AT_LEAST_0, "balance_rel": at_least(1)},
    context=("block_size",),
    state_size=lambda ctx: index_size(ctx) + ctx.n_instances)

_THRESHOLD, _ABS, _REL, _VIEW, _MISS, _B = (
    SPEC.slots("cache_threshold", "balance_abs", "balance_rel", "cache_view", "miss_route", "block_size"))
_ROUTER = SPEC.code("cache_view", "router")
_SMALLEST = SPEC.code("miss_route", "smallest_tree")


@njit(cache=True)
def decide(view, req, blocks, params, state, rand):
    """The cache_aware choice, without updating the tree. ``state``: the router index, then the tree size
    (tokens) of each worker."""
    n = view.shape[0]
    size = state.shape[0] - n
    load = view[:, V_IN_FLIGHT].copy()
    lo, hi = load.min(), load.max()
    if hi - lo > params[_ABS] and hi > params[_REL] * lo:
        return argmin_first(load)
    prompt = req[R_INPUT_LEN]
    hits = prefix_hits(view, prompt, blocks, state, size, params[_VIEW] == _ROUTER,
                       req[R_NOW], 0.0, 0, params[_B])
    best = argmax_random(hits, rand[0])
    if prompt > 0 and hits[best] / prompt > params[_THRESHOLD]:
        return best
    if params[_MISS] == _SMALLEST:
        return argmin_first(state[size:])
    return argmin_first(load)


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The cache_aware choice; the prompt is then recorded under it in the router's tree."""
    chosen = decide(view, req, blocks, params, state, rand)
    if params[_VIEW] == _ROUTER or params[_MISS] == _SMALLEST:
        size = state.shape[0] - view.shape[0]
        state[size + chosen] += index_insert(state, 0, size, blocks, chosen, req[R_NOW]) * params[_B]
    return chosen


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
