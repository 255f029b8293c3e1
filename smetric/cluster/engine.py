"""The numba cluster engine: iteration-level simulation of N instances with tiered KV caches.

Engine semantics
================
Both engines (this one and :mod:`smetric.cluster.reference`) implement exactly these rules.

Inputs. The workload is coarsened to the engine block size ``B`` and its chained block ids are
remapped to dense ids. A request has ``L >= 1`` prompt tokens and generates ``n_out = max(output, 1)``
tokens. HBM holds ``C`` blocks per instance; a request needs ``ceil((L + n_out) / B)`` blocks when
colocated (``ceil(L / B)`` on a prefill instance, ``ceil((L + n_out) / B)`` on a decode instance).
A request that can never fit is rejected at arrival (``exceeds_kv_capacity``) without routing.

Replay. ``open``: request ``r`` arrives at its (load-scaled) trace time (joins are ignored). ``closed``:
request ``m`` waits on its parent and on every row ``c`` with ``join_to[c] == m`` (fan-out children that
the turn joins); a request waiting on nothing arrives at its trace time; once every row it waits on has
ended (finished, or been rejected), the latest at ``t``, it arrives at ``max(trace time, t + gap)``.
Without joins: first turns arrive at their trace time, a child ``gap`` after its parent's end.

Event order. The clock jumps to the earliest event. Instance events (an iteration ends, or an
idle instance wakes because a KV load finished) come first, then a connector transfer's completion
(see "KV connector"), then arrivals at the same time; instance events tie by instance index, arrivals
by (time, row).

Arrival (router). The policy sees a view of every routable instance (the prefill instances when
disaggregated), built at the arrival time: prefix hits per tier, queued prefill, counts, KV use and
the request's estimated cost there (columns ``V_*`` of :mod:`smetric.policies.base`), and returns an
instance. The request joins that instance's waiting queue (routing order); an idle instance forms a
batch at once, a busy one considers it at its next iteration end. What the view holds, and as of
when, is the router information model below (exact with ``RouterInfo()``).

Serving stack (``ClusterConfig.engine``, :mod:`smetric.cluster.serving_stack`; all off in the ``legacy`` row).
The per-iteration CPU time is part of the iteration time (the performance model's constant term). The workload's
arrival is the client's send; the router sees a request ``client_to_router_s`` later (``arrival`` above is that
time). With ``api_server_s = A > 0`` a routed request is counted at once in the router-side numbers (dispatch:
``V_IN_FLIGHT``, the instance's in-flight and routed counts) but joins the instance's waiting queue -- and its
queued-prefill, context and waiting counts, with the real hit at that moment -- only at ``t + A``, an event in the
arrival heap keyed (time, row) like arrivals. With the first-token lag, a request that joins a busy instance's queue
is not visible to the scheduler until the end of the iteration running then (``vis``; with a connector's pending
iteration whose end is unknown, its join time): batch formations at times ``<= vis`` pass it over (FCFS: it blocks
the queue behind it), except that a formation which would otherwise run nothing (no chunk, no decode) admits it --
no batch was scheduled ahead; an idle instance admits it at once. In closed replay, a row that ends at ``t``
releases its waiters as if it ended at ``t + after_last_token_s + stream_per_token_s * n_out + client_to_router_s``
(the reply reaches the client, which sends the next turn after its gap, and the router sees it). Reported request
times are the client's (:func:`smetric.cluster.result.build_result`).

Router information (:class:`smetric.cluster.router_info.RouterInfo`). Request ``r`` is routed by replica
``k(r)`` of ``K`` router replicas (``uniform``: drawn per request from a dedicated seeded stream;
``session``: splitmix64 of the dense session index mod ``K``); each replica has its own policy state
vector (router-side indexes live there). ``V_IN_FLIGHT`` is replica-local: the requests ``k`` routed to
the instance that have not left it (a finish, or a disaggregated hand-off), counted at dispatch and at
that release (``K = 1``: the exact count). With ``refresh_s = R > 0`` the columns ``V_QUEUED_TOKENS/COST/
ATTN``, ``V_N_RUNNING``, ``V_N_WAITING`` and ``V_CONTEXT_TOKENS`` are those of a snapshot taken at the
boundaries ``b = j R`` (absolute time): the state after every event before ``b`` (an event at exactly ``b``
comes after it), taken lazily before the first event at or after ``b`` -- no extra events; the state
between events is constant, so this is the state at ``b`` itself; boundaries without an event in between
collapse into one. ``kv_refresh_s`` does the same for ``V_KV_USED`` on its own grid. One snapshot is
shared by all replicas (real replicas scrape on their own phases: an approximation). With
``kv_event_delay_s = D > 0`` the hit columns count block ``j`` of the prompt as seen in a tier iff it is
there now and entered it (inserted into HBM at prefill completion or reply caching, spilled into
DRAM, written into the store; a touch or a share keeps the entry time) at or before ``t - D``; the
router's ``k1, k2, k3`` are the leading blocks seen in HBM; in HBM or DRAM; in HBM, DRAM or the store,
with the partial-tail rule applied to the tiers in which the tail is seen. Evictions are seen at once
(an approximation: real KV-event streams deliver removals late too). The engine's own queued-prefill
accounting (below) keeps the real routing-time hit; ``V_REQ_COST`` uses the router's hits.

Prefix hits. ``k1`` = leading prompt blocks in the instance's HBM cache, ``k2`` = leading blocks in
HBM or its DRAM, ``k3`` = leading blocks in HBM, DRAM or the global store. Token hits are
``h = min(k * B + tail, L - 1)`` (at least one prompt token is always computed); the tiers get ``h1``,
``h2 - h1``, ``h3 - h2``. ``tail`` is 0 unless ``hit_granularity = g`` is set and ``k`` equals the
position of the request's parent's partial tail and that tier holds it; then it is the tail's tokens
rounded down to a multiple of ``g``. The parent's partial tail is, when replies are kept
(``cache_replies``, or ``global_store_replies`` with a store), the last ``(L_p + n_out_p - 1) mod B``
tokens of its prompt + reply (a fresh id, cached and/or stored at the parent's finish), otherwise its
partial last prompt block. The router's view uses the hits at arrival; the request's
real hits are looked up again at admission (blocks may have been evicted or added meanwhile).

Replies (kept when ``cache_replies``, or ``global_store_replies`` with a store). A request's KV at
finish covers ``X = L + n_out - 1`` tokens (the last token has none yet). Its reply chain is the full
engine blocks at positions ``L // B .. X // B - 1`` and, with
``hit_granularity``, the partial tail at ``X // B`` when it holds >= ``g`` tokens. The full blocks take
the ids of the prompt at those positions of the request's first child (row order) that extends its
prompt (equal chained ids over its full trace blocks; a fan-out child starting a fresh context, such as a
Claude Code sub-agent, is passed over), when that child is >= ``L + n_out`` tokens long (append-only
sessions: the follow-up re-sends the reply verbatim); the partial tail belongs to that child too.
Otherwise, and for the tail, fresh
ids no prompt uses (they occupy HBM like vLLM's cached reply blocks, but nothing hits them). With
``cache_replies=False`` a reply's KV is private and freed at finish.

Batch formation at time ``t`` (after an iteration ends, on wake-up, or on arrival at an idle instance):

1. Activation: admitted requests whose KV load has finished (``ready <= t``) become runnable: with
   prompt left to compute they take chunks; otherwise (a disaggregated decode) they join the decode set.
2. ``budget = max_batched_tokens - n_decode``: every decoding sequence contributes one token.
3. Runnable prefills, in admission order, take chunks ``min(remaining, budget)`` while budget > 0.
4. Admission, while budget > 0 and the running count < ``max_num_seqs``, of the queue discipline's
   candidates (:mod:`smetric.cluster.queueing`). ``fcfs``: routing order with head-of-line blocking
   (the first candidate whose KV does not fit stops admission). ``smetric-score`` / ``mlfq``: the
   waiting requests ranked once at the start of the admission step (at ``t``, with the instance's
   free blocks ``C - pinned - reserved`` at that moment), tried by decreasing rank (ties: routing
   order); one that does not fit is skipped and admission goes on with the next. Their E[T] is the
   request's queued-prefill cost plus its decode estimate, fixed at its arrival (see "Estimators").
   Admitting looks up ``k1, k2, k3``, pins the ``k1`` HBM blocks,
   touches its DRAM-hit blocks (tail first; with ``write-through`` every block of ``0 .. k2 - 1`` that DRAM
   holds), evicts unpinned HBM blocks LRU-first (spilling them to DRAM with ``spill``) until
   ``cached + reserved + need <= C`` with ``need = blocks - k1``, and reserves ``need`` blocks. It fits iff
   ``pinned (after pinning k1) + reserved + need <= C``. KV for prompt *and* output is reserved at admission
   (a simplification: vLLM allocates incrementally and preempts).
   Loads start now: DRAM-hit tokens over the instance's PCIe link, global-hit tokens over its store
   link (each link serialises: ``start = max(t, link_free)``, ``link_free = start + bytes / bw``; the
   store adds its latency), a decode instance receives the whole prompt's KV over its P->D link.
   With ``kv_load_overlap`` a request with a load in progress (``ready > t``) waits while the
   instance iterates on others; without it the iteration is delayed by ``max(ready) - t`` and the
   request runs now. A runnable admitted request takes its chunk (or joins the decode set) at once.
   With an ``lmcache`` connector (and a global store) the global hit is a transfer instead (see
   "KV connector") and a prefill or colocated instance's loads always block, as described there.
5. Empty batch: the instance idles until its earliest load finishes (or the next arrival).
   Otherwise the iteration lasts ``wait + iteration_time(n_tokens, prefill_attn, decode_ctx, n_decode)``
   with ``n_tokens`` = chunk tokens + decodes, ``prefill_attn = sum c * (p + c / 2)`` (``p`` prompt
   tokens already in KV, summed in batch order) and ``decode_ctx = sum (L + generated)``.

KV connector (``lmcache`` model; with the ``ideal`` connector or without a global store none of this
applies). On a prefill or colocated instance: every admitted request adds ``lookup_s`` to the
scheduler time ``S`` of the formation (``sched = t + S``); its DRAM-hit load is ready as above; its
global hit of ``bytes`` starts transfer ``r`` in the pool at ``t``. The iteration's compute time ``dt``
(the iteration time above, plus the GPU->host copy ``(chunk tokens [+ decodes with
global_store_replies]) * kv_bytes / pcie_bw``; a decode-only run adds the decodes' copy to each
iteration) is known at formation; the iteration ends, once every load it admitted is ready (``R`` =
the latest ready time, ``t`` if none), at ``max(sched, R) + dt`` (blocking) or ``max(sched + dt, R)``
(``layerwise``); until then it has no end time. Transfers: a load (id ``r``), a prompt write (id
``n + r``, bytes of the prompt blocks new to the store, started where the prompt's write-through
happens) and a reply write (id ``2n + r``). Each active transfer progresses at
``min(cap, node_bw / transfers of its node, store_total / all transfers)`` (``cap`` = ``load_cap`` for
loads, ``write_cap`` for writes; rates change when any transfer starts or ends). The earliest to
complete ends (ties: lower id); a completed load then crosses the instance's PCIe link
(``start = max(t, pcie_free)``, serialised with the DRAM loads, at ``pcie_bw``) and is ready
``load_latency`` after that. Writes delay nobody; the written blocks are in the store from the start
of their write.

Iteration end at ``t'``: every decoding sequence has one more token; chunks are done (in batch
order); a request whose prompt is complete gets its first token at ``t'``, its prompt blocks from
``k1`` on join the HBM cache (an already-cached id is shared and the reserved block freed), and the
whole prompt is written through to the global store (tail first, evicting the store's LRU blocks).
Then, in row order, the requests leaving the instance -- decodes that reached ``n_out``, prefill
completions with ``n_out = 1``, and every prefill completion on a prefill instance -- release their
KV: a finished request (not a hand-off) with ``global_store_replies`` first writes its reply chain
and then its prompt through to the store (tail first: reply tail ... reply head, prompt tail ...
head); on a non-decode instance with ``cache_replies`` it pins its reply chain into HBM head first
(an already-cached id is pinned; otherwise one of its reserved blocks becomes the entry, or a free
block, or the LRU-evicted one; where none can be had the chain stops); then it unpins the reply chain
and its prompt blocks, tail first (a block whose pin count reaches 0 becomes the most recently used),
and frees its remaining reserved blocks; they finish at ``t'`` except disaggregated hand-offs. Colocated prefill
completions with ``n_out > 1`` join the decode set; the next batch forms at ``t'``. Finally the
hand-offs go, in row order, each to the decode instance with the fewest requests in flight (ties:
lowest index); idle decode instances that received one form a batch at ``t'`` (in index order).

Estimators (``QueueDiscipline.estimator``, :mod:`smetric.cluster.estimators`). ``oracle``: the decode
estimate is the true one, computed before the run. Otherwise a request's decode estimate is computed at
its arrival (after the too-large check, before routing) from the estimator state at that moment, and
the state is updated, in event order, when a request finishes (at the ``finish`` step above, rows in
the order they finish; hand-offs and rejections do not count): its session's finished count and output
sum, the global ones, and (``linear``) the window of (input, n_out, true decode time) with its
least-squares refit. Both engines call the same compiled functions for both steps.

Abandonment (``ClusterConfig.patience``; off by default, :mod:`smetric.cluster.abandonment`). Each session
has a patience ``p`` drawn before the run. At the start of step 4 of every batch formation at ``t`` (before
ranking, whether or not the step admits), each waiting request that was never admitted (first admission
only: a preempted or handed-over request has begun and never abandons) with ``arrival + p < t`` leaves the
waiting queue unserved, in routing order: it is no longer waiting, in flight or queued (its context and
queued-prefill share are removed), its status is ``abandoned`` and its session is marked. A marked
session's turns are never served: in closed replay an abandoned request releases no child (its descendants
never arrive and are reported abandoned too), in open replay a later turn of the session that arrives after
the mark is abandoned at arrival (not routed). Detection is lazy, at the instance's next formation after
the deadline -- at most one iteration late on a busy instance (a request admitted at exactly its deadline
is served); arrivals, the router's view and the time series see the request on the queue until then. No
extra event exists: a decode-only run (below) ends at the first iteration end after the earliest deadline
of the instance's waiting requests, which is where the reference forms anyway, so both engines detect at
the same formation.

Incremental KV allocation (``kv_allocation = "incremental"``; colocated, FCFS, no global store), after vLLM
V1's scheduler (``vllm/v1/core/sched/scheduler.py``: running requests are scheduled before waiting ones, a
failed ``allocate_slots`` preempts ``self.running.pop()`` until it succeeds or the request itself was popped,
waiting requests are admitted only when the step preempted nobody; ``kv_cache_manager.allocate_slots``
succeeds iff the new blocks <= free blocks, evictable cached ones included, no watermark). A request
holds its ``k1`` pinned hits plus private blocks; ``g`` = tokens generated. The rules replace the
reservation above, in batch formation after activation:

a. Decodes whose next token starts a new block (``ceil((L + g) / B)`` > blocks held, all prompt blocks being
   cached) take one block each, in row order. Then ``budget = max_batched_tokens - n_decode``.
b. Runnable prefills, in admission order, take chunks ``c`` as in step 3, each first taking the blocks its KV
   lacks (``ceil((in_kv + c) / B) - k1 - private``).
c. Taking ``m`` blocks succeeds iff ``pinned + reserved + m <= C`` (LRU cached blocks are evicted as at
   admission); otherwise the most recently admitted running request is preempted, repeatedly, until it
   succeeds or the requester itself was preempted (then it takes nothing and, being the last admitted,
   ends step b). A preempted decode returns its budget token.
d. Admission (step 4) only if nobody was preempted in this formation; a candidate fits iff
   ``pinned + reserved + need <= C`` with ``need = ceil((h3 + c) / B) - k1``, ``c`` = the chunk it takes now
   (``min(L' - h3, budget)``; 0 when its KV loads with ``kv_load_overlap``).
Preemption (recompute) of ``v``: a decode leaves the decode set; a prefill's prompt blocks wholly in KV
(``min((j + 1) B, L) <= in_kv``, from ``k1`` on) join the HBM cache as at prompt completion (a loading
request's loads are abandoned); then its prompt blocks are unpinned tail first (prefix-cached, evictable),
its private blocks (generated tokens' KV included: not cached) are freed, and it goes to the FRONT of the
waiting queue keeping ``g``. Re-admitted, it recomputes ``L' = L + g`` tokens (hits over its prompt blocks
as at any admission, capped at ``L - 1``), its queued-prefill share counts ``L'`` tokens from the
preemption on; when that prefill completes it has ``g + 1`` tokens (its first-token time stays the first
one; it leaves if ``g + 1 = n_out``) and decodes on. ``admit`` and the hit columns keep the first
admission's values; ``prefill_tokens`` counts recomputed tokens too; ``preemptions`` counts per request
and per instance.

Disaggregation. A prefill instance frees its copy of the prompt's KV when the prefill completes
(its blocks stay cached there like any released prompt); the transfer is modelled on the receiving
side: the decode instance reserves ``ceil((L + n_out) / B)`` blocks when it admits the request
(FCFS, bounded by its HBM and ``max_num_seqs``), then receives the prompt's KV over its P->D link
(serialised per decode instance). Decode instances keep no prefix cache. The first token is stamped
on the prefill instance; the request finishes on the decode instance after ``n_out - 1`` decode steps.

Eviction order. Unpinned blocks leave HBM least recently released first; because a request
releases (and looks up) its blocks tail first, a prefix's head is always more recent than its tail,
so every tier stays prefix-closed along every chain and a hit is a binary search (this engine) or
a scan (the reference). DRAM and the global store are LRUs of their own with the same tail-first
touches. What enters DRAM is ``ClusterConfig.dram_policy``: ``spill`` -- an HBM-evicted block (after
LMCache's local CPU backend fed by evictions); ``write-through`` -- every prompt block at its prefill
completion, the whole prompt tail first right after it joins the HBM cache (already-held blocks are
touched), and nothing at HBM eviction (after vLLM's ``OffloadingConnector``, which stores computed
blocks to host memory and loads them back on a GPU miss). Under ``write-through`` DRAM is prefix-closed
by itself (writes and admission touches both run tail first over whole prefixes); replies and the
prompt blocks a preemption keeps are not written (approximations: the connector stores every full
computed block), and writes cost no time (the connector's stores are asynchronous).

Queued-prefill aggregates (``V_QUEUED_TOKENS/COST/ATTN``) are running sums of each routed
request's remaining prefill: set at arrival (routing-time hit), at admission (real hit) and after
each chunk; ``cost(n) = prefill_time(n new over L - n cached)``, ``attn(n) = n + n (L - n/2) / l_eq``;
updated as ``(sum - old) + new``; reset to exactly 0 when no request of the instance has prefill left.

Implementation (this engine only; the observable results are those of the rules above): a run of
decode-only iterations in which nothing can change (no chunks, no admission possible until a
finish, no load finishing) is one event: its ``K`` iterations end at
``T(j) = T0 + j * base + step * j (j - 1) / 2`` because the iteration time is affine in
``decode_ctx`` (which grows by ``n_decode`` per iteration). An arrival or hand-off cuts the run at
the first iteration end after it; the router's view of a running instance counts the iterations
completed so far. The closed form and the reference's running sum of iteration times agree to
rounding (~1e-13 relative); they could order events differently only if an arrival fell within
that rounding of an iteration end. Finishes come from a per-instance min-heap keyed by
(finishing iteration, row).
Routing: for ``smetric`` (engine cache view, fixed rate, ``slo``/``none`` guard) and ``least-load``
(``in_flight``/``queued_tokens``) from :data:`SPARSE_MIN_INSTANCES` routable instances on, an arrival is decided
from a block -> holders index of the tiers and min-trees of the load columns instead of the full view, with
the same decision (section "Indexed routing" below); the reference always rebuilds the full view.
A candidate that did not fit is not re-examined until the instance's KV state changes (the fit
test depends on nothing else; with incremental allocation, or until the budget shrinks).
Incremental allocation: a per-instance heap keyed by (iteration needing the next block, row) feeds step a,
and a decode-only run ends before that iteration (or after one iteration when the formation preempted).
For the ranked disciplines the marks also keep fast-forwarding exact:
a decode-only run forms only when every waiting request failed to fit (or no budget/slot is left),
which no change of rank during the run can undo.
"""

