"""SMETRIC: balanced session-centric routing (the paper's policy, Fig. 13; paper.md §3.1).

* Turn 0 (a new session) -> pure load balance: argmin of ``load(i) * (in_flight(i) + 1)`` with
  ``load(i)`` = queued prefill cost + this request's prefill cost on ``i`` (hits of every tier
  count, so the balance is still KV-aware). Ties rotate round-robin (pointer in ``state[0]``).
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

Freshness: turn and history come from the request itself (stateless turn detection); hits,
queued prefill and in-flight counts are exact engine state here, which a real deployment gets from
KV events and per-step reports (the Rust reimplementation also estimates ``prefill_rate`` online
from recent requests; here it is the cluster constant of :class:`~smetric.policies.base.PolicyContext`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..ranges import FRACTION, POSITIVE
from .base import R_HISTORY, R_INPUT_LEN, R_TURN, V_IN_FLIGHT, V_QUEUED_ATTN, V_QUEUED_TOKENS
from .selection import argmin_rotating
from .signals import attention_tokens, local_hit, new_tokens, reusable_hit
from .spec import PolicySpec

PID = 3

GUARDS = ("slo", "overload", "none")
COST_MODELS = ("attention", "tokens")

SPEC = PolicySpec(
    "smetric", PID,
    "turn 0: load balance; follow-ups stick to the longest local hit unless evicted or the guard fails",
    "SMetric paper Fig. 13 (arXiv 2607.08565; SLO guard = revised reading, overload guard = v1/MindIE reading; "
    "defaults of the Rust reimplementation)",
    "request turn and history (stateless, from the prompt); per-instance HBM/DRAM/global hits, queued prefill "
    "tokens or attention-aware cost, in-flight requests -- exact engine state here, KV events + step reports "
    "in a deployment",
    params={"hit_ratio": 0.5, "slack": 1.0, "overload_factor": 2.0, "guard": "slo", "cost": "attention"},
    choices={"guard": GUARDS, "cost": COST_MODELS},
    ranges={"hit_ratio": FRACTION, "slack": POSITIVE, "overload_factor": POSITIVE},
    context=("l_eq", "prefill_rate", "ttft_base", "ttft_per_1k"),
    state_size=lambda ctx: 1)

_HIT_RATIO, _SLACK, _OVERLOAD, _GUARD, _COST, _L_EQ, _RATE, _TTFT_BASE, _TTFT_PER_1K = (
    SPEC.slots("hit_ratio", "slack", "overload_factor", "guard", "cost",
               "l_eq", "prefill_rate", "ttft_base", "ttft_per_1k"))
_SLO = SPEC.code("guard", "slo")
_OVERLOADED = SPEC.code("guard", "overload")
_TOKENS = SPEC.code("cost", "tokens")


@njit(cache=True)
def _costs(view, req, params):
    """Per instance: (queued prefill cost, queued + this request's prefill cost) in the chosen cost model."""
    n = view.shape[0]
    prompt = req[R_INPUT_LEN]
    queued = np.empty(n)
    load = np.empty(n)
    for i in range(n):
        new = new_tokens(prompt, reusable_hit(view, i))
        if params[_COST] == _TOKENS:
            queued[i] = view[i, V_QUEUED_TOKENS]
            load[i] = queued[i] + new
        else:
            queued[i] = view[i, V_QUEUED_ATTN]
            load[i] = queued[i] + attention_tokens(new, prompt, params[_L_EQ])
    return queued, load


@njit(cache=True)
def _guard_passes(prev, queued, load, req, params):
    """Whether the guard lets the request stay on ``prev``."""
    if params[_GUARD] == _SLO:
        slo = params[_TTFT_BASE] + params[_TTFT_PER_1K] * req[R_INPUT_LEN] / 1000.0
        budget = params[_SLACK] * params[_RATE] * slo
        if load[prev] <= budget:
            return True
        return not np.any(load <= budget)  # nobody meets the SLO: stick
    if params[_GUARD] == _OVERLOADED:
        return queued[prev] <= params[_OVERLOAD] * queued.mean()
    return True


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """The SMETRIC decision (module docstring); ``state[0]`` is the round-robin tie pointer."""
    n = view.shape[0]
    queued, load = _costs(view, req, params)
    score = np.empty(n)
    for i in range(n):
        score[i] = load[i] * (view[i, V_IN_FLIGHT] + 1.0)
    if req[R_TURN] > 0:
        prev = 0
        for i in range(1, n):
            hit, best = local_hit(view, i), local_hit(view, prev)
            if hit > best or (hit == best and score[i] < score[prev]):
                prev = i
        hit = local_hit(view, prev)
        if hit > 0.0 and hit >= params[_HIT_RATIO] * req[R_HISTORY] and _guard_passes(prev, queued, load, req, params):
            return prev
    chosen = argmin_rotating(score, state[0])
    state[0] = (chosen + 1) % n
    return chosen
