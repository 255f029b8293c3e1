"""llm-d inference scheduler (EPP): weighted scorers summed, max-score picker (ties uniformly random).

``S_i = w_prefix * prefix_i + w_queue * queue_i + w_kv * kv_i + w_load_aware * load_aware_i`` with

* ``prefix``: ``estimate`` (default profile) -- the router's own LRU index of the prompts it routed,
  matched over at most ``max_blocks`` (256; 0 = no cap) leading blocks: ``matched / total`` (total also capped);
  ``precise`` -- engine KV events: ``min(1, (HBM blocks + 0.8 * DRAM blocks) / total)``;
* ``queue`` = ``(q_max - q_i) / (q_max - q_min)`` over waiting-queue lengths (1 for all if equal);
* ``kv`` = ``1 - used / capacity`` of HBM KV blocks;
* ``load_aware`` = ``0.5`` if nothing waits, else ``0.5 * (1 - min(q, T) / T)`` (``T = load_threshold``).

Defaults are the built-in profile (prefix 3, queue 2, kv-utilisation 2); the load-aware sample
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
from ..ranges import AT_LEAST_0, POSITIVE, integer
from .base import R_INPUT_LEN, R_NOW, V_HIT_DRAM, V_HIT_HBM, V_KV_CAPACITY, V_KV_USED, V_N_WAITING
from .router_index import index_match, index_size, remember
from .selection import argmax_random, minmax
from .spec import PolicySpec

PID = 8

SPEC = PolicySpec(
    "llm-d", PID, "argmax of weighted scorers: prefix (estimate|precise) 3, queue 2, kv-utilisation 2, load-aware 0",
    "llm-d/llm-d-inference-scheduler pkg/epp (config/loader/defaults.go, scorer/*, approximateprefix, "
    "llm-d-kv-cache kvblock_scorer.go for precise)",
    "waiting-queue length and KV utilisation (Prometheus scrapes; exact here); prefix: router's LRU index of "
    "routed prompts (estimate, no eviction feedback) or engine KV events (precise, HBM 1.0 / DRAM 0.8)",
    params={"w_prefix": 3.0, "w_queue": 2.0, "w_kv": 2.0, "w_load_aware": 0.0, "load_threshold": 128.0,
            "max_blocks": 256.0, "prefix": "estimate"},
    choices={"prefix": ("estimate", "precise")},
    ranges={"w_prefix": AT_LEAST_0, "w_queue": AT_LEAST_0, "w_kv": AT_LEAST_0, "w_load_aware": AT_LEAST_0,
            "load_threshold": POSITIVE, "max_blocks": integer(0)},
    state_size=index_size)

_W_PREFIX, _W_QUEUE, _W_KV, _W_LOAD, _T, _MAX_BLOCKS, _PREFIX = (
    SPEC.slots("w_prefix", "w_queue", "w_kv", "w_load_aware", "load_threshold", "max_blocks", "prefix"))
_ESTIMATE = SPEC.code("prefix", "estimate")
_CPU_WEIGHT = 0.8


@njit(cache=True)
def scores(view, req, blocks, params, state):
    """The summed scorer value of every instance."""
    n = view.shape[0]
    prompt = req[R_INPUT_LEN]
    prefix = np.zeros(n)
    if params[_PREFIX] == _ESTIMATE:
        total = min(blocks.shape[0], params[_MAX_BLOCKS]) if params[_MAX_BLOCKS] > 0 else blocks.shape[0]
        if total > 0:
            prefix = index_match(state, 0, state.shape[0], blocks, n, req[R_NOW], 0.0, params[_MAX_BLOCKS]) / total
    elif prompt > 0:
        for i in range(n):
            prefix[i] = min(1.0, (view[i, V_HIT_HBM] + _CPU_WEIGHT * view[i, V_HIT_DRAM]) / prompt)
    waiting = view[:, V_N_WAITING].copy()
    queue = 1.0 - minmax(waiting)
    load_aware = np.empty(n)
    kv = np.empty(n)
    for i in range(n):
        load_aware[i] = 0.5 if waiting[i] == 0 else 0.5 * (1.0 - min(waiting[i], params[_T]) / params[_T])
        kv[i] = 1.0 - view[i, V_KV_USED] / max(view[i, V_KV_CAPACITY], 1.0)
    return (params[_W_PREFIX] * prefix + params[_W_QUEUE] * queue + params[_W_KV] * kv
            + params[_W_LOAD] * load_aware)


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """argmax score (ties random); the estimate index then records the prompt under the choice."""
    chosen = argmax_random(scores(view, req, blocks, params, state), rand[0])
    return remember(state, params[_PREFIX] == _ESTIMATE, blocks, chosen, req[R_NOW])


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
