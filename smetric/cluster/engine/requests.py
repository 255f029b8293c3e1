"""Request bookkeeping: the queued-prefill aggregates, the time series samples, releasing closed-replay waiters,
joining the decode set, caching a finished prefill's prompt and a finished request's reply, releasing a request's
KV, and abandonment of waiting requests past their patience.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ...hardware.kernel import prefill_time_nb
from ...numba_cache import refresh_module
from ..result_raw import REASON_ABANDONED, TS_KV_USED, TS_RUNNING, TS_WAITING
from ..sampling import halve_samples
from .layout import (
    DECODE,
    DECODE_ROLE,
    FI_QATTN,
    FI_QCOST,
    GF_SAMPLE_DT,
    II_CACHED,
    II_CTX,
    II_INFLIGHT,
    II_ITER,
    II_KV_VERSION,
    II_NDEC,
    II_NQUEUED,
    II_NRUN,
    II_NWAIT,
    II_PINNED,
    II_PRIV,
    II_QTOK,
    II_ROLE,
    II_SAMPLED,
    II_SDEC,
    II_WHEAD,
    II_WTAIL,
    INF,
    IP_AHEAPN,
    LEFT,
    P_KEPT,
    RF_ADMIT,
    RF_ARR,
    RF_CATTN,
    RF_CCOST,
    RI_CTOK,
    RI_JOIN,
    RI_K1,
    RI_NXT,
    RI_PRIV,
    RI_REASON,
    RI_STATE,
)
from .routing_index import _sp_touch
from .structures import _ah_push, _dh_push, _heap_push, _list_remove
from .tiers import (
    _dram_spill,
    _global_write_through,
    _hbm_evict_lru,
    _hbm_insert_pinned,
    _hbm_keep,
    _hbm_pin,
    _hbm_slot,
    _hbm_unpin,
)


@njit(cache=True, _nrt=False)
def _set_queued(d, st, i, r, tok):
    """Set request ``r``'s share of instance ``i``'s queued-prefill aggregates to ``tok`` tokens."""
    cost = 0.0
    attn = 0.0
    if tok > 0:
        L = float(d.input_len[r] + st.pre[r, P_KEPT])  # a preempted request recomputes its generated tokens
        n = float(tok)
        cost = prefill_time_nb(d.coef, n, L - n)
        attn = n + n * (L - 0.5 * n) / d.l_eq
    st.ii[i, II_QTOK] += tok - st.ri[r, RI_CTOK]
    st.fi[i, FI_QCOST] = (st.fi[i, FI_QCOST] - st.rf[r, RF_CCOST]) + cost
    st.fi[i, FI_QATTN] = (st.fi[i, FI_QATTN] - st.rf[r, RF_CATTN]) + attn
    st.ri[r, RI_CTOK] = tok
    st.rf[r, RF_CCOST] = cost
    st.rf[r, RF_CATTN] = attn
    _sp_touch(d, st, i)
    if tok == 0:
        st.ii[i, II_NQUEUED] -= 1
        if st.ii[i, II_NQUEUED] == 0:
            st.fi[i, FI_QCOST] = 0.0
            st.fi[i, FI_QATTN] = 0.0


@njit(cache=True, _nrt=False)
def _sample_until(d, st, i, t):
    """Record instance ``i``'s (unchanged) state at every sample time before ``t`` (:mod:`.sampling`)."""
    k = st.ii[i, II_SAMPLED]
    while d.sample_t0 + k * st.gf[GF_SAMPLE_DT] < t:
        if k == d.n_samples:  # out of slots: every instance keeps its even samples, the spacing doubles
            st.ii[i, II_SAMPLED] = k
            halve_samples(st.ts, st.ii[:, II_SAMPLED])
            st.gf[GF_SAMPLE_DT] *= 2.0
            k = st.ii[i, II_SAMPLED]
            continue
        st.ts[i, k, TS_WAITING] = st.ii[i, II_NWAIT]
        st.ts[i, k, TS_RUNNING] = st.ii[i, II_NRUN]
        st.ts[i, k, TS_KV_USED] = st.ii[i, II_PINNED] + st.ii[i, II_PRIV]
        k += 1
    st.ii[i, II_SAMPLED] = k


@njit(cache=True, _nrt=False)
def _release_children(d, st, r, t):
    """``r`` ended at ``t`` (closed replay): each row waiting on it counts the end; the last releases it."""
    if not d.closed:
        return
    for k in range(d.waiter_offsets[r], d.waiter_offsets[r + 1]):
        c = d.waiters[k]
        st.deps_t[c] = max(st.deps_t[c], t + d.release_delay[r])
        st.deps_left[c] -= 1
        if st.deps_left[c] == 0:
            _ah_push(st, max(d.arrival[c], st.deps_t[c] + d.gap[c]), c)


@njit(cache=True, _nrt=False)
def _join_decode(d, st, i, r):
    """``r`` (one token generated) joins instance ``i``'s decode set before the next iteration."""
    g0 = st.pre[r, P_KEPT] + 1
    st.ri[r, RI_STATE] = DECODE
    st.ri[r, RI_JOIN] = st.ii[i, II_ITER]
    st.ii[i, II_NDEC] += 1
    st.ii[i, II_SDEC] += d.input_len[r] + g0
    _dh_push(st, i, (st.ii[i, II_ITER] + d.n_out[r] - g0) * d.n + r)
    if d.incremental:
        _push_alloc(d, st, i, r)