from __future__ import annotations

import math
import sys
from collections import namedtuple

import numpy as np
from numba import njit

from ..hardware.kernel import iteration_time_nb, prefill_attn_work, prefill_time_nb
from ..numba_cache import refresh_module
from ..policies import base as pb
from ..policies import load_only, smetric_policy
from ..policies.dispatch import route
from ..policies.signals import attention_tokens, new_tokens
from .abandonment import mark_unreleased
from .estimators import ORACLE, estimate_nb, estimator_state, observe_nb
from .inputs import UNLIMITED, EngineInput
from .kvcache import h_delete, h_find, h_insert, lru_push_tail, lru_unlink, new_table
from .load_index import holder_link, holder_unlink, new_trees, tree_rebuild, tree_set, tree_size
from .queueing import FCFS, N_Q, Q_EST, Q_KIND, Q_PRIOR, Q_WINDOW, rank_nb
from .result_raw import N_TS, REASON_ABANDONED, REASON_STALLED, TS_KV_USED, TS_RUNNING, TS_WAITING, RawRun
from .router_info import refresh_period
from .sampling import halve_samples

__all__ = ["run_engine", "compile_engine", "ensure_compiled", "state_bytes"]

INF = np.inf

# request states (ROUTED: routed, still in the API server, not yet in the instance's queue)
NOT_ARRIVED, WAITING, LOADING, PREFILL, DECODE, LEFT, ROUTED = 0, 1, 2, 3, 4, 5, 6
# instance roles
COLOCATED, PREFILL_ROLE, DECODE_ROLE = 0, 1, 2
# routing index modes (d.sparse; see "Indexed routing" below): off, SMETRIC with the attention / token cost model,
# least-load on in-flight requests / queued prefill tokens
SP_OFF, SP_SMETRIC_ATTN, SP_SMETRIC_TOKENS, SP_LL_INFLIGHT, SP_LL_QTOKENS = range(5)
#: the index is used from this many routable instances on (below it the full view is as fast; same decisions)
SPARSE_MIN_INSTANCES = 64
#: a prompt block held by at most this many instances bounds the enumerated holders (module "Indexed routing")
SPARSE_HOLDERS = 32

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
 II_ROUTED, II_KV_VERSION, II_BLOCKED_BY, II_BLOCKED_AT, II_NPEND) = range(34)
N_II = 34
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

# Engine functions are compiled with ``_nrt=False``: the engine allocates nothing (all state is
# preallocated in Python), and without the runtime's reference counting the row views and slices
# taken in the hot loops cost nothing (with it, atomic increfs/decrefs took most of the run time).
# The exceptions are ``_run`` and ``_arrive``, through which numba compiles the policies' ``route``
# (callees inherit the caller's runtime flag, and policies may allocate).
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
    "sample_t0", "n_samples", "hshift", "hmask", "dshift", "dmask", "incremental",
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


# ====================================================================== small helpers
@njit(cache=True, _nrt=False)
def _n_blocks(tokens, block):
    return (tokens + block - 1) // block


# ---- tournament tree over instances: the earliest next event, ties to the lower index
@njit(cache=True, _nrt=False)
def _tree_set(st, i, t):
    size = st.tt_t.shape[0] // 2
    k = size + i
    st.tt_t[k] = t
    st.tt_i[k] = i
    k //= 2
    while k >= 1:
        a, b = 2 * k, 2 * k + 1
        if st.tt_t[b] < st.tt_t[a]:
            st.tt_t[k] = st.tt_t[b]
            st.tt_i[k] = st.tt_i[b]
        else:
            st.tt_t[k] = st.tt_t[a]
            st.tt_i[k] = st.tt_i[a]
        k //= 2


@njit(cache=True, _nrt=False)
def _schedule(st, i):
    """Publish instance ``i``'s next event time (iteration end if busy, else wake-up) to the tree."""
    if st.ii[i, II_BUSY] == 1:
        _tree_set(st, i, st.fi[i, FI_END])
    else:
        _tree_set(st, i, st.fi[i, FI_WAKE])


# ---- arrival heap of (time, row)
@njit(cache=True, _nrt=False)
def _ah_less(st, a, b):
    return st.ah_t[a] < st.ah_t[b] or (st.ah_t[a] == st.ah_t[b] and st.ah_r[a] < st.ah_r[b])


@njit(cache=True, _nrt=False)
def _ah_swap(st, a, b):
    t, r = st.ah_t[a], st.ah_r[a]
    st.ah_t[a], st.ah_r[a] = st.ah_t[b], st.ah_r[b]
    st.ah_t[b], st.ah_r[b] = t, r


@njit(cache=True, _nrt=False)
def _ah_push(st, t, r):
    k = st.gi[G_AHN]
    st.gi[G_AHN] = k + 1
    st.ah_t[k] = t
    st.ah_r[k] = r
    while k > 0:
        p = (k - 1) // 2
        if not _ah_less(st, k, p):
            break
        _ah_swap(st, k, p)
        k = p


@njit(cache=True, _nrt=False)
def _ah_pop(st):
    n = st.gi[G_AHN] - 1
    st.gi[G_AHN] = n
    _ah_swap(st, 0, n)
    k = 0
    while True:
        a, b, m = 2 * k + 1, 2 * k + 2, k
        if a < n and _ah_less(st, a, m):
            m = a
        if b < n and _ah_less(st, b, m):
            m = b
        if m == k:
            break
        _ah_swap(st, k, m)
        k = m
    return st.ah_r[n]


# ---- per-instance min-heap of decode finishes, key = finishing iteration * n + row
@njit(cache=True, _nrt=False)
def _dh_push(st, i, key):
    st.ii[i, II_HEAPN] = _heap_push(st.dheap[i], st.ii[i, II_HEAPN], key)


@njit(cache=True, _nrt=False)
def _dh_pop(st, i):
    h = st.dheap[i]
    n = st.ii[i, II_HEAPN] - 1
    st.ii[i, II_HEAPN] = n
    top = h[0]
    h[0] = h[n]
    _heap_sift_down(h, n, 0)
    return top


# ---- a min-heap ``h`` of ``n`` int keys: the decode-finish heap above and the block-allocation heap
@njit(cache=True, _nrt=False)
def _heap_sift_up(h, k):
    while k > 0:
        p = (k - 1) // 2
        if h[p] <= h[k]:
            break
        h[p], h[k] = h[k], h[p]
        k = p


@njit(cache=True, _nrt=False)
def _heap_push(h, n, key):
    h[n] = key
    _heap_sift_up(h, n)
    return n + 1


@njit(cache=True, _nrt=False)
def _heap_sift_down(h, n, k):
    while True:
        a, b, m = 2 * k + 1, 2 * k + 2, k
        if a < n and h[a] < h[m]:
            m = a
        if b < n and h[b] < h[m]:
            m = b
        if m == k:
            break
        h[k], h[m] = h[m], h[k]
        k = m


