"""The Python driver: builds the read-only data and the preallocated state from an
:class:`~smetric.cluster.inputs.EngineInput`, runs the compiled event loop, and reads the raw run back; compiling
(or loading from numba's on-disk cache) and announcing a first-time compile.
"""

from __future__ import annotations

import sys

import numpy as np

from ...policies import base as pb
from ...policies import load_only, smetric_policy
from ..abandonment import mark_unreleased
from ..estimators import estimator_state
from ..inputs import UNLIMITED, EngineInput
from ..kvcache import new_table
from ..load_index import new_trees, tree_size
from ..queueing import Q_EST, Q_WINDOW
from ..result_raw import N_TS, REASON_STALLED, RawRun
from .layout import (
    COLOCATED,
    DECODE_ROLE,
    FI_BUSY,
    FI_DRAMR,
    FI_END,
    FI_GLOBR,
    FI_MINREADY,
    FI_PDR,
    FI_WAKE,
    G_AHN,
    G_ARRIVED,
    G_CLOCK_BACK,
    G_FULL_VIEWS,
    G_HEAD,
    G_PHEAD,
    G_PNEXT,
    G_PTAIL,
    G_TAIL,
    GF_NOW,
    GF_QUEUE,
    GF_SAMPLE_DT,
    GF_WRITE,
    HS_REF,
    II_BLOCKED_BY,
    II_DNFREE,
    II_ITER,
    II_KVPEAK,
    II_NFREE,
    II_PHEAD,
    II_PTAIL,
    II_ROLE,
    II_ROUTED,
    II_SAMPLED,
    II_STALLED,
    II_STAT_DECODE,
    II_STAT_PREFILL,
    II_WHEAD,
    II_WTAIL,
    IP_PREEMPT,
    N_FI,
    N_GF,
    N_GI,
    N_II,
    N_RF,
    N_RI,
    P_COUNT,
    PREFILL_ROLE,
    RF_ADMIT,
    RF_ARR,
    RF_DECODE_EST,
    RF_FINISH,
    RF_FIRST,
    RI_DINST,
    RI_HDRAM,
    RI_HGLOB,
    RI_HHBM,
    RI_INST,
    RI_NXT,
    RI_PREFILL,
    RI_PRV,
    RI_REASON,
    SP_LL_INFLIGHT,
    SP_LL_QTOKENS,
    SP_OFF,
    SP_SMETRIC_ATTN,
    SP_SMETRIC_TOKENS,
    EngineData,
    EngineState,
)
from .loop import _finalize, _run

#: the index is used from this many routable instances on (below it the full view is as fast; same decisions)
SPARSE_MIN_INSTANCES = 64
#: a prompt block held by at most this many instances bounds the enumerated holders (:mod:`.routing_index`)
SPARSE_HOLDERS = 32


