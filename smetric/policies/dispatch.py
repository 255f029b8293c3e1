"""``route``: the single ``@njit`` entry the engines call; one branch per registered policy id."""

from __future__ import annotations

from numba import njit

from . import load_only


@njit(cache=True)
def route(pid, view, req, blocks, params, state, rand):
    """Instance chosen by policy ``pid`` (see :mod:`smetric.policies.base` for the arguments)."""
    if pid == 0:
        return load_only.round_robin(view, req, blocks, params, state, rand)
    if pid == 1:
        return load_only.least_load(view, req, blocks, params, state, rand)
    raise ValueError("unknown policy id")
