"""The routing-policy contract shared by the numba engine, the reference engine and every policy.

At each arrival the router builds

* ``view``  -- float64 ``[n_instances, N_VIEW]``: what each instance looks like now (columns ``V_*``);
* ``req``   -- float64 ``[N_REQ]``: the request (fields ``R_*``; no output length: routers cannot know it);
* ``blocks`` -- int64 chained block ids of the prompt;
* ``rand``  -- float64 ``[N_RAND]`` uniforms in [0, 1) drawn for this request from the run's seeded
  ``numpy.random.Generator`` (the only source of randomness a policy may use);

and calls the policy's ``@njit`` function ``choose(view, req, blocks, params, state, rand) -> int``.
``params`` is the float64 vector built from the policy's named parameters (and cluster constants,
see :class:`PolicyContext`); ``state`` is a float64 scratch vector the policy owns for the whole run
(round-robin pointers, session maps, windows), sized by its spec and zero-initialised.
In disaggregated mode the view covers the prefill instances only.
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- per-instance view columns
V_HIT_HBM = 0        # prompt tokens of the longest cached prefix in this instance's HBM
V_HIT_DRAM = 1       # further prefix tokens in its host DRAM (continuing the HBM hit)
V_HIT_GLOBAL = 2     # further prefix tokens in the global store (continuing the local hit)
V_QUEUED_TOKENS = 3  # prefill tokens still to compute here (waiting + partially prefilled)
V_QUEUED_COST = 4    # estimated seconds of that queued prefill (performance model)
V_N_RUNNING = 5      # requests in the running batch
V_N_WAITING = 6      # requests waiting for admission
V_IN_FLIGHT = 7      # requests routed here and not finished (incl. those loading KV)
V_KV_USED = 8        # HBM KV blocks pinned by in-flight requests
V_KV_CAPACITY = 9    # HBM KV blocks of the instance
V_CONTEXT_TOKENS = 10  # context tokens of all in-flight requests (their decode KV footprint)
V_REQ_COST = 11      # estimated prefill seconds of this request here, given this instance's hits
V_QUEUED_ATTN = 12   # queued prefill in attention-aware token units: sum of n + n*(L - n/2)/l_eq
N_VIEW = 13

# ---- request fields
R_INPUT_LEN = 0      # prompt tokens
R_TURN = 1           # 0 = first request of its session (stateless turn detection)
R_SESSION = 2        # dense session index 0..n_sessions-1
R_HISTORY = 3        # tokens the previous turn sent (prompt + reply), 0 if unknown
R_NOW = 4            # current simulated time (s)
R_PRIORITY = 5       # session priority (default 1)
R_INDEX = 6          # request row
N_REQ = 7

N_RAND = 4


@dataclass(frozen=True)
class PolicyContext:
    """Cluster constants a policy may fold into its parameter vector."""

    n_instances: int
    n_sessions: int
    block_size: int
    max_num_seqs: int
    kv_capacity_blocks: int
    l_eq: float            # context length at which attention per token equals the linear cost
    prefill_rate: float    # prefill tokens per second of one instance (no cache, mid-size chunks)
    ttft_base: float       # TTFT SLO = ttft_base + ttft_per_1k * prompt_tokens / 1000
    ttft_per_1k: float
