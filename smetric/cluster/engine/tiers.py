"""The KV tiers: each instance's HBM cache (pinned entries and an LRU of unpinned ones) and DRAM tier, the global
store, prefix hits by binary search (every tier is prefix-closed along a chain), and the tiers' writes: spills,
write-through and the store's LRU. With the routing index on, every entry is also linked into its block's holder
list (:mod:`smetric.cluster.load_index`).
"""

from __future__ import annotations

import sys

from numba import njit

from ...numba_cache import refresh_module
from ..kvcache import h_delete, h_find, h_insert, lru_push_tail, lru_unlink
from ..load_index import holder_link, holder_unlink
from .layout import (
    DS_BLOCK,
    DS_NEXT,
    DS_PREV,
    G_HEAD,
    G_SIZE,
    G_TAIL,
    GF_NOW,
    GF_WRITE,
    HS_BLOCK,
    HS_NEXT,
    HS_PREV,
    HS_REF,
    II_CACHED,
    II_DNFREE,
    II_DSIZE,
    II_NFREE,
    II_PINNED,
    II_PRIV,
    RI_PRIV,
    SP_OFF,
)
from .transfers import _pool_start


@njit(cache=True, _nrt=False)
def _hbm_slot(d, st, i, block):
    return h_find(st.hkeys[i], st.hvals[i], d.hshift, d.hmask, block)


@njit(cache=True, _nrt=False)
def _dram_slot(d, st, i, block):
    if d.dram_slots == 0:
        return -1
    return h_find(st.dkeys[i], st.dvals[i], d.dshift, d.dmask, block)


@njit(cache=True, _nrt=False)
def _prefix_len(d, st, i, blocks, lo, tier):
    """Leading blocks present (binary search; every tier is prefix-closed). tier 0: HBM, 1: HBM or
    DRAM, 2: the global store. ``lo`` leading blocks are known present."""
    hi = blocks.shape[0]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        b = blocks[mid - 1]
        if tier == 2:
            present = st.g_in[b] != 0
        else:
            present = _hbm_slot(d, st, i, b) >= 0
            if not present and tier == 1:
                present = _dram_slot(d, st, i, b) >= 0
        if present:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(cache=True, _nrt=False)
def _hits(d, st, i, blocks, k_global):
    """(k1, k2, k3): leading blocks in HBM; HBM or DRAM; HBM, DRAM or the global store. Without
    ``d.hbm_reuse`` HBM serves no hit (k1 = 0): its blocks count only where DRAM would serve them."""
    k1 = _prefix_len(d, st, i, blocks, 0, 0) if d.hbm_reuse else 0
    k2 = _prefix_len(d, st, i, blocks, k1, 1) if d.dram_slots > 0 else k1
    return k1, k2, max(k2, k_global)


@njit(cache=True, _nrt=False)
def _hit_tokens(d, st, i, r, blocks, k_global):
    """(k1, k2, k3, h1, h2, h3): the leading blocks of :func:`_hits` and the token hits per tier, each
    counting the parent's partial tail when the hit reaches its position and the tier holds it."""
    k1, k2, k3 = _hits(d, st, i, blocks, k_global)
    tier = 3  # of the parent's partial tail -- 0: HBM, 1: DRAM, 2: global store, 3: absent (or not reached)
    if _reaches_tail(d, r, k1, k2, k3):
        b = d.tail_id[r]
        in_hbm = _hbm_slot(d, st, i, b) >= 0
        if in_hbm and d.hbm_reuse:
            tier = 0
        elif (in_hbm and d.dram_slots > 0) or _dram_slot(d, st, i, b) >= 0:  # without HBM reuse: where DRAM serves
            tier = 1
        elif d.global_slots > 0 and st.g_in[b] != 0:
            tier = 2
    h1, h2, h3 = _token_hits(d, r, k1, k2, k3, tier)
    return k1, k2, k3, h1, h2, h3


@njit(cache=True, _nrt=False)
def _reaches_tail(d, r, k1, k2, k3):
    """A hit of ``k1``, ``k2`` or ``k3`` leading blocks reaches the position of ``r``'s parent's partial tail."""
    tp = d.tail_pos[r]
    return tp >= 0 and (k1 == tp or k2 == tp or k3 == tp)


