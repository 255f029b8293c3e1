"""Choosing one instance from per-instance scores: arg-extrema with each source's tie rule, and sampling.

Uniform draws come from the request's ``rand`` vector (see :mod:`smetric.policies.base`).
Ties are exact float equality, as in the routers' own code.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module


@njit(cache=True)
def argmin_first(x):
    """Index of the smallest value; ties go to the lowest index."""
    best = 0
    for i in range(1, x.shape[0]):
        if x[i] < x[best]:
            best = i
    return best


@njit(cache=True)
def argmin_rotating(x, start):
    """Index of the smallest value; ties go to the first one at or after ``start`` (cyclically)."""
    n = x.shape[0]
    lo = x.min()
    for k in range(n):
        i = (int(start) + k) % n
        if x[i] == lo:
            return i
    return 0


@njit(cache=True)
def pick_tied(mask, u):
    """A uniformly chosen index among those where ``mask`` is true (``u`` uniform in [0, 1)); -1 if none."""
    count = 0
    for i in range(mask.shape[0]):
        if mask[i]:
            count += 1
    if count == 0:
        return -1
    k = min(int(u * count), count - 1)
    for i in range(mask.shape[0]):
        if mask[i]:
            if k == 0:
                return i
            k -= 1
    return -1


@njit(cache=True)
def argmin_random(x, u):
    """Index of the smallest value; ties broken uniformly at random."""
    return pick_tied(x == x.min(), u)


@njit(cache=True)
def argmax_random(x, u):
    """Index of the largest value; ties broken uniformly at random."""
    return pick_tied(x == x.max(), u)


@njit(cache=True)
def sample_weighted(w, u):
    """Index drawn with probability proportional to the non-negative weights ``w`` (inverse CDF);
    uniform when they sum to zero."""
    total = 0.0
    for i in range(w.shape[0]):
        total += w[i]
    if not total > 0.0:
        return min(int(u * w.shape[0]), w.shape[0] - 1)
    target = u * total
    acc = 0.0
    last = 0
    for i in range(w.shape[0]):
        if w[i] > 0.0:
            acc += w[i]
            last = i
            if target < acc:
                return i
    return last


@njit(cache=True)
def minmax(x):
    """``(x - min) / (max - min)``, all zeros when the values are equal."""
    lo = x.min()
    span = x.max() - lo
    out = np.zeros(x.shape[0])
    if span > 0.0:
        for i in range(x.shape[0]):
            out[i] = (x[i] - lo) / span
    return out


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
