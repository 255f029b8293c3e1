"""The router's view of the routable instances at an arrival: the live state, or the periodic snapshots of the
router information model, and the prefix hits as KV events report them after their delay (docs/engine.md,
"Router information").
"""

from __future__ import annotations

import sys

from numba import njit

from ...hardware.kernel import prefill_time_nb
from ...numba_cache import refresh_module
from ...policies import base as pb
from ..router_info import refresh_period
from .layout import (
    FI_QATTN,
    FI_QCOST,
    II_BUSY,
    II_CTX,
    II_NDEC,
    II_NRUN,
    II_NWAIT,
    II_PINNED,
    II_PRIV,
    II_QTOK,
    II_SEGK,
)
from .structures import _boundary, _iters_done
from .tiers import _dram_slot, _global_prefix, _hbm_slot, _hit_tokens, _reaches_tail, _token_hits


@njit(cache=True, _nrt=False)
def _refresh(d, st, t):
    """Take the router snapshots whose period boundary ``b <= t`` passed since the last event: the state
    after every event before ``b`` (called before the engine processes an event at ``t``). ``st.snap``'s
    last row holds the next boundary of each grid (inf when that refresh is off)."""
    if d.refresh_s > 0.0 and t >= st.snap[d.n_routable, 0]:
        b, st.snap[d.n_routable, 0] = refresh_period(t, d.refresh_s)
        for i in range(d.n_routable):
            ctx = st.ii[i, II_CTX]
            if st.ii[i, II_BUSY] == 1 and st.ii[i, II_SEGK] > 1:
                m = _iters_done(st, i, b, st.ii[i, II_SEGK])
                if m >= 1 and _boundary(st, i, m) == b:
                    m -= 1
                ctx += st.ii[i, II_NDEC] * m
            st.snap[i, pb.V_QUEUED_TOKENS] = st.ii[i, II_QTOK]
            st.snap[i, pb.V_QUEUED_COST] = st.fi[i, FI_QCOST]
            st.snap[i, pb.V_N_RUNNING] = st.ii[i, II_NRUN]
            st.snap[i, pb.V_N_WAITING] = st.ii[i, II_NWAIT]
            st.snap[i, pb.V_CONTEXT_TOKENS] = ctx
            st.snap[i, pb.V_QUEUED_ATTN] = st.fi[i, FI_QATTN]
        st.sp_meta[1] = 1  # the routing index reads the snapshot: rebuild its load tree
    if d.kv_refresh_s > 0.0 and t >= st.snap[d.n_routable, 1]:
        _, st.snap[d.n_routable, 1] = refresh_period(t, d.kv_refresh_s)
        for i in range(d.n_routable):
            st.snap[i, pb.V_KV_USED] = st.ii[i, II_PINNED] + st.ii[i, II_PRIV]


@njit(cache=True, _nrt=False)
def _seen(d, st, i, b, cut):
    """Tier in which the router sees block ``b`` on instance ``i`` (0 HBM, 1 DRAM, 2 store, 3 none):
    present now and entered it at or before ``cut``."""
    s = _hbm_slot(d, st, i, b)
    if s >= 0 and st.seen[i * d.hbm_blocks + s] <= cut:
        return 0
    s = _dram_slot(d, st, i, b)
    if s >= 0 and st.seen[d.seen_dram + i * d.dram_slots + s] <= cut:
        return 1
    if d.global_slots > 0 and st.g_in[b] != 0 and st.seen[d.seen_glob + b] <= cut:
        return 2
    return 3


@njit(cache=True, _nrt=False)
def _seen_hit_tokens(d, st, i, r, blocks, cut):
    """(h1, h2, h3) as the router sees them through KV events: :func:`_hit_tokens` over the blocks seen."""
    nb = blocks.shape[0]
    k1 = 0
    while k1 < nb and _seen(d, st, i, blocks[k1], cut) <= 0:
        k1 += 1
    k2 = k1
    while k2 < nb and _seen(d, st, i, blocks[k2], cut) <= 1:
        k2 += 1
    k3 = k2
    while k3 < nb and _seen(d, st, i, blocks[k3], cut) <= 2:
        k3 += 1
    tier = _seen(d, st, i, d.tail_id[r], cut) if _reaches_tail(d, r, k1, k2, k3) else 3
    return _token_hits(d, r, k1, k2, k3, tier)


@njit(cache=True, _nrt=False)
def _build_view(d, st, r, t):
    """Fill ``st.vbuf`` (one row per routable instance) for request ``r`` at time ``t``."""
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    L = d.input_len[r]
    kg = _global_prefix(d, st, blocks)
    v = st.vbuf
    cost_hit = -1  # instances mostly share one hit length: reuse the request's cost estimate
    cost = 0.0
    k = d.replica[r]
    for i in range(d.n_routable):
        if d.kv_delay > 0.0:
            h1, h2, h3 = _seen_hit_tokens(d, st, i, r, blocks, t - d.kv_delay)
        else:
            _, _, _, h1, h2, h3 = _hit_tokens(d, st, i, r, blocks, kg)
        ctx = st.ii[i, II_CTX]
        if st.ii[i, II_BUSY] == 1 and st.ii[i, II_SEGK] > 1:
            ctx += st.ii[i, II_NDEC] * _iters_done(st, i, t, st.ii[i, II_SEGK])
        v[i, pb.V_HIT_HBM] = h1
        v[i, pb.V_HIT_DRAM] = h2 - h1
        v[i, pb.V_HIT_GLOBAL] = h3 - h2
        v[i, pb.V_QUEUED_TOKENS] = st.ii[i, II_QTOK]
        v[i, pb.V_QUEUED_COST] = st.fi[i, FI_QCOST]
        v[i, pb.V_N_RUNNING] = st.ii[i, II_NRUN]
        v[i, pb.V_N_WAITING] = st.ii[i, II_NWAIT]
        v[i, pb.V_IN_FLIGHT] = st.rinf[k, i]
        v[i, pb.V_KV_USED] = st.ii[i, II_PINNED] + st.ii[i, II_PRIV]
        v[i, pb.V_KV_CAPACITY] = d.hbm_blocks
        v[i, pb.V_CONTEXT_TOKENS] = ctx
        if h3 != cost_hit:
            cost_hit = h3
            cost = prefill_time_nb(d.coef, float(L - h3), float(h3))
        v[i, pb.V_REQ_COST] = cost
        v[i, pb.V_QUEUED_ATTN] = st.fi[i, FI_QATTN]
        if d.refresh_s > 0.0:
            v[i, pb.V_QUEUED_TOKENS] = st.snap[i, pb.V_QUEUED_TOKENS]
            v[i, pb.V_QUEUED_COST] = st.snap[i, pb.V_QUEUED_COST]
            v[i, pb.V_N_RUNNING] = st.snap[i, pb.V_N_RUNNING]
            v[i, pb.V_N_WAITING] = st.snap[i, pb.V_N_WAITING]
            v[i, pb.V_CONTEXT_TOKENS] = st.snap[i, pb.V_CONTEXT_TOKENS]
            v[i, pb.V_QUEUED_ATTN] = st.snap[i, pb.V_QUEUED_ATTN]
        if d.kv_refresh_s > 0.0:
            v[i, pb.V_KV_USED] = st.snap[i, pb.V_KV_USED]



refresh_module(sys.modules[__name__])
