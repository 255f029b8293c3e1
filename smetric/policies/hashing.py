"""A 64-bit mixer (splitmix64 finaliser) for hash-based routing structures, exact in float64 state.

Hashes are cut to 52 bits and shifted to ``1 .. 2**52`` so that they survive a round trip through the
float64 state vector and never equal 0 (the "empty" marker).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S12 = np.uint64(12)


@njit(cache=True)
def mix64(x):
    """splitmix64 finaliser of a uint64."""
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


@njit(cache=True)
def hash52(value, salt):
    """A well-mixed hash of the int64 pair ``(value, salt)`` as a float in ``1 .. 2**52``."""
    x = mix64(np.uint64(value) + _GOLDEN * (np.uint64(salt) + np.uint64(1)))
    return float(x >> _S12) + 1.0


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