def _make_data(inp: EngineInput) -> EngineData:
    hsize_shift = new_table(1, inp.hbm_blocks)
    d_cap = min(inp.dram_blocks, inp.n_unique)
    dsize_shift = new_table(1, max(d_cap, 1))
    gcap = 0 if inp.global_blocks == 0 else min(inp.global_blocks, UNLIMITED)
    hbm = int(inp.hbm_blocks)  # st.seen: entry times of HBM slots, then DRAM slots, then store blocks (KV events)
    return EngineData(
        arrival=inp.arrival, input_len=inp.input_len, n_out=inp.n_out, gap=inp.gap, turn=inp.turn,
        session=inp.session, history=inp.history, priority=inp.priority, block_offsets=inp.block_offsets,
        block_ids=inp.block_ids, coef=inp.coef,
        params=inp.params, rand=inp.rand, n=int(inp.n),
        n_instances=int(inp.n_instances),
        n_routable=int(inp.n_routable), disaggregated=bool(inp.disaggregated), closed=bool(inp.closed),
        overlap=bool(inp.overlap), max_num_seqs=int(inp.max_num_seqs), max_batched_tokens=int(inp.max_batched_tokens),
        block_size=int(inp.block_size), hbm_blocks=int(inp.hbm_blocks), hbm_reuse=bool(inp.hbm_reuse),
        dram_slots=int(d_cap),
        dram_write=bool(inp.dram_write), global_slots=int(gcap),
        kv_bytes_per_token=float(inp.kv_bytes_per_token), dram_bw=float(inp.dram_bw), global_bw=float(inp.global_bw),
        global_latency=float(inp.global_latency), pd_bw=float(inp.pd_bw), l_eq=float(inp.l_eq), pid=int(inp.pid),
        reply_offsets=inp.reply_offsets, reply_ids=inp.reply_ids, reply_tokens=inp.reply_tokens,
        tail_pos=inp.tail_pos, tail_id=inp.tail_id, tail_tok=inp.tail_tok, cache_replies=bool(inp.cache_replies),
        store_replies=bool(inp.store_replies), conn=bool(inp.conn), layerwise=bool(inp.layerwise),
        lookup_s=float(inp.lookup_s), load_latency=float(inp.load_latency), load_cap=float(inp.load_cap),
        write_cap=float(inp.write_cap), pcie_bw=float(inp.pcie_bw), store_total=float(inp.store_total),
        node_of=inp.node_of, node_bw=inp.node_bw,
        sample_t0=float(inp.arrival[0]), n_samples=int(inp.n_samples),
        hshift=int(hsize_shift[3]), hmask=int(hsize_shift[2]), dshift=int(dsize_shift[3]),
        dmask=int(dsize_shift[2]), incremental=bool(inp.incremental), prefill_first=bool(inp.prefill_first),
        whole_prompts=bool(inp.whole_prompts), refresh_s=float(inp.refresh_s),
        kv_refresh_s=float(inp.kv_refresh_s),
        kv_delay=float(inp.kv_event_delay_s),
        replica=inp.replica if inp.replica is not None else np.zeros(inp.n, dtype=np.int64),
        seen_dram=int(inp.n_instances * hbm), seen_glob=int(inp.n_instances * (hbm + d_cap)),
        router_clock=bool(inp.refresh_s > 0 or inp.kv_refresh_s > 0), decode_true=inp.decode_est,
        waiter_offsets=inp.waiter_offsets, waiters=inp.waiters,
        abandon=inp.patience is not None, patience=inp.patience if inp.patience is not None else np.zeros(1),
        sparse=_sparse_mode(inp), sp_size=tree_size(inp.n_routable), sp_holders=SPARSE_HOLDERS,
        view_free=inp.pid in load_only.VIEW_FREE_PIDS, lag=bool(inp.first_token_lag), api_s=float(inp.api_s),
        release_delay=inp.release_delay if inp.release_delay is not None else np.zeros(inp.n))


def _sparse_mode(inp: EngineInput) -> int:
    """The routing index mode of this run (``SP_*``; :mod:`.routing_index`): off below :data:`SPARSE_MIN_INSTANCES`
    routable instances, with router KV-event delays (the router's hits are not bounded by the tiers' holders), and
    for every policy or setting whose rule needs the full view."""
    if inp.n_routable < SPARSE_MIN_INSTANCES or inp.kv_event_delay_s > 0:
        return SP_OFF
    if inp.pid == smetric_policy.PID:
        cost = smetric_policy.indexable(inp.params)
        return SP_OFF if cost is None else (SP_SMETRIC_ATTN if cost == "attention" else SP_SMETRIC_TOKENS)
    if inp.pid == load_only.PID_LEAST_LOAD:
        signal = load_only.least_load_indexed_signal(inp.params)
        return {None: SP_OFF, "in_flight": SP_LL_INFLIGHT, "queued_tokens": SP_LL_QTOKENS}[signal]
    return SP_OFF


