"""The engine's small data structures over ``st``: the tournament tree of the instances' next events, the
arrival heap, the per-instance decode-finish heaps and int min-heaps, the intrusive request lists, and the
closed-form iteration ends of a fast-forwarded decode-only run (cutting it short when a request arrives).
"""

from __future__ import annotations

import math
import sys

from numba import njit

from ...numba_cache import refresh_module
from .layout import FI_BASE, FI_END, FI_STEP, FI_T0, FI_WAKE, G_AHN, II_BUSY, II_HEAPN, II_SEGK, RI_NXT, RI_PRV


@njit(cache=True, _nrt=False)
def _n_blocks(tokens, block):
    return (tokens + block - 1) // block


# ---- tournament tree over instances: the earliest next event, ties to the lower index
@njit(cache=True, _nrt=False)
def _tree_set(st, i, t):
    size = st.tt_t.shape[0] // 2
    k = size + i
    st.tt_t[k] = t
    st.tt_i[k] = i
    k //= 2
    while k >= 1:
        a, b = 2 * k, 2 * k + 1
        if st.tt_t[b] < st.tt_t[a]:
            st.tt_t[k] = st.tt_t[b]
            st.tt_i[k] = st.tt_i[b]
        else:
            st.tt_t[k] = st.tt_t[a]
            st.tt_i[k] = st.tt_i[a]
        k //= 2


@njit(cache=True, _nrt=False)
def _schedule(st, i):
    """Publish instance ``i``'s next event time (iteration end if busy, else wake-up) to the tree."""
    if st.ii[i, II_BUSY] == 1:
        _tree_set(st, i, st.fi[i, FI_END])
    else:
        _tree_set(st, i, st.fi[i, FI_WAKE])


# ---- arrival heap of (time, row)
@njit(cache=True, _nrt=False)
def _ah_less(st, a, b):
    return st.ah_t[a] < st.ah_t[b] or (st.ah_t[a] == st.ah_t[b] and st.ah_r[a] < st.ah_r[b])


@njit(cache=True, _nrt=False)
def _ah_swap(st, a, b):
    t, r = st.ah_t[a], st.ah_r[a]
    st.ah_t[a], st.ah_r[a] = st.ah_t[b], st.ah_r[b]
    st.ah_t[b], st.ah_r[b] = t, r


@njit(cache=True, _nrt=False)
def _ah_push(st, t, r):
    k = st.gi[G_AHN]
    st.gi[G_AHN] = k + 1
    st.ah_t[k] = t
    st.ah_r[k] = r
    while k > 0:
        p = (k - 1) // 2
        if not _ah_less(st, k, p):
            break
        _ah_swap(st, k, p)
        k = p


@njit(cache=True, _nrt=False)
def _ah_pop(st):
    n = st.gi[G_AHN] - 1
    st.gi[G_AHN] = n
    _ah_swap(st, 0, n)
    k = 0
    while True:
        a, b, m = 2 * k + 1, 2 * k + 2, k
        if a < n and _ah_less(st, a, m):
            m = a
        if b < n and _ah_less(st, b, m):
            m = b
        if m == k:
            break
        _ah_swap(st, k, m)
        k = m
    return st.ah_r[n]


# ---- per-instance min-heap of decode finishes, key = finishing iteration * n + row
@njit(cache=True, _nrt=False)
def _dh_push(st, i, key):
    st.ii[i, II_HEAPN] = _heap_push(st.dheap[i], st.ii[i, II_HEAPN], key)


@njit(cache=True, _nrt=False)
def _dh_pop(st, i):
    h = st.dheap[i]
    n = st.ii[i, II_HEAPN] - 1
    st.ii[i, II_HEAPN] = n
    top = h[0]
    h[0] = h[n]
    _heap_sift_down(h, n, 0)
    return top


# ---- a min-heap ``h`` of ``n`` int keys: the decode-finish heap above and the block-allocation heap
@njit(cache=True, _nrt=False)
def _heap_sift_up(h, k):
    while k > 0:
        p = (k - 1) // 2
        if h[p] <= h[k]:
            break
        h[p], h[k] = h[k], h[p]
        k = p


@njit(cache=True, _nrt=False)
def _heap_push(h, n, key):
    h[n] = key
    _heap_sift_up(h, n)
    return n + 1


