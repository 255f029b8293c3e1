"""The engine's layout: request and instance states, the column indices of the struct-of-arrays state, and the
read-only data (:data:`EngineData`) and mutable state (:data:`EngineState`) tuples every kernel takes as ``d`` and
``st``.

numba freezes these module-level constants into the compiled kernels; the cache guard of every kernel module
(:func:`smetric.numba_cache.refresh_module`) lists this file among its sources, so editing it recompiles them.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..queueing import N_Q

INF = np.inf

# request states (ROUTED: routed, still in the API server, not yet in the instance's queue)
NOT_ARRIVED, WAITING, LOADING, PREFILL, DECODE, LEFT, ROUTED = 0, 1, 2, 3, 4, 5, 6
# instance roles
COLOCATED, PREFILL_ROLE, DECODE_ROLE = 0, 1, 2
# routing index modes (d.sparse; :mod:`.routing_index`): off, SMETRIC with the attention / token cost model,
# least-load on in-flight requests / queued prefill tokens
SP_OFF, SP_SMETRIC_ATTN, SP_SMETRIC_TOKENS, SP_LL_INFLIGHT, SP_LL_QTOKENS = range(5)

# ---- per-request int columns (st.ri)
RI_STATE, RI_INST, RI_DINST, RI_REM, RI_INKV, RI_K1, RI_PRIV, RI_NXT, RI_PRV, RI_JOIN = range(10)
RI_CTOK, RI_REASON, RI_PREFILL, RI_HHBM, RI_HDRAM, RI_HGLOB = range(10, 16)
N_RI = 16
# ---- per-request queue-discipline marks (st.qmark, outside st.ri's 128-byte rows): the admission step
# that last tried the request, the KV version at which it last did not fit
QM_TRIED, QM_FAILED = range(2)
# ---- per-request float columns (st.rf)
RF_ARR, RF_ADMIT, RF_FIRST, RF_FINISH, RF_READY, RF_CCOST, RF_CATTN, RF_DECODE_EST = range(8)
N_RF = 8
# ---- per-instance int columns (st.ii)
(II_ROLE, II_BUSY, II_WHEAD, II_WTAIL, II_NWAIT, II_PHEAD, II_PTAIL, II_NRUN, II_NLOAD, II_NDEC, II_SDEC,
 II_ITER, II_SEGK, II_NBATCH, II_INFLIGHT, II_NQUEUED, II_QTOK, II_CTX, II_PINNED, II_CACHED, II_PRIV,
 II_NFREE, II_DSIZE, II_DNFREE, II_HEAPN, II_SAMPLED, II_KVPEAK, II_STAT_PREFILL, II_STAT_DECODE,
 II_ROUTED, II_KV_VERSION, II_BLOCKED_BY, II_BLOCKED_AT, II_NPEND, II_STALL, II_STALLED) = range(36)
N_II = 36
# II_STALL: the running iteration is prefill-only while decodes wait (d.prefill_first); II_STALLED: such
# iterations so far. II_ITER counts the others: the iterations in which the decodes advance.
# ---- per-instance float columns (st.fi)
(FI_FORM, FI_T0, FI_BASE, FI_STEP, FI_END, FI_WAKE, FI_MINREADY, FI_LDRAM, FI_LNET, FI_LPD, FI_QCOST,
 FI_QATTN, FI_BUSY, FI_DRAMR, FI_GLOBR, FI_PDR, FI_SCHED, FI_LREADY) = range(18)
N_FI = 18
# ---- slot columns of the HBM (st.hslot: block, pins, prev, next) and DRAM (st.dslot: block, prev, next)
HS_BLOCK, HS_REF, HS_PREV, HS_NEXT = range(4)
DS_BLOCK, DS_PREV, DS_NEXT = range(3)
# ---- global ints / floats
G_HEAD, G_TAIL, G_SIZE, G_AHN, G_ARRIVED, G_CLOCK_BACK, G_QSTEP, G_PHEAD, G_PTAIL, G_PCOUNT, G_PNEXT = range(11)
G_FULL_VIEWS = 11  # arrivals decided on the full view (the routing index could not tell, or is off)
N_GI = 12
GF_NOW, GF_WRITE, GF_PLAST, GF_SAMPLE_DT, GF_QUEUE = range(5)
# ---- incremental KV allocation: per-request (st.pre) tokens generated before its last preemption,
# preemptions, admission sequence number; per-instance (st.ipre) preemptions, entries of the block-allocation
# heap st.aheap (key = iteration that needs the block * n + row), admissions so far, the budget at which the
# FCFS head last did not fit
P_KEPT, P_COUNT, P_SEQ = range(3)
IP_PREEMPT, IP_AHEAPN, IP_SEQ, IP_BBUDGET = range(4)
N_GF = GF_QUEUE + N_Q  # the queue discipline's parameter vector lives at st.gf[GF_QUEUE:]

# The engine's read-only inputs: every field copied from EngineInput keeps its name there (and the
# ClusterConfig's, where it has one); derived fields: dram_slots, global_slots, sample_t0 and the hash-table
# shift/mask pairs.
EngineData = namedtuple("EngineData", [
    "arrival", "input_len", "n_out", "gap", "turn", "session", "history", "priority",
    "block_offsets", "block_ids", "coef", "params", "rand",
    "n", "n_instances", "n_routable", "disaggregated", "closed", "overlap", "max_num_seqs", "max_batched_tokens",
    "block_size", "hbm_blocks", "hbm_reuse", "dram_slots", "dram_write", "global_slots",
    "kv_bytes_per_token", "dram_bw", "global_bw", "global_latency", "pd_bw", "l_eq", "pid",
    "reply_offsets", "reply_ids", "reply_tokens", "tail_pos", "tail_id", "tail_tok", "cache_replies",
    "store_replies", "conn", "layerwise", "lookup_s", "load_latency", "load_cap", "write_cap", "pcie_bw",
    "store_total", "node_of", "node_bw",
    "sample_t0", "n_samples", "hshift", "hmask", "dshift", "dmask", "incremental", "prefill_first", "whole_prompts",
    "refresh_s", "kv_refresh_s", "kv_delay", "replica", "seen_dram", "seen_glob", "router_clock",
    "decode_true", "waiter_offsets", "waiters", "abandon", "patience", "sparse", "sp_size",
    "sp_holders", "view_free", "lag", "api_s", "release_delay"])

EngineState = namedtuple("EngineState", [
    "ri", "rf", "ii", "fi", "hkeys", "hvals", "hslot", "hfree", "hends", "dkeys", "dvals", "dslot",
    "dfree", "dends", "g_in", "g_prev", "g_next", "gi", "gf", "ah_t", "ah_r", "tt_t", "tt_i", "dheap",
    "batch_r", "batch_c", "scratch", "handoff", "mark", "ts", "pstate", "vbuf", "reqv", "qmark",
    "tr_rem", "tr_rate", "tr_bytes", "tr_node", "tr_prev", "tr_next", "node_cnt", "pre", "ipre", "aheap",
    "snap", "rinf", "seen", "est_sess", "est_ring", "est_g", "deps_left", "deps_t", "gone", "sp_tree", "sp_dirty",
    "sp_list", "sp_meta", "sp_mark", "sp_buf", "sp_val", "sp_stack", "h_head", "h_count", "h_hl", "h_dl", "vis"])