@njit(cache=True, _nrt=False)
def _token_hits(d, r, k1, k2, k3, tier):
    """(h1, h2, h3): the token hits of ``k1, k2, k3`` leading blocks, each with the parent's partial tail when
    the hit reaches its position and the tail's ``tier`` is that tier or a faster one; at most ``L - 1``."""
    L = d.input_len[r]
    tp = d.tail_pos[r]
    tok = d.tail_tok[r]
    h1 = k1 * d.block_size + (tok if k1 == tp and tier <= 0 else 0)
    h2 = k2 * d.block_size + (tok if k2 == tp and tier <= 1 else 0)
    h3 = k3 * d.block_size + (tok if k3 == tp and tier <= 2 else 0)
    return min(h1, L - 1), min(h2, L - 1), min(h3, L - 1)


@njit(cache=True, _nrt=False)
def _global_prefix(d, st, blocks):
    if d.global_slots == 0:
        return 0
    return _prefix_len(d, st, 0, blocks, 0, 2)


@njit(cache=True, _nrt=False)
def _dram_touch(d, st, i, block):
    s = _dram_slot(d, st, i, block)
    if s >= 0:
        ds = st.dslot[i]
        lru_unlink(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)
        lru_push_tail(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)


@njit(cache=True, _nrt=False)
def _dram_spill(d, st, i, block):
    """``block`` enters this instance's DRAM tier as its most recent block (one already there is only
    touched), evicting its LRU block: an HBM eviction (``spill``) or a prompt write (``write-through``)."""
    if d.dram_slots == 0:
        return
    ds = st.dslot[i]
    s = _dram_slot(d, st, i, block)
    if s >= 0:
        lru_unlink(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)
        lru_push_tail(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)
        return
    if st.ii[i, II_DSIZE] == d.dram_slots:
        old = st.dends[i, 0]
        lru_unlink(ds[DS_PREV], ds[DS_NEXT], st.dends[i], old)
        h_delete(st.dkeys[i], st.dvals[i], d.dshift, d.dmask, ds[DS_BLOCK, old])
        if d.sparse != SP_OFF:
            holder_unlink(st.h_head[1], st.h_dl, st.h_count, ds[DS_BLOCK, old], i * d.dram_slots + old)
        st.dfree[i, st.ii[i, II_DNFREE]] = old
        st.ii[i, II_DNFREE] += 1
        st.ii[i, II_DSIZE] -= 1
    st.ii[i, II_DNFREE] -= 1
    s = st.dfree[i, st.ii[i, II_DNFREE]]
    ds[DS_BLOCK, s] = block
    h_insert(st.dkeys[i], st.dvals[i], d.dshift, d.dmask, block, s)
    if d.sparse != SP_OFF:
        holder_link(st.h_head[1], st.h_dl, st.h_count, block, i * d.dram_slots + s)
    if d.kv_delay > 0.0:
        st.seen[d.seen_dram + i * d.dram_slots + s] = st.gf[GF_NOW]
    lru_push_tail(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)
    st.ii[i, II_DSIZE] += 1


@njit(cache=True, _nrt=False)
def _hbm_pin(d, st, i, slot):
    hs = st.hslot[i]
    if hs[HS_REF, slot] == 0:
        lru_unlink(hs[HS_PREV], hs[HS_NEXT], st.hends[i], slot)
        st.ii[i, II_PINNED] += 1
    hs[HS_REF, slot] += 1


@njit(cache=True, _nrt=False)
def _hbm_unpin(d, st, i, block):
    hs = st.hslot[i]
    slot = _hbm_slot(d, st, i, block)
    hs[HS_REF, slot] -= 1
    if hs[HS_REF, slot] == 0:
        lru_push_tail(hs[HS_PREV], hs[HS_NEXT], st.hends[i], slot)
        st.ii[i, II_PINNED] -= 1