@njit(cache=True, _nrt=False)
def _heap_remove(h, n, key):
    """Remove ``key`` (if present) from the heap; the new entry count."""
    for k in range(n):
        if h[k] == key:
            n -= 1
            h[k] = h[n]
            if k < n:
                _heap_sift_down(h, n, k)
                _heap_sift_up(h, k)
            return n
    return n


# ---- intrusive request lists (waiting queue and prefill list share the RI_NXT/RI_PRV links)
@njit(cache=True, _nrt=False)
def _list_append(st, i, head_col, tail_col, r):
    tail = st.ii[i, tail_col]
    st.ri[r, RI_PRV] = tail
    st.ri[r, RI_NXT] = -1
    if tail >= 0:
        st.ri[tail, RI_NXT] = r
    else:
        st.ii[i, head_col] = r
    st.ii[i, tail_col] = r


@njit(cache=True, _nrt=False)
def _list_prepend(st, i, head_col, tail_col, r):
    head = st.ii[i, head_col]
    st.ri[r, RI_NXT] = head
    st.ri[r, RI_PRV] = -1
    if head >= 0:
        st.ri[head, RI_PRV] = r
    else:
        st.ii[i, tail_col] = r
    st.ii[i, head_col] = r


@njit(cache=True, _nrt=False)
def _list_remove(st, i, head_col, tail_col, r):
    p = st.ri[r, RI_PRV]
    q = st.ri[r, RI_NXT]
    if p >= 0:
        st.ri[p, RI_NXT] = q
    else:
        st.ii[i, head_col] = q
    if q >= 0:
        st.ri[q, RI_PRV] = p
    else:
        st.ii[i, tail_col] = p
    st.ri[r, RI_NXT] = -1
    st.ri[r, RI_PRV] = -1


# ====================================================================== segments (fast-forward)
@njit(cache=True, _nrt=False)
def _boundary(st, i, j):
    """End time of the ``j``-th iteration of instance ``i``'s current run (j >= 1)."""
    jf = float(j)
    return st.fi[i, FI_T0] + jf * st.fi[i, FI_BASE] + st.fi[i, FI_STEP] * (jf * (jf - 1.0) * 0.5)


@njit(cache=True, _nrt=False)
def _iters_done(st, i, t, k_max):
    """Largest j in [0, k_max] whose iteration end is <= t (j = 0: none)."""
    base = st.fi[i, FI_BASE]
    step = st.fi[i, FI_STEP]
    d = t - st.fi[i, FI_T0]
    if d <= 0.0:
        return 0
    if step > 0.0:
        b = base - 0.5 * step
        est = (-b + math.sqrt(b * b + 2.0 * step * d)) / step
    else:
        est = d / base
    j = min(max(int(est), 0), k_max)
    while j < k_max and _boundary(st, i, j + 1) <= t:
        j += 1
    while j > 0 and _boundary(st, i, j) > t:
        j -= 1
    return j


@njit(cache=True, _nrt=False)
def _first_end_at_or_after(st, i, t, k_max):
    """Smallest j >= 1 (capped at k_max) whose iteration end is >= t."""
    m = _iters_done(st, i, t, k_max)
    if m >= 1 and _boundary(st, i, m) == t:
        return m
    return min(m + 1, k_max)


@njit(cache=True, _nrt=False)
def _cut(st, i, t, inclusive):
    """A request entered busy instance ``i``'s queue at ``t``: end its run at the first iteration end
    after ``t`` (or at ``t`` itself when ``inclusive``: that end is processed after the insertion)."""
    k = st.ii[i, II_SEGK]
    if k == 1:
        return
    m = _iters_done(st, i, t, k)
    if inclusive and m >= 1 and _boundary(st, i, m) == t:
        new_k = m
    else:
        new_k = m + 1
    if new_k < k:
        st.ii[i, II_SEGK] = new_k
        st.fi[i, FI_END] = _boundary(st, i, new_k)
        _schedule(st, i)


# ====================================================================== KV tiers
@njit(cache=True, _nrt=False)
def _hbm_slot(d, st, i, block):
    return h_find(st.hkeys[i], st.hvals[i], d.hshift, d.hmask, block)


@njit(cache=True, _nrt=False)
def _dram_slot(d, st, i, block):
    if d.dram_slots == 0:
        return -1
    return h_find(st.dkeys[i], st.dvals[i], d.dshift, d.dmask, block)


@njit(cache=True, _nrt=False)
def _prefix_len(d, st, i, blocks, lo, tier):
    """Leading blocks present (binary search; every tier is prefix-closed). tier 0: HBM, 1: HBM or
    DRAM, 2: the global store. ``lo`` leading blocks are known present."""
    hi = blocks.shape[0]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        b = blocks[mid - 1]
        if tier == 2:
            present = st.g_in[b] != 0
        else:
            present = _hbm_slot(d, st, i, b) >= 0
            if not present and tier == 1:
                present = _dram_slot(d, st, i, b) >= 0
        if present:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(cache=True, _nrt=False)
def _hits(d, st, i, blocks, k_global):
    """(k1, k2, k3): leading blocks in HBM; HBM or DRAM; HBM, DRAM or the global store. Without
    ``d.hbm_reuse`` HBM serves no hit (k1 = 0): its blocks count only where DRAM would serve them."""
    k1 = _prefix_len(d, st, i, blocks, 0, 0) if d.hbm_reuse else 0
    k2 = _prefix_len(d, st, i, blocks, k1, 1) if d.dram_slots > 0 else k1
    return k1, k2, max(k2, k_global)


@njit(cache=True, _nrt=False)
def _hit_tokens(d, st, i, r, blocks, k_global):
    """(k1, k2, k3, h1, h2, h3): the leading blocks of :func:`_hits` and the token hits per tier, each
    counting the parent's partial tail when the hit reaches its position and the tier holds it."""
    k1, k2, k3 = _hits(d, st, i, blocks, k_global)
    L = d.input_len[r]
    h1 = k1 * d.block_size
    h2 = k2 * d.block_size
    h3 = k3 * d.block_size
    tp = d.tail_pos[r]
    if tp >= 0 and (k1 == tp or k2 == tp or k3 == tp):
        b = d.tail_id[r]
        tier = 3  # 0: HBM, 1: DRAM, 2: global store, 3: absent
        if _hbm_slot(d, st, i, b) >= 0:
            tier = 0 if d.hbm_reuse else 1
        elif _dram_slot(d, st, i, b) >= 0:
            tier = 1
        elif d.global_slots > 0 and st.g_in[b] != 0:
            tier = 2
        tok = d.tail_tok[r]
        if k1 == tp and tier <= 0:
            h1 += tok
        if k2 == tp and tier <= 1:
            h2 += tok
        if k3 == tp and tier <= 2:
            h3 += tok
    return k1, k2, k3, min(h1, L - 1), min(h2, L - 1), min(h3, L - 1)


@njit(cache=True, _nrt=False)
def _dram_touch(d, st, i, block):
    s = _dram_slot(d, st, i, block)
    if s >= 0:
        ds = st.dslot[i]
        lru_unlink(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)
        lru_push_tail(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)


@njit(cache=True, _nrt=False)
def _dram_spill(d, st, i, block):
    """``block`` enters this instance's DRAM tier as its most recent block (one already there is only
    touched), evicting its LRU block: an HBM eviction (``spill``) or a prompt write (``write-through``)."""
    if d.dram_slots == 0:
        return
    ds = st.dslot[i]
    s = _dram_slot(d, st, i, block)
    if s >= 0:
        lru_unlink(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)
        lru_push_tail(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)
        return
    if st.ii[i, II_DSIZE] == d.dram_slots:
        old = st.dends[i, 0]
        lru_unlink(ds[DS_PREV], ds[DS_NEXT], st.dends[i], old)
        h_delete(st.dkeys[i], st.dvals[i], d.dshift, d.dmask, ds[DS_BLOCK, old])
        if d.sparse != SP_OFF:
            holder_unlink(st.h_head[1], st.h_dl, st.h_count, ds[DS_BLOCK, old], i * d.dram_slots + old)
        st.dfree[i, st.ii[i, II_DNFREE]] = old
        st.ii[i, II_DNFREE] += 1
        st.ii[i, II_DSIZE] -= 1
    st.ii[i, II_DNFREE] -= 1
    s = st.dfree[i, st.ii[i, II_DNFREE]]
    ds[DS_BLOCK, s] = block
    h_insert(st.dkeys[i], st.dvals[i], d.dshift, d.dmask, block, s)
    if d.sparse != SP_OFF:
        holder_link(st.h_head[1], st.h_dl, st.h_count, block, i * d.dram_slots + s)
    if d.kv_delay > 0.0:
        st.seen[d.seen_dram + i * d.dram_slots + s] = st.gf[GF_NOW]
    lru_push_tail(ds[DS_PREV], ds[DS_NEXT], st.dends[i], s)
    st.ii[i, II_DSIZE] += 1


@njit(cache=True, _nrt=False)
def _hbm_pin(d, st, i, slot):
    hs = st.hslot[i]
    if hs[HS_REF, slot] == 0:
        lru_unlink(hs[HS_PREV], hs[HS_NEXT], st.hends[i], slot)
        st.ii[i, II_PINNED] += 1
    hs[HS_REF, slot] += 1


@njit(cache=True, _nrt=False)
def _hbm_unpin(d, st, i, block):
    hs = st.hslot[i]
    slot = _hbm_slot(d, st, i, block)
    hs[HS_REF, slot] -= 1
    if hs[HS_REF, slot] == 0:
        lru_push_tail(hs[HS_PREV], hs[HS_NEXT], st.hends[i], slot)
        st.ii[i, II_PINNED] -= 1


@njit(cache=True, _nrt=False)
def _hbm_insert_pinned(d, st, i, block):
    st.ii[i, II_NFREE] -= 1
    slot = st.hfree[i, st.ii[i, II_NFREE]]
    hs = st.hslot[i]
    hs[HS_BLOCK, slot] = block
    hs[HS_REF, slot] = 1
    hs[HS_PREV, slot] = -1
    hs[HS_NEXT, slot] = -1
    h_insert(st.hkeys[i], st.hvals[i], d.hshift, d.hmask, block, slot)
    if d.sparse != SP_OFF:
        holder_link(st.h_head[0], st.h_hl, st.h_count, block, i * d.hbm_blocks + slot)
    if d.kv_delay > 0.0:
        st.seen[i * d.hbm_blocks + slot] = st.gf[GF_NOW]
    st.ii[i, II_CACHED] += 1
    st.ii[i, II_PINNED] += 1


@njit(cache=True, _nrt=False)
def _hbm_evict_lru(d, st, i):
    hs = st.hslot[i]
    slot = st.hends[i, 0]
    block = hs[HS_BLOCK, slot]
    lru_unlink(hs[HS_PREV], hs[HS_NEXT], st.hends[i], slot)
    h_delete(st.hkeys[i], st.hvals[i], d.hshift, d.hmask, block)
    if d.sparse != SP_OFF:
        holder_unlink(st.h_head[0], st.h_hl, st.h_count, block, i * d.hbm_blocks + slot)
    st.hfree[i, st.ii[i, II_NFREE]] = slot
    st.ii[i, II_NFREE] += 1
    st.ii[i, II_CACHED] -= 1
    if not d.dram_write:
        _dram_spill(d, st, i, block)


@njit(cache=True, _nrt=False)
def _global_put(d, st, b, tokens):
    """Touch (or insert) block ``b`` in the global store, evicting its LRU blocks; bytes newly written."""
    if st.g_in[b] != 0:
        lru_unlink(st.g_prev, st.g_next, st.gi[G_HEAD:G_TAIL + 1], b)
        lru_push_tail(st.g_prev, st.g_next, st.gi[G_HEAD:G_TAIL + 1], b)
        return 0.0
    st.g_in[b] = 1
    if d.kv_delay > 0.0:
        st.seen[d.seen_glob + b] = st.gf[GF_NOW]
    lru_push_tail(st.g_prev, st.g_next, st.gi[G_HEAD:G_TAIL + 1], b)
    st.gi[G_SIZE] += 1
    while st.gi[G_SIZE] > d.global_slots:
        old = st.gi[G_HEAD]
        lru_unlink(st.g_prev, st.g_next, st.gi[G_HEAD:G_TAIL + 1], old)
        st.g_in[old] = 0
        st.gi[G_SIZE] -= 1
    return tokens * d.kv_bytes_per_token


@njit(cache=True, _nrt=False)
def _global_write_through(d, st, i, r, t, reply):
    """Write the prompt (and with ``reply`` its reply chain first) to the global store, tail first.

    New bytes count as written; with a connector they also start a write transfer from ``i``'s node."""
    if d.global_slots == 0:
        return
    written = 0.0
    if reply:
        for k in range(d.reply_offsets[r + 1] - 1, d.reply_offsets[r] - 1, -1):
            written += _global_put(d, st, d.reply_ids[k], d.reply_tokens[k])
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    L = d.input_len[r]
    for j in range(blocks.shape[0] - 1, -1, -1):
        written += _global_put(d, st, blocks[j], min(d.block_size, L - j * d.block_size))
    st.gf[GF_WRITE] += written
    if d.conn and written > 0.0:
        _pool_start(d, st, t, (2 if reply else 1) * d.n + r, d.node_of[i], written)


# ---- the connector's transfer pool: equal shares of each node's NIC and of the store's aggregate bandwidth
@njit(cache=True, _nrt=False)
def _pool_advance(st, t):
    dt = t - st.gf[GF_PLAST]
    if dt > 0.0:
        x = st.gi[G_PHEAD]
        while x >= 0:
            st.tr_rem[x] -= st.tr_rate[x] * dt
            x = st.tr_next[x]
    st.gf[GF_PLAST] = t


