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

Freshness: the in-flight count is the router's own, exact.
"""

from __future__ import annotations

from numba import njit

from ..ranges import AT_LEAST_0, FRACTION, at_least
from .base import R_INPUT_LEN, R_NOW, V_IN_FLIGHT
from .router_index import CACHE_VIEWS, index_size, prefix_hits, remember
from .selection import argmax_random, argmin_first
from .spec import PolicySpec

PID = 7

SPEC = PolicySpec(
    "sglang", PID, "cache_aware: least load if imbalanced, else the deepest match if rate > threshold, else least load",
    "sgl-project/sglang sgl-model-gateway/src/policies/cache_aware.rs (CLI defaults 0.3/64/1.5)",
    "in-flight requests (router-side, exact); prefix match from the router's own tree of routed prompts "
    "(no eviction feedback) or, with cache_view=engine, the exact local hit",
    params={"cache_threshold": 0.3, "balance_abs": 64.0, "balance_rel": 1.5, "cache_view": "router"},
    choices={"cache_view": CACHE_VIEWS},
    ranges={"cache_threshold": FRACTION, "balance_abs": AT_LEAST_0, "balance_rel": at_least(1)},
    context=("block_size",),
    state_size=index_size)

_THRESHOLD, _ABS, _REL, _VIEW, _B = (
    SPEC.slots("cache_threshold", "balance_abs", "balance_rel", "cache_view", "block_size"))
_ROUTER = SPEC.code("cache_view", "router")


@njit(cache=True)
def decide(view, req, blocks, params, state, rand):
    """The cache_aware choice, without updating the tree."""
    load = view[:, V_IN_FLIGHT].copy()
    lo, hi = load.min(), load.max()
    if hi - lo > params[_ABS] and hi > params[_REL] * lo:
        return argmin_first(load)
    prompt = req[R_INPUT_LEN]
    hits = prefix_hits(view, prompt, blocks, state, state.shape[0], params[_VIEW] == _ROUTER,
                       req[R_NOW], 0.0, 0, params[_B])
    best = argmax_random(hits, rand[0])
    if prompt > 0 and hits[best] / prompt > params[_THRESHOLD]:
        return best
    return argmin_first(load)


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The cache_aware choice; the prompt is then recorded under it in the router's tree."""
    return remember(state, params[_VIEW] == _ROUTER, blocks, decide(view, req, blocks, params, state, rand), req[R_NOW])
