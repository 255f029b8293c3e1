"""``route``: the single ``@njit`` entry the engines call; one branch per registered policy id."""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module
from . import (
    affinity,
    aibrix,
    bailian,
    chwbl,
    dynamo,
    llm_router_prefix,
    llmd,
    lmetric,
    load_only,
    mooncake,
    preble,
    sglang,
    smetric_policy,
    vllm_router,
)


@njit(cache=True)
def route(pid, view, req, blocks, params, state, rand):
    """Instance chosen by policy ``pid`` (see :mod:`smetric.policies.base` for the arguments)."""
    if pid == load_only.PID_ROUND_ROBIN:
        return load_only.round_robin(view, req, blocks, params, state, rand)
    if pid == load_only.PID_LEAST_LOAD:
        return load_only.least_load(view, req, blocks, params, state, rand)
    if pid == load_only.PID_POWER_OF_TWO:
        return load_only.power_of_two(view, req, blocks, params, state, rand)
    if pid == smetric_policy.PID:
        return smetric_policy.choose(view, req, blocks, params, state, rand)
    if pid == lmetric.PID:
        return lmetric.choose(view, req, blocks, params, state, rand)
    if pid == bailian.PID:
        return bailian.choose(view, req, blocks, params, state, rand)
    if pid == dynamo.PID:
        return dynamo.choose(view, req, blocks, params, state, rand)
    if pid == sglang.PID:
        return sglang.choose(view, req, blocks, params, state, rand)
    if pid == llmd.PID:
        return llmd.choose(view, req, blocks, params, state, rand)
    if pid == vllm_router.PID_PREFIX:
        return vllm_router.prefix_choose(view, req, blocks, params, state, rand)
    if pid == vllm_router.PID_SESSION:
        return vllm_router.session_choose(view, req, blocks, params, state, rand)
    if pid == aibrix.PID:
        return aibrix.choose(view, req, blocks, params, state, rand)
    if pid == preble.PID:
        return preble.choose(view, req, blocks, params, state, rand)
    if pid == mooncake.PID:
        return mooncake.choose(view, req, blocks, params, state, rand)
    if pid == affinity.PID_SESSION_STICKY:
        return affinity.session_sticky(view, req, blocks, params, state, rand)
    if pid == affinity.PID_CACHE_AFFINITY:
        return affinity.cache_affinity(view, req, blocks, params, state, rand)
    if pid == load_only.PID_RANDOM:
        return load_only.random_choice(view, req, blocks, params, state, rand)
    if pid == chwbl.PID:
        return chwbl.choose(view, req, blocks, params, state, rand)
    if pid == llm_router_prefix.PID:
        return llm_router_prefix.choose(view, req, blocks, params, state, rand)
    raise ValueError("unknown policy id")


refresh_module(sys.modules[__name__])
