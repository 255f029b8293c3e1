"""llm-d inference scheduler (EPP): weighted scorers summed, max-score picker (ties uniformly random).

``S_i = w_prefix * prefix_i + w_queue * queue_i + w_kv * kv_i + w_load_aware * load_aware_i
+ w_no_hit_lru * no_hit_lru_i`` with

* ``prefix``: ``estimate`` (default profile) -- the router's own LRU index of the prompts it routed,
  matched over at most ``max_blocks`` (256; 0 = no cap) leading blocks: ``matched / total`` (total also capped);
  ``precise`` -- engine KV events: ``min(1, (HBM blocks + dram_weight * DRAM blocks) / total)``, ``dram_weight``
  0.8 (llm-d-kv-cache's tier weight). Under write-through (every HBM block also in DRAM) the tiered profile's
  GPU- and CPU-prefix scorers at 1:1 sum to ``(2 HBM + DRAM) / total``: ``w_prefix=2 dram_weight=0.5``;
* ``queue`` = ``(q_max - q_i) / (q_max - q_min)`` over waiting-queue lengths (1 for all if equal);
* ``kv`` = ``1 - used / capacity`` of HBM KV blocks;
* ``load_aware`` = ``0.5`` if nothing waits, else ``0.5 * (1 - min(q, T) / T)`` (``T = load_threshold``);
* ``no_hit_lru``: for a cold request (no instance has any prefix match, ``no_hit_lru_on=cold``; every request
  with ``all``, which is what the scorer does when it finds no prefix state), ``max(0, 1 - rank / (n - 1))``
  where instances that never took a cold request rank first (in index order; the EPP's candidate order), then
  the others from the least to the most recent cold request; a request with a match scores 0.5 everywhere.
  Routing a cold request makes its instance the most recent.

Defaults are the built-in profile (prefix 3, queue 2, kv-utilisation 2); the guides' optimized-baseline and
precise profiles add the no-hit-LRU scorer at 2 (``w_no_hit_lru=2``), the tiered profile at 1; the load-aware sample
config is ``w_prefix=1 w_queue=0 w_kv=0 w_load_aware=1``. The llm-d 73-capacity benchmark's profiles:
precise ``prefix=precise`` 3/2/2, estimated ``prefix=estimate`` 1/1/1 with ``max_blocks=256``, load
``w_prefix=0 w_queue=1 w_kv=1`` (hash block size = the workload's block size, 64 there). Its
``lruCapacityPerServer`` (31,250 blocks = 2.0M tokens per server) is not modelled: the estimate index is one
table of 4x the cluster's HBM blocks (:mod:`smetric.policies.router_index`), and neither bound is reached by
that workload (150 groups x 12,000 distinct tokens = 1.8M tokens over 8 servers). Freshness: waiting queues and KV
utilisation are Prometheus scrapes in llm-d (exact here); the estimate index is router history.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0, POSITIVE, Range, integer
from .base import R_INPUT_LEN, R_NOW, V_HIT_DRAM, V_HIT_HBM, V_KV_CAPACITY, V_KV_USED, V_N_WAITING
from .router_index import index_insert, index_match, index_size
from .selection import argmax_random, minmax
from .spec import PolicySpec

PID = 8

SPEC = PolicySpec(
    "llm-d", PID, "argmax of weighted scorers: prefix (estimate|precise) 3, queue 2, kv-utilisation 2, load-aware 0, "
    "no-hit-LRU 0",
    "llm-d/llm-d-inference-scheduler pkg/epp (config/loader/defaults.go, scorer/*, approximateprefix, "
    "scorer/no_hit_lru.go; llm-d-kv-cache kvblock_scorer.go for precise)",
    "waiting-queue length and KV utilisation (Prometheus scrapes; exact here); prefix: router's LRU index of "
    "routed prompts (estimate, no eviction feedback) or engine KV events (precise, HBM 1.0 / DRAM dram_weight)",
    params={"w_prefix": 3.0, "w_queue": 2.0, "w_kv": 2.0, "w_load_aware": 0.0, "load_threshold": 128.0,
            "max_blocks": 256.0, "prefix": "estimate", "dram_weight": 0.8, "w_no_hit_lru": 0.0,
            "no_hit_lru_on": "cold"},
    choices={"prefix": ("estimate", "precise"), "no_hit_lru_on": ("cold", "all")},
    ranges={"w_prefix": AT_LEAST_0, "w_queue": AT_LEAST_0, "w_kv": AT_LEAST_0, "w_load_aware": AT_LEAST_0,
            "load_threshold": POSITIVE, "max_blocks": integer(0), "dram_weight": Range(0.0, 1.0),
            "w_no_hit_lru": AT_LEAST_0},
    constants=lambda ctx: [index_size(ctx)],
    state_size=lambda ctx: index_size(ctx) + ctx.n_instances + 1)

_W_PREFIX, _W_QUEUE, _W_KV, _W_LOAD, _T, _MAX_BLOCKS, _PREFIX, _DRAM_WEIGHT, _W_NO_HIT, _NO_HIT_ON = SPEC.slots(
    "w_prefix", "w_queue", "w_kv", "w_load_aware", "load_threshold", "max_blocks", "prefix", "dram_weight",
    "w_no_hit_lru", "no_hit_lru_on")
_INDEX_SIZE = len(SPEC.params)  # the constant after the named parameters: the estimate index's state entries
_ESTIMATE = SPEC.code("prefix", "estimate")
_ALL = SPEC.code("no_hit_lru_on", "all")


@njit(cache=True)
def _prefix(view, req, blocks, params, state):
    """The prefix scorer of every instance (0 to 1)."""
    n = view.shape[0]
    prompt = req[R_INPUT_LEN]
    prefix = np.zeros(n)
    if params[_PREFIX] == _ESTIMATE:
        total = min(blocks.shape[0], params[_MAX_BLOCKS]) if params[_MAX_BLOCKS] > 0 else blocks.shape[0]
        if total > 0:
            prefix = index_match(state, 0, int(params[_INDEX_SIZE]), blocks, n, req[R_NOW], 0.0,
                                 params[_MAX_BLOCKS]) / total
    elif prompt > 0:
        for i in range(n):
            prefix[i] = min(1.0, (view[i, V_HIT_HBM] + params[_DRAM_WEIGHT] * view[i, V_HIT_DRAM]) / prompt)
    return prefix


@njit(cache=True)
def _is_cold(prefix, params):
    """Whether the no-hit-LRU scorer treats the request as cold (no prefix match anywhere, or every request)."""
    return params[_NO_HIT_ON] == _ALL or prefix.max() == 0.0


@njit(cache=True)
def _no_hit_lru(n, params, state):
    """The no-hit-LRU scorer of a cold request: never-used instances first, then least recently used."""
    stamps = state[int(params[_INDEX_SIZE]):int(params[_INDEX_SIZE]) + n]
    out = np.empty(n)
    if n == 1:
        out[0] = 1.0
        return out
    never = 0
    for i in range(n):
        if stamps[i] == 0.0:
            out[i] = 1.0 - never / (n - 1)
            never += 1
    for i in range(n):
        if stamps[i] > 0.0:
            older = 0
            for j in range(n):
                if stamps[j] > 0.0 and stamps[j] < stamps[i]:
                    older += 1
            out[i] = max(0.0, 1.0 - (never + older) / (n - 1))
    return out


@njit(cache=True)
def _summed(view, prefix, params, state):
    """The weighted sum of the scorers, given the prefix scorer."""
    n = view.shape[0]
    waiting = view[:, V_N_WAITING].copy()
    queue = 1.0 - minmax(waiting)
    load_aware = np.empty(n)
    kv = np.empty(n)
    for i in range(n):
        load_aware[i] = 0.5 if waiting[i] == 0 else 0.5 * (1.0 - min(waiting[i], params[_T]) / params[_T])
        kv[i] = 1.0 - view[i, V_KV_USED] / max(view[i, V_KV_CAPACITY], 1.0)
    total = params[_W_PREFIX] * prefix + params[_W_QUEUE] * queue + params[_W_KV] * kv + params[_W_LOAD] * load_aware
    if params[_W_NO_HIT] > 0.0:
        if _is_cold(prefix, params):
            total += params[_W_NO_HIT] * _no_hit_lru(n, params, state)
        else:
            total += 0.5 * params[_W_NO_HIT]
    return total


@njit(cache=True)
def scores(view, req, blocks, params, state):
    """The summed scorer value of every instance."""
    return _summed(view, _prefix(view, req, blocks, params, state), params, state)


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """argmax score (ties random); the estimate index then records the prompt under the choice, and a cold
    request makes its instance the no-hit-LRU scorer's most recent."""
    prefix = _prefix(view, req, blocks, params, state)
    chosen = argmax_random(_summed(view, prefix, params, state), rand[0])
    size = int(params[_INDEX_SIZE])
    if params[_PREFIX] == _ESTIMATE:
        index_insert(state, 0, size, blocks, chosen, req[R_NOW])
    if params[_W_NO_HIT] > 0.0 and _is_cold(prefix, params):
        state[state.shape[0] - 1] += 1.0
        state[size + chosen] = state[state.shape[0] - 1]
    return chosen


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
