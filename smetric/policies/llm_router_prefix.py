"""zxuhan/llm-router ``prefixaware`` (llm-router-prefix): the longest router-side prefix match, load as the tie rule.

The router (``internal/router/prefixaware.go``, ``chunker.go``, ``internal/prefixtree/tree.go``,
``internal/proxy/proxy.go``; the cloud sweep's settings in ``scripts/bench/cloud-vllm.sh`` @ ``53c750f``) keeps, per
backend, a radix tree of the prompts it *dispatched* there (not what the engine cached; updated before the request
is sent; its optional chunk budget with LRU eviction is not modelled: the index here holds several times the
engines' KV) and the backend's in-flight count (acquired at dispatch, released after the whole response). Per
request:

1. each candidate's match is the number of leading chunks of the prompt present in its tree;
2. candidates are shuffled, then stably sorted by (match desc, in flight asc): the best is uniformly random
   among those tied on both (``rand[0]``);
3. a best match under ``min_match`` (2) -> least in flight, ties to the lowest index (the fallback router);
4. a best candidate with ``saturation`` (4) or more in flight -> the first later candidate in that order with
   match >= ``min_match`` and fewer than ``saturation`` in flight (uniformly random among those tied on both keys,
   ``rand[1]``), else least in flight; ``saturation = 0`` disables this valve.

**Chunks as blocks (an approximation).** The router hashes 32-*byte* chunks of a routing string
(``role[name]:content\\n`` per message, FNV-1a, the last chunk partial); the workload carries token blocks. Here a
match is counted in the prompt's KV blocks (the engine's block size, 16 tokens), through the router index of
:mod:`smetric.policies.router_index`. Both units grow monotonically with the shared prefix and both stop at the
same divergence point, so the order of the candidates' matches and their ties are the router's whenever the
prompts' shared prefixes differ by more than a block; ``min_match`` compares blocks with the router's chunk count
(1 block ~ 1 chunk where the text tokenises at 2 bytes per token, as the zxuhan/llm-router system message of
one-letter runs does; 16 tokens of its random-byte user text are ~19 bytes). In that workload every shared match
is at least the ~190-chunk system message, so the threshold only separates "some prefix" from "none".

Freshness: the trees and in-flight counts are router-side bookkeeping (exact); nothing is read from engines.
"""

from __future__ import annotations

from numba import njit

from ..ranges import integer
from .base import R_NOW, V_IN_FLIGHT
from .router_index import index_insert, index_match, index_size
from .selection import argmin_first, pick_tied
from .spec import PolicySpec

PID = 18

SPEC = PolicySpec(
    "llm-router-prefix", PID,
    "longest router-side prefix match (>= min_match), fewest in flight among equals; spill past saturation",
    "zxuhan/llm-router internal/router/prefixaware.go + internal/prefixtree/tree.go + internal/proxy/proxy.go; "
    "min_match 2 (config default), saturation 4 (scripts/bench/cloud-vllm.sh @ 53c750f)",
    "the router's own per-backend tree of dispatched prompts (no engine feedback) and in-flight requests (exact)",
    params={"min_match": 2, "saturation": 4}, ranges={"min_match": integer(0), "saturation": integer(0)},
    state_size=index_size)

_MIN, _SAT = SPEC.slots("min_match", "saturation")


@njit(cache=True)
def _best(eligible, match, load, u):
    """Among ``eligible`` candidates, uniformly one of those with the longest match and, among them, the fewest in
    flight (``u`` uniform); -1 if none is eligible."""
    top, low = -1.0, 0.0
    for i in range(match.shape[0]):
        if eligible[i] and (match[i] > top or (match[i] == top and load[i] < low)):
            top, low = match[i], load[i]
    if top < 0.0:
        return -1
    return pick_tied(eligible & (match == top) & (load == low), u)


@njit(cache=True)
def decide(view, req, blocks, params, state, rand):
    """The prefixaware choice, without recording the prompt (module docstring, steps 1-4)."""
    n = view.shape[0]
    load = view[:, V_IN_FLIGHT]
    match = index_match(state, 0, state.shape[0], blocks, n, req[R_NOW], 0.0, 0)
    best = _best(match >= 0.0, match, load, rand[0])
    if match[best] < params[_MIN]:
        return argmin_first(load)
    sat = params[_SAT]
    if sat <= 0.0 or load[best] < sat:
        return best
    spill = _best((match >= params[_MIN]) & (load < sat), match, load, rand[1])
    return spill if spill >= 0 else argmin_first(load)


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The prefixaware choice; the prompt is then recorded under it (before dispatch, as the proxy does)."""
    chosen = decide(view, req, blocks, params, state, rand)
    index_insert(state, 0, state.shape[0], blocks, chosen, req[R_NOW])
    return chosen
