"""Batch formation: at an iteration end, a wake-up or an arrival at an idle instance, activate the requests whose
KV loaded, take the prefill chunks, admit waiting requests, and start the next iteration (a fast-forwarded run of
decode-only iterations where nothing can change) or leave the instance idle.
"""

from __future__ import annotations

import sys

from numba import njit

from ...hardware.kernel import iteration_time_nb, prefill_attn_work
from ...numba_cache import refresh_module
from ..queueing import FCFS, Q_KIND
from .admission import _admit, _allocate, _grow_decodes, _next_candidate
from .layout import (
    DECODE_ROLE,
    FI_BASE,
    FI_END,
    FI_FORM,
    FI_LREADY,
    FI_MINREADY,
    FI_SCHED,
    FI_STEP,
    FI_T0,
    FI_WAKE,
    G_QSTEP,
    GF_QUEUE,
    II_BLOCKED_AT,
    II_BLOCKED_BY,
    II_BUSY,
    II_ITER,
    II_KV_VERSION,
    II_NBATCH,
    II_NDEC,
    II_NLOAD,
    II_NPEND,
    II_NRUN,
    II_NWAIT,
    II_PHEAD,
    II_PINNED,
    II_PRIV,
    II_PTAIL,
    II_ROLE,
    II_SDEC,
    II_SEGK,
    II_STALL,
    II_WHEAD,
    II_WTAIL,
    INF,
    IP_AHEAPN,
    IP_BBUDGET,
    IP_PREEMPT,
    LOADING,
    PREFILL,
    QM_FAILED,
    QM_TRIED,
    RF_READY,
    RI_INKV,
    RI_K1,
    RI_NXT,
    RI_PRIV,
    RI_REM,
    RI_STATE,
)
from .requests import _abandon_expired, _join_decode, _next_deadline
from .structures import _boundary, _first_end_at_or_after, _iters_done, _list_append, _list_remove, _n_blocks, _schedule
from .transfers import _stall_end


@njit(cache=True, _nrt=False)
def _activate(d, st, i, t):
    """Admitted requests whose KV load finished by ``t`` become runnable (admission order)."""
    if st.ii[i, II_NLOAD] == 0 or st.fi[i, FI_MINREADY] > t:
        return
    min_ready = INF
    r = st.ii[i, II_PHEAD]
    while r >= 0:
        nxt = st.ri[r, RI_NXT]
        if st.ri[r, RI_STATE] == LOADING:
            if st.rf[r, RF_READY] <= t:
                st.ii[i, II_NLOAD] -= 1
                if st.ri[r, RI_REM] > 0:
                    st.ri[r, RI_STATE] = PREFILL
                else:
                    _list_remove(st, i, II_PHEAD, II_PTAIL, r)
                    _join_decode(d, st, i, r)
            else:
                min_ready = min(min_ready, st.rf[r, RF_READY])
        r = nxt
    st.fi[i, FI_MINREADY] = min_ready


@njit(cache=True, _nrt=False)
def _add_chunk(st, i, r, budget):
    c = min(st.ri[r, RI_REM], budget)
    k = st.ii[i, II_NBATCH]
    st.batch_r[i, k] = r
    st.batch_c[i, k] = c
    st.ii[i, II_NBATCH] = k + 1
    return budget - c


@njit(cache=True, _nrt=False)
def _lagging(st, i, t):
    """Whether a waiting request of instance ``i`` is not yet visible to its scheduler at ``t`` (first-token lag:
    it reached the instance while the iteration ending at ``st.vis`` ran, and that iteration's successor was
    already scheduled)."""
    r = st.ii[i, II_WHEAD]
    while r >= 0:
        if st.vis[r] >= t:
            return True
        r = st.ri[r, RI_NXT]
    return False


