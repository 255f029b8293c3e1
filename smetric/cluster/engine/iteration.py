"""Iteration end: an instance's run of iterations ends; tokens are generated, completed prefills cache their
prompts, requests leave (finishing, or handed over to a decode instance), and the next batch forms.
"""

from __future__ import annotations

import sys

from numba import njit

from ...numba_cache import refresh_module
from ..estimators import ORACLE, observe_nb
from ..queueing import Q_EST
from .batch import _form_batch
from .layout import (
    DECODE,
    FI_BUSY,
    FI_FORM,
    GF_QUEUE,
    II_BUSY,
    II_CTX,
    II_HEAPN,
    II_INFLIGHT,
    II_ITER,
    II_NBATCH,
    II_NDEC,
    II_NWAIT,
    II_PHEAD,
    II_PTAIL,
    II_ROLE,
    II_ROUTED,
    II_SDEC,
    II_SEGK,
    II_STALL,
    II_STALLED,
    II_STAT_DECODE,
    II_STAT_PREFILL,
    II_WHEAD,
    II_WTAIL,
    P_KEPT,
    PREFILL_ROLE,
    QM_FAILED,
    RF_FINISH,
    RF_FIRST,
    RI_DINST,
    RI_INKV,
    RI_PREFILL,
    RI_REASON,
    RI_REM,
    RI_STATE,
    WAITING,
)
from .requests import _cache_prompt, _join_decode, _release, _release_children, _sample_until, _set_queued
from .structures import _cut, _dh_pop, _list_append, _list_remove


@njit(cache=True, _nrt=False)
def _sort_small(a, n):
    for x in range(1, n):
        v = a[x]
        y = x - 1
        while y >= 0 and a[y] > v:
            a[y + 1] = a[y]
            y -= 1
        a[y + 1] = v


@njit(cache=True, _nrt=False)
def _finish(d, st, r, t):
    st.rf[r, RF_FINISH] = t
    st.ri[r, RI_REASON] = 0
    kind = int(st.gf[GF_QUEUE + Q_EST])
    if kind != ORACLE:
        observe_nb(kind, st.est_sess, st.est_ring, st.est_g, d.session[r], d.input_len[r], d.n_out[r],
                   d.decode_true[r])
    _release_children(d, st, r, t)


@njit(cache=True, _nrt=False)
def _end_run(d, st, i, t):
    """Instance ``i``'s run of iterations ends at ``t``: tokens, completions, releases, next batch."""
    k_run = st.ii[i, II_SEGK]
    n_dec = st.ii[i, II_NDEC]
    role = st.ii[i, II_ROLE]
    st.ii[i, II_BUSY] = 0
    if st.ii[i, II_STALL] == 1:  # a prefill-only iteration: the decodes did not advance
        st.ii[i, II_STALL] = 0
        st.ii[i, II_STALLED] += k_run
        n_dec = 0
    else:
        st.ii[i, II_ITER] += k_run
    st.fi[i, FI_BUSY] += t - st.fi[i, FI_FORM]
    st.ii[i, II_STAT_DECODE] += k_run * n_dec
    st.ii[i, II_CTX] += k_run * n_dec
    st.ii[i, II_SDEC] += k_run * n_dec
    leave = st.scratch
    n_leave = 0
    n_done = 0
    for k in range(st.ii[i, II_NBATCH]):
        r = st.batch_r[i, k]
        c = st.batch_c[i, k]
        st.ri[r, RI_REM] -= c
        st.ri[r, RI_INKV] += c
        st.ri[r, RI_PREFILL] += c
        st.ii[i, II_STAT_PREFILL] += c
        _set_queued(d, st, i, r, st.ri[r, RI_REM])
        if st.ri[r, RI_REM] == 0:
            if st.pre[r, P_KEPT] == 0:
                st.rf[r, RF_FIRST] = t
            st.ii[i, II_CTX] += 1
            _cache_prompt(d, st, i, r, t)
            _list_remove(st, i, II_PHEAD, II_PTAIL, r)
            if role == PREFILL_ROLE or st.pre[r, P_KEPT] + 1 == d.n_out[r]:
                leave[n_leave] = r
                n_leave += 1
            else:
                st.batch_r[i, n_done] = r  # completions that stay to decode
                n_done += 1
    st.ii[i, II_NBATCH] = 0
    it = st.ii[i, II_ITER]
    while st.ii[i, II_HEAPN] > 0 and st.dheap[i, 0] // d.n == it:
        r = _dh_pop(st, i) % d.n
        st.ii[i, II_NDEC] -= 1
        st.ii[i, II_SDEC] -= d.input_len[r] + d.n_out[r]
        leave[n_leave] = r
        n_leave += 1
    _sort_small(leave, n_leave)
    n_hand = 0
    for k in range(n_leave):
        r = leave[k]
        generated = st.pre[r, P_KEPT] + 1 if st.ri[r, RI_STATE] != DECODE else d.n_out[r]
        _release(d, st, i, r, generated, t)
        if role == PREFILL_ROLE and d.n_out[r] > 1:
            st.handoff[n_hand] = r
            n_hand += 1
        else:
            _finish(d, st, r, t)
    for k in range(n_done):
        _join_decode(d, st, i, st.batch_r[i, k])
    _form_batch(d, st, i, t)
    if n_hand > 0:
        _hand_over(d, st, i, n_hand, t)


@njit(cache=True, _nrt=False)
def _hand_over(d, st, src, n_hand, t):
    """Disaggregated: prefilled requests go to the decode instance with the fewest in flight."""
    for k in range(n_hand):
        r = st.handoff[k]
        best = d.n_routable
        for j in range(d.n_routable + 1, d.n_instances):
            if st.ii[j, II_INFLIGHT] < st.ii[best, II_INFLIGHT]:
                best = j
        _sample_until(d, st, best, t)
        st.ri[r, RI_STATE] = WAITING
        st.ri[r, RI_DINST] = best
        st.qmark[r, QM_FAILED] = -1  # KV versions are per instance
        _list_append(st, best, II_WHEAD, II_WTAIL, r)
        st.ii[best, II_NWAIT] += 1
        st.ii[best, II_INFLIGHT] += 1
        st.ii[best, II_CTX] += d.input_len[r] + 1
        st.ii[best, II_ROUTED] += 1
        st.mark[best] = 1
    for j in range(d.n_routable, d.n_instances):
        if st.mark[j] == 1:
            st.mark[j] = 0
            if st.ii[j, II_BUSY] == 0:
                _form_batch(d, st, j, t)
            else:
                _cut(st, j, t, j > src)



refresh_module(sys.modules[__name__])
