"""The plain-array input both engines run on: a workload, a cluster and a policy turned into numbers.

:func:`prepare` does every Python-side step once (load scaling, coarsening to the engine block,
dense block ids, session indices, children lists for closed replay, capacities in blocks,
bandwidths in bytes/s, the policy's parameter/state vectors and the pre-drawn random numbers),
so that the numba engine and the pure-Python reference see byte-identical inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..policies import base as pbase
from ..policies import registry
from ..workload.core import Workload, n_blocks_for
from .config import GB, ClusterConfig, HardwareSpec
from .queueing import decode_estimates

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
    child_offsets: np.ndarray  # int64 CSR of each row's children (closed replay)
    children: np.ndarray       # int64
    n_unique: int
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
    dram_blocks: int           # host-DRAM KV blocks per instance (0 = no tier)
    global_blocks: int         # global-store blocks (0 = no store, UNLIMITED = unbounded)
    kv_bytes_per_token: float
    dram_bw: float             # bytes/s
    global_bw: float           # bytes/s per instance link
    global_latency: float      # s
    pd_bw: float               # bytes/s (inf = instantaneous)
    coef: np.ndarray
    l_eq: float
    # policy
    pid: int
    params: np.ndarray
    state: np.ndarray
    rand: np.ndarray           # float64 [n, N_RAND]
    # queue discipline
    queue: np.ndarray          # float64 vector of smetric.cluster.queueing (layout Q_*)
    decode_est: np.ndarray     # float64 [n], expected decode GPU seconds of each request
    # time series (smetric.cluster.sampling: the spacing doubles until the samples cover the run)
    sample_dt: float           # initial spacing (s)
    n_samples: int             # sample slots per instance (>= 2)

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

    wl = workload.scale_load(load) if load != 1.0 else workload
    bs = cluster.engine_block_size(wl.block_size)
    wl = wl.coarsen(bs)
    uniq, dense = np.unique(wl.block_ids, return_inverse=True)
    _, session = np.unique(wl.session, return_inverse=True)
    child_off, children = _children_csr(wl.parent)

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
    n_out = np.maximum(wl.output_len, 1).astype(np.int64)

    span = float(wl.arrival[-1] - wl.arrival[0])
    sample_dt = max(1e-3, 1.25 * span / n_samples)

    return EngineInput(
        arrival=np.array(wl.arrival), input_len=np.array(wl.input_len),
        n_out=n_out, gap=np.array(wl.gap),
        parent=np.array(wl.parent), turn=np.array(wl.turn), session=session.astype(np.int64),
        history=wl.history_tokens(), priority=np.array(wl.priority),
        block_offsets=np.array(wl.block_offsets), block_ids=dense.astype(np.int64).ravel(),
        child_offsets=child_off, children=children, n_unique=len(uniq),
        block_size=bs, n_instances=cluster.n_instances, n_routable=cluster.n_routable,
        disaggregated=cluster.disaggregated, closed=cluster.replay == "closed",
        overlap=cluster.kv_load_overlap, max_num_seqs=cluster.max_num_seqs,
        max_batched_tokens=cluster.max_batched_tokens, hbm_blocks=hbm_blocks,
        dram_blocks=_blocks_of(cluster.dram_gb, block_bytes) if cluster.dram_gb > 0 else 0,
        global_blocks=global_blocks, kv_bytes_per_token=float(hw.kv_bytes_per_token),
        dram_bw=cluster.dram_bandwidth_gbs * GB,
        global_bw=(store.bandwidth_gbs * GB) if store is not None else 1.0,
        global_latency=store.latency_s if store is not None else 0.0,
        pd_bw=cluster.pd_bandwidth_gbs * GB, coef=hw.coef_array, l_eq=float(hw.l_eq),
        pid=spec.pid, params=pvec, state=pstate, rand=rand, queue=cluster.queue.vector(),
        decode_est=decode_estimates(hw.coef_array, wl.input_len, n_out),
        sample_dt=sample_dt, n_samples=int(n_samples),
    )


def footprint_blocks(inp: EngineInput) -> tuple[np.ndarray, np.ndarray]:
    """(prompt blocks, prompt + output blocks) of every request at the engine block size."""
    return (n_blocks_for(inp.input_len, inp.block_size),
            n_blocks_for(inp.input_len + inp.n_out, inp.block_size))
