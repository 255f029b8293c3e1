"""The plain-array input both engines run on: a workload, a cluster and a policy turned into numbers.

:func:`prepare` does every Python-side step once (load scaling, coarsening to the engine block,
dense block ids, session indices, children lists (reply chains) and waiter lists (closed replay),
capacities in blocks, bandwidths in bytes/s, the policy's parameter/state vectors and the pre-drawn random numbers),
so that the numba engine and the pure-Python reference see byte-identical inputs.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..numba_cache import refresh_module
from ..policies import base as pbase
from ..policies import registry
from ..workload.core import Workload, n_blocks_for
from .abandonment import draw_patience
from .config import GB, ClusterConfig, HardwareSpec
from .queueing import decode_estimates
from .router_info import replica_of

__all__ = ["EngineInput", "prepare", "UNLIMITED"]

UNLIMITED = np.iinfo(np.int64).max // 4  # "no capacity limit" for a block count


@dataclass(frozen=True, eq=False)
class EngineInput:
    """Everything an engine needs, as numpy arrays and scalars (see :func:`prepare`)."""

    # requests (rows in workload order)
    arrival: np.ndarray        # float64, after load scaling
    input_len: np.ndarray      # int64, >= 1
    n_out: np.ndarray          # int64, tokens generated = max(output_len, 1)
    gap: np.ndarray            # float64, closed replay think time (already load-scaled)
    parent: np.ndarray         # int64
    turn: np.ndarray           # int64
    session: np.ndarray        # int64 dense 0..n_sessions-1
    history: np.ndarray        # int64 tokens the previous turn sent
    priority: np.ndarray       # float64
    block_offsets: np.ndarray  # int64 CSR
    block_ids: np.ndarray      # int64 dense ids 0..n_unique-1
    child_offsets: np.ndarray  # int64 CSR of each row's children (reply chains)
    children: np.ndarray       # int64
    n_unique: int              # dense ids: the prompts' blocks, then the replies' fresh ids
    # reply KV (cache_replies / global_store_replies) and partial-block hits (hit_granularity)
    reply_offsets: np.ndarray  # int64 CSR of each row's reply chain (full blocks, then maybe a partial tail)
    reply_ids: np.ndarray      # int64 dense ids
    reply_tokens: np.ndarray   # int64 tokens of each reply entry (B, or the tail's tokens)
    tail_pos: np.ndarray       # int64 per row: engine-block position of its parent's partial tail (-1: none)
    tail_id: np.ndarray        # int64 per row: dense id of that tail
    tail_tok: np.ndarray       # int64 per row: tokens it adds to a hit that reaches tail_pos blocks
    cache_replies: bool
    store_replies: bool
    # cluster
    block_size: int
    n_instances: int
    n_routable: int            # instances the policy chooses among (prefill ones when disaggregated)
    disaggregated: bool
    closed: bool
    overlap: bool
    max_num_seqs: int
    max_batched_tokens: int
    hbm_blocks: int            # HBM KV blocks per instance
    hbm_reuse: bool            # HBM's cached blocks serve prefix hits (False: a hybrid sliding-window model on an
                               # engine that recycles the window's tail blocks first, ServingStack.swa_prefix_reuse)
    dram_blocks: int           # host-DRAM KV blocks per instance (0 = no tier)
    dram_write: bool           # ClusterConfig.dram_policy == "write-through" (False: spill)
    global_blocks: int         # global-store blocks (0 = no store, UNLIMITED = unbounded)
    kv_bytes_per_token: float
    dram_bw: float             # bytes/s
    global_bw: float           # bytes/s per instance link
    global_latency: float      # s
    pd_bw: float               # bytes/s (inf = instantaneous)
    # KV connector (lmcache model; unused when conn is False)
    conn: bool                 # an lmcache connector to a global store
    layerwise: bool
    lookup_s: float            # s per admitted request
    load_latency: float        # s per store read
    load_cap: float            # bytes/s per read transfer
    write_cap: float           # bytes/s per write transfer
    pcie_bw: float             # bytes/s host<->GPU per instance
    store_total: float         # bytes/s shared by all transfers
    node_of: np.ndarray        # int64 [n_instances]: node index
    node_bw: np.ndarray        # float64 [n_nodes]: NIC pool bytes/s
    coef: np.ndarray
    l_eq: float
    # policy
    pid: int
    params: np.ndarray
    state: np.ndarray
    rand: np.ndarray           # float64 [n, N_RAND]
    # queue discipline
    queue: np.ndarray          # float64 vector of smetric.cluster.queueing (layout Q_*)
    decode_est: np.ndarray     # float64 [n], true decode GPU seconds of each request (the oracle estimate)
    # time series (smetric.cluster.sampling: the spacing doubles until the samples cover the run)
    sample_dt: float           # initial spacing (s)
    n_samples: int             # sample slots per instance (>= 2)
    # KV allocation (ClusterConfig.kv_allocation): False = reserve prompt + output at admission
    incremental: bool = False
    # prefill scheduling (ClusterConfig.prefill_first, chunked_prefill): an iteration with prompt work runs no
    # decodes; prompts are scheduled whole
    prefill_first: bool = False
    whole_prompts: bool = False
    # router information model (smetric.cluster.router_info; all 0 and one replica = exact)
    refresh_s: float = 0.0         # engine-state snapshot interval (s)
    kv_refresh_s: float = 0.0      # KV-utilisation snapshot interval (s)
    kv_event_delay_s: float = 0.0  # delay before a block entering a tier is visible to the router (s)
    n_replicas: int = 1            # router replicas, each with its own counters and policy state
    replica: np.ndarray | None = None  # int64 [n]: the replica that routes each request (None = all 0)
    # closed replay (prepare sets them; see _waiters_csr): the rows that wait on each row, and how many
    # rows each row waits on (its parent, plus every row that joins it)
    waiter_offsets: np.ndarray | None = None  # int64 CSR
    waiters: np.ndarray | None = None         # int64
    n_deps: np.ndarray | None = None          # int64 [n]
    # abandonment (smetric.cluster.abandonment): patience of each dense session (s); None = nobody abandons
    patience: np.ndarray | None = None
    # serving stack (smetric.cluster.serving_stack): the first-token lag of async scheduling, the API server's time
    # between routing and the engine's queue, and per row the time from its end to a waiting row's release
    # (the reply's way back to the client, its streaming, the next request's way to the router); None = zeros
    first_token_lag: bool = False
    api_s: float = 0.0
    release_delay: np.ndarray | None = None

    @property
    def n(self) -> int:
        """Number of requests."""
        return len(self.arrival)


def _children_csr(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(parent)
    has = parent >= 0
    kids = np.flatnonzero(has).astype(np.int64)
    order = np.argsort(parent[kids], kind="stable")
    kids = kids[order]
    counts = np.bincount(parent[kids], minlength=n) if len(kids) else np.zeros(n, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets, kids


def _waiters_csr(parent: np.ndarray, join_to: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closed replay's dependencies: for each row, the rows released (in part) by its end -- its children
    (rows whose ``parent`` it is, in row order), then the row it joins (``join_to``) -- as a CSR, and each
    row's number of dependencies (1 for a parent, plus 1 per row that joins it). Without joins the CSR is
    the children CSR and a row depends on its parent only."""
    n = len(parent)
    kids = np.flatnonzero(parent >= 0)
    joins = np.flatnonzero(join_to >= 0)
    src = np.concatenate([parent[kids], joins]).astype(np.int64)
    dst = np.concatenate([kids, join_to[joins]]).astype(np.int64)
    order = np.argsort(src, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=offsets[1:])
    return offsets, dst[order], np.bincount(dst, minlength=n).astype(np.int64)