@njit(cache=True, _nrt=False)
def _heap_sift_down(h, n, k):
    while True:
        a, b, m = 2 * k + 1, 2 * k + 2, k
        if a < n and h[a] < h[m]:
            m = a
        if b < n and h[b] < h[m]:
            m = b
        if m == k:
            break
        h[k], h[m] = h[m], h[k]
        k = m


@njit(cache=True, _nrt=False)
def _heap_remove(h, n, key):
    """Remove ``key`` (if present) from the heap; the new entry count."""
    for k in range(n):
        if h[k] == key:
            n -= 1
            h[k] = h[n]
            if k < n:
                _heap_sift_down(h, n, k)
                _heap_sift_up(h, k)
            return n
    return n


# ---- intrusive request lists (waiting queue and prefill list share the RI_NXT/RI_PRV links)
@njit(cache=True, _nrt=False)
def _list_append(st, i, head_col, tail_col, r):
    tail = st.ii[i, tail_col]
    st.ri[r, RI_PRV] = tail
    st.ri[r, RI_NXT] = -1
    if tail >= 0:
        st.ri[tail, RI_NXT] = r
    else:
        st.ii[i, head_col] = r
    st.ii[i, tail_col] = r


@njit(cache=True, _nrt=False)
def _list_prepend(st, i, head_col, tail_col, r):
    head = st.ii[i, head_col]
    st.ri[r, RI_NXT] = head
    st.ri[r, RI_PRV] = -1
    if head >= 0:
        st.ri[head, RI_PRV] = r
    else:
        st.ii[i, tail_col] = r
    st.ii[i, head_col] = r


@njit(cache=True, _nrt=False)
def _list_remove(st, i, head_col, tail_col, r):
    p = st.ri[r, RI_PRV]
    q = st.ri[r, RI_NXT]
    if p >= 0:
        st.ri[p, RI_NXT] = q
    else:
        st.ii[i, head_col] = q
    if q >= 0:
        st.ri[q, RI_PRV] = p
    else:
        st.ii[i, tail_col] = p
    st.ri[r, RI_NXT] = -1
    st.ri[r, RI_PRV] = -1


# ---- segments: a run of decode-only iterations is one event (fast-forward)
@njit(cache=True, _nrt=False)
def _boundary(st, i, j):
    """End time of the ``j``-th iteration of instance ``i``'s current run (j >= 1)."""
    jf = float(j)
    return st.fi[i, FI_T0] + jf * st.fi[i, FI_BASE] + st.fi[i, FI_STEP] * (jf * (jf - 1.0) * 0.5)


@njit(cache=True, _nrt=False)
def _iters_done(st, i, t, k_max):
    """Largest j in [0, k_max] whose iteration end is <= t (j = 0: none)."""
    base = st.fi[i, FI_BASE]
    step = st.fi[i, FI_STEP]
    d = t - st.fi[i, FI_T0]
    if d <= 0.0:
        return 0
    if step > 0.0:
        b = base - 0.5 * step
        est = (-b + math.sqrt(b * b + 2.0 * step * d)) / step
    else:
        est = d / base
    j = min(max(int(est), 0), k_max)
    while j < k_max and _boundary(st, i, j + 1) <= t:
        j += 1
    while j > 0 and _boundary(st, i, j) > t:
        j -= 1
    return j


@njit(cache=True, _nrt=False)
def _first_end_at_or_after(st, i, t, k_max):
    """Smallest j >= 1 (capped at k_max) whose iteration end is >= t."""
    m = _iters_done(st, i, t, k_max)
    if m >= 1 and _boundary(st, i, m) == t:
        return m
    return min(m + 1, k_max)


@njit(cache=True, _nrt=False)
def _cut(st, i, t, inclusive):
    """A request entered busy instance ``i``'s queue at ``t``: end its run at the first iteration end
    after ``t`` (or at ``t`` itself when ``inclusive``: that end is processed after the insertion)."""
    k = st.ii[i, II_SEGK]
    if k == 1:
        return
    m = _iters_done(st, i, t, k)
    if inclusive and m >= 1 and _boundary(st, i, m) == t:
        new_k = m
    else:
        new_k = m + 1
    if new_k < k:
        st.ii[i, II_SEGK] = new_k
        st.fi[i, FI_END] = _boundary(st, i, new_k)
        _schedule(st, i)



refresh_module(sys.modules[__name__])
