"""Mooncake Conductor, KVCache-centric scheduling (FAST'25, Algorithm 1): argmin estimated TTFT.

For each instance ``p`` with local prefix ``pre_p`` (HBM + host DRAM) and ``best`` = the longest
prefix available anywhere (max over instances of local + global-store hits):

* ``best / pre_p < theta``  -> ``TTFT_p = T_queue,p + T_prefill(L, pre_p)``;
* otherwise (incl. ``pre_p = 0``) -> ``TTFT_p = (best - pre_p) / transfer_rate + T_queue,p + T_prefill(L, best)``.

``T_queue`` is the predicted prefill time already queued on ``p`` and ``T_prefill(L, h)`` the
attention-aware cost of the ``L - h`` new tokens, both ``(n + n (L - n/2) / l_eq) / prefill_rate``
(the same cost model as the engine's ``V_QUEUED_ATTN``). Ties (idle instances holding the same
prefix) are broken uniformly at random: the algorithm does not say, and a fixed order would pile
an idle cluster's requests onto instance 0.

Not modelled: the hot-block migration itself (the engine loads whatever the global store holds,
whatever the router predicted), early rejection, and the decode-instance choice. ``theta`` has no
published value; it is a swept parameter (default 1.5, the middle of the 1.2-2 range).
Freshness: Mooncake's Conductor indexes engine KV events (exact, as here) and predicts queue time.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..ranges import POSITIVE
from .base import R_INPUT_LEN, V_HIT_GLOBAL, V_QUEUED_ATTN
from .selection import argmin_random
from .signals import attention_tokens, local_hit, new_tokens
from .spec import PolicySpec

PID = 13

SPEC = PolicySpec(
    "mooncake", PID,
    "argmin estimated TTFT = transfer + queue + prefill(L, prefix); pull the best prefix if >= theta x local",
    "Mooncake (FAST'25) Algorithm 1, kvcache_balancing_threshold theta (no published default: swept)",
    "local and global-store hits (KV events: exact), queued prefill in attention-aware units (predicted queue time)",
    params={"theta": 1.5, "transfer_rate": 2.5e5}, ranges={"theta": POSITIVE, "transfer_rate": POSITIVE},
    context=("l_eq", "prefill_rate"))

_THETA, _TRANSFER, _L_EQ, _RATE = SPEC.slots("theta", "transfer_rate", "l_eq", "prefill_rate")


@njit(cache=True)
def ttft_estimates(view, req, params):
    """Mooncake's TTFT estimate (seconds) of every instance."""
    n = view.shape[0]
    prompt = req[R_INPUT_LEN]
    best = 0.0
    for i in range(n):
        best = max(best, min(local_hit(view, i) + view[i, V_HIT_GLOBAL], prompt))
    out = np.empty(n)
    for i in range(n):
        pre = min(local_hit(view, i), prompt)
        prefix, transfer = pre, 0.0
        if best > pre and (pre == 0.0 or best / pre >= params[_THETA]):
            prefix, transfer = best, (best - pre) / params[_TRANSFER]
        work = view[i, V_QUEUED_ATTN] + attention_tokens(new_tokens(prompt, prefix), prompt, params[_L_EQ])
        out[i] = transfer + work / params[_RATE]
    return out


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """argmin of the TTFT estimate, ties uniformly at random."""
    return argmin_random(ttft_estimates(view, req, params), rand[0])


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
