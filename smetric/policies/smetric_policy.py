"""SMETRIC: balanced session-centric routing (the paper's policy, Fig. 13 of arXiv 2607.08565).

* Turn 0 (a new session) -> pure load balance: argmin of ``load(i) * (in_flight(i) + 1)`` with
  ``load(i)`` = queued prefill cost + this request's prefill cost on ``i`` (hits of every tier
  count, so the balance is still KV-aware). Ties rotate round-robin (a pointer after the router index in ``state``).
* Turn > 0 -> ``prev`` = the instance with the longest *local* hit (HBM + host DRAM; ties by the
  balance score). Stay there unless
  (a) the hit is below ``hit_ratio`` x the history the previous turn sent (the session's KV was
      evicted: route it like a new session), or a hit of zero (no locality to keep); or
  (b) the guard fails: ``slo`` -- ``load(prev) <= slack * prefill_rate * ttft_slo(L)``, and if no
      instance meets it the request sticks anyway; ``overload`` (the v1 reading) -- the queued
      prefill cost of ``prev`` is at most ``overload_factor`` x the mean over instances; ``none``.
  A failed check sends the request to the balance choice.

Cost models: ``attention`` -- ``n + n (L - n/2) / l_eq`` per request, the queue in the same units
(view column ``V_QUEUED_ATTN``); ``tokens`` -- ``n`` and queued prefill tokens (Dynamo's load).

Cache view (``cache_view``): ``engine`` (default) reads exact engine hits; ``router`` replaces them by
the router's own index of where it sent each prompt block (:mod:`smetric.policies.router_index`; no
eviction feedback, ``index_ttl`` seconds of memory, 0 = no expiry) -- the stick target and every cost
use that match, and the global store is not credited (the index records where blocks were sent, not
what the store holds).

Prefill rate of the SLO guard (``rate``): ``fixed`` -- the cluster constant ``prefill_rate`` of
:class:`~smetric.policies.base.PolicyContext`; ``online`` -- a per-instance estimate from what the
router observes, as the Rust reimplementation in blitz-serving/blitz-router measures its rate online (0.9 quantile of
per-request cost/TTFT over the last 64 requests, at least 8 samples). Policies here see no TTFTs, so a
sample is the queued prefill cost (in the cost model's units) an instance worked off between two
arrivals while its queue stayed non-empty: ``(queue after the previous routing - queue now) / elapsed``
(the router adds work only at arrivals, so a non-empty queue now means a busy instance throughout).
The rate is the ``rate_quantile`` of the last :data:`RATE_WINDOW` samples, or the fixed constant until
``rate_min_samples`` exist. The default quantile is the median, not the Rust's 0.9: a cost/TTFT sample
is a lower bound of the rate (TTFT includes queueing), so a high quantile approaches the rate, while a
drain sample is unbiased with a heavy upper tail (queued work that an admission finds cached drops out
at once) -- on an engine-equivalence case the 0.9 quantile sits 2-8x above the median.
Turn and history come from the request itself (stateless turn detection);
queued prefill and in-flight counts are exact engine state here (KV events + step reports in a deployment).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0, FRACTION, POSITIVE, Range
from .base import R_HISTORY, R_INPUT_LEN, R_NOW, R_TURN, V_IN_FLIGHT, V_QUEUED_ATTN, V_QUEUED_TOKENS, PolicyContext
from .router_index import CACHE_VIEWS, index_insert, index_size, prefix_hits
from .selection import argmin_rotating
from .signals import attention_tokens, local_hit, new_tokens, reusable_hit
from .spec import PolicySpec

PID = 3

GUARDS = ("slo", "overload", "none")
COST_MODELS = ("attention", "tokens")
RATES = ("fixed", "online")
RATE_WINDOW = 64  # samples kept per instance (the Rust reimplementation's window)
_RATE_SLOTS = 4 + RATE_WINDOW  # per instance: observed flag, queue after routing, last time, sample count, ring


def _state_size(ctx: PolicyContext) -> int:
    """Router index, round-robin pointer, per-instance rate estimators."""
    return index_size(ctx) + 1 + ctx.n_instances * _RATE_SLOTS


SPEC = PolicySpec(
    "smetric", PID,
    "turn 0: load balance; follow-ups stick to the longest local hit unless evicted or the guard fails",
    "SMetric paper Fig. 13 (arXiv 2607.08565; SLO guard = revised reading, overload guard = v1/MindIE reading; "
    "defaults of the Rust reimplementation)",
    "request turn and history (stateless, from the prompt); per-instance HBM/DRAM/global hits, queued prefill "
    "tokens or attention-aware cost, in-flight requests -- exact engine state here, KV events + step reports "
    "in a deployment",
    params={"hit_ratio": 0.5, "slack": 1.0, "overload_factor": 2.0, "guard": "slo", "cost": "attention",
            "cache_view": "engine", "index_ttl": 0.0, "rate": "fixed", "rate_quantile": 0.5, "rate_min_samples": 8},
    choices={"guard": GUARDS, "cost": COST_MODELS, "cache_view": CACHE_VIEWS, "rate": RATES},
    context=("l_eq", "prefill_rate", "ttft_base", "ttft_per_1k", "block_size"),
    constants=lambda ctx: [index_size(ctx)],
    state_size=_state_size,
    ranges={"hit_ratio": FRACTION, "slack": POSITIVE, "overload_factor": POSITIVE, "index_ttl": AT_LEAST_0,
            "rate_quantile": Range(0.0, 1.0, lo_open=True), "rate_min_samples": Range(1.0, RATE_WINDOW, integer=True)})

(_HIT_RATIO, _SLACK, _OVERLOAD, _GUARD, _COST, _VIEW, _TTL, _RATE_MODE, _QUANTILE, _MIN_SAMPLES,
 _L_EQ, _RATE, _TTFT_BASE, _TTFT_PER_1K, _B) = SPEC.slots(
    "hit_ratio", "slack", "overload_factor", "guard", "cost", "cache_view", "index_ttl", "rate", "rate_quantile",
    "rate_min_samples", "l_eq", "prefill_rate", "ttft_base", "ttft_per_1k", "block_size")
_INDEX_SIZE = len(SPEC.params) + len(SPEC.context)  # the first constant
_SLO = SPEC.code("guard", "slo")
_OVERLOADED = SPEC.code("guard", "overload")
_TOKENS = SPEC.code("cost", "tokens")
_ROUTER = SPEC.code("cache_view", "router")
_ONLINE = SPEC.code("rate", "online")


def indexable(params) -> str | None:
    """The cost model (``"attention"`` or ``"tokens"``) when the engine may decide this configuration from its
    routing index instead of the full view (:mod:`smetric.cluster.engine.routing_index`), else ``None``.

    Indexable: the ``engine`` cache view, the ``fixed`` rate and the ``slo`` or ``none`` guard -- the balance
    score is monotone in the queued prefill and the in-flight count, and the SLO test is an existence test over
    loads. The full view is needed by the ``router`` cache view (its prefix index records every decision), the
    ``online`` rate (every instance's estimator observes every arrival) and the ``overload`` guard (a mean over
    every instance)."""
    if (params[_VIEW] == _ROUTER or params[_RATE_MODE] == _ONLINE or params[_GUARD] == _OVERLOADED):
        return None
    return "tokens" if params[_COST] == _TOKENS else "attention"


@njit(cache=True)
def _hits(view, req, blocks, params, state):
    """Per instance: (local hit, reusable hit) -- engine hits, or both the router index's match."""
    n = view.shape[0]
    prompt = req[R_INPUT_LEN]
    if params[_VIEW] == _ROUTER:
        match = prefix_hits(view, prompt, blocks, state, int(params[_INDEX_SIZE]), True, req[R_NOW], params[_TTL], 0,
                            params[_B])
        return match, match.copy()
    local = np.empty(n)
    reusable = np.empty(n)
    for i in range(n):
        local[i] = local_hit(view, i)
        reusable[i] = reusable_hit(view, i)
    return local, reusable


