"""Preble E2 (ICLR'25) global scheduler, reduced to per-request routing.

* **Exploit** when the longest cached prefix is longer than the rest of the prompt
  (``match > L - match``): among the instances holding that match, the lowest cost.
* **Explore** otherwise: ``argmin_g cost_g``.
* ``load_g`` = prefill seconds of the misses routed to ``g`` in the last ``window`` seconds
  + in-flight requests x ``decode_len`` x ``tpot`` (decode load); ``cost_g`` = ``load_g`` + this
  request's prefill seconds on ``g``.
* **Rebalance**: after ``warmup`` routed requests, if the exploit target is the most loaded
  instance and ``load > rebalance x`` the least load, the request goes to the cheapest instance
  instead (Preble moves prefixes from the heaviest to the lightest GPU when ``max > 1.5 min``;
  routing the request there is the per-request effect of that move). Ties go to the lowest index.

Simplifications: Preble's radix tree of per-node windowed hit statistics is replaced by the exact
local hit (its tree mirrors GPU contents through a virtual LRU) and per-instance windowed miss cost;
replication of hot nodes and the eviction-cost term are not modelled. Preble seeds TPOT with 0.15 s
and then measures it per GPU; the router here cannot measure, so ``tpot`` defaults to 0.02 s (the
TPOT SLO), ``decode_len`` to Preble's fallback of 45 tokens.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0, POSITIVE, at_least, integer
from .base import R_INPUT_LEN, R_NOW, V_IN_FLIGHT, V_REQ_COST
from .selection import argmin_first
from .signals import local_hit
from .spec import PolicySpec
from .windows import window_add, window_size, window_sums

PID = 12

SPEC = PolicySpec(
    "preble", PID, "exploit the holder of a dominant prefix, else argmin windowed cost; rebalance at 1.5x",
    "Preble E2 (ICLR'25), WukLab/preble GlobalSchedulerWithTime (window 3 min, HIGH_LOAD_THRESHOLD 1.5, "
    "rebalancing after 50 requests)",
    "local HBM/DRAM hit (Preble's tree mirrors GPU caches: exact here), estimated prefill seconds of the "
    "request per instance, in-flight requests, the router's own window of routed miss cost",
    params={"window": 180.0, "rebalance": 1.5, "warmup": 50.0, "tpot": 0.02, "decode_len": 45.0},
    ranges={"window": POSITIVE, "rebalance": at_least(1), "warmup": integer(0), "tpot": AT_LEAST_0,
            "decode_len": AT_LEAST_0},
    state_size=lambda ctx: 1 + window_size(ctx.n_instances))

_WINDOW, _REBALANCE, _WARMUP, _TPOT, _DECODE_LEN = (
    SPEC.slots("window", "rebalance", "warmup", "tpot", "decode_len"))


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The E2 decision; ``state[0]`` counts routed requests, the miss-cost window follows it."""
    n = view.shape[0]
    now = req[R_NOW]
    load = window_sums(state, 1, n, params[_WINDOW], now)
    hits = np.empty(n)
    for i in range(n):
        load[i] += view[i, V_IN_FLIGHT] * params[_DECODE_LEN] * params[_TPOT]
        hits[i] = local_hit(view, i)
    cost = load + view[:, V_REQ_COST]
    cheapest = argmin_first(cost)
    chosen = cheapest
    match = hits.max()
    if match > 0.0 and match > req[R_INPUT_LEN] - match:
        chosen = argmin_first(np.where(hits == match, cost, np.inf))
        if (state[0] >= params[_WARMUP] and load[chosen] == load.max()
                and load[chosen] > params[_REBALANCE] * load.min()):
            chosen = cheapest
    window_add(state, 1, n, params[_WINDOW], now, chosen, view[chosen, V_REQ_COST])
    state[0] += 1.0
    return chosen


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
