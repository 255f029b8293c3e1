"""numba KV-cache structures on plain arrays: an open-addressing hash map and intrusive LRU lists.

Blocks are dense ids ``0..U-1``. A per-instance tier (HBM or host DRAM) keeps its entries in
``capacity`` slots; a hash row (linear probing, backward-shift deletion) maps a block id to its slot,
and a doubly linked list over slots (head = least recently used) orders the evictable entries. The
global store indexes its list by block id directly (one cluster-wide LRU). All functions are
``@njit(cache=True)`` and allocation-free.

Both structures keep what one access reads side by side, so that at a thousand instances (state far
beyond the CPU caches) an access costs one cache line, not one per field: a hash row interleaves each
entry's key and value (``row[2h]``, ``row[2h + 1]``), and a list's links are two adjacent columns
``p, p + 1`` (prev, next) of a per-slot record ``links[slot, :]``, which may carry other fields.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["table_size", "new_table", "h_find", "h_insert", "h_delete", "lru_push_tail", "lru_unlink"]

_GOLDEN = np.uint64(11400714819323198485)  # 2**64 / golden ratio (Fibonacci hashing)


def table_size(capacity: int) -> tuple[int, int]:
    """(size, shift) of a hash row for ``capacity`` keys: a power of two >= 2 * capacity (load <= 1/2)."""
    bits = max(1, int(2 * max(capacity, 1) - 1).bit_length())
    return 1 << bits, 64 - bits


def new_table(rows: int, capacity: int) -> tuple[np.ndarray, int, int]:
    """``rows`` empty hash rows (every key -1, interleaved with its value), with the row's (mask, shift)."""
    size, shift = table_size(capacity)
    table = np.zeros((rows, 2 * size), dtype=np.int64)
    table[:, 0::2] = -1
    return table, size - 1, shift


@njit(cache=True)
def _home(key, shift):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))


@njit(cache=True)
def h_find(row, shift, mask, key):
    """Slot of ``key`` in one hash row, or -1."""
    h = _home(key, shift)
    while True:
        k = row[2 * h]
        if k == key:
            return row[2 * h + 1]
        if k == -1:
            return -1
        h = (h + 1) & mask


@njit(cache=True)
def h_insert(row, shift, mask, key, val):
    """Insert ``key -> val`` (``key`` must be absent)."""
    h = _home(key, shift)
    while row[2 * h] != -1:
        h = (h + 1) & mask
    row[2 * h] = key
    row[2 * h + 1] = val


@njit(cache=True)
def h_delete(row, shift, mask, key):
    """Remove ``key`` (must be present), shifting later probes back so no tombstones are needed."""
    h = _home(key, shift)
    while row[2 * h] != key:
        h = (h + 1) & mask
    hole = h
    j = h
    while True:
        j = (j + 1) & mask
        k = row[2 * j]
        if k == -1:
            break
        home = _home(k, shift)
        # move k into the hole unless its home lies cyclically in (hole, j]
        if (j > hole and (home <= hole or home > j)) or (j < hole and (home <= hole and home > j)):
            row[2 * hole] = k
            row[2 * hole + 1] = row[2 * j + 1]
            hole = j
    row[2 * hole] = -1


@njit(cache=True)
def lru_push_tail(links, p, ends, slot):
    """Append ``slot`` at the most-recent end; ``links[s, p]``/``links[s, p + 1]`` are prev/next, ``ends`` =
    [head, tail] (-1 when empty)."""
    tail = ends[1]
    links[slot, p] = tail
    links[slot, p + 1] = -1
    if tail >= 0:
        links[tail, p + 1] = slot
    else:
        ends[0] = slot
    ends[1] = slot


@njit(cache=True)
def lru_unlink(links, p, ends, slot):
    """Remove ``slot`` from the list."""
    a = links[slot, p]
    b = links[slot, p + 1]
    if a >= 0:
        links[a, p + 1] = b
    else:
        ends[0] = b
    if b >= 0:
        links[b, p] = a
    else:
        ends[1] = a
    links[slot, p] = -1
    links[slot, p + 1] = -1