@njit(cache=True, _nrt=False)
def _pool_rates(d, st, t):
    """Rates of the active transfers at ``t``; publish the earliest completion (ties: lower id)."""
    best = -1
    best_t = INF
    n_all = float(st.gi[G_PCOUNT])
    x = st.gi[G_PHEAD]
    while x >= 0:
        node = st.tr_node[x]
        cap = d.load_cap if x < d.n else d.write_cap
        rate = min(cap, min(d.node_bw[node] / float(st.node_cnt[node]), d.store_total / n_all))
        st.tr_rate[x] = rate
        tx = t + max(st.tr_rem[x], 0.0) / rate
        if tx < best_t or (tx == best_t and x < best):
            best_t = tx
            best = x
        x = st.tr_next[x]
    st.gi[G_PNEXT] = best
    _tree_set(st, d.n_instances, best_t)


@njit(cache=True, _nrt=False)
def _pool_start(d, st, t, x, node, nbytes):
    """Transfer ``x`` (a load: row; a prompt write: n + row; a reply write: 2n + row) starts at ``t``."""
    _pool_advance(st, t)
    st.tr_rem[x] = nbytes
    st.tr_node[x] = node
    tail = st.gi[G_PTAIL]
    st.tr_prev[x] = tail
    st.tr_next[x] = -1
    if tail >= 0:
        st.tr_next[tail] = x
    else:
        st.gi[G_PHEAD] = x
    st.gi[G_PTAIL] = x
    st.gi[G_PCOUNT] += 1
    st.node_cnt[node] += 1
    _pool_rates(d, st, t)


@njit(cache=True, _nrt=False)
def _stall_end(d, st, i):
    """End of a connector iteration once its loads are known: blocking (start after the scheduler's lookups
    and every load) or layer-wise (compute runs alongside the loads)."""
    if d.layerwise:
        return max(st.fi[i, FI_SCHED] + st.fi[i, FI_BASE], st.fi[i, FI_LREADY])
    return max(st.fi[i, FI_SCHED], st.fi[i, FI_LREADY]) + st.fi[i, FI_BASE]


@njit(cache=True, _nrt=False)
def _pool_event(d, st, t):
    """The earliest transfer completes at ``t``; a finished load crosses PCIe and may end a stall."""
    x = st.gi[G_PNEXT]
    _pool_advance(st, t)
    p = st.tr_prev[x]
    q = st.tr_next[x]
    if p >= 0:
        st.tr_next[p] = q
    else:
        st.gi[G_PHEAD] = q
    if q >= 0:
        st.tr_prev[q] = p
    else:
        st.gi[G_PTAIL] = p
    st.gi[G_PCOUNT] -= 1
    st.node_cnt[st.tr_node[x]] -= 1
    _pool_rates(d, st, t)
    if x >= d.n:
        return
    i = st.ri[x, RI_INST]
    start = max(t, st.fi[i, FI_LDRAM])
    st.fi[i, FI_LDRAM] = start + st.tr_bytes[x] / d.pcie_bw
    st.fi[i, FI_LREADY] = max(st.fi[i, FI_LREADY], st.fi[i, FI_LDRAM] + d.load_latency)
    st.ii[i, II_NPEND] -= 1
    if st.ii[i, II_NPEND] == 0:
        st.fi[i, FI_END] = _stall_end(d, st, i)
        _schedule(st, i)


# ====================================================================== request bookkeeping
@njit(cache=True, _nrt=False)
def _set_queued(d, st, i, r, tok):
    """Set request ``r``'s share of instance ``i``'s queued-prefill aggregates to ``tok`` tokens."""
    cost = 0.0
    attn = 0.0
    if tok > 0:
        L = float(d.input_len[r] + st.pre[r, P_KEPT])  # a preempted request recomputes its generated tokens
        n = float(tok)
        cost = prefill_time_nb(d.coef, n, L - n)
        attn = n + n * (L - 0.5 * n) / d.l_eq
    st.ii[i, II_QTOK] += tok - st.ri[r, RI_CTOK]
    st.fi[i, FI_QCOST] = (st.fi[i, FI_QCOST] - st.rf[r, RF_CCOST]) + cost
    st.fi[i, FI_QATTN] = (st.fi[i, FI_QATTN] - st.rf[r, RF_CATTN]) + attn
    st.ri[r, RI_CTOK] = tok
    st.rf[r, RF_CCOST] = cost
    st.rf[r, RF_CATTN] = attn
    _sp_touch(d, st, i)
    if tok == 0:
        st.ii[i, II_NQUEUED] -= 1
        if st.ii[i, II_NQUEUED] == 0:
            st.fi[i, FI_QCOST] = 0.0
            st.fi[i, FI_QATTN] = 0.0


@njit(cache=True, _nrt=False)
def _sample_until(d, st, i, t):
    """Record instance ``i``'s (unchanged) state at every sample time before ``t`` (:mod:`.sampling`)."""
    k = st.ii[i, II_SAMPLED]
    while d.sample_t0 + k * st.gf[GF_SAMPLE_DT] < t:
        if k == d.n_samples:  # out of slots: every instance keeps its even samples, the spacing doubles
            st.ii[i, II_SAMPLED] = k
            halve_samples(st.ts, st.ii[:, II_SAMPLED])
            st.gf[GF_SAMPLE_DT] *= 2.0
            k = st.ii[i, II_SAMPLED]
            continue
        st.ts[i, k, TS_WAITING] = st.ii[i, II_NWAIT]
        st.ts[i, k, TS_RUNNING] = st.ii[i, II_NRUN]
        st.ts[i, k, TS_KV_USED] = st.ii[i, II_PINNED] + st.ii[i, II_PRIV]
        k += 1
    st.ii[i, II_SAMPLED] = k


@njit(cache=True, _nrt=False)
def _release_children(d, st, r, t):
    """``r`` ended at ``t`` (closed replay): each row waiting on it counts the end; the last releases it."""
    if not d.closed:
        return
    for k in range(d.waiter_offsets[r], d.waiter_offsets[r + 1]):
        c = d.waiters[k]
        st.deps_t[c] = max(st.deps_t[c], t + d.release_delay[r])
        st.deps_left[c] -= 1
        if st.deps_left[c] == 0:
            _ah_push(st, max(d.arrival[c], st.deps_t[c] + d.gap[c]), c)


@njit(cache=True, _nrt=False)
def _join_decode(d, st, i, r):
    """``r`` (one token generated) joins instance ``i``'s decode set before the next iteration."""
    g0 = st.pre[r, P_KEPT] + 1
    st.ri[r, RI_STATE] = DECODE
    st.ri[r, RI_JOIN] = st.ii[i, II_ITER]
    st.ii[i, II_NDEC] += 1
    st.ii[i, II_SDEC] += d.input_len[r] + g0
    _dh_push(st, i, (st.ii[i, II_ITER] + d.n_out[r] - g0) * d.n + r)
    if d.incremental:
        _push_alloc(d, st, i, r)


@njit(cache=True, _nrt=False)
def _next_alloc(d, st, r):
    """Iteration in which decoding ``r`` needs its next block (its KV then exceeds the blocks it holds)."""
    held = d.block_offsets[r + 1] - d.block_offsets[r] + st.ri[r, RI_PRIV]
    return st.ri[r, RI_JOIN] + held * d.block_size - d.input_len[r] - st.pre[r, P_KEPT]


@njit(cache=True, _nrt=False)
def _push_alloc(d, st, i, r):
    """Schedule decoding ``r``'s next block allocation, if it comes before its last iteration."""
    x = _next_alloc(d, st, r)
    if x < st.ri[r, RI_JOIN] + d.n_out[r] - st.pre[r, P_KEPT] - 1:
        st.ipre[i, IP_AHEAPN] = _heap_push(st.aheap[i], st.ipre[i, IP_AHEAPN], x * d.n + r)


@njit(cache=True, _nrt=False)
def _cache_reply(d, st, i, r):
    """Pin ``r``'s reply chain into ``i``'s HBM cache head first (its reserved blocks first, then free or
    evicted ones); stop where nothing can be freed. Returns the entries pinned."""
    m = 0
    for k in range(d.reply_offsets[r], d.reply_offsets[r + 1]):
        b = d.reply_ids[k]
        slot = _hbm_slot(d, st, i, b)
        if slot >= 0:
            _hbm_pin(d, st, i, slot)
        else:
            if st.ri[r, RI_PRIV] > 0:
                st.ri[r, RI_PRIV] -= 1
                st.ii[i, II_PRIV] -= 1
            elif st.ii[i, II_CACHED] + st.ii[i, II_PRIV] >= d.hbm_blocks:
                if st.hends[i, 0] < 0:
                    break
                _hbm_evict_lru(d, st, i)
            _hbm_insert_pinned(d, st, i, b)
        m += 1
    return m


@njit(cache=True, _nrt=False)
def _release(d, st, i, r, generated, t):
    """``r`` leaves instance ``i``: a finished request caches (and stores) its reply; unpin the reply and
    the prompt blocks tail first, free its reserved blocks."""
    finished = generated == d.n_out[r]
    if finished and d.store_replies:
        _global_write_through(d, st, i, r, t, True)
    if st.ii[i, II_ROLE] != DECODE_ROLE:
        if finished and d.cache_replies:
            m = _cache_reply(d, st, i, r)
            for k in range(d.reply_offsets[r] + m - 1, d.reply_offsets[r] - 1, -1):
                _hbm_unpin(d, st, i, d.reply_ids[k])
        blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
        for j in range(blocks.shape[0] - 1, -1, -1):
            _hbm_unpin(d, st, i, blocks[j])
    st.ii[i, II_PRIV] -= st.ri[r, RI_PRIV]
    st.ri[r, RI_PRIV] = 0
    st.ii[i, II_KV_VERSION] += 1
    st.ii[i, II_NRUN] -= 1
    st.ii[i, II_INFLIGHT] -= 1
    if st.ii[i, II_ROLE] != DECODE_ROLE:
        st.rinf[d.replica[r], i] -= 1
        _sp_touch(d, st, i)
    st.ii[i, II_CTX] -= d.input_len[r] + generated
    st.ri[r, RI_STATE] = LEFT


@njit(cache=True, _nrt=False)
def _cache_prompt(d, st, i, r, t):
    """Prefill done: blocks from k1 on join the HBM cache (pinned); with ``write-through`` the whole prompt
    enters DRAM (tail first); write-through to the store."""
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    for j in range(st.ri[r, RI_K1], blocks.shape[0]):
        slot = _hbm_slot(d, st, i, blocks[j])
        if slot >= 0:
            _hbm_pin(d, st, i, slot)
        else:
            _hbm_insert_pinned(d, st, i, blocks[j])
        st.ii[i, II_PRIV] -= 1
        st.ri[r, RI_PRIV] -= 1
    st.ii[i, II_KV_VERSION] += 1
    if d.dram_write:
        for j in range(blocks.shape[0] - 1, -1, -1):
            _dram_spill(d, st, i, blocks[j])
    _global_write_through(d, st, i, r, t, False)


@njit(cache=True, _nrt=False)
def _global_prefix(d, st, blocks):
    if d.global_slots == 0:
        return 0
    return _prefix_len(d, st, 0, blocks, 0, 2)


# ====================================================================== admission
@njit(cache=True, _nrt=False)
def _admit(d, st, i, r, t, budget):
    """Reserve KV for ``r`` on ``i`` and start its loads: (fits, time its KV is ready)."""
    L = d.input_len[r]
    if st.ii[i, II_ROLE] == DECODE_ROLE:
        total = _n_blocks(L + d.n_out[r], d.block_size)
        if st.ii[i, II_PRIV] + total > d.hbm_blocks:
            return False, t
        st.ii[i, II_PRIV] += total
        st.ri[r, RI_PRIV] = total
        st.ii[i, II_KV_VERSION] += 1
        start = max(t, st.fi[i, FI_LPD])
        st.fi[i, FI_LPD] = start + L * d.kv_bytes_per_token / d.pd_bw
        st.fi[i, FI_PDR] += L * d.kv_bytes_per_token
        st.ii[i, II_KVPEAK] = max(st.ii[i, II_KVPEAK], st.ii[i, II_CACHED] + st.ii[i, II_PRIV])
        return True, st.fi[i, FI_LPD]
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    nb = blocks.shape[0]
    total = nb if st.ii[i, II_ROLE] == PREFILL_ROLE else _n_blocks(L + d.n_out[r], d.block_size)
    k1, k2, _, h1, h2, h3 = _hit_tokens(d, st, i, r, blocks, _global_prefix(d, st, blocks))
    hs = st.hslot[i]
    newly = 0
    for j in range(k1):
        slot = _hbm_slot(d, st, i, blocks[j])
        if slot < 0:
            raise RuntimeError("HBM cache is not prefix-closed (engine invariant broken)")
        if hs[HS_REF, slot] == 0:
            newly += 1
    need = total - k1
    kept = st.pre[r, P_KEPT]
    if d.incremental:  # the blocks of what is in KV once it loads, plus the chunk it takes now
        loading = d.overlap and not d.conn and h3 > h1
        chunk = 0 if loading else min(L + kept - h3, budget)
        need = _n_blocks(h3 + chunk, d.block_size) - k1
    if st.ii[i, II_PINNED] + newly + st.ii[i, II_PRIV] + need > d.hbm_blocks:
        return False, t
    for j in range(k1):
        _hbm_pin(d, st, i, _hbm_slot(d, st, i, blocks[j]))
    for j in range(k2 - 1, (0 if d.dram_write else k1) - 1, -1):
        _dram_touch(d, st, i, blocks[j])
    while st.ii[i, II_CACHED] + st.ii[i, II_PRIV] + need > d.hbm_blocks:
        _hbm_evict_lru(d, st, i)
    st.ii[i, II_PRIV] += need
    st.ri[r, RI_PRIV] = need
    st.ri[r, RI_K1] = k1
    st.ii[i, II_KV_VERSION] += 1
    st.ii[i, II_KVPEAK] = max(st.ii[i, II_KVPEAK], st.ii[i, II_CACHED] + st.ii[i, II_PRIV])
    if st.pre[r, P_COUNT] == 0:  # hits and admission time are those of the first admission
        st.ri[r, RI_HHBM] = h1
        st.ri[r, RI_HDRAM] = h2 - h1
        st.ri[r, RI_HGLOB] = h3 - h2
        st.rf[r, RF_ADMIT] = t
    st.ri[r, RI_REM] = L + kept - h3
    st.ri[r, RI_INKV] = h3
    st.pre[r, P_SEQ] = st.ipre[i, IP_SEQ]
    st.ipre[i, IP_SEQ] += 1
    _set_queued(d, st, i, r, L + kept - h3)
    ready = t
    if h2 - h1 > 0:
        start = max(t, st.fi[i, FI_LDRAM])
        st.fi[i, FI_LDRAM] = start + (h2 - h1) * d.kv_bytes_per_token / d.dram_bw
        ready = max(ready, st.fi[i, FI_LDRAM])
        st.fi[i, FI_DRAMR] += (h2 - h1) * d.kv_bytes_per_token
    if h3 - h2 > 0:
        if d.conn:  # a transfer in the node's pool; the batch waits for it (st.ii[i, II_NPEND])
            st.tr_bytes[r] = (h3 - h2) * d.kv_bytes_per_token
            _pool_start(d, st, t, r, d.node_of[i], st.tr_bytes[r])
            st.ii[i, II_NPEND] += 1
        else:
            start = max(t, st.fi[i, FI_LNET])
            st.fi[i, FI_LNET] = start + (h3 - h2) * d.kv_bytes_per_token / d.global_bw
            ready = max(ready, st.fi[i, FI_LNET] + d.global_latency)
        st.fi[i, FI_GLOBR] += (h3 - h2) * d.kv_bytes_per_token
    return True, ready


