"""LMetric: argmin of new prefill tokens (queued prefill included) x (batch size + 1).

``P_i = queued_prefill_tokens_i + (L - local_hit_i)``, ``BS_i = running_i + waiting_i``; the ``+1``
keeps idle instances distinguishable (blitz-router / SGLang gateway ports). Ties are broken
lexicographically by ``(score, BS, P, index)`` as in the SGLang gateway port.

Freshness: hits are exact local engine state here (LMetric's router keeps its own prefix tree,
which does not see evictions); queued prefill tokens and batch size come from per-step engine
reports in blitz-router, exact here. The global store is not credited: LMetric has no notion of it.
"""

from __future__ import annotations

from numba import njit

from .base import R_INPUT_LEN, V_QUEUED_TOKENS
from .signals import batch_size, local_hit, new_tokens
from .spec import PolicySpec

PID = 4

SPEC = PolicySpec(
    "lmetric", PID, "argmin (queued + new prefill tokens) x (batch size + 1); ties by (BS, tokens, index)",
    "LMetric (arXiv 2603.15202, OSDI'26) as in blitz-router policies/lmetric.rs; +1 form of the SGLang gateway port",
    "local HBM/DRAM hit, queued prefill tokens, running + waiting requests (per-step engine reports; exact here)")


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The LMetric decision (module docstring)."""
    prompt = req[R_INPUT_LEN]
    best = -1
    best_key = (0.0, 0.0, 0.0)
    for i in range(view.shape[0]):
        work = view[i, V_QUEUED_TOKENS] + new_tokens(prompt, local_hit(view, i))
        bs = batch_size(view, i)
        key = (work * (bs + 1.0), bs, work)
        if best < 0 or key < best_key:
            best, best_key = i, key
    return best
