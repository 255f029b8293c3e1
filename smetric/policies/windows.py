"""Sliding-window sums per instance kept in a policy's state vector (windowed QPS, Preble's windowed cost).

Layout at ``offset``: ``N_BUCKETS`` bucket epochs (stored as epoch + 1; 0 = never used), then
``n_instances x N_BUCKETS`` sums. A window of ``width`` seconds is cut into ``N_BUCKETS`` buckets;
a bucket is cleared when time reaches it again, so the sum covers the last ``width`` seconds to
within one bucket.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module

N_BUCKETS = 30


def window_size(n_instances: int) -> int:
    """State entries one window over ``n_instances`` instances takes."""
    return N_BUCKETS * (1 + n_instances)


@njit(cache=True)
def _epoch(now, width):
    return int(np.floor(now * N_BUCKETS / width))


@njit(cache=True)
def window_add(state, offset, n_instances, width, now, i, x):
    """Add ``x`` to instance ``i``'s window at time ``now``."""
    epoch = _epoch(now, width)
    slot = epoch % N_BUCKETS
    if state[offset + slot] != epoch + 1:
        state[offset + slot] = epoch + 1
        for k in range(n_instances):
            state[offset + N_BUCKETS + k * N_BUCKETS + slot] = 0.0
    state[offset + N_BUCKETS + i * N_BUCKETS + slot] += x


@njit(cache=True)
def window_sums(state, offset, n_instances, width, now):
    """Per instance, the sum added over the last ``width`` seconds."""
    epoch = _epoch(now, width)
    out = np.zeros(n_instances)
    for slot in range(N_BUCKETS):
        stamp = state[offset + slot] - 1
        if stamp >= 0 and epoch - N_BUCKETS < stamp <= epoch:
            for k in range(n_instances):
                out[k] += state[offset + N_BUCKETS + k * N_BUCKETS + slot]
    return out


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
