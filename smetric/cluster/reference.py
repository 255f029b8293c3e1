"""Pure-Python reference engine: the semantics of :mod:`smetric.cluster.engine`, written for clarity.

It is the oracle of the equivalence tests and is not used to produce results. It is written
independently of the numba engine: Python objects, ``dict``/``OrderedDict`` caches, ``heapq``,
one iteration at a time (no fast-forwarding of decode-only stretches), and prefix hits found by
a linear scan (the numba engine binary-searches, relying on every cache being prefix-closed).
At every arrival it builds the full view of every routable instance and calls the policy on it; the numba
engine's routing index (:mod:`smetric.cluster.engine.routing_index`) decides the same instance from fewer rows, so this
straightforward rebuild is the semantics that index is tested against.
The exact rules it implements are the "Semantics" section of the engine page, ``docs/engine.md``.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict

import numpy as np

from ..hardware.kernel import iteration_time_nb, prefill_attn_work, prefill_time_nb
from ..policies import base as pb
from ..policies.dispatch import route
from .abandonment import mark_unreleased
from .estimators import ORACLE, estimate_nb, estimator_state, observe_nb
from .inputs import EngineInput
from .queueing import FCFS, Q_EST, Q_KIND, Q_PRIOR, Q_WINDOW, queue_order
from .result_raw import N_TS, REASON_ABANDONED, REASON_COMPLETED, REASON_STALLED, REASON_TOO_LARGE, RawRun
from .router_info import refresh_period
from .sampling import halve_samples

__all__ = ["run_reference"]

WAITING, LOADING, PREFILL, DECODE, LEFT, ROUTED = range(6)
INF = math.inf
TOO_LONG = -1.0  # _admit: a prompt that must run whole does not fit the iteration's remaining budget


def _n_blocks(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


class _Req:
    """Mutable state of one request."""

    def __init__(self, row: int, inp: EngineInput):
        self.row = row
        self.L = int(inp.input_len[row])
        self.n_out = int(inp.n_out[row])
        self.blocks = [int(b) for b in inp.block_ids[inp.block_offsets[row]:inp.block_offsets[row + 1]]]
        self.state = WAITING
        self.remaining = 0      # prompt tokens still to compute
        self.in_kv = 0          # prompt tokens whose KV is present (hits + computed)
        self.g = 0              # tokens generated
        self.k1 = 0             # HBM-hit blocks pinned at admission
        self.private = 0        # reserved HBM blocks not in the cache
        self.ready = 0.0        # end of its KV load
        self.reply = [int(b) for b in inp.reply_ids[inp.reply_offsets[row]:inp.reply_offsets[row + 1]]]
        self.reply_tok = [int(x) for x in inp.reply_tokens[inp.reply_offsets[row]:inp.reply_offsets[row + 1]]]
        self.tail = (int(inp.tail_pos[row]), int(inp.tail_id[row]), int(inp.tail_tok[row]))
        self.contrib = (0, 0.0, 0.0)  # its share of the queued-prefill aggregates
        self.kept = 0           # tokens generated before its last preemption (recomputed with the prompt)
        self.preemptions = 0
        self.visible = -INF     # first-token lag: its scheduler sees it at formations after this time


class _Inst:
    """Mutable state of one instance."""

    def __init__(self, idx: int, role: str):
        self.idx = idx
        self.role = role                 # "colocated", "prefill" or "decode"
        self.waiting: list[int] = []     # routing order
        self.running: list[int] = []     # admission order
        self.ref: dict[int, int] = {}    # HBM cache: block -> pin count
        self.lru: OrderedDict = OrderedDict()  # unpinned cached blocks, least recent first
        self.private = 0                 # reserved blocks not in the cache
        self.dram: OrderedDict = OrderedDict()
        self.busy = False
        self.start = 0.0
        self.end = INF
        self.wake = INF
        self.batch: list[tuple[int, int]] = []
        self.decoding: list[int] = []
        self.link_dram = self.link_net = self.link_pd = 0.0
        self.pending = 0                 # connector loads the current iteration waits for
        self.sched = self.lready = self.dt = 0.0  # its compute start, latest load end, compute time
        self.inflight = 0
        self.n_queued = 0
        self.q_tok, self.q_cost, self.q_attn = 0, 0.0, 0.0
        self.ctx = 0
        self.entered: dict[int, float] = {}       # HBM block -> time it entered (KV events)
        self.dram_entered: dict[int, float] = {}  # DRAM block -> time it entered
        self.stats = dict(prefill=0, decode=0, iterations=0, busy=0.0, routed=0, kv_peak=0,
                          dram_read=0.0, global_read=0.0, pd_read=0.0, preemptions=0)

    @property
    def pinned(self) -> int:
        return len(self.ref) - len(self.lru)

    @property
    def next_time(self) -> float:
        return self.end if self.busy else self.wake


class _Reference:
    def __init__(self, inp: EngineInput):
        self.inp = inp
        self.fcfs = int(inp.queue[Q_KIND]) == FCFS
        self.estimator = int(inp.queue[Q_EST])
        self.decode_est = np.array(inp.decode_est, dtype=np.float64)  # overwritten at arrival unless oracle
        self.est_sess, self.est_ring, self.est_g = estimator_state(
            self.estimator, int(inp.session.max()) + 1, int(inp.queue[Q_WINDOW]))
        self.block_size = inp.block_size
        self.hbm_blocks = inp.hbm_blocks
        self.kv_bytes_per_token = inp.kv_bytes_per_token
        self.req = [_Req(r, inp) for r in range(inp.n)]
        roles = (["prefill"] * inp.n_routable + ["decode"] * (inp.n_instances - inp.n_routable)
                 if inp.disaggregated else ["colocated"] * inp.n_instances)
        self.inst = [_Inst(i, role) for i, role in enumerate(roles)]
        self.glob: OrderedDict = OrderedDict()
        self.global_write = 0.0
        self.transfers: dict[int, list] = {}  # id -> [bytes left, rate, node, load bytes]
        self.pool_time = 0.0
        self.pool_next = (INF, -1)
        self.state = np.tile(inp.state, (inp.n_replicas, 1))  # one policy state per router replica
        self.replica = inp.replica if inp.replica is not None else np.zeros(inp.n, dtype=np.int64)
        self.local_inflight = np.zeros((inp.n_replicas, inp.n_routable), dtype=np.int64)
        self.snap = np.zeros((inp.n_routable, pb.N_VIEW))
        self.next_refresh = [-INF, -INF]
        self.glob_entered: dict[int, float] = {}
        self.now = -INF
        self.heap: list[tuple[float, int]] = []
        n = inp.n
        self.waiting_on = [int(k) for k in inp.n_deps]  # closed replay: rows each row still waits on
        self.last_end = [-INF] * n                       # and the latest end among those that ended
        self.out = dict(instance=np.full(n, -1, np.int64), decode_instance=np.full(n, -1, np.int64),
                        arrival=np.full(n, np.nan), admit=np.full(n, np.nan), first_token=np.full(n, np.nan),
                        finish=np.full(n, np.nan), hit_hbm=np.zeros(n, np.int64), hit_dram=np.zeros(n, np.int64),
                        hit_global=np.zeros(n, np.int64), prefill_tokens=np.zeros(n, np.int64),
                        reason=np.full(n, -1, np.int64), preemptions=np.zeros(n, np.int64))
        self.ts = np.zeros((inp.n_instances, inp.n_samples, N_TS), dtype=np.int64)
        self.t0 = float(inp.arrival[0])
        self.sampled = np.zeros(inp.n_instances, dtype=np.int64)  # samples recorded per instance
        self.sample_dt = float(inp.sample_dt)
        self.gone: set[int] = set()  # sessions that abandoned

    # ------------------------------------------------------------------ caches
    def _prefix(self, blocks: list[int], present) -> int:
        k = 0
        while k < len(blocks) and present(blocks[k]):
            k += 1
        return k

    def _hits(self, inst: _Inst, q: _Req) -> tuple[int, int, int, int, int, int]:
        """Leading prompt blocks in HBM; in HBM or DRAM; in HBM, DRAM or the global store -- and the token
        hits of each, with the parent's partial tail where the hit reaches its position and the tier has it."""
        tiers = (lambda b: b in inst.ref, lambda b: b in inst.ref or b in inst.dram,
                 lambda b: b in inst.ref or b in inst.dram or b in self.glob)
        if not self.inp.hbm_reuse:  # HBM's blocks serve no hit; they count where a DRAM tier would serve them
            dram = tiers[1] if self.inp.dram_blocks > 0 else (lambda b: False)
            tiers = (lambda b: False, dram, lambda b: dram(b) or b in self.glob)
        ks = [self._prefix(q.blocks, present) for present in tiers]
        pos, tail, tok = q.tail
        hs = [min(k * self.block_size + (tok if k == pos and present(tail) else 0), q.L - 1)
              for k, present in zip(ks, tiers)]
        return (*ks, *hs)

    def _spill(self, inst: _Inst, block: int) -> None:
        """An HBM-evicted block enters DRAM under the ``spill`` policy only."""
        if not self.inp.dram_write:
            self._dram_put(inst, block)

    def _dram_put(self, inst: _Inst, block: int) -> None:
        """``block`` becomes DRAM's most recent block (entering it, LRU-evicting, if absent)."""
        if self.inp.dram_blocks == 0:
            return
        if block in inst.dram:
            inst.dram.move_to_end(block)
        else:
            inst.dram[block] = None
            inst.dram_entered[block] = self.now
            while len(inst.dram) > self.inp.dram_blocks:
                inst.dram.popitem(last=False)

    def _cache_prompt(self, inst: _Inst, q: _Req, t: float) -> None:
        """Prefill done: its computed/loaded blocks join the HBM cache; the prompt is written through (to DRAM
        with ``write-through``, then to the store)."""
        for b in q.blocks[q.k1:]:
            if b in inst.ref:
                if inst.ref[b] == 0:
                    del inst.lru[b]
                inst.ref[b] += 1
            else:
                inst.ref[b] = 1
                inst.entered[b] = self.now
            inst.private -= 1
            q.private -= 1
        if self.inp.dram_write:
            for b in reversed(q.blocks):
                self._dram_put(inst, b)
        self._write_through(inst, q, t, reply=False)

    def _write_through(self, inst: _Inst, q: _Req, t: float, reply: bool) -> None:
        """The prompt (after the reply chain, with ``reply``) goes to the global store, tail first."""
        if self.inp.global_blocks == 0:
            return
        chain = list(zip(q.blocks, [min(self.block_size, q.L - j * self.block_size) for j in range(len(q.blocks))]))
        if reply:
            chain += list(zip(q.reply, q.reply_tok))
        written = 0.0
        for b, tokens in reversed(chain):
            if b in self.glob:
                self.glob.move_to_end(b)
            else:
                self.glob[b] = None
                self.glob_entered[b] = self.now
                written += tokens * self.kv_bytes_per_token
                while len(self.glob) > self.inp.global_blocks:
                    self.glob.popitem(last=False)
        self.global_write += written
        if self.inp.conn and written > 0:
            self._transfer_start((2 if reply else 1) * self.inp.n + q.row, inst, written, t)

    # ------------------------------------------------------------------ connector transfers
    def _pool_update(self, t: float) -> None:
        """Advance every transfer to ``t``, then give each its equal share and find the next completion."""
        inp = self.inp
        if t - self.pool_time > 0:
            for tr in self.transfers.values():
                tr[0] -= tr[1] * (t - self.pool_time)
        self.pool_time = t
        per_node: dict[int, int] = {}
        for tr in self.transfers.values():
            per_node[tr[2]] = per_node.get(tr[2], 0) + 1
        self.pool_next = (INF, -1)
        for x, tr in self.transfers.items():
            cap = inp.load_cap if x < inp.n else inp.write_cap
            tr[1] = min(cap, min(inp.node_bw[tr[2]] / float(per_node[tr[2]]),
                                 inp.store_total / float(len(self.transfers))))
            self.pool_next = min(self.pool_next, (t + max(tr[0], 0.0) / tr[1], x))

    def _transfer_start(self, x: int, inst: _Inst, nbytes: float, t: float) -> None:
        self._pool_update(t)
        self.transfers[x] = [nbytes, 0.0, int(self.inp.node_of[inst.idx]), nbytes]
        self._pool_update(t)

    def _transfer_done(self, t: float) -> None:
        """The earliest transfer ends; a load then crosses the instance's PCIe link."""
        inp = self.inp
        x = self.pool_next[1]
        self._pool_update(t)
        nbytes = self.transfers.pop(x)[3]
        self._pool_update(t)
        if x >= inp.n:
            return
        inst = self.inst[int(self.out["instance"][x])]
        inst.link_dram = max(t, inst.link_dram) + nbytes / inp.pcie_bw
        inst.lready = max(inst.lready, inst.link_dram + inp.load_latency)
        inst.pending -= 1
        if inst.pending == 0:
            inst.end = self._connector_end(inst)

    def _connector_end(self, inst: _Inst) -> float:
        if self.inp.layerwise:
            return max(inst.sched + inst.dt, inst.lready)
        return max(inst.sched, inst.lready) + inst.dt

    # ------------------------------------------------------------------ aggregates
    def _set_queued(self, inst: _Inst, q: _Req, tok: int) -> None:
        """Set the request's share of the queued-prefill aggregates to ``tok`` remaining tokens."""
        if tok > 0:
            n = q.L + q.kept  # a preempted request recomputes its generated tokens with the prompt
            cost = prefill_time_nb(self.inp.coef, float(tok), float(n - tok))
            attn = float(tok) + float(tok) * (float(n) - 0.5 * float(tok)) / self.inp.l_eq
        else:
            cost = attn = 0.0
        old_tok, old_cost, old_attn = q.contrib
        inst.q_tok += tok - old_tok
        inst.q_cost = (inst.q_cost - old_cost) + cost
        inst.q_attn = (inst.q_attn - old_attn) + attn
        q.contrib = (tok, cost, attn)
        if tok == 0:
            inst.n_queued -= 1
            if inst.n_queued == 0:
                inst.q_cost = 0.0
                inst.q_attn = 0.0

    def _sample_until(self, inst: _Inst, t: float) -> None:
        i = inst.idx
        while self.t0 + self.sampled[i] * self.sample_dt < t:
            if self.sampled[i] == self.inp.n_samples:  # out of slots: keep the even samples, double the spacing
                halve_samples(self.ts, self.sampled)
                self.sample_dt *= 2.0
                continue
            self.ts[i, self.sampled[i]] = (len(inst.waiting), len(inst.running), inst.pinned + inst.private)
            self.sampled[i] += 1

    # ------------------------------------------------------------------ admission
    def _admit(self, inst: _Inst, q: _Req, t: float, budget: int) -> float | None:
        """Reserve KV and start the loads; the load's end time, None if the KV does not fit, or TOO_LONG when
        prompts run whole and this one's uncached part exceeds ``budget``."""
        inp = self.inp
        if inst.role == "decode":
            total = _n_blocks(q.L + q.n_out, self.block_size)
            if inst.private + total > self.hbm_blocks:
                return None
            inst.private += total
            q.private = total
            start = max(t, inst.link_pd)
            inst.link_pd = start + q.L * self.kv_bytes_per_token / inp.pd_bw
            inst.stats["pd_read"] += q.L * self.kv_bytes_per_token
            inst.stats["kv_peak"] = max(inst.stats["kv_peak"], len(inst.ref) + inst.private)
            return inst.link_pd
        total = len(q.blocks) if inst.role == "prefill" else _n_blocks(q.L + q.n_out, self.block_size)
        k1, k2, _, h1, h2, h3 = self._hits(inst, q)
        newly_pinned = sum(1 for b in q.blocks[:k1] if inst.ref[b] == 0)
        need = total - k1
        if inp.whole_prompts and q.L + q.kept - h3 > budget and budget < inp.max_batched_tokens:
            return TOO_LONG  # prompts run whole: this one waits for an iteration with the budget
        if inp.incremental:  # the blocks of what is in KV once it loads, plus the chunk it takes now
            loading = inp.overlap and not inp.conn and h3 > h1
            chunk = 0 if loading else min(q.L + q.kept - h3, budget)
            need = _n_blocks(h3 + chunk, self.block_size) - k1
        if inst.pinned + newly_pinned + inst.private + need > self.hbm_blocks:
            return None
        for b in q.blocks[:k1]:
            if inst.ref[b] == 0:
                del inst.lru[b]
            inst.ref[b] += 1
        for j in range(k2 - 1, (0 if self.inp.dram_write else k1) - 1, -1):
            if q.blocks[j] in inst.dram:
                inst.dram.move_to_end(q.blocks[j])
        while len(inst.ref) + inst.private + need > self.hbm_blocks:
            victim, _ = inst.lru.popitem(last=False)
            del inst.ref[victim]
            self._spill(inst, victim)
        inst.private += need
        q.private = need
        q.k1 = k1
        inst.stats["kv_peak"] = max(inst.stats["kv_peak"], len(inst.ref) + inst.private)
        if q.preemptions == 0:  # hits and admission time are those of the first admission
            self.out["hit_hbm"][q.row], self.out["hit_dram"][q.row], self.out["hit_global"][q.row] = (
                h1, h2 - h1, h3 - h2)
            self.out["admit"][q.row] = t
        q.remaining = q.L + q.kept - h3
        q.in_kv = h3
        self._set_queued(inst, q, q.remaining)
        ready = t
        if h2 - h1 > 0:
            start = max(t, inst.link_dram)
            inst.link_dram = start + (h2 - h1) * self.kv_bytes_per_token / inp.dram_bw
            ready = max(ready, inst.link_dram)
            inst.stats["dram_read"] += (h2 - h1) * self.kv_bytes_per_token
        if h3 - h2 > 0:
            if inp.conn:
                self._transfer_start(q.row, inst, (h3 - h2) * self.kv_bytes_per_token, t)
                inst.pending += 1
            else:
                start = max(t, inst.link_net)
                inst.link_net = start + (h3 - h2) * self.kv_bytes_per_token / inp.global_bw
                ready = max(ready, inst.link_net + inp.global_latency)
            inst.stats["global_read"] += (h3 - h2) * self.kv_bytes_per_token
        return ready

    # ------------------------------------------------------------------ iterations
    def _candidates(self, inst: _Inst, t: float) -> list[int]:
        """The waiting requests in the order the queue discipline tries them (FCFS: routing order)."""
        if self.fcfs:
            return list(inst.waiting)
        inp = self.inp
        reqs = [self.req[r] for r in inst.waiting]
        free = float(max(self.hbm_blocks - inst.pinned - inst.private, 1))
        order = queue_order(
            inp.queue, est=[q.contrib[1] + self.decode_est[q.row] for q in reqs],
            priority=[inp.priority[q.row] for q in reqs], turn=[inp.turn[q.row] for q in reqs],
            arrival=[self.out["arrival"][q.row] for q in reqs], now=t,
            need=[float(_n_blocks(q.contrib[0] + q.n_out, self.block_size)) for q in reqs], free=free)
        return [inst.waiting[k] for k in order]

    def _form_batch(self, inst: _Inst, t: float) -> None:
        inp = self.inp
        for r in inst.running:
            q = self.req[r]
            if q.state == LOADING and q.ready <= t:
                q.state = PREFILL if q.remaining > 0 else DECODE
        decoding = [r for r in inst.running if self.req[r].state == DECODE]
        pf = inp.prefill_first  # prompts first; decodes take no budget (they run only in iterations without prompts)
        budget = inp.max_batched_tokens - (0 if pf else len(decoding))
        n_preempted = inst.stats["preemptions"]
        if inp.incremental and not pf:
            self._grow_decodes(inst, decoding, t)
            budget = inp.max_batched_tokens - len(decoding)
        batch = []
        for r in list(inst.running):
            if budget <= 0:
                break
            q = self.req[r]
            if q.state == PREFILL:
                if inp.whole_prompts and q.remaining > budget and budget < inp.max_batched_tokens:
                    break
                c = min(q.remaining, budget)
                if inp.incremental:
                    need = _n_blocks(q.in_kv + c, self.block_size) - q.k1 - q.private
                    if need > 0 and not self._allocate(inst, q, need, decoding, t):
                        break  # it was preempted itself: it was the last admitted
                    budget = inp.max_batched_tokens - (0 if pf else len(decoding)) - sum(x for _, x in batch)
                batch.append((r, c))
                budget -= c
        preempted = inst.stats["preemptions"] > n_preempted
        if inp.patience is not None:
            self._abandon_expired(inst, t)
        wait = 0.0
        conn = inp.conn and inst.role != "decode"
        sched = 0.0
        inst.lready = t
        order = [] if preempted else self._candidates(inst, t)  # vLLM admits nobody in a step that preempted
        honor = inp.first_token_lag and any(self.req[r].visible >= t for r in inst.waiting)
        while True:
            exhausted = True  # the pass ran out of visible candidates (not of budget, slots or KV)
            for r in order:
                if r not in inst.waiting:
                    continue  # admitted by the first pass
                if budget <= 0 or len(inst.running) >= inp.max_num_seqs:
                    exhausted = False
                    break
                q = self.req[r]
                if honor and q.visible >= t:  # first-token lag: not visible to this formation
                    if self.fcfs:
                        break
                    continue
                ready = self._admit(inst, q, t, budget)
                if ready is TOO_LONG:
                    exhausted = False
                    break  # whole prompts: the head's prompt does not fit what is left of the budget
                if ready is None:
                    if self.fcfs:
                        exhausted = False
                        break  # head-of-line blocking
                    continue
                inst.waiting.remove(r)
                inst.running.append(r)
                if conn:
                    sched += inp.lookup_s
                    inst.lready = max(inst.lready, ready)
                elif ready > t and inp.overlap:
                    q.state = LOADING
                    q.ready = ready
                    continue
                if ready > t and not conn:
                    wait = max(wait, ready - t)
                if q.remaining > 0:
                    q.state = PREFILL
                    c = min(q.remaining, budget)
                    batch.append((r, c))
                    budget -= c
                else:
                    q.state = DECODE
                    decoding.append(r)
                    budget -= 1
            if not (honor and exhausted and not batch and not decoding):
                break
            honor = False  # nothing else runs: no batch was scheduled ahead, the hidden requests run now
        if pf and decoding:
            if batch:
                decoding = []  # a prefill-only iteration: the decodes wait
            elif inp.incremental:
                self._grow_decodes(inst, decoding, t)
        if not batch and not decoding:
            inst.busy = False
            inst.wake = min((self.req[r].ready for r in inst.running if self.req[r].state == LOADING), default=INF)
            return
        n_dec = len(decoding)
        dctx = sum(self.req[r].L + self.req[r].g for r in decoding)
        pattn = 0.0
        for r, c in batch:
            pattn += prefill_attn_work(float(c), float(self.req[r].in_kv))
        ntok = sum(c for _, c in batch) + n_dec
        dt = iteration_time_nb(inp.coef, float(ntok), pattn, float(dctx), float(n_dec))
        if conn:  # the GPU->host copy of what the store receives: computed prompt tokens (and decodes)
            saved = ntok - n_dec + (n_dec if inp.store_replies else 0)
            if saved > 0:
                dt += saved * self.kv_bytes_per_token / inp.pcie_bw
        inst.busy = True
        inst.start = t
        inst.end = t + wait + dt
        if conn and batch:
            inst.sched, inst.dt = t + sched, dt
            inst.end = INF if inst.pending > 0 else self._connector_end(inst)
        inst.wake = INF
        inst.batch = batch
        inst.decoding = decoding

    def _grow_decodes(self, inst: _Inst, decoding: list[int], t: float) -> None:
        """Incremental allocation: decodes whose next token starts a new block take one, in row order."""
        for r in sorted(decoding):
            q = self.req[r]
            if q.state == DECODE and _n_blocks(q.L + q.g, self.block_size) > len(q.blocks) + q.private:
                self._allocate(inst, q, 1, decoding, t)

    def _abandon_expired(self, inst: _Inst, t: float) -> None:
        """Waiting, never-admitted requests with ``arrival + patience < t`` leave unserved (docs/engine.md,
        "Abandonment")."""
        inp = self.inp
        for r in list(inst.waiting):
            s = int(inp.session[r])
            if np.isnan(self.out["admit"][r]) and self.out["arrival"][r] + inp.patience[s] < t:
                q = self.req[r]
                inst.waiting.remove(r)
                inst.inflight -= 1
                self.local_inflight[self.replica[r], inst.idx] -= 1
                inst.ctx -= q.L
                self._set_queued(inst, q, 0)
                q.state = LEFT
                self.out["reason"][r] = REASON_ABANDONED
                self.gone.add(s)

    def _allocate(self, inst: _Inst, q: _Req, m: int, decoding: list[int], t: float) -> bool:
        """Give ``q`` ``m`` more blocks (evicting LRU cached ones), preempting the most recently admitted
        running request while they cannot be had; False if ``q`` itself was preempted."""
        while inst.pinned + inst.private + m > self.hbm_blocks:
            victim = self.req[inst.running[-1]]
            self._preempt(inst, victim, decoding, t)
            if victim is q:
                return False
        while len(inst.ref) + inst.private + m > self.hbm_blocks:
            block, _ = inst.lru.popitem(last=False)
            del inst.ref[block]
            self._spill(inst, block)
        inst.private += m
        q.private += m
        inst.stats["kv_peak"] = max(inst.stats["kv_peak"], len(inst.ref) + inst.private)
        return True

    def _preempt(self, inst: _Inst, q: _Req, decoding: list[int], t: float) -> None:
        """Recompute preemption: the prompt's blocks wholly in KV stay cached (unpinned), the rest of its KV
        is freed, and it goes to the front of the waiting queue keeping its generated tokens."""
        if q.state == DECODE:
            decoding.remove(q.row)
            kept = len(q.blocks)
        elif q.state == PREFILL:
            kept = q.k1
            while kept < len(q.blocks) and min((kept + 1) * self.block_size, q.L) <= q.in_kv:
                b = q.blocks[kept]
                if b in inst.ref:
                    if inst.ref[b] == 0:
                        del inst.lru[b]
                    inst.ref[b] += 1
                else:
                    inst.ref[b] = 1
                inst.private -= 1
                q.private -= 1
                kept += 1
        else:  # LOADING: its loads are abandoned
            kept = q.k1
        for b in reversed(q.blocks[:kept]):
            inst.ref[b] -= 1
            if inst.ref[b] == 0:
                inst.lru[b] = None
        inst.private -= q.private
        q.private = 0
        inst.running.remove(q.row)
        inst.waiting.insert(0, q.row)
        q.state = WAITING
        q.kept = q.g
        q.preemptions += 1
        self.out["preemptions"][q.row] += 1
        inst.stats["preemptions"] += 1
        if q.contrib[0] == 0:
            inst.n_queued += 1
        self._set_queued(inst, q, q.L + q.kept)

    def _end_iteration(self, inst: _Inst, t: float) -> None:
        inst.busy = False
        inst.stats["iterations"] += 1
        inst.stats["busy"] += t - inst.start
        for r in inst.decoding:
            self.req[r].g += 1
        inst.stats["decode"] += len(inst.decoding)
        inst.ctx += len(inst.decoding)
        completed = []
        for r, c in inst.batch:
            q = self.req[r]
            q.remaining -= c
            q.in_kv += c
            inst.stats["prefill"] += c
            self.out["prefill_tokens"][r] += c
            self._set_queued(inst, q, q.remaining)
            if q.remaining == 0:
                if q.kept == 0:
                    self.out["first_token"][r] = t
                q.g = q.kept + 1
                inst.ctx += 1
                self._cache_prompt(inst, q, t)
                completed.append(r)
        leavers = [r for r in inst.decoding if self.req[r].g == self.req[r].n_out]
        leavers += [r for r in completed if inst.role == "prefill" or self.req[r].g == self.req[r].n_out]
        handoffs = []
        for r in sorted(leavers):
            q = self.req[r]
            self._release(inst, q, t)
            if inst.role == "prefill" and q.n_out > 1:
                handoffs.append(r)
            else:
                self._finish(q, t)
        for r in completed:
            if self.req[r].state == PREFILL:
                self.req[r].state = DECODE
        self._form_batch(inst, t)
        self._hand_over(handoffs, t)

    def _cache_reply(self, inst: _Inst, q: _Req) -> list[int]:
        """Pin the reply chain into HBM head first: reserved blocks, then free ones, then LRU victims."""
        pinned = []
        for b in q.reply:
            if b in inst.ref:
                if inst.ref[b] == 0:
                    del inst.lru[b]
                inst.ref[b] += 1
            else:
                if q.private > 0:
                    q.private -= 1
                    inst.private -= 1
                elif len(inst.ref) + inst.private >= self.hbm_blocks:
                    if not inst.lru:
                        break
                    victim, _ = inst.lru.popitem(last=False)
                    del inst.ref[victim]
                    self._spill(inst, victim)
                inst.ref[b] = 1
                inst.entered[b] = self.now
            pinned.append(b)
        return pinned

    def _release(self, inst: _Inst, q: _Req, t: float) -> None:
        finished = q.g == q.n_out
        if finished and self.inp.store_replies:
            self._write_through(inst, q, t, reply=True)
        if inst.role != "decode":  # decode instances keep no prefix cache
            pinned = self._cache_reply(inst, q) if finished and self.inp.cache_replies else []
            for b in reversed(q.blocks + pinned):
                inst.ref[b] -= 1
                if inst.ref[b] == 0:
                    inst.lru[b] = None
        inst.private -= q.private
        q.private = 0
        inst.running.remove(q.row)
        inst.inflight -= 1
        if inst.role != "decode":
            self.local_inflight[self.replica[q.row], inst.idx] -= 1
        inst.ctx -= q.L + q.g
        q.state = LEFT

    def _finish(self, q: _Req, t: float) -> None:
        self.out["finish"][q.row] = t
        self.out["reason"][q.row] = REASON_COMPLETED
        if self.estimator != ORACLE:
            inp = self.inp
            observe_nb(self.estimator, self.est_sess, self.est_ring, self.est_g, int(inp.session[q.row]),
                       int(inp.input_len[q.row]), int(inp.n_out[q.row]), float(inp.decode_est[q.row]))
        self._release_children(q.row, t)

    def _release_children(self, row: int, t: float) -> None:
        inp = self.inp
        if not inp.closed:
            return
        for c in inp.waiters[inp.waiter_offsets[row]:inp.waiter_offsets[row + 1]]:
            c = int(c)
            delay = 0.0 if inp.release_delay is None else float(inp.release_delay[row])
            self.last_end[c] = max(self.last_end[c], t + delay)
            self.waiting_on[c] -= 1
            if self.waiting_on[c] == 0:
                heapq.heappush(self.heap, (max(float(inp.arrival[c]), self.last_end[c] + float(inp.gap[c])), c))

    def _hand_over(self, handoffs: list[int], t: float) -> None:
        """Prefill done (disaggregated): each request goes to the decode instance with the fewest in flight."""
        touched = set()
        decoders = self.inst[self.inp.n_routable:]
        for r in handoffs:
            q = self.req[r]
            d = min(decoders, key=lambda x: (x.inflight, x.idx))
            self._sample_until(d, t)
            q.state = WAITING
            d.waiting.append(r)
            d.inflight += 1
            d.ctx += q.L + q.g
            d.stats["routed"] += 1
            self.out["decode_instance"][r] = d.idx
            touched.add(d.idx)
        for d in sorted(touched):
            if not self.inst[d].busy:
                self._form_batch(self.inst[d], t)

    # ------------------------------------------------------------------ routing
    def _too_large(self, q: _Req) -> bool:
        full = _n_blocks(q.L + q.n_out, self.block_size)
        return full > self.hbm_blocks or len(q.blocks) > self.hbm_blocks

    def _refresh(self, t: float) -> None:
        """Snapshots of the periods whose boundary passed since the last event (state before the boundary)."""
        inp = self.inp
        if inp.refresh_s > 0 and t >= self.next_refresh[0]:
            self.next_refresh[0] = refresh_period(t, inp.refresh_s)[1]
            for i in range(inp.n_routable):
                inst, v = self.inst[i], self.snap[i]
                v[pb.V_QUEUED_TOKENS], v[pb.V_QUEUED_COST], v[pb.V_QUEUED_ATTN] = inst.q_tok, inst.q_cost, inst.q_attn
                v[pb.V_N_RUNNING], v[pb.V_N_WAITING] = len(inst.running), len(inst.waiting)
                v[pb.V_CONTEXT_TOKENS] = inst.ctx
        if inp.kv_refresh_s > 0 and t >= self.next_refresh[1]:
            self.next_refresh[1] = refresh_period(t, inp.kv_refresh_s)[1]
            for i in range(inp.n_routable):
                self.snap[i, pb.V_KV_USED] = self.inst[i].pinned + self.inst[i].private

    def _seen_hits(self, inst: _Inst, q: _Req, t: float) -> tuple[int, int, int]:
        """Token hits per tier over the blocks the router has seen enter (KV events ``kv_event_delay_s`` old)."""
        cut = t - self.inp.kv_event_delay_s
        tiers = (lambda b: b in inst.ref and inst.entered[b] <= cut,
                 lambda b: b in inst.dram and inst.dram_entered[b] <= cut,
                 lambda b: b in self.glob and self.glob_entered[b] <= cut)
        pos, tail, tok = q.tail
        hs = []
        for n in (1, 2, 3):
            def visible(b, n=n):
                return any(seen(b) for seen in tiers[:n])
            k = self._prefix(q.blocks, visible)
            extra = tok if k == pos and visible(tail) else 0
            hs.append(min(k * self.block_size + extra, q.L - 1))
        return hs[0], hs[1], hs[2]

    def _view(self, q: _Req, t: float) -> np.ndarray:
        inp = self.inp
        view = np.zeros((inp.n_routable, pb.N_VIEW))
        for i in range(inp.n_routable):
            inst = self.inst[i]
            if inp.kv_event_delay_s > 0:
                h1, h2, h3 = self._seen_hits(inst, q, t)
            else:
                _, _, _, h1, h2, h3 = self._hits(inst, q)
            v = view[i]
            v[pb.V_HIT_HBM], v[pb.V_HIT_DRAM], v[pb.V_HIT_GLOBAL] = h1, h2 - h1, h3 - h2
            v[pb.V_QUEUED_TOKENS] = inst.q_tok
            v[pb.V_QUEUED_COST] = inst.q_cost
            v[pb.V_N_RUNNING] = len(inst.running)
            v[pb.V_N_WAITING] = len(inst.waiting)
            v[pb.V_IN_FLIGHT] = self.local_inflight[self.replica[q.row], i]
            v[pb.V_KV_USED] = inst.pinned + inst.private
            v[pb.V_KV_CAPACITY] = self.hbm_blocks
            v[pb.V_CONTEXT_TOKENS] = inst.ctx
            v[pb.V_REQ_COST] = prefill_time_nb(inp.coef, float(q.L - h3), float(h3))
            v[pb.V_QUEUED_ATTN] = inst.q_attn
            if inp.refresh_s > 0:
                for c in (pb.V_QUEUED_TOKENS, pb.V_QUEUED_COST, pb.V_N_RUNNING, pb.V_N_WAITING,
                          pb.V_CONTEXT_TOKENS, pb.V_QUEUED_ATTN):
                    v[c] = self.snap[i, c]
            if inp.kv_refresh_s > 0:
                v[pb.V_KV_USED] = self.snap[i, pb.V_KV_USED]
        return view

    def _arrival(self, r: int, t: float) -> None:
        inp = self.inp
        q = self.req[r]
        self.out["arrival"][r] = t
        if int(inp.session[r]) in self.gone:  # its session abandoned: the turn is never served
            self.out["reason"][r] = REASON_ABANDONED
            return
        if self._too_large(q):
            self.out["reason"][r] = REASON_TOO_LARGE
            self._release_children(r, t)
            return
        if self.estimator != ORACLE:
            self.decode_est[r] = estimate_nb(self.estimator, float(inp.queue[Q_PRIOR]), inp.coef, self.est_sess,
                                             self.est_g, int(inp.session[r]), int(q.L))
        view = self._view(q, t)
        req = np.zeros(pb.N_REQ)
        req[pb.R_INPUT_LEN], req[pb.R_TURN], req[pb.R_SESSION] = q.L, inp.turn[r], inp.session[r]
        req[pb.R_HISTORY], req[pb.R_NOW], req[pb.R_PRIORITY], req[pb.R_INDEX] = inp.history[r], t, inp.priority[r], r
        blocks = inp.block_ids[inp.block_offsets[r]:inp.block_offsets[r + 1]]
        k = self.replica[r]
        i = int(route(inp.pid, view, req, blocks, inp.params, self.state[k], inp.rand[r]))
        if not 0 <= i < inp.n_routable:
            raise RuntimeError(f"policy returned instance {i} for request {r}; valid: 0..{inp.n_routable - 1}")
        inst = self.inst[i]
        self.out["instance"][r] = i
        if not inp.disaggregated:
            self.out["decode_instance"][r] = i
        inst.inflight += 1
        self.local_inflight[k, i] += 1
        inst.stats["routed"] += 1
        if inp.api_s > 0:  # the API server holds it; the instance's queue sees it api_s later
            q.state = ROUTED
            heapq.heappush(self.heap, (t + inp.api_s, r))
            return
        self._enter(inst, q, t)

    def _enter(self, inst: _Inst, q: _Req, t: float) -> None:
        """``q`` joins ``inst``'s waiting queue at ``t``."""
        self._sample_until(inst, t)
        q.state = WAITING
        inst.waiting.append(q.row)
        inst.ctx += q.L
        inst.n_queued += 1
        hit = self._hits(inst, q)[5]  # the engine's queue accounting uses the real hit
        self._set_queued(inst, q, q.L - hit)
        if not inst.busy:
            self._form_batch(inst, t)
        elif self.inp.first_token_lag:  # the next iteration is already scheduled: it sees q after this one
            q.visible = inst.end if inst.end < INF else t

    # ------------------------------------------------------------------ loop
    def run(self) -> RawRun:
        inp = self.inp
        rows = range(inp.n) if not inp.closed else np.flatnonzero(inp.n_deps == 0)
        self.heap = [(float(inp.arrival[r]), int(r)) for r in rows]
        heapq.heapify(self.heap)
        while True:
            ti, i = min(min((inst.next_time, inst.idx) for inst in self.inst), (self.pool_next[0], inp.n_instances))
            ta = self.heap[0][0] if self.heap else INF
            if ti == INF and ta == INF:
                break
            if ti <= ta:
                assert ti >= self.now, "clock went backwards"
                self.now = ti
                self._refresh(ti)
                if i == inp.n_instances:
                    self._transfer_done(ti)
                    continue
                inst = self.inst[i]
                self._sample_until(inst, ti)
                if inst.busy:
                    self._end_iteration(inst, ti)
                else:
                    self._form_batch(inst, ti)
            else:
                t, r = heapq.heappop(self.heap)
                assert t >= self.now, "clock went backwards"
                self.now = t
                self._refresh(t)
                if self.req[r].state == ROUTED:
                    self._enter(self.inst[int(self.out["instance"][r])], self.req[r], t)
                else:
                    self._arrival(r, t)
        for inst in self.inst:
            self._sample_until(inst, self.now)
        out = self.out
        if inp.patience is not None:
            out["reason"] = mark_unreleased(out["reason"], inp.session)
        out["reason"][out["reason"] < 0] = REASON_STALLED
        s = {k: np.array([inst.stats[k] for inst in self.inst]) for k in self.inst[0].stats}
        return RawRun(
            **out, inst_prefill_tokens=s["prefill"].astype(np.int64), inst_decode_tokens=s["decode"].astype(np.int64),
            inst_iterations=s["iterations"].astype(np.int64), inst_busy=s["busy"].astype(np.float64),
            inst_routed=s["routed"].astype(np.int64), inst_kv_peak=s["kv_peak"].astype(np.int64),
            inst_dram_read=s["dram_read"].astype(np.float64), inst_global_read=s["global_read"].astype(np.float64),
            inst_pd_read=s["pd_read"].astype(np.float64), inst_preemptions=s["preemptions"].astype(np.int64),
            global_write=float(self.global_write),
            end_time=float(self.now), timeseries=self.ts[:, :self.sampled[0]].copy(), sample_dt=self.sample_dt,
            decode_est=self.decode_est)


def run_reference(inp: EngineInput) -> RawRun:
    """Run the reference engine on ``inp`` (the policy state is copied, ``inp`` is not modified)."""
    return _Reference(inp).run()