@njit(cache=True, _nrt=False)
def _next_candidate(d, st, i, t, free, step, budget, lag):
    """The queue discipline's next waiting request to try in admission step ``step`` (-1: none).

    FCFS: the oldest routed, unless it did not fit and the KV state has not changed since, or (``lag``) it is
    not yet visible to the scheduler. Ranked disciplines: the best-ranked visible request not yet tried in this
    step and not known not to fit.
    """
    version = st.ii[i, II_KV_VERSION]
    if st.gf[GF_QUEUE + Q_KIND] == FCFS:
        r = st.ii[i, II_WHEAD]
        if lag and st.vis[r] >= t:
            return -1
        if st.ii[i, II_BLOCKED_BY] == r and st.ii[i, II_BLOCKED_AT] == version and (
                not d.incremental or budget >= st.ipre[i, IP_BBUDGET]):  # incremental: a smaller chunk may fit
            return -1
        return r
    best = -1
    best_level = -1
    best_key = 0.0
    r = st.ii[i, II_WHEAD]
    while r >= 0:
        if st.qmark[r, QM_TRIED] != step and st.qmark[r, QM_FAILED] != version and not (lag and st.vis[r] >= t):
            need = float(_n_blocks(st.ri[r, RI_CTOK] + d.n_out[r], d.block_size))
            level, key = rank_nb(st.gf[GF_QUEUE:], st.rf[r, RF_CCOST] + st.rf[r, RF_DECODE_EST], d.priority[r],
                                 d.turn[r], st.rf[r, RF_ARR], t, need, free)
            if level > best_level or (level == best_level and key > best_key):
                best, best_level, best_key = r, level, key
        r = st.ri[r, RI_NXT]
    return best


# ====================================================================== abandonment
@njit(cache=True, _nrt=False)
def _abandon_expired(d, st, i, t):
    """Waiting, never-admitted requests of ``i`` whose ``arrival + patience < t`` leave unserved; their
    sessions release no further turn (the engine docstring's "Abandonment")."""
    r = st.ii[i, II_WHEAD]
    while r >= 0:
        nxt = st.ri[r, RI_NXT]
        if np.isnan(st.rf[r, RF_ADMIT]) and st.rf[r, RF_ARR] + d.patience[d.session[r]] < t:
            _list_remove(st, i, II_WHEAD, II_WTAIL, r)
            st.ii[i, II_NWAIT] -= 1
            st.ii[i, II_INFLIGHT] -= 1
            st.rinf[d.replica[r], i] -= 1
            st.ii[i, II_CTX] -= d.input_len[r]
            _set_queued(d, st, i, r, 0)
            st.ri[r, RI_STATE] = LEFT
            st.ri[r, RI_REASON] = REASON_ABANDONED
            st.gone[d.session[r]] = 1
        r = nxt


@njit(cache=True, _nrt=False)
def _next_deadline(d, st, i):
    """The earliest ``arrival + patience`` of ``i``'s waiting, never-admitted requests (inf: none)."""
    due = INF
    r = st.ii[i, II_WHEAD]
    while r >= 0:
        if np.isnan(st.rf[r, RF_ADMIT]):
            due = min(due, st.rf[r, RF_ARR] + d.patience[d.session[r]])
        r = st.ri[r, RI_NXT]
    return due


# ====================================================================== batch formation
@njit(cache=True, _nrt=False)
def _activate(d, st, i, t):
    """Admitted requests whose KV load finished by ``t`` become runnable (admission order)."""
    if st.ii[i, II_NLOAD] == 0 or st.fi[i, FI_MINREADY] > t:
        return
    min_ready = INF
    r = st.ii[i, II_PHEAD]
    while r >= 0:
        nxt = st.ri[r, RI_NXT]
        if st.ri[r, RI_STATE] == LOADING:
            if st.rf[r, RF_READY] <= t:
                st.ii[i, II_NLOAD] -= 1
                if st.ri[r, RI_REM] > 0:
                    st.ri[r, RI_STATE] = PREFILL
                else:
                    _list_remove(st, i, II_PHEAD, II_PTAIL, r)
                    _join_decode(d, st, i, r)
            else:
                min_ready = min(min_ready, st.rf[r, RF_READY])
        r = nxt
    st.fi[i, FI_MINREADY] = min_ready


@njit(cache=True, _nrt=False)
def _last_admitted(d, st, i):
    """The running request of ``i`` admitted most recently (the tail of the prefill list or a decode)."""
    best = st.ii[i, II_PTAIL]
    for k in range(st.ii[i, II_HEAPN]):
        r = st.dheap[i, k] % d.n
        if best < 0 or st.pre[r, P_SEQ] > st.pre[best, P_SEQ]:
            best = r
    return best


@njit(cache=True, _nrt=False)
def _preempt(d, st, i, v):
    """Recompute preemption of ``v`` (rules in the module docstring); 1 if it was decoding, else 0."""
    blocks = d.block_ids[d.block_offsets[v]:d.block_offsets[v + 1]]
    nb = blocks.shape[0]
    L = d.input_len[v]
    state = st.ri[v, RI_STATE]
    was_decoding = 0
    kept_blocks = st.ri[v, RI_K1]
    if state == DECODE:
        g0 = st.pre[v, P_KEPT] + 1
        g = g0 + st.ii[i, II_ITER] - st.ri[v, RI_JOIN]
        st.ii[i, II_NDEC] -= 1
        st.ii[i, II_SDEC] -= L + g
        st.ii[i, II_HEAPN] = _heap_remove(st.dheap[i], st.ii[i, II_HEAPN],
                                          (st.ri[v, RI_JOIN] + d.n_out[v] - g0) * d.n + v)
        st.ipre[i, IP_AHEAPN] = _heap_remove(st.aheap[i], st.ipre[i, IP_AHEAPN], _next_alloc(d, st, v) * d.n + v)
        st.pre[v, P_KEPT] = g
        kept_blocks = nb
        was_decoding = 1
    else:
        _list_remove(st, i, II_PHEAD, II_PTAIL, v)
        if state == PREFILL:  # the prompt's blocks wholly in KV join the cache
            while kept_blocks < nb and min((kept_blocks + 1) * d.block_size, L) <= st.ri[v, RI_INKV]:
                slot = _hbm_slot(d, st, i, blocks[kept_blocks])
                if slot >= 0:
                    _hbm_pin(d, st, i, slot)
                else:
                    _hbm_insert_pinned(d, st, i, blocks[kept_blocks])
                st.ii[i, II_PRIV] -= 1
                st.ri[v, RI_PRIV] -= 1
                kept_blocks += 1
        else:  # LOADING: its loads are abandoned
            st.ii[i, II_NLOAD] -= 1
            min_ready = INF
            r = st.ii[i, II_PHEAD]
            while r >= 0:
                if st.ri[r, RI_STATE] == LOADING:
                    min_ready = min(min_ready, st.rf[r, RF_READY])
                r = st.ri[r, RI_NXT]
            st.fi[i, FI_MINREADY] = min_ready
    for j in range(kept_blocks - 1, -1, -1):
        _hbm_unpin(d, st, i, blocks[j])
    st.ii[i, II_PRIV] -= st.ri[v, RI_PRIV]
    st.ri[v, RI_PRIV] = 0
    st.ii[i, II_KV_VERSION] += 1
    st.ii[i, II_NRUN] -= 1
    st.ii[i, II_NWAIT] += 1
    _list_prepend(st, i, II_WHEAD, II_WTAIL, v)
    st.ri[v, RI_STATE] = WAITING
    st.pre[v, P_COUNT] += 1
    st.ipre[i, IP_PREEMPT] += 1
    if st.ri[v, RI_CTOK] == 0:
        st.ii[i, II_NQUEUED] += 1
    _set_queued(d, st, i, v, L + st.pre[v, P_KEPT])
    return was_decoding


@njit(cache=True, _nrt=False)
def _allocate(d, st, i, r, m):
    """Give ``r`` ``m`` more blocks (evicting LRU cached ones), preempting the most recently admitted running
    request while they cannot be had: (False if ``r`` itself was preempted, decodes preempted)."""
    refund = 0
    while st.ii[i, II_PINNED] + st.ii[i, II_PRIV] + m > d.hbm_blocks:
        v = _last_admitted(d, st, i)
        refund += _preempt(d, st, i, v)
        if v == r:
            return False, refund
    while st.ii[i, II_CACHED] + st.ii[i, II_PRIV] + m > d.hbm_blocks:
        _hbm_evict_lru(d, st, i)
    st.ii[i, II_PRIV] += m
    st.ri[r, RI_PRIV] += m
    st.ii[i, II_KV_VERSION] += 1
    st.ii[i, II_KVPEAK] = max(st.ii[i, II_KVPEAK], st.ii[i, II_CACHED] + st.ii[i, II_PRIV])
    return True, refund


@njit(cache=True, _nrt=False)
def _grow_decodes(d, st, i):
    """Incremental allocation: decodes whose next token starts a new block take one, in row order."""
    it = st.ii[i, II_ITER]
    while st.ipre[i, IP_AHEAPN] > 0 and st.aheap[i, 0] // d.n == it:
        r = st.aheap[i, 0] % d.n
        n = st.ipre[i, IP_AHEAPN] - 1
        st.aheap[i, 0] = st.aheap[i, n]
        st.ipre[i, IP_AHEAPN] = n
        _heap_sift_down(st.aheap[i], n, 0)
        ok, _ = _allocate(d, st, i, r, 1)
        if ok:
            _push_alloc(d, st, i, r)


@njit(cache=True, _nrt=False)
def _add_chunk(st, i, r, budget):
    c = min(st.ri[r, RI_REM], budget)
    k = st.ii[i, II_NBATCH]
    st.batch_r[i, k] = r
    st.batch_c[i, k] = c
    st.ii[i, II_NBATCH] = k + 1
    return budget - c


@njit(cache=True, _nrt=False)
def _lagging(st, i, t):
    """Whether a waiting request of instance ``i`` is not yet visible to its scheduler at ``t`` (first-token lag:
    it reached the instance while the iteration ending at ``st.vis`` ran, and that iteration's successor was
    already scheduled)."""
    r = st.ii[i, II_WHEAD]
    while r >= 0:
        if st.vis[r] >= t:
            return True
        r = st.ri[r, RI_NXT]
    return False


