"""Load-only routers: round-robin, random, least-load and power-of-two choices. They ignore the KV cache entirely.

``random`` is a uniform pick per request: a Kubernetes Service (kube-proxy picks a backend per connection, and
the benchmark clients open one per request) and llm-d's ``random-picker``.

Freshness: the simulator hands them exact engine state. Real routers count in-flight requests
themselves (exact), but poll token loads (SGLang's power-of-two: every 5 s) and batch sizes
(Prometheus scrapes), so the queued-token and batch-size signals are fresher here than in production.
"""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module
from .signals import LOAD_SIGNALS, load_signal
from .spec import PolicySpec

PID_ROUND_ROBIN = 0
PID_LEAST_LOAD = 1
PID_POWER_OF_TWO = 2
PID_RANDOM = 16
#: policies that read no column of the view (only its row count): the engine skips building it for them
VIEW_FREE_PIDS = (PID_ROUND_ROBIN, PID_RANDOM)

_SIGNALS_TEXT = ("in-flight requests (router-side count, exact), or queued prefill tokens / running batch "
                 "size (engine state: exact here, scraped or polled every few seconds by real routers)")

ROUND_ROBIN = PolicySpec(
    "round-robin", PID_ROUND_ROBIN, "cycle through instances, ignoring state",
    "classic load-only baseline (SGLang/vLLM production-stack round_robin)", "none",
    state_size=lambda ctx: 1)
RANDOM = PolicySpec(
    "random", PID_RANDOM, "uniformly random instance, ignoring state",
    "Kubernetes Service / kube-proxy (a backend per connection); llm-d random-picker", "none")
LEAST_LOAD = PolicySpec(
    "least-load", PID_LEAST_LOAD, "argmin of a load signal (ties: lowest index)",
    "classic load-only baseline (AIBrix least-request, vLLM join-shortest-queue)", _SIGNALS_TEXT,
    params={"signal": "in_flight"}, choices={"signal": LOAD_SIGNALS})
POWER_OF_TWO = PolicySpec(
    "power-of-two", PID_POWER_OF_TWO,
    "sample two distinct instances uniformly, take the less loaded (ties: the first sample)",
    "SGLang model gateway policies/power_of_two.rs (token load, polled every 5 s)", _SIGNALS_TEXT,
    params={"signal": "queued_tokens"}, choices={"signal": LOAD_SIGNALS})

_LL_SIGNAL = LEAST_LOAD.slot("signal")
_P2_SIGNAL = POWER_OF_TWO.slot("signal")


def least_load_indexed_signal(params) -> str | None:
    """The least-load signal when the engine may decide it from its routing index (``in_flight`` or
    ``queued_tokens``: an argmin of one indexed column), else ``None`` (``batch_size``: the full view)."""
    name = LOAD_SIGNALS[int(params[_LL_SIGNAL])]
    return name if name in ("in_flight", "queued_tokens") else None


@njit(cache=True)
def round_robin(view, req, blocks, params, state, rand):
    """Instances in turn: state[0] holds the next index."""
    i = int(state[0]) % view.shape[0]
    state[0] = i + 1
    return i


@njit(cache=True)
def random_choice(view, req, blocks, params, state, rand):
    """Instance ``floor(rand[0] * n)``."""
    n = view.shape[0]
    return min(int(rand[0] * n), n - 1)


@njit(cache=True)
def least_load(view, req, blocks, params, state, rand):
    """argmin of the chosen load signal; ties go to the lowest index."""
    code = params[_LL_SIGNAL]
    best = 0
    for i in range(1, view.shape[0]):
        if load_signal(view, i, code) < load_signal(view, best, code):
            best = i
    return best


@njit(cache=True)
def power_of_two(view, req, blocks, params, state, rand):
    """Two distinct uniform samples ``i1``, ``i2 = (i1 + 1 + U[0, n-1)) mod n``; the lower load wins, ties ``i1``."""
    n = view.shape[0]
    i1 = min(int(rand[0] * n), n - 1)
    if n == 1:
        return i1
    i2 = (i1 + 1 + min(int(rand[1] * (n - 1)), n - 2)) % n
    code = params[_P2_SIGNAL]
    return i1 if load_signal(view, i1, code) <= load_signal(view, i2, code) else i2


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