@njit(cache=True)
def _costs(view, req, params, reusable):
    """Per instance: (queued prefill cost, queued + this request's prefill cost) in the chosen cost model."""
    n = view.shape[0]
    prompt = req[R_INPUT_LEN]
    queued = np.empty(n)
    load = np.empty(n)
    for i in range(n):
        new = new_tokens(prompt, reusable[i])
        if params[_COST] == _TOKENS:
            queued[i] = view[i, V_QUEUED_TOKENS]
            load[i] = queued[i] + new
        else:
            queued[i] = view[i, V_QUEUED_ATTN]
            load[i] = queued[i] + attention_tokens(new, prompt, params[_L_EQ])
    return queued, load


@njit(cache=True)
def _observe_rates(queued, now, params, state):
    """Per-instance prefill rates: record this arrival's drain samples, return the fixed or online estimate."""
    n = queued.shape[0]
    rates = np.full(n, params[_RATE])
    if params[_RATE_MODE] != _ONLINE:
        return rates
    base = int(params[_INDEX_SIZE]) + 1
    for i in range(n):
        s = base + i * _RATE_SLOTS
        if state[s] > 0.0 and now > state[s + 2] and queued[i] > 0.0:
            drained = state[s + 1] - queued[i]
            if drained > 0.0:
                count = int(state[s + 3])
                state[s + 4 + count % RATE_WINDOW] = drained / (now - state[s + 2])
                state[s + 3] = count + 1
        state[s], state[s + 1], state[s + 2] = 1.0, queued[i], now
        have = min(int(state[s + 3]), RATE_WINDOW)
        if have >= params[_MIN_SAMPLES]:
            rates[i] = np.quantile(state[s + 4:s + 4 + have], params[_QUANTILE])
    return rates