def _make_state(inp: EngineInput, d: EngineData) -> EngineState:
    n, m = inp.n, inp.n_instances
    ri = np.zeros((n, N_RI), dtype=np.int64)
    ri[:, [RI_INST, RI_DINST, RI_NXT, RI_PRV, RI_REASON]] = -1
    rf = np.zeros((n, N_RF))
    rf[:, [RF_ARR, RF_ADMIT, RF_FIRST, RF_FINISH]] = np.nan
    rf[:, RF_DECODE_EST] = inp.decode_est
    ii = np.zeros((m, N_II), dtype=np.int64)
    ii[:, [II_WHEAD, II_WTAIL, II_PHEAD, II_PTAIL, II_BLOCKED_BY]] = -1
    ii[:, II_ROLE] = COLOCATED
    if inp.disaggregated:
        ii[:inp.n_routable, II_ROLE] = PREFILL_ROLE
        ii[inp.n_routable:, II_ROLE] = DECODE_ROLE
    ii[:, II_NFREE] = d.hbm_blocks
    ii[:, II_DNFREE] = d.dram_slots
    fi = np.zeros((m, N_FI))
    fi[:, [FI_END, FI_WAKE, FI_MINREADY]] = np.inf
    hkeys, hvals, _, _ = new_table(m, d.hbm_blocks)
    dkeys, dvals, _, _ = new_table(m if d.dram_slots else 1, max(d.dram_slots, 1))
    hslot = np.full((m, 4, d.hbm_blocks), -1, dtype=np.int64)
    hslot[:, HS_REF] = 0
    hfree = np.tile(np.arange(d.hbm_blocks - 1, -1, -1, dtype=np.int64), (m, 1))
    dslots = max(d.dram_slots, 1)
    dslot = np.full((m if d.dram_slots else 1, 3, dslots), -1, dtype=np.int64)
    dfree = np.tile(np.arange(dslots - 1, -1, -1, dtype=np.int64), (m if d.dram_slots else 1, 1))
    u = max(inp.n_unique, 1) if inp.global_blocks else 1
    delay = inp.kv_event_delay_s > 0.0
    snap = np.zeros((inp.n_routable + 1, pb.N_VIEW))  # the router's snapshot; last row: next boundaries
    snap[inp.n_routable, 0] = -np.inf if inp.refresh_s > 0 else np.inf
    snap[inp.n_routable, 1] = -np.inf if inp.kv_refresh_s > 0 else np.inf
    gi = np.zeros(N_GI, dtype=np.int64)
    gi[G_HEAD] = gi[G_TAIL] = -1
    gi[G_PHEAD] = gi[G_PTAIL] = gi[G_PNEXT] = -1
    n_tr = 3 * n if inp.conn else 1  # transfer ids: loads 0..n-1, prompt writes n.., reply writes 2n..
    roots = np.arange(n) if not inp.closed else np.flatnonzero(inp.n_deps == 0)
    ah_t = np.zeros(n)
    ah_r = np.zeros(n, dtype=np.int64)
    ah_t[:len(roots)] = inp.arrival[roots]  # sorted by (time, row): already a valid heap
    ah_r[:len(roots)] = roots
    gi[G_AHN] = len(roots)
    size = 1 << max(1, m.bit_length())  # leaves 0..m-1: instances, leaf m: the connector's transfer pool
    tt_t = np.full(2 * size, np.inf)
    tt_i = np.zeros(2 * size, dtype=np.int64)
    tt_i[size:] = np.arange(size)
    for k in range(size - 1, 0, -1):
        tt_i[k] = tt_i[2 * k]
    gf = np.zeros(N_GF)
    gf[GF_NOW] = -np.inf
    gf[GF_SAMPLE_DT] = inp.sample_dt
    gf[GF_QUEUE:] = inp.queue
    return EngineState(
        ri=ri, rf=rf, ii=ii, fi=fi, hkeys=hkeys, hvals=hvals, hslot=hslot, hfree=hfree,
        hends=np.full((m, 2), -1, dtype=np.int64), dkeys=dkeys, dvals=dvals, dslot=dslot, dfree=dfree,
        dends=np.full((m if d.dram_slots else 1, 2), -1, dtype=np.int64), g_in=np.zeros(u, dtype=np.int8),
        g_prev=np.full(u, -1, dtype=np.int64), g_next=np.full(u, -1, dtype=np.int64), gi=gi, gf=gf,
        ah_t=ah_t, ah_r=ah_r, tt_t=tt_t, tt_i=tt_i, dheap=np.zeros((m, inp.max_num_seqs), dtype=np.int64),
        batch_r=np.zeros((m, inp.max_num_seqs), dtype=np.int64),
        batch_c=np.zeros((m, inp.max_num_seqs), dtype=np.int64),
        scratch=np.zeros(2 * inp.max_num_seqs + 2, dtype=np.int64),
        handoff=np.zeros(inp.max_num_seqs + 1, dtype=np.int64), mark=np.zeros(m, dtype=np.int8),
        ts=np.zeros((m, inp.n_samples, N_TS), dtype=np.int64), pstate=np.tile(inp.state, (inp.n_replicas, 1)),
        vbuf=np.zeros((inp.n_routable, pb.N_VIEW)), reqv=np.zeros(pb.N_REQ),
        qmark=np.full((n, 2), -1, dtype=np.int64), tr_rem=np.zeros(n_tr), tr_rate=np.zeros(n_tr),
        tr_bytes=np.zeros(n if inp.conn else 1), tr_node=np.zeros(n_tr, dtype=np.int64),
        tr_prev=np.full(n_tr, -1, dtype=np.int64), tr_next=np.full(n_tr, -1, dtype=np.int64),
        node_cnt=np.zeros(len(inp.node_bw), dtype=np.int64), pre=np.zeros((n, 3), dtype=np.int64),
        ipre=np.zeros((m, 4), dtype=np.int64),
        aheap=np.zeros((m, inp.max_num_seqs if inp.incremental else 1), dtype=np.int64),
        snap=snap, rinf=np.zeros((inp.n_replicas, inp.n_routable), dtype=np.int64),
        seen=np.zeros(d.seen_glob + u if delay else 1),
        **dict(zip(("est_sess", "est_ring", "est_g"), estimator_state(
            int(inp.queue[Q_EST]), int(inp.session.max()) + 1, int(inp.queue[Q_WINDOW])))),
        deps_left=inp.n_deps.copy(), deps_t=np.full(n, -np.inf),
        gone=np.zeros(len(inp.patience) if inp.patience is not None else 1, dtype=np.int8),
        **_index_state(inp, d))


