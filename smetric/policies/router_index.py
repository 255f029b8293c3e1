"""The router's own prefix index: where it has *sent* each prompt block (SGLang's approximate tree,
llm-d's estimated prefix index, AIBrix's prefix indexer, vLLM production-stack's hash trie).

Real routers that do not subscribe to engine KV events remember, per instance, the chained block
hashes of the prompts they routed there. That view sees a prefix the moment it is routed (before
the engine has computed it) and never sees engine evictions; it forgets only by its own TTL or
size bound. This module keeps that view in a policy's float64 state vector:

* an open-addressing table of ``capacity`` slots ``(key, last_insert_time)``, where ``key`` is a
  52-bit hash of ``(block id, instance)``; a lookup scans ``PROBES`` slots from the hash position,
  an insert refreshes its key or overwrites the empty / least recently inserted slot among them;
* ``capacity`` is sized from the cluster (``INDEX_FACTOR`` x instances x HBM blocks per instance),
  so the index holds a few times what the engines can cache -- routers remember more than engines
  keep, which is the behaviour being modelled;
* a match of instance ``i`` is the longest run of leading prompt blocks present (and younger than
  ``ttl`` seconds, if ``ttl > 0``). Inserting a prompt refreshes all of its blocks at once and chained
  ids make presence monotone along the prompt, so the run is found by binary search.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from .base import PolicyContext
from .hashing import hash52
from .signals import local_hit

PROBES = 8
INDEX_FACTOR = 4


def index_size(ctx: PolicyContext) -> int:
    """State entries of a router index for this cluster: two per slot, a power-of-two slot count."""
    want = max(INDEX_FACTOR * ctx.n_instances * ctx.kv_capacity_blocks, 1024)
    return 2 * (1 << int(np.ceil(np.log2(want))))


@njit(cache=True)
def _find(state, offset, size, key):
    """Slot index of ``key`` among its probe slots, or -1."""
    mask = size // 2 - 1
    start = int(key) & mask
    for p in range(PROBES):
        s = offset + 2 * ((start + p) & mask)
        if state[s] == key:
            return s
    return -1


@njit(cache=True)
def _present(state, offset, size, block, instance, now, ttl):
    s = _find(state, offset, size, hash52(block, instance))
    return s >= 0 and (ttl <= 0.0 or now - state[s + 1] <= ttl)


@njit(cache=True)
def index_insert(state, offset, size, blocks, instance, now):
    """Record that the prompt ``blocks`` was sent to ``instance`` at time ``now``; returns how many of its
    blocks were new to the index for that instance (the growth of the instance's share of the index)."""
    mask = size // 2 - 1
    added = 0
    for j in range(blocks.shape[0]):
        key = hash52(blocks[j], instance)
        start = int(key) & mask
        victim = -1
        found = False
        for p in range(PROBES):
            s = offset + 2 * ((start + p) & mask)
            if state[s] == key:
                state[s + 1] = now
                found = True
                break
            if victim < 0 or (state[victim] != 0.0 and (state[s] == 0.0 or state[s + 1] < state[victim + 1])):
                victim = s
        if not found:
            state[victim] = key
            state[victim + 1] = now
            added += 1
    return added


@njit(cache=True)
def index_match(state, offset, size, blocks, n_instances, now, ttl, max_blocks):
    """Per instance, the number of leading prompt blocks (at most ``max_blocks`` if > 0) the router sent there."""
    m = blocks.shape[0]
    if max_blocks > 0:
        m = min(m, int(max_blocks))
    out = np.zeros(n_instances)
    for i in range(n_instances):
        lo, hi = 0, m  # invariant: blocks[:lo] present, blocks[hi:] absent
        while lo < hi:
            mid = (lo + hi) // 2
            if _present(state, offset, size, blocks[mid], i, now, ttl):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out


CACHE_VIEWS = ("router", "engine")


@njit(cache=True)
def prefix_hits(view, req_len, blocks, state, size, use_router, now, ttl, max_blocks, block_size):
    """Per instance, the prefix tokens the policy believes are cached: the match of the router index
    kept at the start of ``state`` (``use_router``) or the engine's local hit (HBM + host DRAM);
    at most ``req_len``."""
    n = view.shape[0]
    if use_router:
        hits = index_match(state, 0, size, blocks, n, now, ttl, max_blocks) * block_size
    else:
        hits = np.empty(n)
        for i in range(n):
            hits[i] = local_hit(view, i)
    return np.minimum(hits, req_len)


@njit(cache=True)
def remember(state, use_router, blocks, chosen, now):
    """Record the prompt under the chosen instance in the index at the start of ``state`` (if the
    policy uses its router view); returns ``chosen``."""
    if use_router:
        index_insert(state, 0, state.shape[0], blocks, chosen, now)
    return chosen


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