@njit(cache=True)
def _guard_passes(prev, queued, load, rates, req, params):
    """Whether the guard lets the request stay on ``prev``."""
    if params[_GUARD] == _SLO:
        slo = params[_TTFT_BASE] + params[_TTFT_PER_1K] * req[R_INPUT_LEN] / 1000.0
        budget = params[_SLACK] * rates * slo
        if load[prev] <= budget[prev]:
            return True
        return not np.any(load <= budget)  # nobody meets the SLO: stick
    if params[_GUARD] == _OVERLOADED:
        return queued[prev] <= params[_OVERLOAD] * queued.mean()
    return True


@njit(cache=True)
def _decide(view, req, params, state, local, queued, load, rates):
    """The instance chosen (module docstring); ``state[index size]`` is the round-robin tie pointer."""
    n = view.shape[0]
    score = np.empty(n)
    for i in range(n):
        score[i] = load[i] * (view[i, V_IN_FLIGHT] + 1.0)
    if req[R_TURN] > 0:
        prev = 0
        for i in range(1, n):
            if local[i] > local[prev] or (local[i] == local[prev] and score[i] < score[prev]):
                prev = i
        hit = local[prev]
        if hit > 0.0 and hit >= params[_HIT_RATIO] * req[R_HISTORY] and _guard_passes(prev, queued, load, rates, req,
                                                                                       params):
            return prev
    rr = int(params[_INDEX_SIZE])
    chosen = argmin_rotating(score, state[rr])
    state[rr] = (chosen + 1) % n
    return chosen


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The SMETRIC decision; then the router index and the rate estimator record what was routed where."""
    local, reusable = _hits(view, req, blocks, params, state)
    queued, load = _costs(view, req, params, reusable)
    rates = _observe_rates(queued, req[R_NOW], params, state)
    chosen = _decide(view, req, params, state, local, queued, load, rates)
    if params[_VIEW] == _ROUTER:
        index_insert(state, 0, int(params[_INDEX_SIZE]), blocks, chosen, req[R_NOW])
    if params[_RATE_MODE] == _ONLINE:
        state[int(params[_INDEX_SIZE]) + 1 + chosen * _RATE_SLOTS + 1] += load[chosen] - queued[chosen]
    return chosen


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
