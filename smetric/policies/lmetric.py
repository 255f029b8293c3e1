"""LMetric: argmin of new prefill tokens (queued prefill included) x (batch size + 1).

``P_i = queued_prefill_tokens_i + (L - local_hit_i)``, ``BS_i = running_i + waiting_i``; the ``+1``
keeps idle instances distinguishable (blitz-router / SGLang gateway ports). Ties are broken
lexicographically by ``(score, BS, P, index)`` as in the SGLang gateway port.

Cache view (``cache_view``): ``engine`` (default) reads the exact local hit (HBM + DRAM); ``router``
reads the router's own index of where it sent each prompt block (:mod:`smetric.policies.router_index`),
which is what blitz-router's prefix tree is: it sees a prefix as soon as it is routed and never sees
engine evictions (``index_ttl`` seconds of memory, 0 = no expiry). Queued prefill tokens and batch size
come from per-step engine reports in blitz-router, exact here. The global store is not credited: LMetric
has no notion of it.
"""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0
from .base import R_INPUT_LEN, R_NOW, V_QUEUED_TOKENS
from .router_index import CACHE_VIEWS, index_size, prefix_hits, remember
from .signals import batch_size, new_tokens
from .spec import PolicySpec

PID = 4

SPEC = PolicySpec(
    "lmetric", PID, "argmin (queued + new prefill tokens) x (batch size + 1); ties by (BS, tokens, index)",
    "LMetric (arXiv 2603.15202, OSDI'26) as in blitz-router policies/lmetric.rs; +1 form of the SGLang gateway port",
    "local HBM/DRAM hit (exact, or with cache_view=router the router's index of routed prompts), queued prefill "
    "tokens, running + waiting requests (per-step engine reports; exact here)",
    params={"cache_view": "engine", "index_ttl": 0.0},
    choices={"cache_view": CACHE_VIEWS},
    context=("block_size",),
    state_size=index_size,
    ranges={"index_ttl": AT_LEAST_0})

_VIEW, _TTL, _B = SPEC.slots("cache_view", "index_ttl", "block_size")
_ROUTER = SPEC.code("cache_view", "router")


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The LMetric decision (module docstring); with the router view the prompt is then recorded under it."""
    prompt = req[R_INPUT_LEN]
    use_router = params[_VIEW] == _ROUTER
    hits = prefix_hits(view, prompt, blocks, state, state.shape[0], use_router, req[R_NOW], params[_TTL], 0,
                       params[_B])
    best = -1
    best_key = (0.0, 0.0, 0.0)
    for i in range(view.shape[0]):
        work = view[i, V_QUEUED_TOKENS] + new_tokens(prompt, hits[i])
        bs = batch_size(view, i)
        key = (work * (bs + 1.0), bs, work)
        if best < 0 or key < best_key:
            best, best_key = i, key
    return remember(state, use_router, blocks, best, req[R_NOW])


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