@njit(cache=True, _nrt=False)
def _hbm_insert_pinned(d, st, i, block):
    st.ii[i, II_NFREE] -= 1
    slot = st.hfree[i, st.ii[i, II_NFREE]]
    hs = st.hslot[i]
    hs[HS_BLOCK, slot] = block
    hs[HS_REF, slot] = 1
    hs[HS_PREV, slot] = -1
    hs[HS_NEXT, slot] = -1
    h_insert(st.hkeys[i], st.hvals[i], d.hshift, d.hmask, block, slot)
    if d.sparse != SP_OFF:
        holder_link(st.h_head[0], st.h_hl, st.h_count, block, i * d.hbm_blocks + slot)
    if d.kv_delay > 0.0:
        st.seen[i * d.hbm_blocks + slot] = st.gf[GF_NOW]
    st.ii[i, II_CACHED] += 1
    st.ii[i, II_PINNED] += 1


@njit(cache=True, _nrt=False)
def _hbm_keep(d, st, i, r, block):
    """One block of ``r``'s reserved KV joins ``i``'s HBM cache pinned (or pins the copy already cached)."""
    slot = _hbm_slot(d, st, i, block)
    if slot >= 0:
        _hbm_pin(d, st, i, slot)
    else:
        _hbm_insert_pinned(d, st, i, block)
    st.ii[i, II_PRIV] -= 1
    st.ri[r, RI_PRIV] -= 1


@njit(cache=True, _nrt=False)
def _hbm_evict_lru(d, st, i):
    hs = st.hslot[i]
    slot = st.hends[i, 0]
    block = hs[HS_BLOCK, slot]
    lru_unlink(hs[HS_PREV], hs[HS_NEXT], st.hends[i], slot)
    h_delete(st.hkeys[i], st.hvals[i], d.hshift, d.hmask, block)
    if d.sparse != SP_OFF:
        holder_unlink(st.h_head[0], st.h_hl, st.h_count, block, i * d.hbm_blocks + slot)
    st.hfree[i, st.ii[i, II_NFREE]] = slot
    st.ii[i, II_NFREE] += 1
    st.ii[i, II_CACHED] -= 1
    if not d.dram_write:
        _dram_spill(d, st, i, block)


@njit(cache=True, _nrt=False)
def _global_put(d, st, b, tokens):
    """Touch (or insert) block ``b`` in the global store, evicting its LRU blocks; bytes newly written."""
    if st.g_in[b] != 0:
        lru_unlink(st.g_prev, st.g_next, st.gi[G_HEAD:G_TAIL + 1], b)
        lru_push_tail(st.g_prev, st.g_next, st.gi[G_HEAD:G_TAIL + 1], b)
        return 0.0
    st.g_in[b] = 1
    if d.kv_delay > 0.0:
        st.seen[d.seen_glob + b] = st.gf[GF_NOW]
    lru_push_tail(st.g_prev, st.g_next, st.gi[G_HEAD:G_TAIL + 1], b)
    st.gi[G_SIZE] += 1
    while st.gi[G_SIZE] > d.global_slots:
        old = st.gi[G_HEAD]
        lru_unlink(st.g_prev, st.g_next, st.gi[G_HEAD:G_TAIL + 1], old)
        st.g_in[old] = 0
        st.gi[G_SIZE] -= 1
    return tokens * d.kv_bytes_per_token


@njit(cache=True, _nrt=False)
def _global_write_through(d, st, i, r, t, reply):
    """Write the prompt (and with ``reply`` its reply chain first) to the global store, tail first.

    New bytes count as written; with a connector they also start a write transfer from ``i``'s node."""
    if d.global_slots == 0:
        return
    written = 0.0
    if reply:
        for k in range(d.reply_offsets[r + 1] - 1, d.reply_offsets[r] - 1, -1):
            written += _global_put(d, st, d.reply_ids[k], d.reply_tokens[k])
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    L = d.input_len[r]
    for j in range(blocks.shape[0] - 1, -1, -1):
        written += _global_put(d, st, blocks[j], min(d.block_size, L - j * d.block_size))
    st.gf[GF_WRITE] += written
    if d.conn and written > 0.0:
        _pool_start(d, st, t, (2 if reply else 1) * d.n + r, d.node_of[i], written)



refresh_module(sys.modules[__name__])
