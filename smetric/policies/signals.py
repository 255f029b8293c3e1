"""Per-instance signals derived from the view: local and reusable hits, new prefill tokens, load signals, prefill cost.

"Local" means the instance's own tiers (HBM plus its host DRAM); "reusable" adds the global
store, whose hits continue the local ones (see :mod:`smetric.policies.base`).
"""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module
from .base import V_HIT_DRAM, V_HIT_GLOBAL, V_HIT_HBM, V_IN_FLIGHT, V_N_RUNNING, V_N_WAITING, V_QUEUED_TOKENS

# codes of the load signals shared by least-load and power-of-two
LOAD_SIGNALS = ("in_flight", "queued_tokens", "batch_size")


@njit(cache=True)
def local_hit(view, i):
    """Prompt tokens of the longest prefix cached on instance ``i`` itself (HBM + host DRAM)."""
    return view[i, V_HIT_HBM] + view[i, V_HIT_DRAM]


@njit(cache=True)
def reusable_hit(view, i):
    """Prompt tokens instance ``i`` need not compute: its local hit plus what the global store continues."""
    return view[i, V_HIT_HBM] + view[i, V_HIT_DRAM] + view[i, V_HIT_GLOBAL]


@njit(cache=True)
def new_tokens(prompt, hit):
    """Prefill tokens left to compute for a ``prompt``-token request with ``hit`` cached tokens (>= 0)."""
    return max(prompt - hit, 0.0)


@njit(cache=True)
def attention_tokens(new, prompt, l_eq):
    """Attention-aware prefill cost in token units: ``n + n (L - n/2) / l_eq`` (SMETRIC's cost model)."""
    return new + new * (prompt - 0.5 * new) / l_eq


@njit(cache=True)
def batch_size(view, i):
    """Requests in the running batch plus those waiting for admission (LMetric's BS)."""
    return view[i, V_N_RUNNING] + view[i, V_N_WAITING]


@njit(cache=True)
def load_signal(view, i, code):
    """Load of instance ``i`` by the signal ``LOAD_SIGNALS[code]``: in-flight, queued prefill tokens or batch size."""
    if code == 1.0:
        return view[i, V_QUEUED_TOKENS]
    if code == 2.0:
        return view[i, V_N_RUNNING]
    return view[i, V_IN_FLIGHT]


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
