"""Load-only routers: round-robin and least-load. They ignore the KV cache entirely."""

from __future__ import annotations

from numba import njit

from .base import V_IN_FLIGHT, V_N_RUNNING, V_QUEUED_TOKENS


@njit(cache=True)
def round_robin(view, req, blocks, params, state, rand):
    """Instances in turn: state[0] holds the next index."""
    i = int(state[0]) % view.shape[0]
    state[0] = i + 1
    return i


@njit(cache=True)
def least_load(view, req, blocks, params, state, rand):
    """argmin of the chosen load signal; params[0]: 0 in-flight, 1 queued prefill tokens, 2 batch size."""
    col = V_IN_FLIGHT
    if params[0] == 1.0:
        col = V_QUEUED_TOKENS
    elif params[0] == 2.0:
        col = V_N_RUNNING
    best = 0
    for i in range(1, view.shape[0]):
        if view[i, col] < view[best, col]:
            best = i
    return best