@njit(cache=True, _nrt=False)
def _next_alloc(d, st, r):
    """Iteration in which decoding ``r`` needs its next block (its KV then exceeds the blocks it holds)."""
    held = d.block_offsets[r + 1] - d.block_offsets[r] + st.ri[r, RI_PRIV]
    return st.ri[r, RI_JOIN] + held * d.block_size - d.input_len[r] - st.pre[r, P_KEPT]


@njit(cache=True, _nrt=False)
def _push_alloc(d, st, i, r):
    """Schedule decoding ``r``'s next block allocation, if it comes before its last iteration."""
    x = _next_alloc(d, st, r)
    if x < st.ri[r, RI_JOIN] + d.n_out[r] - st.pre[r, P_KEPT] - 1:
        st.ipre[i, IP_AHEAPN] = _heap_push(st.aheap[i], st.ipre[i, IP_AHEAPN], x * d.n + r)


@njit(cache=True, _nrt=False)
def _cache_reply(d, st, i, r):
    """Pin ``r``'s reply chain into ``i``'s HBM cache head first (its reserved blocks first, then free or
    evicted ones); stop where nothing can be freed. Returns the entries pinned."""
    m = 0
    for k in range(d.reply_offsets[r], d.reply_offsets[r + 1]):
        b = d.reply_ids[k]
        slot = _hbm_slot(d, st, i, b)
        if slot >= 0:
            _hbm_pin(d, st, i, slot)
        else:
            if st.ri[r, RI_PRIV] > 0:
                st.ri[r, RI_PRIV] -= 1
                st.ii[i, II_PRIV] -= 1
            elif st.ii[i, II_CACHED] + st.ii[i, II_PRIV] >= d.hbm_blocks:
                if st.hends[i, 0] < 0:
                    break
                _hbm_evict_lru(d, st, i)
            _hbm_insert_pinned(d, st, i, b)
        m += 1
    return m


@njit(cache=True, _nrt=False)
def _release(d, st, i, r, generated, t):
    """``r`` leaves instance ``i``: a finished request caches (and stores) its reply; unpin the reply and
    the prompt blocks tail first, free its reserved blocks."""
    finished = generated == d.n_out[r]
    if finished and d.store_replies:
        _global_write_through(d, st, i, r, t, True)
    if st.ii[i, II_ROLE] != DECODE_ROLE:
        if finished and d.cache_replies:
            m = _cache_reply(d, st, i, r)
            for k in range(d.reply_offsets[r] + m - 1, d.reply_offsets[r] - 1, -1):
                _hbm_unpin(d, st, i, d.reply_ids[k])
        blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
        for j in range(blocks.shape[0] - 1, -1, -1):
            _hbm_unpin(d, st, i, blocks[j])
    st.ii[i, II_PRIV] -= st.ri[r, RI_PRIV]
    st.ri[r, RI_PRIV] = 0
    st.ii[i, II_KV_VERSION] += 1
    st.ii[i, II_NRUN] -= 1
    st.ii[i, II_INFLIGHT] -= 1
    if st.ii[i, II_ROLE] != DECODE_ROLE:
        st.rinf[d.replica[r], i] -= 1
        _sp_touch(d, st, i)
    st.ii[i, II_CTX] -= d.input_len[r] + generated
    st.ri[r, RI_STATE] = LEFT


@njit(cache=True, _nrt=False)
def _cache_prompt(d, st, i, r, t):
    """Prefill done: blocks from k1 on join the HBM cache (pinned); with ``write-through`` the whole prompt
    enters DRAM (tail first); write-through to the store."""
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    for j in range(st.ri[r, RI_K1], blocks.shape[0]):
        _hbm_keep(d, st, i, r, blocks[j])
    st.ii[i, II_KV_VERSION] += 1
    if d.dram_write:
        for j in range(blocks.shape[0] - 1, -1, -1):
            _dram_spill(d, st, i, blocks[j])
    _global_write_through(d, st, i, r, t, False)


@njit(cache=True, _nrt=False)
def _abandon_expired(d, st, i, t):
    """Waiting, never-admitted requests of ``i`` whose ``arrival + patience < t`` leave unserved; their
    sessions release no further turn (docs/engine.md, "Abandonment")."""
    r = st.ii[i, II_WHEAD]
    while r >= 0:
        nxt = st.ri[r, RI_NXT]
        if np.isnan(st.rf[r, RF_ADMIT]) and st.rf[r, RF_ARR] + d.patience[d.session[r]] < t:
            _list_remove(st, i, II_WHEAD, II_WTAIL, r)
            st.ii[i, II_NWAIT] -= 1
            st.ii[i, II_INFLIGHT] -= 1
            st.rinf[d.replica[r], i] -= 1
            st.ii[i, II_CTX] -= d.input_len[r]
            _set_queued(d, st, i, r, 0)
            st.ri[r, RI_STATE] = LEFT
            st.ri[r, RI_REASON] = REASON_ABANDONED
            st.gone[d.session[r]] = 1
        r = nxt


@njit(cache=True, _nrt=False)
def _next_deadline(d, st, i):
    """The earliest ``arrival + patience`` of ``i``'s waiting, never-admitted requests (inf: none)."""
    due = INF
    r = st.ii[i, II_WHEAD]
    while r >= 0:
        if np.isnan(st.rf[r, RF_ADMIT]):
            due = min(due, st.rf[r, RF_ARR] + d.patience[d.session[r]])
        r = st.ri[r, RI_NXT]
    return due



refresh_module(sys.modules[__name__])