def _index_state(inp: EngineInput, d: EngineData) -> dict:
    """The routing index's arrays (:mod:`.routing_index`); one-element placeholders when it is off."""
    on = d.sparse != SP_OFF
    nr = inp.n_routable if on else 1
    u = max(inp.n_unique, 1) if on else 1
    m = inp.n_instances
    return dict(
        sp_tree=new_trees(nr, 1 + inp.n_replicas) if on else np.zeros((1, 2)),
        sp_dirty=np.zeros(nr, dtype=np.int8), sp_list=np.zeros(nr, dtype=np.int64),
        sp_meta=np.zeros(2, dtype=np.int64), sp_mark=np.full(nr, -1, dtype=np.int64),
        sp_buf=np.zeros(nr, dtype=np.int64), sp_val=np.zeros((nr, 3)),
        sp_stack=np.zeros((3, 2 * d.sp_size.bit_length() + 4), dtype=np.int64),
        h_head=np.full((2, u), -1, dtype=np.int64), h_count=np.zeros(u, dtype=np.int64),
        h_hl=np.full((2, m * d.hbm_blocks if on else 1), -1, dtype=np.int32),
        h_dl=np.full((2, m * d.dram_slots if on and d.dram_slots else 1), -1, dtype=np.int32),
        vis=np.full(inp.n if d.lag else 1, -np.inf))


def _raw(inp: EngineInput, st: EngineState) -> RawRun:
    ri, rf, ii, fi = st.ri, st.rf, st.ii, st.fi
    reason = mark_unreleased(ri[:, RI_REASON], inp.session) if inp.patience is not None else ri[:, RI_REASON].copy()
    reason[reason < 0] = REASON_STALLED
    return RawRun(
        instance=ri[:, RI_INST].copy(), decode_instance=ri[:, RI_DINST].copy(), arrival=rf[:, RF_ARR].copy(),
        admit=rf[:, RF_ADMIT].copy(), first_token=rf[:, RF_FIRST].copy(), finish=rf[:, RF_FINISH].copy(),
        hit_hbm=ri[:, RI_HHBM].copy(), hit_dram=ri[:, RI_HDRAM].copy(), hit_global=ri[:, RI_HGLOB].copy(),
        prefill_tokens=ri[:, RI_PREFILL].copy(), reason=reason,
        inst_prefill_tokens=ii[:, II_STAT_PREFILL].copy(), inst_decode_tokens=ii[:, II_STAT_DECODE].copy(),
        inst_iterations=ii[:, II_ITER] + ii[:, II_STALLED], inst_busy=fi[:, FI_BUSY].copy(),
        inst_routed=ii[:, II_ROUTED].copy(), inst_kv_peak=ii[:, II_KVPEAK].copy(),
        inst_dram_read=fi[:, FI_DRAMR].copy(), inst_global_read=fi[:, FI_GLOBR].copy(),
        inst_pd_read=fi[:, FI_PDR].copy(), global_write=float(st.gf[GF_WRITE]),
        end_time=float(st.gf[GF_NOW]), timeseries=st.ts[:, :ii[0, II_SAMPLED]].copy(),
        sample_dt=float(st.gf[GF_SAMPLE_DT]), preemptions=st.pre[:, P_COUNT].copy(),
        inst_preemptions=st.ipre[:, IP_PREEMPT].copy(), decode_est=rf[:, RF_DECODE_EST].copy())


