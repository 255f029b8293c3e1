"""A consistent-hash ring kept in a policy's float64 state: ``vnodes`` points per instance, sorted.

Point ``v`` of instance ``i`` sits at ``hash52(i * vnodes + v, salt)`` (:mod:`smetric.policies.hashing`), a fixed,
deterministic hash of ``(instance, replica)``. The ring occupies ``2 * vnodes * n`` entries from ``offset``:
the sorted point hashes, then the owner of each point. A key's first point is the first one at or after the
key's hash, wrapping to the start (``sort.Search`` / ``searchsorted``), as in ketama-style rings.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from .hashing import hash52


@njit(cache=True)
def ring_size(n_instances, vnodes):
    """State entries of a ring of ``vnodes`` points per instance."""
    return 2 * vnodes * n_instances


@njit(cache=True)
def build_ring(state, offset, n, vnodes, salt):
    """Fill ``state[offset : offset + 2m]`` (``m = vnodes * n``): sorted point hashes, then their owners."""
    m = vnodes * n
    points = np.empty(m)
    for i in range(n):
        for v in range(vnodes):
            points[i * vnodes + v] = hash52(i * vnodes + v, salt)
    order = np.argsort(points)
    for k in range(m):
        state[offset + k] = points[order[k]]
        state[offset + m + k] = order[k] // vnodes


@njit(cache=True)
def first_point(state, offset, m, key_hash):
    """Index (0 .. m-1) of the first ring point at or after ``key_hash``, wrapping past the last one."""
    k = np.searchsorted(state[offset:offset + m], key_hash)
    return 0 if k == m else k


@njit(cache=True)
def point_owner(state, offset, m, k):
    """The instance owning ring point ``k``."""
    return int(state[offset + m + k])


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
