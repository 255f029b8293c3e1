"""BAILIAN: Alibaba's production linear scheduler, KV-favouring, stochastic.

``score_i = alpha * norm(hit%_i) + beta * (1 - norm(BS_i)) + gamma * (1 - norm(tokens_i))`` with
each component min-max normalised over the instances (0 when all are equal); the instance is
**sampled with probability proportional to the score** (uniform if every score is 0), using the
request's first uniform draw. ``hit%`` is the local hit over the prompt length, ``BS`` running +
waiting requests, ``tokens`` the context tokens of the in-flight requests.

Freshness: the production scheduler reads engine reports (hits from its cache index, batch size and
token counts per step); exact here.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..ranges import AT_LEAST_0
from .base import R_INPUT_LEN, V_CONTEXT_TOKENS
from .selection import minmax, sample_weighted
from .signals import batch_size, local_hit
from .spec import PolicySpec

PID = 5

SPEC = PolicySpec(
    "bailian", PID, "sample proportional to alpha*hit% + beta*(1-BS) + gamma*(1-tokens), min-max normalised",
    "blitz-router docs/dsl/policies.md (BAILIAN linear, --bailian-{alpha,beta,gamma}); SMetric/LMetric baseline",
    "local HBM/DRAM hit, running + waiting requests, in-flight context tokens (engine reports; exact here)",
    params={"alpha": 0.7, "beta": 0.15, "gamma": 0.15},
    ranges={"alpha": AT_LEAST_0, "beta": AT_LEAST_0, "gamma": AT_LEAST_0})

_ALPHA, _BETA, _GAMMA = SPEC.slots("alpha", "beta", "gamma")


@njit(cache=True)
def scores(view, req, params):
    """The BAILIAN score of every instance (before sampling)."""
    n = view.shape[0]
    hit = np.empty(n)
    bs = np.empty(n)
    tokens = np.empty(n)
    prompt = max(req[R_INPUT_LEN], 1.0)
    for i in range(n):
        hit[i] = local_hit(view, i) / prompt
        bs[i] = batch_size(view, i)
        tokens[i] = view[i, V_CONTEXT_TOKENS]
    return (params[_ALPHA] * minmax(hit) + params[_BETA] * (1.0 - minmax(bs))
            + params[_GAMMA] * (1.0 - minmax(tokens)))


@njit(cache=True)
def choose(view, req, blocks, params, state, rand):
    """An instance sampled with probability proportional to its score."""
    return sample_weighted(scores(view, req, params), rand[0])


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
