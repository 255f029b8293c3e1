"""The KV connector's transfer pool: loads and writes between the instances and the global store share each node's
NIC and the store's aggregate bandwidth equally; a finished load crosses the instance's PCIe link and may end the
iteration that waits for it (docs/engine.md, "KV connector").
"""

from __future__ import annotations

import sys

from numba import njit

from ...numba_cache import refresh_module
from .layout import (
    FI_BASE,
    FI_END,
    FI_LDRAM,
    FI_LREADY,
    FI_SCHED,
    G_PCOUNT,
    G_PHEAD,
    G_PNEXT,
    G_PTAIL,
    GF_PLAST,
    II_NPEND,
    INF,
    RI_INST,
)
from .structures import _schedule, _tree_set


@njit(cache=True, _nrt=False)
def _pool_advance(st, t):
    dt = t - st.gf[GF_PLAST]
    if dt > 0.0:
        x = st.gi[G_PHEAD]
        while x >= 0:
            st.tr_rem[x] -= st.tr_rate[x] * dt
            x = st.tr_next[x]
    st.gf[GF_PLAST] = t


@njit(cache=True, _nrt=False)
def _pool_rates(d, st, t):
    """Rates of the active transfers at ``t``; publish the earliest completion (ties: lower id)."""
    best = -1
    best_t = INF
    n_all = float(st.gi[G_PCOUNT])
    x = st.gi[G_PHEAD]
    while x >= 0:
        node = st.tr_node[x]
        cap = d.load_cap if x < d.n else d.write_cap
        rate = min(cap, min(d.node_bw[node] / float(st.node_cnt[node]), d.store_total / n_all))
        st.tr_rate[x] = rate
        tx = t + max(st.tr_rem[x], 0.0) / rate
        if tx < best_t or (tx == best_t and x < best):
            best_t = tx
            best = x
        x = st.tr_next[x]
    st.gi[G_PNEXT] = best
    _tree_set(st, d.n_instances, best_t)


@njit(cache=True, _nrt=False)
def _pool_start(d, st, t, x, node, nbytes):
    """Transfer ``x`` (a load: row; a prompt write: n + row; a reply write: 2n + row) starts at ``t``."""
    _pool_advance(st, t)
    st.tr_rem[x] = nbytes
    st.tr_node[x] = node
    tail = st.gi[G_PTAIL]
    st.tr_prev[x] = tail
    st.tr_next[x] = -1
    if tail >= 0:
        st.tr_next[tail] = x
    else:
        st.gi[G_PHEAD] = x
    st.gi[G_PTAIL] = x
    st.gi[G_PCOUNT] += 1
    st.node_cnt[node] += 1
    _pool_rates(d, st, t)


@njit(cache=True, _nrt=False)
def _stall_end(d, st, i):
    """End of a connector iteration once its loads are known: blocking (start after the scheduler's lookups
    and every load) or layer-wise (compute runs alongside the loads)."""
    if d.layerwise:
        return max(st.fi[i, FI_SCHED] + st.fi[i, FI_BASE], st.fi[i, FI_LREADY])
    return max(st.fi[i, FI_SCHED], st.fi[i, FI_LREADY]) + st.fi[i, FI_BASE]


@njit(cache=True, _nrt=False)
def _pool_event(d, st, t):
    """The earliest transfer completes at ``t``; a finished load crosses PCIe and may end a stall."""
    x = st.gi[G_PNEXT]
    _pool_advance(st, t)
    p = st.tr_prev[x]
    q = st.tr_next[x]
    if p >= 0:
        st.tr_next[p] = q
    else:
        st.gi[G_PHEAD] = q
    if q >= 0:
        st.tr_prev[q] = p
    else:
        st.gi[G_PTAIL] = p
    st.gi[G_PCOUNT] -= 1
    st.node_cnt[st.tr_node[x]] -= 1
    _pool_rates(d, st, t)
    if x >= d.n:
        return
    i = st.ri[x, RI_INST]
    start = max(t, st.fi[i, FI_LDRAM])
    st.fi[i, FI_LDRAM] = start + st.tr_bytes[x] / d.pcie_bw
    st.fi[i, FI_LREADY] = max(st.fi[i, FI_LREADY], st.fi[i, FI_LDRAM] + d.load_latency)
    st.ii[i, II_NPEND] -= 1
    if st.ii[i, II_NPEND] == 0:
        st.fi[i, FI_END] = _stall_end(d, st, i)
        _schedule(st, i)



refresh_module(sys.modules[__name__])
