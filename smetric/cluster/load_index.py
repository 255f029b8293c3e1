"""Router-side indexes of the numba engine that make a routing decision cost sub-linear in the instances.

Two structures, both on plain preallocated arrays (``@njit(cache=True)``, allocation-free):

* **Holder lists** (block -> instances): for every dense block id, a doubly linked list of the HBM slots and
  one of the DRAM slots that hold it (an entry is ``instance * capacity + slot``), and the number of entries
  ``count[b]`` (HBM + DRAM). They are kept on every insert into and removal from a tier, so the instances whose
  local (HBM or DRAM) prefix reaches past block ``j`` of a prompt are exactly the holders of block ``j``
  (every tier is prefix-closed along a chain, see ``docs/engine.md``).
* **Min-trees** over the routable instances (a segment tree with ``size`` leaves, node 1 the root, leaf ``i``
  at ``size + i``): ``tree[0]`` the minimum of one load column (queued prefill), ``tree[1 + k]`` the minimum
  of replica ``k``'s in-flight count. A subtree's minima bound every score that is monotone in both columns,
  which lets a search skip the subtrees that cannot hold the minimum.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module

__all__ = ["tree_size", "new_trees", "tree_set", "tree_rebuild", "holder_link", "holder_unlink"]


def tree_size(n: int) -> int:
    """Leaves of a min-tree over ``n`` instances: the smallest power of two >= max(n, 2)."""
    if n < 1:
        raise ValueError(f"tree_size needs n >= 1, got {n}")
    return 1 << max(1, int(n - 1).bit_length())


def new_trees(n: int, rows: int) -> np.ndarray:
    """``rows`` min-trees over ``n`` instances, every real leaf 0 and every padding leaf +inf."""
    size = tree_size(n)
    tree = np.full((rows, 2 * size), np.inf)
    tree[:, size:size + n] = 0.0
    for j in range(size - 1, 0, -1):
        tree[:, j] = np.minimum(tree[:, 2 * j], tree[:, 2 * j + 1])
    return tree


@njit(cache=True, _nrt=False)
def tree_set(row, size, i, value):
    """Set leaf ``i`` of the min-tree ``row`` to ``value`` and update its ancestors (stops where nothing changes)."""
    j = size + i
    if row[j] == value:
        return
    row[j] = value
    j //= 2
    while j >= 1:
        m = min(row[2 * j], row[2 * j + 1])
        if row[j] == m:
            return
        row[j] = m
        j //= 2


@njit(cache=True, _nrt=False)
def tree_rebuild(row, size):
    """Recompute every inner node of ``row`` from its leaves."""
    for j in range(size - 1, 0, -1):
        row[j] = min(row[2 * j], row[2 * j + 1])


@njit(cache=True, _nrt=False)
def holder_link(head, links, count, block, entry):
    """Add ``entry`` (``instance * capacity + slot``) to ``block``'s holder list (``links[0]`` next, ``[1]`` prev)."""
    h = head[block]
    links[0, entry] = h
    links[1, entry] = -1
    if h >= 0:
        links[1, h] = entry
    head[block] = entry
    count[block] += 1


@njit(cache=True, _nrt=False)
def holder_unlink(head, links, count, block, entry):
    """Remove ``entry`` from ``block``'s holder list."""
    nxt = links[0, entry]
    prv = links[1, entry]
    if prv >= 0:
        links[0, prv] = nxt
    else:
        head[block] = nxt
    if nxt >= 0:
        links[1, nxt] = prv
    count[block] -= 1


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