@njit(cache=True)
def _extending_child(r, input_len, child_off, children, fine_offsets, fine_ids, f):
    """The first child of ``r`` (row order) whose prompt extends ``r``'s prompt, or -1: a fan-out child that
    starts a fresh context (a Claude Code sub-agent) does not define ``r``'s reply ids; the next turn does."""
    L = input_len[r]
    nf = L // f
    for k in range(child_off[r], child_off[r + 1]):
        c = children[k]
        if input_len[c] > L and (nf == 0 or fine_ids[fine_offsets[r] + nf - 1] == fine_ids[fine_offsets[c] + nf - 1]):
            return c
    return -1


@njit(cache=True)
def _reply_chains(input_len, n_out, child_off, children, offsets, ids, fine_offsets, fine_ids, B, f, g, replies,
                  fresh):
    """Reply chains and partial tails of every row (see :func:`prepare`); ``fresh`` = first unused dense id."""
    n = input_len.shape[0]
    reply_off = np.zeros(n + 1, dtype=np.int64)
    tail_pos = np.full(n, -1, dtype=np.int64)
    tail_id = np.zeros(n, dtype=np.int64)
    tail_tok = np.zeros(n, dtype=np.int64)
    for r in range(n):  # count
        L = input_len[r]
        X = L + n_out[r] - 1
        k = 0
        if replies:
            k = X // B - L // B
            if g > 0 and X - (X // B) * B >= g:
                k += 1
        reply_off[r + 1] = reply_off[r] + k
    reply_ids = np.zeros(reply_off[n], dtype=np.int64)
    reply_tok = np.zeros(reply_off[n], dtype=np.int64)
    for r in range(n):
        L = input_len[r]
        X = L + n_out[r] - 1
        c = _extending_child(r, input_len, child_off, children, fine_offsets, fine_ids, f)
        valid = c >= 0
        k = reply_off[r]
        if replies:
            contains = valid and input_len[c] >= L + n_out[r]
            for j in range(L // B, X // B):
                if contains:
                    reply_ids[k] = ids[offsets[c] + j]
                else:
                    reply_ids[k] = fresh
                    fresh += 1
                reply_tok[k] = B
                k += 1
            if k < reply_off[r + 1]:  # the partial tail
                reply_ids[k] = fresh
                fresh += 1
                reply_tok[k] = X - (X // B) * B
                if contains:
                    tail_pos[c] = X // B
                    tail_id[c] = reply_ids[k]
                    tail_tok[c] = (reply_tok[k] // g) * g
        elif g > 0 and valid and L % B >= g:  # the parent's own partial last prompt block
            tail_pos[c] = L // B
            tail_id[c] = ids[offsets[r] + L // B]
            tail_tok[c] = ((L % B) // g) * g
    return reply_off, reply_ids, reply_tok, tail_pos, tail_id, tail_tok, fresh


def _blocks_of(gb: float, block_bytes: float) -> int:
    if math.isinf(gb):
        return UNLIMITED
    return int(gb * GB // block_bytes)


def prepare(workload: Workload, cluster: ClusterConfig, policy: str, params: dict | None = None, *,
            load: float = 1.0, seed: int = 0, hardware: HardwareSpec | None = None,
            n_samples: int = 200) -> EngineInput:
    """Turn (workload, cluster, policy) into an :class:`EngineInput`; bad input raises ``ValueError``."""
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a smetric Workload, got {type(workload).__name__}")
    if len(workload) == 0:
        raise ValueError("the workload has no requests")
    if np.any(workload.input_len < 1):
        row = int(np.flatnonzero(workload.input_len < 1)[0])
        raise ValueError(f"request {row} has input_len {workload.input_len[row]}: every prompt needs >= 1 token")
    if not (isinstance(n_samples, (int, np.integer)) and n_samples >= 2):
        raise ValueError(f"n_samples must be an integer >= 2, got {n_samples!r}")
    if not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    hw = hardware if hardware is not None else cluster.hardware_spec()
    spec = registry.get(policy)

    fine = workload.scale_load(load) if load != 1.0 else workload
    bs = cluster.engine_block_size(fine.block_size)
    wl = fine.coarsen(bs)
    uniq, dense = np.unique(wl.block_ids, return_inverse=True)
    dense = dense.astype(np.int64).ravel()
    _, session = np.unique(wl.session, return_inverse=True)
    child_off, children = _children_csr(wl.parent)
    waiter_off, waiters, n_deps = _waiters_csr(np.asarray(wl.parent), np.asarray(wl.join_to))
    n_out = np.maximum(wl.output_len, 1).astype(np.int64)
    reply_off, reply_ids, reply_tok, tail_pos, tail_id, tail_tok, n_unique = _reply_chains(
        np.asarray(wl.input_len), n_out, child_off, children, np.asarray(wl.block_offsets), dense,
        np.asarray(fine.block_offsets), np.asarray(fine.block_ids), bs, fine.block_size,
        int(cluster.hit_granularity or 0),
        cluster.cache_replies or (cluster.global_store_replies and cluster.global_store is not None), len(uniq))

    block_bytes = bs * hw.kv_bytes_per_token
    hbm_blocks = int(hw.kv_capacity_tokens // bs)
    if hbm_blocks < 1:
        raise ValueError(f"HBM holds {hw.kv_capacity_tokens} KV tokens, less than one {bs}-token block")
    store = cluster.global_store
    global_blocks = 0 if store is None else max(1, _blocks_of(store.capacity_gb, block_bytes))

    ctx = pbase.PolicyContext(
        n_instances=cluster.n_routable, n_sessions=int(session.max()) + 1, block_size=bs,
        max_num_seqs=cluster.max_num_seqs, kv_capacity_blocks=hbm_blocks, l_eq=hw.l_eq,
        prefill_rate=hw.prefill_rate, ttft_base=cluster.slo.ttft_base, ttft_per_1k=cluster.slo.ttft_per_1k)
    pvec, pstate = spec.build(ctx, params)
    rand = np.random.default_rng(seed).random((len(wl), pbase.N_RAND))
    kvc = cluster.kv_connector
    conn = store is not None and not kvc.ideal
    per_node = max(1, kvc.gpus_per_node // cluster.tp)
    node_of = np.arange(cluster.n_instances, dtype=np.int64) // per_node
    node_bw = np.full(int(node_of[-1]) + 1, kvc.nic_gbs_per_gpu * max(kvc.gpus_per_node, cluster.tp) * GB)

    span = float(wl.arrival[-1] - wl.arrival[0])
    sample_dt = max(1e-3, 1.25 * span / n_samples)

    stack = cluster.engine
    release = stack.after_last_token_s + stack.stream_per_token_s * n_out + stack.client_to_router_s
    return EngineInput(
        arrival=np.array(wl.arrival) + stack.client_to_router_s if stack.client_to_router_s else np.array(wl.arrival),
        input_len=np.array(wl.input_len),
        n_out=n_out, gap=np.array(wl.gap),
        parent=np.array(wl.parent), turn=np.array(wl.turn), session=session.astype(np.int64),
        history=wl.history_tokens(), priority=np.array(wl.priority),
        block_offsets=np.array(wl.block_offsets), block_ids=dense,
        child_offsets=child_off, children=children, n_unique=int(n_unique),
        reply_offsets=reply_off, reply_ids=reply_ids, reply_tokens=reply_tok, tail_pos=tail_pos,
        tail_id=tail_id, tail_tok=tail_tok, cache_replies=cluster.cache_replies,
        store_replies=cluster.global_store_replies and store is not None,
        block_size=bs, n_instances=cluster.n_instances, n_routable=cluster.n_routable,
        disaggregated=cluster.disaggregated, closed=cluster.replay == "closed",
        overlap=cluster.kv_load_overlap, max_num_seqs=cluster.max_num_seqs,
        max_batched_tokens=cluster.max_batched_tokens, hbm_blocks=hbm_blocks,
        hbm_reuse=cluster.hbm_prefix_reuse,
        dram_blocks=_blocks_of(cluster.dram_gb, block_bytes) if cluster.dram_gb > 0 else 0,
        dram_write=cluster.dram_policy == "write-through",
        global_blocks=global_blocks, kv_bytes_per_token=float(hw.kv_bytes_per_token),
        dram_bw=cluster.dram_bandwidth_gbs * GB,
        global_bw=(store.bandwidth_gbs * GB) if store is not None else 1.0,
        global_latency=store.latency_s if store is not None else 0.0,
        pd_bw=cluster.pd_bandwidth_gbs * GB, conn=conn, layerwise=kvc.layerwise, lookup_s=float(kvc.lookup_s),
        load_latency=float(kvc.load_latency_s), load_cap=kvc.load_gbs * GB, write_cap=kvc.store_gbs * GB,
        pcie_bw=kvc.pcie_gbs * cluster.tp * GB, store_total=kvc.store_total_gbs * GB, node_of=node_of,
        node_bw=node_bw, coef=hw.coef_array, l_eq=float(hw.l_eq),
        pid=spec.pid, params=pvec, state=pstate, rand=rand, queue=cluster.queue.vector(),
        decode_est=decode_estimates(hw.coef_array, wl.input_len, n_out),
        sample_dt=sample_dt, n_samples=int(n_samples), incremental=cluster.kv_allocation == "incremental",
        prefill_first=cluster.prefill_first, whole_prompts=not cluster.chunked_prefill,
        refresh_s=float(cluster.router.refresh_s), kv_refresh_s=float(cluster.router.kv_refresh_s),
        kv_event_delay_s=float(cluster.router.kv_event_delay_s), n_replicas=int(cluster.router.router_replicas),
        replica=replica_of(cluster.router, session, seed),
        waiter_offsets=waiter_off, waiters=waiters, n_deps=n_deps,
        patience=None if cluster.patience is None else draw_patience(cluster.patience, int(session.max()) + 1, seed),
        first_token_lag=stack.first_token_lag_iterations > 0, api_s=float(stack.api_server_s),
        release_delay=release.astype(np.float64) if np.any(release > 0) else None,
    )


def footprint_blocks(inp: EngineInput) -> tuple[np.ndarray, np.ndarray]:
    """(prompt blocks, prompt + output blocks) of every request at the engine block size."""
    return (n_blocks_for(inp.input_len, inp.block_size),
            n_blocks_for(inp.input_len + inp.n_out, inp.block_size))


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