def state_bytes(inp: EngineInput) -> int:
    """Bytes of the state arrays the engine allocates for ``inp`` (the input arrays are shared, not counted)."""
    return int(sum(a.nbytes for a in _make_state(inp, _make_data(inp))))


def run_engine(inp: EngineInput, progress: bool = False, chunk: int = 20_000, counters: dict | None = None) -> RawRun:
    """Run the numba engine on ``inp`` (``inp`` is not modified); optionally with a progress bar. A ``counters``
    dict receives the run's routing counts: ``arrivals``, ``full_views`` (arrivals decided on the full view: the
    routing index off, or unable to tell; the rest it decided alone)."""
    d = _make_data(inp)
    st = _make_state(inp, d)
    if not progress:
        _run(d, st, -1)
    else:
        from tqdm.auto import tqdm

        with tqdm(total=inp.n, unit="req", desc="simulate") as bar:
            done = False
            while not done:
                before = int(st.gi[G_ARRIVED])
                done = _run(d, st, chunk)
                bar.update(int(st.gi[G_ARRIVED]) - before)
    _finalize(d, st)
    if counters is not None:
        counters.update(arrivals=int(st.gi[G_ARRIVED]), full_views=int(st.gi[G_FULL_VIEWS]))
    if st.gi[G_CLOCK_BACK]:
        raise RuntimeError(f"engine clock went backwards {st.gi[G_CLOCK_BACK]} times")
    return _raw(inp, st)


def ensure_compiled() -> None:
    """Compile (or load from cache) the engine unless this process already has it; a first-time compile (no
    on-disk cache yet) is announced with one line on stderr, as it takes minutes."""
    if not _run.signatures:
        if not engine_cached():
            print(COMPILE_MESSAGE, file=sys.stderr, flush=True)
        compile_engine()


#: Printed before a compile without an on-disk cache: 132 s measured on a 2-core machine under load.
COMPILE_MESSAGE = "smetric: compiling the simulation engine with numba (~2 min, once; cached afterwards)"


def engine_cached() -> bool:
    """Whether numba's on-disk cache holds the engine for the current source (its index is present and its
    source stamp matches), so loading it takes seconds, not minutes."""
    cache_file = getattr(getattr(_run, "_cache", None), "_cache_file", None)
    if cache_file is None or not hasattr(cache_file, "_load_index"):
        return True  # a numba without this cache layout: print nothing rather than guess
    return bool(cache_file._load_index())  # numba returns {} for a missing or stale index


def compile_engine() -> None:
    """Compile (or load from cache) the engine by running a two-request workload."""
    from ...workload.core import Workload
    from ..config import ClusterConfig, HardwareSpec
    from ..inputs import prepare

    wl = Workload(arrival=[0.0, 0.1], input_len=[300, 600], output_len=[3, 2], session=[0, 0], turn=[0, 1],
                  parent=[-1, 0], gap=[0.0, 0.0], block_offsets=[0, 2, 5], block_ids=[0, 1, 0, 1, 2],
                  block_size=256)
    cluster = ClusterConfig("example", "example", n_instances=1, hardware=HardwareSpec.example())
    run_engine(prepare(wl, cluster, "round-robin"))
