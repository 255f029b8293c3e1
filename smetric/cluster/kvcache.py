"""numba KV-cache structures on plain arrays: an open-addressing hash map and intrusive LRU lists.

Blocks are dense ids ``0..U-1``. A per-instance tier (HBM or host DRAM) keeps its entries in
``capacity`` slots; a hash row ``keys``/``vals`` (linear probing, backward-shift deletion) maps a
block id to its slot, and a doubly linked list over slots (``prev``/``next``, head = least
recently used) orders the evictable entries. The global store indexes its arrays by block id
directly (one cluster-wide LRU). All functions are ``@njit(cache=True)`` and allocation-free.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module

__all__ = ["table_size", "new_table", "h_find", "h_insert", "h_delete", "lru_push_tail", "lru_unlink"]

_GOLDEN = np.uint64(11400714819323198485)  # 2**64 / golden ratio (Fibonacci hashing)


def table_size(capacity: int) -> tuple[int, int]:
    """(size, shift) of a hash row for ``capacity`` keys: a power of two >= 2 * capacity (load <= 1/2)."""
    bits = max(1, int(2 * max(capacity, 1) - 1).bit_length())
    return 1 << bits, 64 - bits


def new_table(rows: int, capacity: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Empty ``keys`` (-1) and ``vals`` arrays of ``rows`` hash rows, with the row's (mask, shift)."""
    size, shift = table_size(capacity)
    return np.full((rows, size), -1, dtype=np.int64), np.zeros((rows, size), dtype=np.int64), size - 1, shift


@njit(cache=True)
def _home(key, shift):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))


@njit(cache=True)
def h_find(keys, vals, shift, mask, key):
    """Slot of ``key`` in one hash row, or -1."""
    h = _home(key, shift)
    while True:
        k = keys[h]
        if k == key:
            return vals[h]
        if k == -1:
            return -1
        h = (h + 1) & mask


@njit(cache=True)
def h_insert(keys, vals, shift, mask, key, val):
    """Insert ``key -> val`` (``key`` must be absent)."""
    h = _home(key, shift)
    while keys[h] != -1:
        h = (h + 1) & mask
    keys[h] = key
    vals[h] = val


@njit(cache=True)
def h_delete(keys, vals, shift, mask, key):
    """Remove ``key`` (must be present), shifting later probes back so no tombstones are needed."""
    h = _home(key, shift)
    while keys[h] != key:
        h = (h + 1) & mask
    hole = h
    j = h
    while True:
        j = (j + 1) & mask
        k = keys[j]
        if k == -1:
            break
        home = _home(k, shift)
        # move k into the hole unless its home lies cyclically in (hole, j]
        if (j > hole and (home <= hole or home > j)) or (j < hole and (home <= hole and home > j)):
            keys[hole] = k
            vals[hole] = vals[j]
            hole = j
    keys[hole] = -1


@njit(cache=True)
def lru_push_tail(prev, nxt, ends, slot):
    """Append ``slot`` at the most-recent end; ``ends`` = [head, tail] (-1 when empty)."""
    tail = ends[1]
    prev[slot] = tail
    nxt[slot] = -1
    if tail >= 0:
        nxt[tail] = slot
    else:
        ends[0] = slot
    ends[1] = slot


@njit(cache=True)
def lru_unlink(prev, nxt, ends, slot):
    """Remove ``slot`` from the list."""
    p = prev[slot]
    q = nxt[slot]
    if p >= 0:
        nxt[p] = q
    else:
        ends[0] = q
    if q >= 0:
        prev[q] = p
    else:
        ends[1] = p
    prev[slot] = -1
    nxt[slot] = -1


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
