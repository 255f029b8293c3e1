"""The event loop: arrivals (the too-large check, the decode estimate, routing by the index or the policy on the full
view, the API server's delay) and the main loop that processes instance events, connector transfers and arrivals in
time order.

``_run`` and ``_arrive`` are compiled with numba's runtime (every other kernel has ``_nrt=False``): numba compiles
the policies' ``route``, which may allocate, with their caller's flags.
"""

from __future__ import annotations

import sys

from numba import njit

from ...numba_cache import refresh_module
from ...policies import base as pb
from ...policies.dispatch import route
from ..estimators import ORACLE, estimate_nb
from ..queueing import Q_EST, Q_PRIOR
from ..result_raw import REASON_ABANDONED
from .batch import _form_batch
from .iteration import _end_run
from .layout import (
    FI_END,
    G_AHN,
    G_ARRIVED,
    G_CLOCK_BACK,
    G_FULL_VIEWS,
    GF_NOW,
    GF_QUEUE,
    II_BUSY,
    II_CTX,
    II_INFLIGHT,
    II_NQUEUED,
    II_NWAIT,
    II_ROUTED,
    II_WHEAD,
    II_WTAIL,
    INF,
    RF_ARR,
    RF_DECODE_EST,
    RI_DINST,
    RI_INST,
    RI_REASON,
    RI_STATE,
    ROUTED,
    SP_OFF,
    WAITING,
)
from .requests import _release_children, _sample_until, _set_queued
from .router_view import _build_view, _refresh
from .routing_index import _sp_route, _sp_touch
from .structures import _ah_pop, _ah_push, _cut, _list_append, _n_blocks
from .tiers import _global_prefix, _hit_tokens
from .transfers import _pool_event


@njit(cache=True)  # with the runtime: numba compiles route (which allocates) with this function's flags
def _arrive(d, st, r, t):
    st.rf[r, RF_ARR] = t
    if d.abandon and st.gone[d.session[r]] == 1:  # its session abandoned: the turn is never served
        st.ri[r, RI_REASON] = REASON_ABANDONED
        return
    L = d.input_len[r]
    nb = d.block_offsets[r + 1] - d.block_offsets[r]
    if _n_blocks(L + d.n_out[r], d.block_size) > d.hbm_blocks or nb > d.hbm_blocks:
        st.ri[r, RI_REASON] = 1
        _release_children(d, st, r, t)
        return
    kind = int(st.gf[GF_QUEUE + Q_EST])
    if kind != ORACLE:
        st.rf[r, RF_DECODE_EST] = estimate_nb(kind, st.gf[GF_QUEUE + Q_PRIOR], d.coef, st.est_sess, st.est_g,
                                              d.session[r], L)
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    k = d.replica[r]
    i = _sp_route(d, st, r) if d.sparse != SP_OFF else -1
    indexed = i >= 0
    if not indexed:
        if not d.view_free:  # a policy that reads no view column is given the (stale) buffer unfilled
            st.gi[G_FULL_VIEWS] += 1
            _build_view(d, st, r, t)
        q = st.reqv
        q[pb.R_INPUT_LEN] = L
        q[pb.R_TURN] = d.turn[r]
        q[pb.R_SESSION] = d.session[r]
        q[pb.R_HISTORY] = d.history[r]
        q[pb.R_NOW] = t
        q[pb.R_PRIORITY] = d.priority[r]
        q[pb.R_INDEX] = r
        i = route(d.pid, st.vbuf, q, blocks, d.params, st.pstate[k], d.rand[r])
    if i < 0 or i >= d.n_routable:
        raise ValueError("the routing policy returned an instance index out of range")
    st.ri[r, RI_INST] = i
    if not d.disaggregated:
        st.ri[r, RI_DINST] = i
    st.ii[i, II_INFLIGHT] += 1
    st.rinf[k, i] += 1
    st.ii[i, II_ROUTED] += 1
    _sp_touch(d, st, i)
    if d.api_s > 0.0:  # the API server holds it: the engine's queue sees it later (_enter)
        st.ri[r, RI_STATE] = ROUTED
        _ah_push(st, t + d.api_s, r)
        return
    if d.kv_delay > 0.0 or indexed or d.view_free:  # the engine's queue accounting uses the real hit
        _, _, _, _, _, hit = _hit_tokens(d, st, i, r, blocks, _global_prefix(d, st, blocks))
    else:
        hit = int(st.vbuf[i, pb.V_HIT_HBM] + st.vbuf[i, pb.V_HIT_DRAM] + st.vbuf[i, pb.V_HIT_GLOBAL])
    _enqueue(d, st, i, r, t, hit)


@njit(cache=True, _nrt=False)
def _enter(d, st, r, t):
    """Routed request ``r`` leaves the API server and reaches its instance's queue at ``t`` (real hit then)."""
    i = st.ri[r, RI_INST]
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    _, _, _, _, _, hit = _hit_tokens(d, st, i, r, blocks, _global_prefix(d, st, blocks))
    _enqueue(d, st, i, r, t, hit)


@njit(cache=True, _nrt=False)
def _enqueue(d, st, i, r, t, hit):
    """Request ``r`` joins instance ``i``'s waiting queue at ``t`` with ``hit`` prompt tokens already cached."""
    _sample_until(d, st, i, t)
    st.ri[r, RI_STATE] = WAITING
    _list_append(st, i, II_WHEAD, II_WTAIL, r)
    st.ii[i, II_NWAIT] += 1
    st.ii[i, II_CTX] += d.input_len[r]
    st.ii[i, II_NQUEUED] += 1
    _set_queued(d, st, i, r, d.input_len[r] - hit)
    if st.ii[i, II_BUSY] == 0:
        _form_batch(d, st, i, t)
    else:
        _cut(st, i, t, False)
        if d.lag:  # the next iteration is already scheduled: visible after the one running now
            st.vis[r] = st.fi[i, FI_END] if st.fi[i, FI_END] < INF else t


@njit(cache=True)  # with the runtime: numba compiles route (which allocates) with this function's flags
def _run(d, st, max_arrivals):
    """Process events until ``max_arrivals`` more arrivals were handled; True when the run is over."""
    handled = 0
    while True:
        ti = st.tt_t[1]
        i = st.tt_i[1]
        ta = st.ah_t[0] if st.gi[G_AHN] > 0 else INF
        if ti == INF and ta == INF:
            return True
        if ti <= ta:
            if ti < st.gf[GF_NOW]:
                st.gi[G_CLOCK_BACK] += 1
            st.gf[GF_NOW] = ti
            if d.router_clock:
                _refresh(d, st, ti)
            if i == d.n_instances:
                _pool_event(d, st, ti)
                continue
            _sample_until(d, st, i, ti)
            if st.ii[i, II_BUSY] == 1:
                _end_run(d, st, i, ti)
            else:
                _form_batch(d, st, i, ti)
        else:
            if handled == max_arrivals:
                return False
            if ta < st.gf[GF_NOW]:
                st.gi[G_CLOCK_BACK] += 1
            st.gf[GF_NOW] = ta
            if d.router_clock:
                _refresh(d, st, ta)
            r = _ah_pop(st)
            if st.ri[r, RI_STATE] == ROUTED:
                _enter(d, st, r, ta)
                continue
            _arrive(d, st, r, ta)
            handled += 1
            st.gi[G_ARRIVED] += 1


@njit(cache=True, _nrt=False)
def _finalize(d, st):
    for i in range(d.n_instances):
        _sample_until(d, st, i, st.gf[GF_NOW])



refresh_module(sys.modules[__name__])
