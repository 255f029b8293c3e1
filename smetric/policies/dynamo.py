"""NVIDIA Dynamo KV router: ``cost_i = w * P_i / B + D_i``, lower is better.

* ``P_i`` = active prefill tokens on ``i`` + the request's tokens not covered by its overlap, where
  the overlap credits HBM hits fully and host-DRAM hits by ``host_weight`` (0.75, the newest
  selector's default; with no host tier this is the classic cost);
* ``D_i`` = decode blocks: active blocks (context tokens of in-flight requests / B) plus the
  request's new blocks (its tokens not cached in HBM / B; cached blocks stand in for "already active").

``temperature = 0``: argmin; ties by the smaller cache (HBM blocks in use stand in for the router's
radix-tree size), then uniformly at random. ``temperature > 0``: softmax over
``-(cost - min) / ((max - min) * T)``, sampled by inverse CDF (uniform if all costs are equal).

Freshness: Dynamo's overlap comes from engine KV events (exact, eviction-aware, as here); its
active prefill tokens and blocks are the router's own bookkeeping of what it sent (exact).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0, FRACTION
from .base import R_INPUT_LEN, V_CONTEXT_TOKENS, V_HIT_DRAM, V_HIT_HBM, V_KV_USED, V_QUEUED_TOKENS
from .selection import argmin_random, sample_weighted
from .signals import new_tokens
from .spec import PolicySpec

PID = 6

SPEC = PolicySpec(
    "dynamo", PID, "argmin w*P/B + D (prefill blocks + decode blocks); T>0: softmax over normalised cost",
    "ai-dynamo/dynamo lib/kv-router scheduling/selector.rs (overlap_score_weight=1, router_temperature=0; "
    "host_cache_hit_weight=0.75 from selector/default.rs)",
    "HBM/DRAM hits (KV events: exact), queued prefill tokens and in-flight context tokens (router bookkeeping: "
    "exact), HBM blocks in use for ties",
    params={"overlap_weight": 1.0, "temperature": 0.0, "host_weight": 0.75},
    ranges={"overlap_weight": AT_LEAST_0, "temperature": AT_LEAST_0, "host_weight": FRACTION},
    context=("block_size",))

_W, _T, _HOST, _B = SPEC.slots("overlap_weight", "temperature", "host_weight", "block_size")


@njit(cache=True)
def costs(view, req, params):
    """Dynamo's cost of every instance."""
    n = view.shape[0]
    prompt = req[R_INPUT_LEN]
    bsize = params[_B]
    out = np.empty(n)
    for i in range(n):
        credit = view[i, V_HIT_HBM] + params[_HOST] * view[i, V_HIT_DRAM]
        prefill = view[i, V_QUEUED_TOKENS] + new_tokens(prompt, credit)
        decode = (view[i, V_CONTEXT_TOKENS] + new_tokens(prompt, view[i, V_HIT_HBM])) / bsize
        out[i] = params[_W] * prefill / bsize + decode
    return out


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """argmin cost (T = 0) or a softmax draw over the normalised cost (T > 0)."""
    cost = costs(view, req, params)
    lo, hi = cost.min(), cost.max()
    temperature = params[_T]
    if temperature > 0.0:
        weights = np.ones(cost.shape[0])
        if hi > lo:
            weights = np.exp(-(cost - lo) / ((hi - lo) * temperature))
        return sample_weighted(weights, rand[0])
    tree = np.full(cost.shape[0], np.inf)
    for i in range(cost.shape[0]):
        if cost[i] == lo:
            tree[i] = view[i, V_KV_USED]
    return argmin_random(tree, rand[0])


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
