"""Admission and KV allocation: reserving a waiting request's KV and starting its loads, the queue discipline's next
candidate, and incremental allocation (a decode's next block, a chunk's blocks) with recompute preemption of the
most recently admitted request.
"""

from __future__ import annotations

import sys

from numba import njit

from ...numba_cache import refresh_module
from ..queueing import FCFS, Q_KIND, rank_nb
from .layout import (
    DECODE,
    DECODE_ROLE,
    FI_DRAMR,
    FI_GLOBR,
    FI_LDRAM,
    FI_LNET,
    FI_LPD,
    FI_MINREADY,
    FI_PDR,
    GF_QUEUE,
    HS_REF,
    II_BLOCKED_AT,
    II_BLOCKED_BY,
    II_CACHED,
    II_HEAPN,
    II_ITER,
    II_KV_VERSION,
    II_KVPEAK,
    II_NDEC,
    II_NLOAD,
    II_NPEND,
    II_NQUEUED,
    II_NRUN,
    II_NWAIT,
    II_PHEAD,
    II_PINNED,
    II_PRIV,
    II_PTAIL,
    II_ROLE,
    II_SDEC,
    II_WHEAD,
    II_WTAIL,
    INF,
    IP_AHEAPN,
    IP_BBUDGET,
    IP_PREEMPT,
    IP_SEQ,
    LOADING,
    P_COUNT,
    P_KEPT,
    P_SEQ,
    PREFILL,
    PREFILL_ROLE,
    QM_FAILED,
    QM_TRIED,
    RF_ADMIT,
    RF_ARR,
    RF_CCOST,
    RF_DECODE_EST,
    RF_READY,
    RI_CTOK,
    RI_HDRAM,
    RI_HGLOB,
    RI_HHBM,
    RI_INKV,
    RI_JOIN,
    RI_K1,
    RI_NXT,
    RI_PRIV,
    RI_REM,
    RI_STATE,
    WAITING,
)
from .requests import _next_alloc, _push_alloc, _set_queued
from .structures import _heap_remove, _heap_sift_down, _list_prepend, _list_remove, _n_blocks
from .tiers import (
    _dram_touch,
    _global_prefix,
    _hbm_evict_lru,
    _hbm_keep,
    _hbm_pin,
    _hbm_slot,
    _hbm_unpin,
    _hit_tokens,
)
from .transfers import _pool_start


