"""The routing index (numba engine only; the decisions and every number are those of the full view): for the
policies whose rule is an argmin of a score monotone in one queued-prefill column and the replica's in-flight
count (``smetric`` with the engine cache view, a fixed prefill rate and the ``slo``/``none`` guard;
``least-load`` on ``in_flight`` or ``queued_tokens``), an arrival is decided from

* the holders of prompt block ``j*`` (the first block held, in HBM or DRAM, by at most ``sp_holders``
  instances; found by binary search on the holder counts): the only instances whose local prefix can pass
  ``j*`` blocks; their hits are looked up exactly;
* every other instance has ``k2 <= j*`` and ``k3 <= max(j*, kg)``, so its request cost is at least that of the
  hit those bounds allow (``clb``); a min-tree of the load column and one of each replica's in-flight counts
  bound a subtree's scores from below, and a branch-and-bound search looks up the exact hits only of the
  leaves it reaches.

* a follow-up none of whose routable instances holds block ``j*`` (its own KV left every cache; the common case
  at scale: ~57 % of the arrivals on 1,024 instances): every local prefix is at most ``j*`` blocks, and the
  instances whose prefix is exactly ``j*`` (block ``j* - 1`` is widely held: a shared system prompt) are found by
  the same branch and bound restricted to that hit; those also holding the parent's tail block, which hit
  further, are enumerated from its holder list first.

The trees are brought up to date at each arrival from the instances marked since the last one (a queued-
prefill change, a dispatch or release; every leaf after a router snapshot). A follow-up whose longest local
hit may lie outside the holders and the widely held prefix (a holder's hit not above their bound, a widely
held tail, a shared prefix that reaches the prompt's last token) and could pass the stick test, and every other
policy or setting, use the full view: their rules read every instance (scores that are not monotone in an
indexed column, means or normalisations over all instances, samples, per-instance state updates).
``run_engine(counters=...)`` reports how many arrivals used it. Policies that read no view column
(``load_only.VIEW_FREE_PIDS``: round-robin, random) get no view at all. The index is on from
:data:`~smetric.cluster.engine.driver.SPARSE_MIN_INSTANCES` routable instances (below, the full view is as fast).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ...numba_cache import refresh_module
from ...policies import base as pb
from ...policies import smetric_policy
from ...policies.signals import attention_tokens, new_tokens
from ..load_index import tree_rebuild, tree_set
from .layout import FI_QATTN, II_QTOK, SP_LL_INFLIGHT, SP_LL_QTOKENS, SP_OFF, SP_SMETRIC_ATTN, SP_SMETRIC_TOKENS
from .tiers import _dram_slot, _global_prefix, _hbm_slot, _hit_tokens


@njit(cache=True, _nrt=False)
def _sp_touch(d, st, i):
    """Mark routable instance ``i`` for the index's next update."""
    if d.sparse != SP_OFF and i < d.n_routable and st.sp_dirty[i] == 0:
        st.sp_dirty[i] = 1
        st.sp_list[st.sp_meta[0]] = i
        st.sp_meta[0] += 1


@njit(cache=True, _nrt=False)
def _sp_column(d, st, i):
    """The indexed load column of instance ``i`` as the view shows it (the snapshot's with ``refresh_s``)."""
    if d.sparse == SP_SMETRIC_ATTN:
        return st.snap[i, pb.V_QUEUED_ATTN] if d.refresh_s > 0.0 else st.fi[i, FI_QATTN]
    return st.snap[i, pb.V_QUEUED_TOKENS] if d.refresh_s > 0.0 else float(st.ii[i, II_QTOK])


@njit(cache=True, _nrt=False)
def _sp_update(d, st):
    """Bring the min-trees up to date with the marked instances."""
    size = d.sp_size
    if st.sp_meta[1] != 0:
        st.sp_meta[1] = 0
        for i in range(d.n_routable):
            st.sp_tree[0, size + i] = _sp_column(d, st, i)
        tree_rebuild(st.sp_tree[0], size)
    for q in range(st.sp_meta[0]):
        i = st.sp_list[q]
        st.sp_dirty[i] = 0
        tree_set(st.sp_tree[0], size, i, _sp_column(d, st, i))
        for k in range(st.rinf.shape[0]):
            tree_set(st.sp_tree[1 + k], size, i, float(st.rinf[k, i]))
    st.sp_meta[0] = 0