@njit(cache=True, _nrt=False)
def _form_batch(d, st, i, t):
    """Form and start instance ``i``'s next iteration at ``t`` (or leave it idle)."""
    _activate(d, st, i, t)
    n_preempted = st.ipre[i, IP_PREEMPT]
    if d.incremental:
        _grow_decodes(d, st, i)
    budget = d.max_batched_tokens - st.ii[i, II_NDEC]
    st.ii[i, II_NBATCH] = 0
    r = st.ii[i, II_PHEAD]
    while r >= 0 and budget > 0:
        if st.ri[r, RI_STATE] == PREFILL:
            if d.incremental:
                need = _n_blocks(st.ri[r, RI_INKV] + min(st.ri[r, RI_REM], budget), d.block_size) - (
                    st.ri[r, RI_K1] + st.ri[r, RI_PRIV])
                refund = 0
                if need > 0:
                    ok, refund = _allocate(d, st, i, r, need)
                    if not ok:
                        break  # it was preempted itself: it was the last admitted
                budget = _add_chunk(st, i, r, budget) + refund
            else:
                budget = _add_chunk(st, i, r, budget)
        r = st.ri[r, RI_NXT]
    preempted = st.ipre[i, IP_PREEMPT] > n_preempted
    wait = 0.0
    conn = d.conn and st.ii[i, II_ROLE] != DECODE_ROLE  # an lmcache connector serves this instance
    sched = 0.0
    if conn:
        st.fi[i, FI_LREADY] = t
    if d.abandon and st.ii[i, II_NWAIT] > 0:
        _abandon_expired(d, st, i, t)
    fcfs = st.gf[GF_QUEUE + Q_KIND] == FCFS
    free = 1.0
    step = 0
    if not fcfs:
        free = float(max(d.hbm_blocks - st.ii[i, II_PINNED] - st.ii[i, II_PRIV], 1))
        st.gi[G_QSTEP] += 1
        step = st.gi[G_QSTEP]
    lag = d.lag and _lagging(st, i, t)
    while budget > 0 and st.ii[i, II_NWAIT] > 0 and st.ii[i, II_NRUN] < d.max_num_seqs and not preempted:
        r = _next_candidate(d, st, i, t, free, step, budget, lag)
        if r < 0:
            if lag and st.ii[i, II_NBATCH] == 0 and st.ii[i, II_NDEC] == 0:
                lag = False  # nothing else to run: no batch is scheduled ahead, the request runs now
                if not fcfs:
                    st.gi[G_QSTEP] += 1
                    step = st.gi[G_QSTEP]
                continue
            break  # FCFS: the head did not fit (or is not visible yet); ranked: none left
        ok, ready = _admit(d, st, i, r, t, budget)
        if not ok:
            if fcfs:
                st.ii[i, II_BLOCKED_BY] = r
                st.ii[i, II_BLOCKED_AT] = st.ii[i, II_KV_VERSION]
                st.ipre[i, IP_BBUDGET] = budget
                break
            st.qmark[r, QM_TRIED] = step
            st.qmark[r, QM_FAILED] = st.ii[i, II_KV_VERSION]
            continue
        _list_remove(st, i, II_WHEAD, II_WTAIL, r)
        st.ii[i, II_NWAIT] -= 1
        st.ii[i, II_NRUN] += 1
        if conn:
            sched += d.lookup_s
            st.fi[i, FI_LREADY] = max(st.fi[i, FI_LREADY], ready)
        elif ready > t and d.overlap:
            st.ri[r, RI_STATE] = LOADING
            st.rf[r, RF_READY] = ready
            _list_append(st, i, II_PHEAD, II_PTAIL, r)
            st.ii[i, II_NLOAD] += 1
            st.fi[i, FI_MINREADY] = min(st.fi[i, FI_MINREADY], ready)
            continue
        if ready > t and not conn:
            wait = max(wait, ready - t)
        if st.ri[r, RI_REM] > 0:
            st.ri[r, RI_STATE] = PREFILL
            _list_append(st, i, II_PHEAD, II_PTAIL, r)
            budget = _add_chunk(st, i, r, budget)
        else:
            _join_decode(d, st, i, r)
            budget -= 1
    n_dec = st.ii[i, II_NDEC]
    nb = st.ii[i, II_NBATCH]
    if nb == 0 and n_dec == 0:
        st.ii[i, II_BUSY] = 0
        st.fi[i, FI_WAKE] = st.fi[i, FI_MINREADY] if st.ii[i, II_NLOAD] > 0 else INF
        _schedule(st, i)
        return
    sdec = float(st.ii[i, II_SDEC])
    fdec = float(n_dec)
    # with a connector, the iteration also copies what the store will receive to the host (GPU->host)
    saved = n_dec if (conn and d.store_replies) else 0
    if nb > 0 or wait > 0.0:
        pattn = 0.0
        ntok = n_dec
        for k in range(nb):
            c = st.batch_c[i, k]
            pattn += prefill_attn_work(float(c), float(st.ri[st.batch_r[i, k], RI_INKV]))
            ntok += c
        st.fi[i, FI_BASE] = iteration_time_nb(d.coef, float(ntok), pattn, sdec, fdec)
        if conn:
            st.fi[i, FI_BASE] += (ntok - n_dec + saved) * d.kv_bytes_per_token / d.pcie_bw
        st.fi[i, FI_STEP] = 0.0
        k_run = 1
    else:
        base = iteration_time_nb(d.coef, fdec, 0.0, sdec, fdec)
        st.fi[i, FI_STEP] = iteration_time_nb(d.coef, fdec, 0.0, sdec + fdec, fdec) - base
        if saved > 0:
            base += saved * d.kv_bytes_per_token / d.pcie_bw
        st.fi[i, FI_BASE] = base
        k_run = st.dheap[i, 0] // d.n - st.ii[i, II_ITER]
        if lag:  # a request becomes visible at this iteration's end: form again there
            k_run = 1
        if d.incremental:  # stop before an iteration that needs a block (or after one that preempted)
            if st.ipre[i, IP_AHEAPN] > 0:
                k_run = min(k_run, st.aheap[i, 0] // d.n - st.ii[i, II_ITER])
            if preempted:
                k_run = 1
    st.fi[i, FI_FORM] = t
    st.fi[i, FI_T0] = t + wait
    if k_run > 1 and st.ii[i, II_NLOAD] > 0:
        k_run = _first_end_at_or_after(st, i, st.fi[i, FI_MINREADY], k_run)
    if k_run > 1 and d.abandon and st.ii[i, II_NWAIT] > 0:  # form again at the first end after a deadline
        due = _next_deadline(d, st, i)
        if due < INF:
            k_run = min(k_run, _iters_done(st, i, due, k_run) + 1)
    st.ii[i, II_SEGK] = k_run
    st.ii[i, II_BUSY] = 1
    st.fi[i, FI_END] = _boundary(st, i, k_run)
    if conn and nb > 0:  # the connector's iteration: lookups, then (or alongside) the loads
        st.fi[i, FI_SCHED] = t + sched
        st.fi[i, FI_END] = INF if st.ii[i, II_NPEND] > 0 else _stall_end(d, st, i)
    st.fi[i, FI_WAKE] = INF
    _schedule(st, i)


# ====================================================================== iteration end
@njit(cache=True, _nrt=False)
def _sort_small(a, n):
    for x in range(1, n):
        v = a[x]
        y = x - 1
        while y >= 0 and a[y] > v:
            a[y + 1] = a[y]
            y -= 1
        a[y + 1] = v


@njit(cache=True, _nrt=False)
def _finish(d, st, r, t):
    st.rf[r, RF_FINISH] = t
    st.ri[r, RI_REASON] = 0
    kind = int(st.gf[GF_QUEUE + Q_EST])
    if kind != ORACLE:
        observe_nb(kind, st.est_sess, st.est_ring, st.est_g, d.session[r], d.input_len[r], d.n_out[r],
                   d.decode_true[r])
    _release_children(d, st, r, t)


@njit(cache=True, _nrt=False)
def _end_run(d, st, i, t):
    """Instance ``i``'s run of iterations ends at ``t``: tokens, completions, releases, next batch."""
    k_run = st.ii[i, II_SEGK]
    n_dec = st.ii[i, II_NDEC]
    role = st.ii[i, II_ROLE]
    st.ii[i, II_BUSY] = 0
    st.ii[i, II_ITER] += k_run
    st.fi[i, FI_BUSY] += t - st.fi[i, FI_FORM]
    st.ii[i, II_STAT_DECODE] += k_run * n_dec
    st.ii[i, II_CTX] += k_run * n_dec
    st.ii[i, II_SDEC] += k_run * n_dec
    leave = st.scratch
    n_leave = 0
    n_done = 0
    for k in range(st.ii[i, II_NBATCH]):
        r = st.batch_r[i, k]
        c = st.batch_c[i, k]
        st.ri[r, RI_REM] -= c
        st.ri[r, RI_INKV] += c
        st.ri[r, RI_PREFILL] += c
        st.ii[i, II_STAT_PREFILL] += c
        _set_queued(d, st, i, r, st.ri[r, RI_REM])
        if st.ri[r, RI_REM] == 0:
            if st.pre[r, P_KEPT] == 0:
                st.rf[r, RF_FIRST] = t
            st.ii[i, II_CTX] += 1
            _cache_prompt(d, st, i, r, t)
            _list_remove(st, i, II_PHEAD, II_PTAIL, r)
            if role == PREFILL_ROLE or st.pre[r, P_KEPT] + 1 == d.n_out[r]:
                leave[n_leave] = r
                n_leave += 1
            else:
                st.batch_r[i, n_done] = r  # completions that stay to decode
                n_done += 1
    st.ii[i, II_NBATCH] = 0
    it = st.ii[i, II_ITER]
    while st.ii[i, II_HEAPN] > 0 and st.dheap[i, 0] // d.n == it:
        r = _dh_pop(st, i) % d.n
        st.ii[i, II_NDEC] -= 1
        st.ii[i, II_SDEC] -= d.input_len[r] + d.n_out[r]
        leave[n_leave] = r
        n_leave += 1
    _sort_small(leave, n_leave)
    n_hand = 0
    for k in range(n_leave):
        r = leave[k]
        generated = st.pre[r, P_KEPT] + 1 if st.ri[r, RI_STATE] != DECODE else d.n_out[r]
        _release(d, st, i, r, generated, t)
        if role == PREFILL_ROLE and d.n_out[r] > 1:
            st.handoff[n_hand] = r
            n_hand += 1
        else:
            _finish(d, st, r, t)
    for k in range(n_done):
        _join_decode(d, st, i, st.batch_r[i, k])
    _form_batch(d, st, i, t)
    if n_hand > 0:
        _hand_over(d, st, i, n_hand, t)


@njit(cache=True, _nrt=False)
def _hand_over(d, st, src, n_hand, t):
    """Disaggregated: prefilled requests go to the decode instance with the fewest in flight."""
    for k in range(n_hand):
        r = st.handoff[k]
        best = d.n_routable
        for j in range(d.n_routable + 1, d.n_instances):
            if st.ii[j, II_INFLIGHT] < st.ii[best, II_INFLIGHT]:
                best = j
        _sample_until(d, st, best, t)
        st.ri[r, RI_STATE] = WAITING
        st.ri[r, RI_DINST] = best
        st.qmark[r, QM_FAILED] = -1  # KV versions are per instance
        _list_append(st, best, II_WHEAD, II_WTAIL, r)
        st.ii[best, II_NWAIT] += 1
        st.ii[best, II_INFLIGHT] += 1
        st.ii[best, II_CTX] += d.input_len[r] + 1
        st.ii[best, II_ROUTED] += 1
        st.mark[best] = 1
    for j in range(d.n_routable, d.n_instances):
        if st.mark[j] == 1:
            st.mark[j] = 0
            if st.ii[j, II_BUSY] == 0:
                _form_batch(d, st, j, t)
            else:
                _cut(st, j, t, j > src)


# ====================================================================== router information
@njit(cache=True, _nrt=False)
def _refresh(d, st, t):
    """Take the router snapshots whose period boundary ``b <= t`` passed since the last event: the state
    after every event before ``b`` (called before the engine processes an event at ``t``). ``st.snap``'s
    last row holds the next boundary of each grid (inf when that refresh is off)."""
    if d.refresh_s > 0.0 and t >= st.snap[d.n_routable, 0]:
        b, st.snap[d.n_routable, 0] = refresh_period(t, d.refresh_s)
        for i in range(d.n_routable):
            ctx = st.ii[i, II_CTX]
            if st.ii[i, II_BUSY] == 1 and st.ii[i, II_SEGK] > 1:
                m = _iters_done(st, i, b, st.ii[i, II_SEGK])
                if m >= 1 and _boundary(st, i, m) == b:
                    m -= 1
                ctx += st.ii[i, II_NDEC] * m
            st.snap[i, pb.V_QUEUED_TOKENS] = st.ii[i, II_QTOK]
            st.snap[i, pb.V_QUEUED_COST] = st.fi[i, FI_QCOST]
            st.snap[i, pb.V_N_RUNNING] = st.ii[i, II_NRUN]
            st.snap[i, pb.V_N_WAITING] = st.ii[i, II_NWAIT]
            st.snap[i, pb.V_CONTEXT_TOKENS] = ctx
            st.snap[i, pb.V_QUEUED_ATTN] = st.fi[i, FI_QATTN]
        st.sp_meta[1] = 1  # the routing index reads the snapshot: rebuild its load tree
    if d.kv_refresh_s > 0.0 and t >= st.snap[d.n_routable, 1]:
        _, st.snap[d.n_routable, 1] = refresh_period(t, d.kv_refresh_s)
        for i in range(d.n_routable):
            st.snap[i, pb.V_KV_USED] = st.ii[i, II_PINNED] + st.ii[i, II_PRIV]


@njit(cache=True, _nrt=False)
def _seen(d, st, i, b, cut):
    """Tier in which the router sees block ``b`` on instance ``i`` (0 HBM, 1 DRAM, 2 store, 3 none):
    present now and entered it at or before ``cut``."""
    s = _hbm_slot(d, st, i, b)
    if s >= 0 and st.seen[i * d.hbm_blocks + s] <= cut:
        return 0
    s = _dram_slot(d, st, i, b)
    if s >= 0 and st.seen[d.seen_dram + i * d.dram_slots + s] <= cut:
        return 1
    if d.global_slots > 0 and st.g_in[b] != 0 and st.seen[d.seen_glob + b] <= cut:
        return 2
    return 3


@njit(cache=True, _nrt=False)
def _seen_hit_tokens(d, st, i, r, blocks, cut):
    """(h1, h2, h3) as the router sees them through KV events: :func:`_hit_tokens` over the blocks seen."""
    nb = blocks.shape[0]
    k1 = 0
    while k1 < nb and _seen(d, st, i, blocks[k1], cut) <= 0:
        k1 += 1
    k2 = k1
    while k2 < nb and _seen(d, st, i, blocks[k2], cut) <= 1:
        k2 += 1
    k3 = k2
    while k3 < nb and _seen(d, st, i, blocks[k3], cut) <= 2:
        k3 += 1
    L = d.input_len[r]
    h1, h2, h3 = k1 * d.block_size, k2 * d.block_size, k3 * d.block_size
    tp = d.tail_pos[r]
    if tp >= 0 and (k1 == tp or k2 == tp or k3 == tp):
        tier = _seen(d, st, i, d.tail_id[r], cut)
        tok = d.tail_tok[r]
        if k1 == tp and tier <= 0:
            h1 += tok
        if k2 == tp and tier <= 1:
            h2 += tok
        if k3 == tp and tier <= 2:
            h3 += tok
    return min(h1, L - 1), min(h2, L - 1), min(h3, L - 1)


# ====================================================================== arrivals
@njit(cache=True, _nrt=False)
def _build_view(d, st, r, t):
    """Fill ``st.vbuf`` (one row per routable instance) for request ``r`` at time ``t``."""
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    L = d.input_len[r]
    kg = _global_prefix(d, st, blocks)
    v = st.vbuf
    cost_hit = -1  # instances mostly share one hit length: reuse the request's cost estimate
    cost = 0.0
    k = d.replica[r]
    for i in range(d.n_routable):
        if d.kv_delay > 0.0:
            h1, h2, h3 = _seen_hit_tokens(d, st, i, r, blocks, t - d.kv_delay)
        else:
            _, _, _, h1, h2, h3 = _hit_tokens(d, st, i, r, blocks, kg)
        ctx = st.ii[i, II_CTX]
        if st.ii[i, II_BUSY] == 1 and st.ii[i, II_SEGK] > 1:
            ctx += st.ii[i, II_NDEC] * _iters_done(st, i, t, st.ii[i, II_SEGK])
        v[i, pb.V_HIT_HBM] = h1
        v[i, pb.V_HIT_DRAM] = h2 - h1
        v[i, pb.V_HIT_GLOBAL] = h3 - h2
        v[i, pb.V_QUEUED_TOKENS] = st.ii[i, II_QTOK]
        v[i, pb.V_QUEUED_COST] = st.fi[i, FI_QCOST]
        v[i, pb.V_N_RUNNING] = st.ii[i, II_NRUN]
        v[i, pb.V_N_WAITING] = st.ii[i, II_NWAIT]
        v[i, pb.V_IN_FLIGHT] = st.rinf[k, i]
        v[i, pb.V_KV_USED] = st.ii[i, II_PINNED] + st.ii[i, II_PRIV]
        v[i, pb.V_KV_CAPACITY] = d.hbm_blocks
        v[i, pb.V_CONTEXT_TOKENS] = ctx
        if h3 != cost_hit:
            cost_hit = h3
            cost = prefill_time_nb(d.coef, float(L - h3), float(h3))
        v[i, pb.V_REQ_COST] = cost
        v[i, pb.V_QUEUED_ATTN] = st.fi[i, FI_QATTN]
        if d.refresh_s > 0.0:
            v[i, pb.V_QUEUED_TOKENS] = st.snap[i, pb.V_QUEUED_TOKENS]
            v[i, pb.V_QUEUED_COST] = st.snap[i, pb.V_QUEUED_COST]
            v[i, pb.V_N_RUNNING] = st.snap[i, pb.V_N_RUNNING]
            v[i, pb.V_N_WAITING] = st.snap[i, pb.V_N_WAITING]
            v[i, pb.V_CONTEXT_TOKENS] = st.snap[i, pb.V_CONTEXT_TOKENS]
            v[i, pb.V_QUEUED_ATTN] = st.snap[i, pb.V_QUEUED_ATTN]
        if d.kv_refresh_s > 0.0:
            v[i, pb.V_KV_USED] = st.snap[i, pb.V_KV_USED]


# ====================================================================== indexed routing
# Indexed routing (numba engine only; the decisions and every number are those of the full view): for the
# policies whose rule is an argmin of a score monotone in one queued-prefill column and the replica's in-flight
# count (``smetric`` with the engine cache view, a fixed prefill rate and the ``slo``/``none`` guard;
# ``least-load`` on ``in_flight`` or ``queued_tokens``), an arrival is decided from
#
# * the holders of prompt block ``j*`` (the first block held, in HBM or DRAM, by at most ``sp_holders``
#   instances; found by binary search on the holder counts): the only instances whose local prefix can pass
#   ``j*`` blocks; their hits are looked up exactly;
# * every other instance has ``k2 <= j*`` and ``k3 <= max(j*, kg)``, so its request cost is at least that of the
#   hit those bounds allow (``clb``); a min-tree of the load column and one of each replica's in-flight counts
#   bound a subtree's scores from below, and a branch-and-bound search looks up the exact hits only of the
#   leaves it reaches.
#
# * a follow-up none of whose routable instances holds block ``j*`` (its own KV left every cache; the common case
#   at scale, where ~57 % of 1,024-instance arrivals needed the full view before it was indexed): every local
#   prefix is at most ``j*`` blocks, and the instances whose prefix is exactly ``j*`` (block ``j* - 1`` is widely
#   held: a shared system prompt) are found by the same branch and bound restricted to that hit; those also
#   holding the parent's tail block, which hit further, are enumerated from its holder list first.
#
# The trees are brought up to date at each arrival from the instances marked since the last one (a queued-
# prefill change, a dispatch or release; every leaf after a router snapshot). A follow-up whose longest local
# hit may lie outside the holders and the widely held prefix (a holder's hit not above their bound, a widely
# held tail, a shared prefix that reaches the prompt's last token) and could pass the stick test, and every other
# policy or setting, use the full view: their rules read every instance (scores that are not monotone in an
# indexed column, means or normalisations over all instances, samples, per-instance state updates).
# ``run_engine(counters=...)`` reports how many arrivals used it. Policies that read no view column
# (``load_only.VIEW_FREE_PIDS``: round-robin, random) get no view at all.
@njit(cache=True, _nrt=False)
def _sp_touch(d, st, i):
    """Mark routable instance ``i`` for the index's next update."""
    if d.sparse != SP_OFF and i < d.n_routable and st.sp_dirty[i] == 0:
        st.sp_dirty[i] = 1
        st.sp_list[st.sp_meta[0]] = i
        st.sp_meta[0] += 1


@njit(cache=True, _nrt=False)
def _sp_column(d, st, i):
    """The indexed load column of instance ``i`` as the view shows it (the snapshot's with ``refresh_s``)."""
    if d.sparse == SP_SMETRIC_ATTN:
        return st.snap[i, pb.V_QUEUED_ATTN] if d.refresh_s > 0.0 else st.fi[i, FI_QATTN]
    return st.snap[i, pb.V_QUEUED_TOKENS] if d.refresh_s > 0.0 else float(st.ii[i, II_QTOK])


@njit(cache=True, _nrt=False)
def _sp_update(d, st):
    """Bring the min-trees up to date with the marked instances."""
    size = d.sp_size
    if st.sp_meta[1] != 0:
        st.sp_meta[1] = 0
        for i in range(d.n_routable):
            st.sp_tree[0, size + i] = _sp_column(d, st, i)
        tree_rebuild(st.sp_tree[0], size)
    for q in range(st.sp_meta[0]):
        i = st.sp_list[q]
        st.sp_dirty[i] = 0
        tree_set(st.sp_tree[0], size, i, _sp_column(d, st, i))
        for k in range(st.rinf.shape[0]):
            tree_set(st.sp_tree[1 + k], size, i, float(st.rinf[k, i]))
    st.sp_meta[0] = 0


@njit(cache=True, _nrt=False)
def _sp_cost(d, prompt, hit):
    """SMETRIC's cost of this request on an instance with ``hit`` reusable tokens (its load minus the queue)."""
    new = new_tokens(prompt, hit)
    if d.sparse == SP_SMETRIC_ATTN:
        return attention_tokens(new, prompt, d.params[smetric_policy._L_EQ])
    return new


@njit(cache=True, _nrt=False)
def _sp_exact(d, st, r, i, k, blocks, kg):
    """(local hit, load, score) of SMETRIC on instance ``i`` for request ``r`` (replica ``k``), with the policy's own
    float operations."""
    _, _, _, _, h2, h3 = _hit_tokens(d, st, i, r, blocks, kg)
    load = _sp_column(d, st, i) + _sp_cost(d, float(d.input_len[r]), float(h3))
    return float(h2), load, load * (float(st.rinf[k, i]) + 1.0)


@njit(cache=True, _nrt=False)
def _sp_value(d, st, r, i, k, kind, blocks, kg, want):
    """Exact value of instance ``i`` for request ``r`` (replica ``k``): ``kind`` 0 the policy's score, 1 SMETRIC's
    load (its SLO guard), with the policy's own float operations; inf unless its local hit is ``want`` (when
    ``want >= 0``: j >= 1 whole blocks, so only an instance holding block j - 1 in HBM or DRAM has it, the
    parent's tail adding less than a block)."""
    if d.sparse == SP_LL_INFLIGHT:
        return float(st.rinf[k, i])
    if d.sparse == SP_LL_QTOKENS:
        return _sp_column(d, st, i)
    if want >= 0.0:  # the cheap test first: one probe per tier
        b = blocks[int(want) // d.block_size - 1]
        if _hbm_slot(d, st, i, b) < 0 and _dram_slot(d, st, i, b) < 0:
            return np.inf
    hit, load, score = _sp_exact(d, st, r, i, k, blocks, kg)
    if want >= 0.0 and hit != want:
        return np.inf
    return load if kind == 1 else score


@njit(cache=True, _nrt=False)
def _sp_bound(d, st, j, k, kind, clb):
    """Lower bound of :func:`_sp_value` over the leaves of tree node ``j`` outside the enumerated holders."""
    if d.sparse == SP_LL_INFLIGHT:
        return st.sp_tree[1 + k, j]
    if d.sparse == SP_LL_QTOKENS:
        return st.sp_tree[0, j]
    load = st.sp_tree[0, j] + clb
    if kind == 1:
        return load
    return load * (st.sp_tree[1 + k, j] + 1.0)


@njit(cache=True, _nrt=False)
def _sp_min(d, st, r, k, blocks, kg, clb, best, want):
    """The smallest score below ``best`` over the instances (branch and bound; those whose local hit is ``want``
    when ``want >= 0``), else ``best``."""
    size = d.sp_size
    stack = st.sp_stack
    stack[0, 0] = 1
    top = 1
    while top > 0:
        top -= 1
        j = stack[0, top]
        if _sp_bound(d, st, j, k, 0, clb) >= best:
            continue
        if j >= size:
            best = min(best, _sp_value(d, st, r, j - size, k, 0, blocks, kg, want))
            continue
        a, b = 2 * j, 2 * j + 1
        if _sp_bound(d, st, a, k, 0, clb) > _sp_bound(d, st, b, k, 0, clb):
            a, b = b, a
        stack[0, top] = b  # the child with the lower bound is searched first
        stack[0, top + 1] = a
        top += 2
    return best


@njit(cache=True, _nrt=False)
def _sp_first(d, st, r, k, kind, blocks, kg, clb, lo, hi, limit, want):
    """The lowest instance in ``[lo, hi)`` whose exact value (``kind``; ``want`` as in :func:`_sp_value`) is
    <= ``limit``, or -1."""
    size = d.sp_size
    stack = st.sp_stack
    stack[0, 0], stack[1, 0], stack[2, 0] = 1, 0, size  # node, its first leaf, its leaves
    top = 1
    while top > 0:
        top -= 1
        j, first, span = stack[0, top], stack[1, top], stack[2, top]
        if first >= hi or first + span <= lo or _sp_bound(d, st, j, k, kind, clb) > limit:
            continue
        if span == 1:
            if _sp_value(d, st, r, first, k, kind, blocks, kg, want) <= limit:
                return first
            continue
        half = span // 2
        stack[0, top], stack[1, top], stack[2, top] = 2 * j + 1, first + half, half
        stack[0, top + 1], stack[1, top + 1], stack[2, top + 1] = 2 * j, first, half
        top += 2
    return -1


@njit(cache=True, _nrt=False)
def _sp_enumerate(d, st, r, b):
    """Write into ``st.sp_buf`` the routable instances holding block ``b`` (HBM or DRAM), each once (marked with
    ``r`` in ``st.sp_mark``); returns their count."""
    count = 0
    for tier in range(2):
        e = st.h_head[tier, b]
        cap = d.hbm_blocks if tier == 0 else d.dram_slots
        links = st.h_hl if tier == 0 else st.h_dl
        while e >= 0:
            i = e // cap
            if i < d.n_routable and st.sp_mark[i] != r:
                st.sp_mark[i] = r
                st.sp_buf[count] = i
                count += 1
            e = links[0, e]
    return count


@njit(cache=True, _nrt=False)
def _sp_holders(d, st, r, blocks, kg):
    """Enumerate into ``st.sp_buf`` the routable holders of block ``j*`` with their exact (local hit, score,
    load) in ``st.sp_val``; returns (count, j*)."""
    nb = blocks.shape[0]
    lo, hi = 0, nb
    while lo < hi:  # holder counts do not grow along a chain
        mid = (lo + hi) // 2
        if st.h_count[blocks[mid]] <= d.sp_holders:
            hi = mid
        else:
            lo = mid + 1
    if lo == nb:
        return 0, nb
    k = d.replica[r]
    count = _sp_enumerate(d, st, r, blocks[lo])
    for e in range(count):
        hit, load, score = _sp_exact(d, st, r, st.sp_buf[e], k, blocks, kg)
        st.sp_val[e, 0] = hit
        st.sp_val[e, 1] = score
        st.sp_val[e, 2] = load
    return count, lo


@njit(cache=True, _nrt=False)
def _sp_hit_bound(d, r, k, L):
    """Token hit of a prefix of ``k`` blocks plus the parent's tail where it could count: an upper bound of the
    hit of an instance whose prefix is at most ``k`` blocks."""
    h = k * d.block_size
    if d.tail_pos[r] == k:
        h += d.tail_tok[r]
    return float(min(h, L - 1))


@njit(cache=True, _nrt=False)
def _sp_balance(d, st, r, k, blocks, kg, clb, ne, start):
    """argmin of the score, ties to the first instance at or after ``start`` (cyclically), as argmin_rotating."""
    n = d.n_routable
    best = np.inf
    for e in range(ne):
        best = min(best, st.sp_val[e, 1])
    best = _sp_min(d, st, r, k, blocks, kg, clb, best, -1.0)
    chosen = _sp_first(d, st, r, k, 0, blocks, kg, clb, start, n, best, -1.0)
    if chosen < 0:
        chosen = _sp_first(d, st, r, k, 0, blocks, kg, clb, 0, start, best, -1.0)
    for e in range(ne):
        i = st.sp_buf[e]
        if st.sp_val[e, 1] == best and (chosen < 0 or (i - start) % n < (chosen - start) % n):
            chosen = i
    return chosen


@njit(cache=True, _nrt=False)
def _sp_stick(d, st, r, k, blocks, kg, clb, ne, i, hit, load):
    """SMETRIC's stick test of a follow-up on its longest-local-hit instance ``i`` (local ``hit``, ``load``):
    ``i`` when the request stays there, else -1 (balance)."""
    p = d.params
    if not (hit > 0.0 and hit >= p[smetric_policy._HIT_RATIO] * float(d.history[r])):
        return -1
    if p[smetric_policy._GUARD] != smetric_policy._SLO:
        return i
    slo = p[smetric_policy._TTFT_BASE] + p[smetric_policy._TTFT_PER_1K] * float(d.input_len[r]) / 1000.0
    budget = p[smetric_policy._SLACK] * p[smetric_policy._RATE] * slo
    if load <= budget:
        return i
    meets = _sp_first(d, st, r, k, 1, blocks, kg, clb, 0, d.n_routable, budget, -1.0) >= 0
    for e in range(ne):
        meets = meets or st.sp_val[e, 2] <= budget
    return -1 if meets else i


@njit(cache=True, _nrt=False)
def _sp_widest(d, st, r, k, blocks, kg, clb, js):
    """The longest-local-hit instance of a follow-up none of whose routable instances holds prompt block ``js``
    (so every local prefix is at most ``js`` blocks; block ``js - 1`` is widely held): (instance, its local hit,
    its load), ties to the lowest score, then the lowest index; (-1, 0, 0) when the index cannot tell."""
    L = d.input_len[r]
    base = js * d.block_size
    if js < 1 or base > L - 1:  # no shared prefix, or the L - 1 cap could tie shorter prefixes with it
        return -1, 0.0, 0.0
    if d.tail_pos[r] == js and min(base + d.tail_tok[r], L - 1) > base:  # holders of the tail hit further
        b = d.tail_id[r]
        if st.h_count[b] > d.sp_holders:
            return -1, 0.0, 0.0
        want = float(min(base + d.tail_tok[r], L - 1))
        best_i, best_s, best_load = -1, np.inf, 0.0
        for e in range(_sp_enumerate(d, st, r, b)):  # sp_buf is free: block js has no routable holder
            i = st.sp_buf[e]
            hit, load, score = _sp_exact(d, st, r, i, k, blocks, kg)
            if hit == want and (score < best_s or (score == best_s and i < best_i)):
                best_i, best_s, best_load = i, score, load
        if best_i >= 0:
            return best_i, want, best_load
    want = float(base)
    best = _sp_min(d, st, r, k, blocks, kg, clb, np.inf, want)
    if best == np.inf:
        return -1, 0.0, 0.0
    i = _sp_first(d, st, r, k, 0, blocks, kg, clb, 0, d.n_routable, best, want)
    return i, want, _sp_value(d, st, r, i, k, 1, blocks, kg, -1.0)


@njit(cache=True, _nrt=False)
def _sp_smetric(d, st, r, k, blocks):
    """SMETRIC's decision (:func:`smetric.policies.smetric_policy.choose`) from the index, or -1 when it needs
    the full view."""
    L = d.input_len[r]
    prompt = float(L)
    kg = _global_prefix(d, st, blocks)
    ne, js = _sp_holders(d, st, r, blocks, kg)
    h2_ub = _sp_hit_bound(d, r, js, L)
    clb = _sp_cost(d, prompt, _sp_hit_bound(d, r, max(js, kg), L))
    if d.turn[r] > 0:
        prev = -1
        for e in range(ne):
            if prev < 0 or st.sp_val[e, 0] > st.sp_val[prev, 0] or (
                    st.sp_val[e, 0] == st.sp_val[prev, 0] and (st.sp_val[e, 1] < st.sp_val[prev, 1] or (
                        st.sp_val[e, 1] == st.sp_val[prev, 1] and st.sp_buf[e] < st.sp_buf[prev]))):
                prev = e
        if prev >= 0 and st.sp_val[prev, 0] > h2_ub:
            stay = _sp_stick(d, st, r, k, blocks, kg, clb, ne, st.sp_buf[prev], st.sp_val[prev, 0],
                             st.sp_val[prev, 2])
            if stay >= 0:
                return stay
        else:
            top = h2_ub if prev < 0 else max(h2_ub, st.sp_val[prev, 0])
            if top > 0.0 and top >= d.params[smetric_policy._HIT_RATIO] * float(d.history[r]):
                if prev >= 0:
                    return -1
                i, hit, load = _sp_widest(d, st, r, k, blocks, kg, clb, js)
                if i < 0:
                    return -1
                stay = _sp_stick(d, st, r, k, blocks, kg, clb, ne, i, hit, load)
                if stay >= 0:
                    return stay
    slot = int(d.params[smetric_policy._INDEX_SIZE])
    chosen = _sp_balance(d, st, r, k, blocks, kg, clb, ne, int(st.pstate[k, slot]))
    st.pstate[k, slot] = (chosen + 1) % d.n_routable
    return chosen


@njit(cache=True, _nrt=False)
def _sp_route(d, st, r):
    """The instance the indexed policy chooses for ``r``, or -1 when this decision needs the full view."""
    _sp_update(d, st)
    k = d.replica[r]
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    if d.sparse == SP_SMETRIC_ATTN or d.sparse == SP_SMETRIC_TOKENS:
        return _sp_smetric(d, st, r, k, blocks)
    best = _sp_min(d, st, r, k, blocks, 0, 0.0, np.inf, -1.0)
    return _sp_first(d, st, r, k, 0, blocks, 0, 0.0, 0, d.n_routable, best, -1.0)


@njit(cache=True)  # with the runtime: numba compiles route (which allocates) with this function's flags
def _arrive(d, st, r, t):
    st.rf[r, RF_ARR] = t
    if d.abandon and st.gone[d.session[r]] == 1:  # its session abandoned: the turn is never served
        st.ri[r, RI_REASON] = REASON_ABANDONED
        return
    L = d.input_len[r]
    nb = d.block_offsets[r + 1] - d.block_offsets[r]
    if _n_blocks(L + d.n_out[r], d.block_size) > d.hbm_blocks or nb > d.hbm_blocks:
        st.ri[r, RI_REASON] = 1
        _release_children(d, st, r, t)
        return
    kind = int(st.gf[GF_QUEUE + Q_EST])
    if kind != ORACLE:
        st.rf[r, RF_DECODE_EST] = estimate_nb(kind, st.gf[GF_QUEUE + Q_PRIOR], d.coef, st.est_sess, st.est_g,
                                              d.session[r], L)
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    k = d.replica[r]
    i = _sp_route(d, st, r) if d.sparse != SP_OFF else -1
    indexed = i >= 0
    if not indexed:
        if not d.view_free:  # a policy that reads no view column is given the (stale) buffer unfilled
            st.gi[G_FULL_VIEWS] += 1
            _build_view(d, st, r, t)
        q = st.reqv
        q[pb.R_INPUT_LEN] = L
        q[pb.R_TURN] = d.turn[r]
        q[pb.R_SESSION] = d.session[r]
        q[pb.R_HISTORY] = d.history[r]
        q[pb.R_NOW] = t
        q[pb.R_PRIORITY] = d.priority[r]
        q[pb.R_INDEX] = r
        i = route(d.pid, st.vbuf, q, blocks, d.params, st.pstate[k], d.rand[r])
    if i < 0 or i >= d.n_routable:
        raise ValueError("the routing policy returned an instance index out of range")
    st.ri[r, RI_INST] = i
    if not d.disaggregated:
        st.ri[r, RI_DINST] = i
    st.ii[i, II_INFLIGHT] += 1
    st.rinf[k, i] += 1
    st.ii[i, II_ROUTED] += 1
    _sp_touch(d, st, i)
    if d.api_s > 0.0:  # the API server holds it: the engine's queue sees it later (_enter)
        st.ri[r, RI_STATE] = ROUTED
        _ah_push(st, t + d.api_s, r)
        return
    if d.kv_delay > 0.0 or indexed or d.view_free:  # the engine's queue accounting uses the real hit
        _, _, _, _, _, hit = _hit_tokens(d, st, i, r, blocks, _global_prefix(d, st, blocks))
    else:
        hit = int(st.vbuf[i, pb.V_HIT_HBM] + st.vbuf[i, pb.V_HIT_DRAM] + st.vbuf[i, pb.V_HIT_GLOBAL])
    _enqueue(d, st, i, r, t, hit)


@njit(cache=True, _nrt=False)
def _enter(d, st, r, t):
    """Routed request ``r`` leaves the API server and reaches its instance's queue at ``t`` (real hit then)."""
    i = st.ri[r, RI_INST]
    blocks = d.block_ids[d.block_offsets[r]:d.block_offsets[r + 1]]
    _, _, _, _, _, hit = _hit_tokens(d, st, i, r, blocks, _global_prefix(d, st, blocks))
    _enqueue(d, st, i, r, t, hit)


@njit(cache=True, _nrt=False)
def _enqueue(d, st, i, r, t, hit):
    """Request ``r`` joins instance ``i``'s waiting queue at ``t`` with ``hit`` prompt tokens already cached."""
    _sample_until(d, st, i, t)
    st.ri[r, RI_STATE] = WAITING
    _list_append(st, i, II_WHEAD, II_WTAIL, r)
    st.ii[i, II_NWAIT] += 1
    st.ii[i, II_CTX] += d.input_len[r]
    st.ii[i, II_NQUEUED] += 1
    _set_queued(d, st, i, r, d.input_len[r] - hit)
    if st.ii[i, II_BUSY] == 0:
        _form_batch(d, st, i, t)
    else:
        _cut(st, i, t, False)
        if d.lag:  # the next iteration is already scheduled: visible after the one running now
            st.vis[r] = st.fi[i, FI_END] if st.fi[i, FI_END] < INF else t


# ====================================================================== main loop
@njit(cache=True)  # with the runtime: numba compiles route (which allocates) with this function's flags
def _run(d, st, max_arrivals):
    """Process events until ``max_arrivals`` more arrivals were handled; True when the run is over."""
    handled = 0
    while True:
        ti = st.tt_t[1]
        i = st.tt_i[1]
        ta = st.ah_t[0] if st.gi[G_AHN] > 0 else INF
        if ti == INF and ta == INF:
            return True
        if ti <= ta:
            if ti < st.gf[GF_NOW]:
                st.gi[G_CLOCK_BACK] += 1
            st.gf[GF_NOW] = ti
            if d.router_clock:
                _refresh(d, st, ti)
            if i == d.n_instances:
                _pool_event(d, st, ti)
                continue
            _sample_until(d, st, i, ti)
            if st.ii[i, II_BUSY] == 1:
                _end_run(d, st, i, ti)
            else:
                _form_batch(d, st, i, ti)
        else:
            if handled == max_arrivals:
                return False
            if ta < st.gf[GF_NOW]:
                st.gi[G_CLOCK_BACK] += 1
            st.gf[GF_NOW] = ta
            if d.router_clock:
                _refresh(d, st, ta)
            r = _ah_pop(st)
            if st.ri[r, RI_STATE] == ROUTED:
                _enter(d, st, r, ta)
                continue
            _arrive(d, st, r, ta)
            handled += 1
            st.gi[G_ARRIVED] += 1


@njit(cache=True, _nrt=False)
def _finalize(d, st):
    for i in range(d.n_instances):
        _sample_until(d, st, i, st.gf[GF_NOW])


# ====================================================================== Python side
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
        dmask=int(dsize_shift[2]), incremental=bool(inp.incremental), refresh_s=float(inp.refresh_s),
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
    """The routing index mode of this run (``SP_*``; "Indexed routing"): off below :data:`SPARSE_MIN_INSTANCES`
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
    """The routing index's arrays ("Indexed routing"); one-element placeholders when it is off."""
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
        inst_iterations=ii[:, II_ITER].copy(), inst_busy=fi[:, FI_BUSY].copy(),
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
    from ..workload.core import Workload
    from .config import ClusterConfig, HardwareSpec
    from .inputs import prepare

    wl = Workload(arrival=[0.0, 0.1], input_len=[300, 600], output_len=[3, 2], session=[0, 0], turn=[0, 1],
                  parent=[-1, 0], gap=[0.0, 0.0], block_offsets=[0, 2, 5], block_ids=[0, 1, 0, 1, 2],
                  block_size=256)
    cluster = ClusterConfig("example", "example", n_instances=1, hardware=HardwareSpec.example())
    run_engine(prepare(wl, cluster, "round-robin"))


# The engine compiles the policies, the performance-model kernel, the cache structures and the estimators into its
# cached functions and freezes other modules' constants; numba only watches this file, so flush the cache when any
# module it imports (transitively) changed.
refresh_module(sys.modules[__name__])