@njit(cache=True, _nrt=False)
def _form_batch(d, st, i, t):
    """Form and start instance ``i``'s next iteration at ``t`` (or leave it idle)."""
    _activate(d, st, i, t)
    n_preempted = st.ipre[i, IP_PREEMPT]
    pf = d.prefill_first  # prompts first; decodes take no budget (they run only in iterations without prompts)
    if d.incremental and not pf:
        _grow_decodes(d, st, i)
    budget = d.max_batched_tokens - (0 if pf else st.ii[i, II_NDEC])
    st.ii[i, II_NBATCH] = 0
    r = st.ii[i, II_PHEAD]
    while r >= 0 and budget > 0:
        if st.ri[r, RI_STATE] == PREFILL:
            if d.whole_prompts and st.ri[r, RI_REM] > budget and budget < d.max_batched_tokens:
                break
            if d.incremental:
                need = _n_blocks(st.ri[r, RI_INKV] + min(st.ri[r, RI_REM], budget), d.block_size) - (
                    st.ri[r, RI_K1] + st.ri[r, RI_PRIV])
                refund = 0
                if need > 0:
                    ok, refund = _allocate(d, st, i, r, need)
                    if not ok:
                        break  # it was preempted itself: it was the last admitted
                budget = _add_chunk(st, i, r, budget) + refund
            else:
                budget = _add_chunk(st, i, r, budget)
        r = st.ri[r, RI_NXT]
    preempted = st.ipre[i, IP_PREEMPT] > n_preempted
    wait = 0.0
    conn = d.conn and st.ii[i, II_ROLE] != DECODE_ROLE  # an lmcache connector serves this instance
    sched = 0.0
    if conn:
        st.fi[i, FI_LREADY] = t
    if d.abandon and st.ii[i, II_NWAIT] > 0:
        _abandon_expired(d, st, i, t)
    fcfs = st.gf[GF_QUEUE + Q_KIND] == FCFS
    free = 1.0
    step = 0
    if not fcfs:
        free = float(max(d.hbm_blocks - st.ii[i, II_PINNED] - st.ii[i, II_PRIV], 1))
        st.gi[G_QSTEP] += 1
        step = st.gi[G_QSTEP]
    lag = d.lag and _lagging(st, i, t)
    while budget > 0 and st.ii[i, II_NWAIT] > 0 and st.ii[i, II_NRUN] < d.max_num_seqs and not preempted:
        r = _next_candidate(d, st, i, t, free, step, budget, lag)
        if r < 0:
            if lag and st.ii[i, II_NBATCH] == 0 and st.ii[i, II_NDEC] == 0:
                lag = False  # nothing else to run: no batch is scheduled ahead, the request runs now
                if not fcfs:
                    st.gi[G_QSTEP] += 1
                    step = st.gi[G_QSTEP]
                continue
            break  # FCFS: the head did not fit (or is not visible yet); ranked: none left
        ok, ready = _admit(d, st, i, r, t, budget)
        if not ok:
            if ready < 0.0:
                break  # whole prompts: the head's prompt does not fit what is left of the budget
            if fcfs:
                st.ii[i, II_BLOCKED_BY] = r
                st.ii[i, II_BLOCKED_AT] = st.ii[i, II_KV_VERSION]
                st.ipre[i, IP_BBUDGET] = budget
                break
            st.qmark[r, QM_TRIED] = step
            st.qmark[r, QM_FAILED] = st.ii[i, II_KV_VERSION]
            continue
        _list_remove(st, i, II_WHEAD, II_WTAIL, r)
        st.ii[i, II_NWAIT] -= 1
        st.ii[i, II_NRUN] += 1
        if conn:
            sched += d.lookup_s
            st.fi[i, FI_LREADY] = max(st.fi[i, FI_LREADY], ready)
        elif ready > t and d.overlap:
            st.ri[r, RI_STATE] = LOADING
            st.rf[r, RF_READY] = ready
            _list_append(st, i, II_PHEAD, II_PTAIL, r)
            st.ii[i, II_NLOAD] += 1
            st.fi[i, FI_MINREADY] = min(st.fi[i, FI_MINREADY], ready)
            continue
        if ready > t and not conn:
            wait = max(wait, ready - t)
        if st.ri[r, RI_REM] > 0:
            st.ri[r, RI_STATE] = PREFILL
            _list_append(st, i, II_PHEAD, II_PTAIL, r)
            budget = _add_chunk(st, i, r, budget)
        else:
            _join_decode(d, st, i, r)
            budget -= 1
    nb = st.ii[i, II_NBATCH]
    stall = pf and nb > 0 and st.ii[i, II_NDEC] > 0  # a prefill-only iteration: the decodes wait
    regrown = False  # prefill-first: the decodes grew after the admission pass, so a waiting request may fit now
    if pf and nb == 0 and d.incremental:
        version = st.ii[i, II_KV_VERSION]
        _grow_decodes(d, st, i)
        preempted = st.ipre[i, IP_PREEMPT] > n_preempted
        regrown = st.ii[i, II_NWAIT] > 0 and st.ii[i, II_KV_VERSION] != version
    n_dec = 0 if stall else st.ii[i, II_NDEC]
    st.ii[i, II_STALL] = 1 if stall else 0
    if nb == 0 and n_dec == 0:
        st.ii[i, II_BUSY] = 0
        st.fi[i, FI_WAKE] = st.fi[i, FI_MINREADY] if st.ii[i, II_NLOAD] > 0 else INF
        _schedule(st, i)
        return
    sdec = 0.0 if stall else float(st.ii[i, II_SDEC])
    fdec = float(n_dec)
    # with a connector, the iteration also copies what the store will receive to the host (GPU->host)
    saved = n_dec if (conn and d.store_replies) else 0
    if nb > 0 or wait > 0.0:
        pattn = 0.0
        ntok = n_dec
        for k in range(nb):
            c = st.batch_c[i, k]
            pattn += prefill_attn_work(float(c), float(st.ri[st.batch_r[i, k], RI_INKV]))
            ntok += c
        st.fi[i, FI_BASE] = iteration_time_nb(d.coef, float(ntok), pattn, sdec, fdec)
        if conn:
            st.fi[i, FI_BASE] += (ntok - n_dec + saved) * d.kv_bytes_per_token / d.pcie_bw
        st.fi[i, FI_STEP] = 0.0
        k_run = 1
    else:
        base = iteration_time_nb(d.coef, fdec, 0.0, sdec, fdec)
        st.fi[i, FI_STEP] = iteration_time_nb(d.coef, fdec, 0.0, sdec + fdec, fdec) - base
        if saved > 0:
            base += saved * d.kv_bytes_per_token / d.pcie_bw
        st.fi[i, FI_BASE] = base
        k_run = st.dheap[i, 0] // d.n - st.ii[i, II_ITER]
        if lag:  # a request becomes visible at this iteration's end: form again there
            k_run = 1
        if d.incremental:  # stop before an iteration that needs a block (or after one that preempted)
            if st.ipre[i, IP_AHEAPN] > 0:
                k_run = min(k_run, st.aheap[i, 0] // d.n - st.ii[i, II_ITER])
            if preempted or regrown:
                k_run = 1
    st.fi[i, FI_FORM] = t
    st.fi[i, FI_T0] = t + wait
    if k_run > 1 and st.ii[i, II_NLOAD] > 0:
        k_run = _first_end_at_or_after(st, i, st.fi[i, FI_MINREADY], k_run)
    if k_run > 1 and d.abandon and st.ii[i, II_NWAIT] > 0:  # form again at the first end after a deadline
        due = _next_deadline(d, st, i)
        if due < INF:
            k_run = min(k_run, _iters_done(st, i, due, k_run) + 1)
    st.ii[i, II_SEGK] = k_run
    st.ii[i, II_BUSY] = 1
    st.fi[i, FI_END] = _boundary(st, i, k_run)
    if conn and nb > 0:  # the connector's iteration: lookups, then (or alongside) the loads
        st.fi[i, FI_SCHED] = t + sched
        st.fi[i, FI_END] = INF if st.ii[i, II_NPEND] > 0 else _stall_end(d, st, i)
    st.fi[i, FI_WAKE] = INF
    _schedule(st, i)



refresh_module(sys.modules[__name__])