@njit(cache=True, _nrt=False)
def _sp_cost(d, prompt, hit):
    """SMETRIC's cost of this request on an instance with ``hit`` reusable tokens (its load minus the queue)."""
    new = new_tokens(prompt, hit)
    if d.sparse == SP_SMETRIC_ATTN:
        return attention_tokens(new, prompt, d.params[smetric_policy._L_EQ])
    return new


@njit(cache=True, _nrt=False)
def _sp_exact(d, st, r, i, k, blocks, kg):
    """(local hit, load, score) of SMETRIC on instance ``i`` for request ``r`` (replica ``k``), with the policy's own
    float operations."""
    _, _, _, _, h2, h3 = _hit_tokens(d, st, i, r, blocks, kg)
    load = _sp_column(d, st, i) + _sp_cost(d, float(d.input_len[r]), float(h3))
    return float(h2), load, load * (float(st.rinf[k, i]) + 1.0)


@njit(cache=True, _nrt=False)
def _sp_value(d, st, r, i, k, kind, blocks, kg, want):
    """Exact value of instance ``i`` for request ``r`` (replica ``k``): ``kind`` 0 the policy's score, 1 SMETRIC's
    load (its SLO guard), with the policy's own float operations; inf unless its local hit is ``want`` (when
    ``want >= 0``: j >= 1 whole blocks, so only an instance holding block j - 1 in HBM or DRAM has it, the
    parent's tail adding less than a block)."""
    if d.sparse == SP_LL_INFLIGHT:
        return float(st.rinf[k, i])
    if d.sparse == SP_LL_QTOKENS:
        return _sp_column(d, st, i)
    if want >= 0.0:  # the cheap test first: one probe per tier
        b = blocks[int(want) // d.block_size - 1]
        if _hbm_slot(d, st, i, b) < 0 and _dram_slot(d, st, i, b) < 0:
            return np.inf
    hit, load, score = _sp_exact(d, st, r, i, k, blocks, kg)
    if want >= 0.0 and hit != want:
        return np.inf
    return load if kind == 1 else score


@njit(cache=True, _nrt=False)
def _sp_bound(d, st, j, k, kind, clb):
    """Lower bound of :func:`_sp_value` over the leaves of tree node ``j`` outside the enumerated holders."""
    if d.sparse == SP_LL_INFLIGHT:
        return st.sp_tree[1 + k, j]
    if d.sparse == SP_LL_QTOKENS:
        return st.sp_tree[0, j]
    load = st.sp_tree[0, j] + clb
    if kind == 1:
        return load
    return load * (st.sp_tree[1 + k, j] + 1.0)


@njit(cache=True, _nrt=False)
def _sp_min(d, st, r, k, blocks, kg, clb, best, want):
    """The smallest score below ``best`` over the instances (branch and bound; those whose local hit is ``want``
    when ``want >= 0``), else ``best``."""
    size = d.sp_size
    stack = st.sp_stack
    stack[0, 0] = 1
    top = 1
    while top > 0:
        top -= 1
        j = stack[0, top]
        if _sp_bound(d, st, j, k, 0, clb) >= best:
            continue
        if j >= size:
            best = min(best, _sp_value(d, st, r, j - size, k, 0, blocks, kg, want))
            continue
        a, b = 2 * j, 2 * j + 1
        if _sp_bound(d, st, a, k, 0, clb) > _sp_bound(d, st, b, k, 0, clb):
            a, b = b, a
        stack[0, top] = b  # the child with the lower bound is searched first
        stack[0, top + 1] = a
        top += 2
    return best


@njit(cache=True, _nrt=False)
def _sp_first(d, st, r, k, kind, blocks, kg, clb, lo, hi, limit, want):
    """The lowest instance in ``[lo, hi)`` whose exact value (``kind``; ``want`` as in :func:`_sp_value`) is
    <= ``limit``, or -1."""
    size = d.sp_size
    stack = st.sp_stack
    stack[0, 0], stack[1, 0], stack[2, 0] = 1, 0, size  # node, its first leaf, its leaves
    top = 1
    while top > 0:
        top -= 1
        j, first, span = stack[0, top], stack[1, top], stack[2, top]
        if first >= hi or first + span <= lo or _sp_bound(d, st, j, k, kind, clb) > limit:
            continue
        if span == 1:
            if _sp_value(d, st, r, first, k, kind, blocks, kg, want) <= limit:
                return first
            continue
        half = span // 2
        stack[0, top], stack[1, top], stack[2, top] = 2 * j + 1, first + half, half
        stack[0, top + 1], stack[1, top + 1], stack[2, top + 1] = 2 * j, first, half
        top += 2
    return -1


@njit(cache=True, _nrt=False)
def _sp_enumerate(d, st, r, b):
    """Write into ``st.sp_buf`` the routable instances holding block ``b`` (HBM or DRAM), each once (marked with
    ``r`` in ``st.sp_mark``); returns their count."""
    count = 0
    for tier in range(2):
        e = st.h_head[tier, b]
        cap = d.hbm_blocks if tier == 0 else d.dram_slots
        links = st.h_hl if tier == 0 else st.h_dl
        while e >= 0:
            i = e // cap
            if i < d.n_routable and st.sp_mark[i] != r:
                st.sp_mark[i] = r
                st.sp_buf[count] = i
                count += 1
            e = links[0, e]
    return count


@njit(cache=True, _nrt=False)
def _sp_holders(d, st, r, blocks, kg):
    """Enumerate into ``st.sp_buf`` the routable holders of block ``j*`` with their exact (local hit, score,
    load) in ``st.sp_val``; returns (count, j*)."""
    nb = blocks.shape[0]
    lo, hi = 0, nb
    while lo < hi:  # holder counts do not grow along a chain
        mid = (lo + hi) // 2
        if st.h_count[blocks[mid]] <= d.sp_holders:
            hi = mid
        else:
            lo = mid + 1
    if lo == nb:
        return 0, nb
    k = d.replica[r]
    count = _sp_enumerate(d, st, r, blocks[lo])
    for e in range(count):
        hit, load, score = _sp_exact(d, st, r, st.sp_buf[e], k, blocks, kg)
        st.sp_val[e, 0] = hit
        st.sp_val[e, 1] = score
        st.sp_val[e, 2] = load
    return count, lo


@njit(cache=True, _nrt=False)
def _sp_hit_bound(d, r, k, L):
    """Token hit of a prefix of ``k`` blocks plus the parent's tail where it could count: an upper bound of the
    hit of an instance whose prefix is at most ``k`` blocks."""
    h = k * d.block_size
    if d.tail_pos[r] == k:
        h += d.tail_tok[r]
    return float(min(h, L - 1))


@njit(cache=True, _nrt=False)
def _sp_balance(d, st, r, k, blocks, kg, clb, ne, start):
    """argmin of the score, ties to the first instance at or after ``start`` (cyclically), as argmin_rotating."""
    n = d.n_routable
    best = np.inf
    for e in range(ne):
        best = min(best, st.sp_val[e, 1])
    best = _sp_min(d, st, r, k, blocks, kg, clb, best, -1.0)
    chosen = _sp_first(d, st, r, k, 0, blocks, kg, clb, start, n, best, -1.0)
    if chosen < 0:
        chosen = _sp_first(d, st, r, k, 0, blocks, kg, clb, 0, start, best, -1.0)
    for e in range(ne):
        i = st.sp_buf[e]
        if st.sp_val[e, 1] == best and (chosen < 0 or (i - start) % n < (chosen - start) % n):
            chosen = i
    return chosen


@njit(cache=True, _nrt=False)
def _sp_stick(d, st, r, k, blocks, kg, clb, ne, i, hit, load):
    """SMETRIC's stick test of a follow-up on its longest-local-hit instance ``i`` (local ``hit``, ``load``):
    ``i`` when the request stays there, else -1 (balance)."""
    p = d.params
    if not (hit > 0.0 and hit >= p[smetric_policy._HIT_RATIO] * float(d.history[r])):
        return -1
    if p[smetric_policy._GUARD] != smetric_policy._SLO:
        return i
    slo = p[smetric_policy._TTFT_BASE] + p[smetric_policy._TTFT_PER_1K] * float(d.input_len[r]) / 1000.0
    budget = p[smetric_policy._SLACK] * p[smetric_policy._RATE] * slo
    if load <= budget:
        return i
    meets = _sp_first(d, st, r, k, 1, blocks, kg, clb, 0, d.n_routable, budget, -1.0) >= 0
    for e in range(ne):
        meets = meets or st.sp_val[e, 2] <= budget
    return -1 if meets else i


@njit(cache=True, _nrt=False)
def _sp_widest(d, st, r, k, blocks, kg, clb, js):
    """The longest-local-hit instance of a follow-up none of whose routable instances holds prompt block ``js``
    (so every local prefix is at most ``js`` blocks; block ``js - 1`` is widely held): (instance, its local hit,
    its load), ties to the lowest score, then the lowest index; (-1, 0, 0) when the index cannot tell."""
    L = d.input_len[r]
    base = js * d.block_size
    if js < 1 or base > L - 1:  # no shared prefix, or the L - 1 cap could tie shorter prefixes with it
        return -1, 0.0, 0.0
    if d.tail_pos[r] == js and min(base + d.tail_tok[r], L - 1) > base:  # holders of the tail hit further
        b = d.tail_id[r]
        if st.h_count[b] > d.sp_holders:
            return -1, 0.0, 0.0
        want = float(min(base + d.tail_tok[r], L - 1))
        best_i, best_s, best_load = -1, np.inf, 0.0
        for e in range(_sp_enumerate(d, st, r, b)):  # sp_buf is free: block js has no routable holder
            i = st.sp_buf[e]
            hit, load, score = _sp_exact(d, st, r, i, k, blocks, kg)
            if hit == want and (score < best_s or (score == best_s and i < best_i)):
                best_i, best_s, best_load = i, score, load
        if best_i >= 0:
            return best_i, want, best_load
    want = float(base)
    best = _sp_min(d, st, r, k, blocks, kg, clb, np.inf, want)
    if best == np.inf:
        return -1, 0.0, 0.0
    i = _sp_first(d, st, r, k, 0, blocks, kg, clb, 0, d.n_routable, best, want)
    return i, want, _sp_value(d, st, r, i, k, 1, blocks, kg, -1.0)


@njit(cache=True, _nrt=False)
def _sp_smetric(d, st, r, k, blocks):
    """SMETRIC's decision (:func:`smetric.policies.smetric_policy.choose`) from the index, or -1 when it needs
    the full view."""
    L = d.input_len[r]
    prompt = float(L)
    kg = _global_prefix(d, st, blocks)
    ne, js = _sp_holders(d, st, r, blocks, kg)
    h2_ub = _sp_hit_bound(d, r, js, L)
    clb = _sp_cost(d, prompt, _sp_hit_bound(d, r, max(js, kg), L))
    if d.turn[r] > 0:
        prev = -1
        for e in range(ne):
            if prev < 0 or st.sp_val[e, 0] > st.sp_val[prev, 0] or (
                    st.sp_val[e, 0] == st.sp_val[prev, 0] and (st.sp_val[e, 1] < st.sp_val[prev, 1] or (
                        st.sp_val[e, 1] == st.sp_val[prev, 1] and st.sp_buf[e] < st.sp_buf[prev]))):
                prev = e
        if prev >= 0 and st.sp_val[prev, 0] > h2_ub:
            stay = _sp_stick(d, st, r, k, blocks, kg, clb, ne, st.sp_buf[prev], st.sp_val[prev, 0],
                             st.sp_val[prev, 2])
            if stay >= 0:
                return stay
        else:
            top = h2_ub if prev < 0 else max(h2_ub, st.sp_val[prev, 0])
            if top > 0.0 and top >= d.params[smetric_policy._HIT_RATIO] * float(d.history[r]):
                if prev >= 0:
                    return -1
                i, hit, load = _sp_widest(d, st, r, k, blocks, kg, clb, js)
                if i < 0:
                    return -1
                stay = _sp_stick(d, st, r, k, blocks, kg, clb, ne, i, hit, load)
                if stay >= 0:
                    return stay
    slot = int(d.params[smetric_policy._INDEX_SIZE])
    chosen = _sp_balance(d, st, r, k, blocks, kg, clb, ne, int(st.pstate[k, slot]))
    st.pstate[k, slot] = (chosen + 1) % d.n_routable
    return chosen


@njit(cache=True, _nrt=False)
def _sp_route(d, st, r):
    """The instance the indexed policy chooses for ``r``, or -1 when this decision needs the full view."""
    _sp_update(d, st)
    k = d.replica[r]
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    if d.sparse == SP_SMETRIC_ATTN or d.sparse == SP_SMETRIC_TOKENS:
        return _sp_smetric(d, st, r, k, blocks)
    best = _sp_min(d, st, r, k, blocks, 0, 0.0, np.inf, -1.0)
    return _sp_first(d, st, r, k, 0, blocks, 0, 0.0, 0, d.n_routable, best, -1.0)



refresh_module(sys.modules[__name__])