@njit(cache=True, _nrt=False)
def _admit(d, st, i, r, t, budget):
    """Reserve KV for ``r`` on ``i`` and start its loads: (fits, time its KV is ready); (False, -1) when
    prompts run whole (``d.whole_prompts``) and this one's uncached part exceeds ``budget``."""
    L = d.input_len[r]
    if st.ii[i, II_ROLE] == DECODE_ROLE:
        total = _n_blocks(L + d.n_out[r], d.block_size)
        if st.ii[i, II_PRIV] + total > d.hbm_blocks:
            return False, t
        st.ii[i, II_PRIV] += total
        st.ri[r, RI_PRIV] = total
        st.ii[i, II_KV_VERSION] += 1
        start = max(t, st.fi[i, FI_LPD])
        st.fi[i, FI_LPD] = start + L * d.kv_bytes_per_token / d.pd_bw
        st.fi[i, FI_PDR] += L * d.kv_bytes_per_token
        st.ii[i, II_KVPEAK] = max(st.ii[i, II_KVPEAK], st.ii[i, II_CACHED] + st.ii[i, II_PRIV])
        return True, st.fi[i, FI_LPD]
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    nb = blocks.shape[0]
    total = nb if st.ii[i, II_ROLE] == PREFILL_ROLE else _n_blocks(L + d.n_out[r], d.block_size)
    k1, k2, _, h1, h2, h3 = _hit_tokens(d, st, i, r, blocks, _global_prefix(d, st, blocks))
    hs = st.hslot[i]
    newly = 0
    for j in range(k1):
        slot = _hbm_slot(d, st, i, blocks[j])
        if slot < 0:
            raise RuntimeError("HBM cache is not prefix-closed (engine invariant broken)")
        if hs[HS_REF, slot] == 0:
            newly += 1
    need = total - k1
    kept = st.pre[r, P_KEPT]
    if d.whole_prompts and L + kept - h3 > budget and budget < d.max_batched_tokens:
        return False, -1.0  # prompts run whole: this one waits for an iteration with the budget (not a KV miss)
    if d.incremental:  # the blocks of what is in KV once it loads, plus the chunk it takes now
        loading = d.overlap and not d.conn and h3 > h1
        chunk = 0 if loading else min(L + kept - h3, budget)
        need = _n_blocks(h3 + chunk, d.block_size) - k1
    if st.ii[i, II_PINNED] + newly + st.ii[i, II_PRIV] + need > d.hbm_blocks:
        return False, t
    for j in range(k1):
        _hbm_pin(d, st, i, _hbm_slot(d, st, i, blocks[j]))
    for j in range(k2 - 1, (0 if d.dram_write else k1) - 1, -1):
        _dram_touch(d, st, i, blocks[j])
    while st.ii[i, II_CACHED] + st.ii[i, II_PRIV] + need > d.hbm_blocks:
        _hbm_evict_lru(d, st, i)
    st.ii[i, II_PRIV] += need
    st.ri[r, RI_PRIV] = need
    st.ri[r, RI_K1] = k1
    st.ii[i, II_KV_VERSION] += 1
    st.ii[i, II_KVPEAK] = max(st.ii[i, II_KVPEAK], st.ii[i, II_CACHED] + st.ii[i, II_PRIV])
    if st.pre[r, P_COUNT] == 0:  # hits and admission time are those of the first admission
        st.ri[r, RI_HHBM] = h1
        st.ri[r, RI_HDRAM] = h2 - h1
        st.ri[r, RI_HGLOB] = h3 - h2
        st.rf[r, RF_ADMIT] = t
    st.ri[r, RI_REM] = L + kept - h3
    st.ri[r, RI_INKV] = h3
    st.pre[r, P_SEQ] = st.ipre[i, IP_SEQ]
    st.ipre[i, IP_SEQ] += 1
    _set_queued(d, st, i, r, L + kept - h3)
    ready = t
    if h2 - h1 > 0:
        start = max(t, st.fi[i, FI_LDRAM])
        st.fi[i, FI_LDRAM] = start + (h2 - h1) * d.kv_bytes_per_token / d.dram_bw
        ready = max(ready, st.fi[i, FI_LDRAM])
        st.fi[i, FI_DRAMR] += (h2 - h1) * d.kv_bytes_per_token
    if h3 - h2 > 0:
        if d.conn:  # a transfer in the node's pool; the batch waits for it (st.ii[i, II_NPEND])
            st.tr_bytes[r] = (h3 - h2) * d.kv_bytes_per_token
            _pool_start(d, st, t, r, d.node_of[i], st.tr_bytes[r])
            st.ii[i, II_NPEND] += 1
        else:
            start = max(t, st.fi[i, FI_LNET])
            st.fi[i, FI_LNET] = start + (h3 - h2) * d.kv_bytes_per_token / d.global_bw
            ready = max(ready, st.fi[i, FI_LNET] + d.global_latency)
        st.fi[i, FI_GLOBR] += (h3 - h2) * d.kv_bytes_per_token
    return True, ready


@njit(cache=True, _nrt=False)
def _next_candidate(d, st, i, t, free, step, budget, lag):
    """The queue discipline's next waiting request to try in admission step ``step`` (-1: none).

    FCFS: the oldest routed, unless it did not fit and the KV state has not changed since, or (``lag``) it is
    not yet visible to the scheduler. Ranked disciplines: the best-ranked visible request not yet tried in this
    step and not known not to fit.
    """
    version = st.ii[i, II_KV_VERSION]
    if st.gf[GF_QUEUE + Q_KIND] == FCFS:
        r = st.ii[i, II_WHEAD]
        if lag and st.vis[r] >= t:
            return -1
        if st.ii[i, II_BLOCKED_BY] == r and st.ii[i, II_BLOCKED_AT] == version and (
                not d.incremental or budget >= st.ipre[i, IP_BBUDGET]):  # incremental: a smaller chunk may fit
            return -1
        return r
    best = -1
    best_level = -1
    best_key = 0.0
    r = st.ii[i, II_WHEAD]
    while r >= 0:
        if st.qmark[r, QM_TRIED] != step and st.qmark[r, QM_FAILED] != version and not (lag and st.vis[r] >= t):
            need = float(_n_blocks(st.ri[r, RI_CTOK] + d.n_out[r], d.block_size))
            level, key = rank_nb(st.gf[GF_QUEUE:], st.rf[r, RF_CCOST] + st.rf[r, RF_DECODE_EST], d.priority[r],
                                 d.turn[r], st.rf[r, RF_ARR], t, need, free)
            if level > best_level or (level == best_level and key > best_key):
                best, best_level, best_key = r, level, key
        r = st.ri[r, RI_NXT]
    return best


@njit(cache=True, _nrt=False)
def _last_admitted(d, st, i):
    """The running request of ``i`` admitted most recently (the tail of the prefill list or a decode)."""
    best = st.ii[i, II_PTAIL]
    for k in range(st.ii[i, II_HEAPN]):
        r = st.dheap[i, k] % d.n
        if best < 0 or st.pre[r, P_SEQ] > st.pre[best, P_SEQ]:
            best = r
    return best


