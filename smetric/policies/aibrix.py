"""AIBrix gateway ``prefix-cache`` policy (code defaults: imbalance 8, sigma factor 1, 20 min index TTL).

With ``running`` = the gateway's in-flight count per pod:

1. if ``max - min > imbalance``, the candidates shrink to the pods with the minimum count;
2. prefix match (chained block hashes) within the candidates: a pod's match is its run of leading
   blocks; pods with a match, shuffled then stably sorted by (match desc, running asc) -- i.e. the
   best match, then the least running, then uniformly random -- and the first one with
   ``running <= mean + sigma_factor * std`` (population statistics over all pods) wins;
3. otherwise least-request over all pods, ties uniformly random;
4. the prompt's blocks are recorded under the chosen pod.

Cache view: ``router`` (default) is AIBrix's prefix indexer -- router history with a TTL of
``index_ttl`` seconds and no engine feedback (the optional KV-event sync mode corresponds to
``cache_view=engine``, the exact local hit). Freshness: the running count is gateway-side, exact.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0, POSITIVE
from .base import R_INPUT_LEN, R_NOW, V_IN_FLIGHT
from .router_index import CACHE_VIEWS, index_size, prefix_hits, remember
from .selection import argmin_random, pick_tied
from .spec import PolicySpec

PID = 11

SPEC = PolicySpec(
    "aibrix", PID, "best prefix match among pods under mean + sigma*std running (min-running pods if imbalanced)",
    "vllm-project/aibrix pkg/plugins/gateway/algorithms/prefix_cache.go "
    "(code defaults 8 / 1 sigma; README says 16 / 2)",
    "gateway in-flight count (exact); prefix index of routed prompts with a 20 min TTL (no engine feedback) or, "
    "with cache_view=engine, the exact local hit (KV-event sync mode)",
    params={"imbalance": 8.0, "sigma_factor": 1.0, "index_ttl": 1200.0, "cache_view": "router"},
    choices={"cache_view": CACHE_VIEWS},
    ranges={"imbalance": AT_LEAST_0, "sigma_factor": AT_LEAST_0, "index_ttl": POSITIVE},
    context=("block_size",), state_size=index_size)

_IMBALANCE, _SIGMA, _TTL, _VIEW, _B = (
    SPEC.slots("imbalance", "sigma_factor", "index_ttl", "cache_view", "block_size"))
_ROUTER = SPEC.code("cache_view", "router")


@njit(cache=True)
def decide(view, req, blocks, params, state, rand):
    """The prefix-cache choice, without updating the index."""
    running = view[:, V_IN_FLIGHT].copy()
    lo = running.min()
    candidate = np.ones(running.shape[0], dtype=np.bool_)
    if running.max() - lo > params[_IMBALANCE]:
        candidate = running == lo
    hits = prefix_hits(view, req[R_INPUT_LEN], blocks, state, state.shape[0], params[_VIEW] == _ROUTER,
                       req[R_NOW], params[_TTL], 0, params[_B])
    limit = running.mean() + params[_SIGMA] * running.std()
    eligible = candidate & (hits > 0) & (running <= limit)
    if eligible.any():
        best = hits[eligible].max()
        eligible &= hits == best
        least = running[eligible].min()
        return pick_tied(eligible & (running == least), rand[0])
    return argmin_random(running, rand[0])


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The prefix-cache choice; the prompt is then recorded under it."""
    return remember(state, params[_VIEW] == _ROUTER, blocks, decide(view, req, blocks, params, state, rand), req[R_NOW])


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