@njit(cache=True, _nrt=False)
def _preempt(d, st, i, v):
    """Recompute preemption of ``v`` (docs/engine.md, "Incremental KV allocation"); 1 if it was decoding, else 0."""
    blocks = d.block_ids[d.block_offsets[v]:d.block_offsets[v + 1]]
    nb = blocks.shape[0]
    L = d.input_len[v]
    state = st.ri[v, RI_STATE]
    was_decoding = 0
    kept_blocks = st.ri[v, RI_K1]
    if state == DECODE:
        g0 = st.pre[v, P_KEPT] + 1
        g = g0 + st.ii[i, II_ITER] - st.ri[v, RI_JOIN]
        st.ii[i, II_NDEC] -= 1
        st.ii[i, II_SDEC] -= L + g
        st.ii[i, II_HEAPN] = _heap_remove(st.dheap[i], st.ii[i, II_HEAPN],
                                          (st.ri[v, RI_JOIN] + d.n_out[v] - g0) * d.n + v)
        st.ipre[i, IP_AHEAPN] = _heap_remove(st.aheap[i], st.ipre[i, IP_AHEAPN], _next_alloc(d, st, v) * d.n + v)
        st.pre[v, P_KEPT] = g
        kept_blocks = nb
        was_decoding = 1
    else:
        _list_remove(st, i, II_PHEAD, II_PTAIL, v)
        if state == PREFILL:  # the prompt's blocks wholly in KV join the cache
            while kept_blocks < nb and min((kept_blocks + 1) * d.block_size, L) <= st.ri[v, RI_INKV]:
                _hbm_keep(d, st, i, v, blocks[kept_blocks])
                kept_blocks += 1
        else:  # LOADING: its loads are abandoned
            st.ii[i, II_NLOAD] -= 1
            min_ready = INF
            r = st.ii[i, II_PHEAD]
            while r >= 0:
                if st.ri[r, RI_STATE] == LOADING:
                    min_ready = min(min_ready, st.rf[r, RF_READY])
                r = st.ri[r, RI_NXT]
            st.fi[i, FI_MINREADY] = min_ready
    for j in range(kept_blocks - 1, -1, -1):
        _hbm_unpin(d, st, i, blocks[j])
    st.ii[i, II_PRIV] -= st.ri[v, RI_PRIV]
    st.ri[v, RI_PRIV] = 0
    st.ii[i, II_KV_VERSION] += 1
    st.ii[i, II_NRUN] -= 1
    st.ii[i, II_NWAIT] += 1
    _list_prepend(st, i, II_WHEAD, II_WTAIL, v)
    st.ri[v, RI_STATE] = WAITING
    st.pre[v, P_COUNT] += 1
    st.ipre[i, IP_PREEMPT] += 1
    if st.ri[v, RI_CTOK] == 0:
        st.ii[i, II_NQUEUED] += 1
    _set_queued(d, st, i, v, L + st.pre[v, P_KEPT])
    return was_decoding


@njit(cache=True, _nrt=False)
def _allocate(d, st, i, r, m):
    """Give ``r`` ``m`` more blocks (evicting LRU cached ones), preempting the most recently admitted running
    request while they cannot be had: (False if ``r`` itself was preempted, decodes preempted)."""
    refund = 0
    while st.ii[i, II_PINNED] + st.ii[i, II_PRIV] + m > d.hbm_blocks:
        v = _last_admitted(d, st, i)
        refund += _preempt(d, st, i, v)
        if v == r:
            return False, refund
    while st.ii[i, II_CACHED] + st.ii[i, II_PRIV] + m > d.hbm_blocks:
        _hbm_evict_lru(d, st, i)
    st.ii[i, II_PRIV] += m
    st.ri[r, RI_PRIV] += m
    st.ii[i, II_KV_VERSION] += 1
    st.ii[i, II_KVPEAK] = max(st.ii[i, II_KVPEAK], st.ii[i, II_CACHED] + st.ii[i, II_PRIV])
    return True, refund


@njit(cache=True, _nrt=False)
def _grow_decodes(d, st, i):
    """Incremental allocation: decodes whose next token starts a new block take one, in row order."""
    it = st.ii[i, II_ITER]
    while st.ipre[i, IP_AHEAPN] > 0 and st.aheap[i, 0] // d.n == it:
        r = st.aheap[i, 0] % d.n
        n = st.ipre[i, IP_AHEAPN] - 1
        st.aheap[i, 0] = st.aheap[i, n]
        st.ipre[i, IP_AHEAPN] = n
        _heap_sift_down(st.aheap[i], n, 0)
        ok, _ = _allocate(d, st, i, r, 1)
        if ok:
            _push_alloc(d, st, i, r)



refresh_module(sys.modules[__name__])
