"""Every policy on hand-built instance states: the decision its source algorithm makes, tie-breaks and threshold edges.

Expected choices are worked out by hand from the policies' published formulas (each policy's source is in
its registry entry; SMETRIC: arXiv 2607.08565 §3) -- the arithmetic is in the comments -- not read back
from the implementation.
"""

import numpy as np
import pytest

from smetric.policies import get
from smetric.policies.base import (
    N_RAND,
    N_REQ,
    N_VIEW,
    R_HISTORY,
    R_INDEX,
    R_INPUT_LEN,
    R_NOW,
    R_PRIORITY,
    R_SESSION,
    R_TURN,
    V_CONTEXT_TOKENS,
    V_HIT_DRAM,
    V_HIT_GLOBAL,
    V_HIT_HBM,
    V_IN_FLIGHT,
    V_KV_CAPACITY,
    V_KV_USED,
    V_N_RUNNING,
    V_N_WAITING,
    V_QUEUED_ATTN,
    V_QUEUED_COST,
    V_QUEUED_TOKENS,
    V_REQ_COST,
    PolicyContext,
)
from smetric.policies.dispatch import route

CTX = PolicyContext(n_instances=4, n_sessions=8, block_size=16, max_num_seqs=64, kv_capacity_blocks=256,
                    l_eq=8000.0, prefill_rate=10000.0, ttft_base=1.0, ttft_per_1k=0.0625)

COLUMNS = {"hbm": V_HIT_HBM, "dram": V_HIT_DRAM, "glob": V_HIT_GLOBAL, "queued": V_QUEUED_TOKENS,
           "queued_cost": V_QUEUED_COST, "running": V_N_RUNNING, "waiting": V_N_WAITING,
           "in_flight": V_IN_FLIGHT, "kv_used": V_KV_USED, "kv_cap": V_KV_CAPACITY,
           "context": V_CONTEXT_TOKENS, "req_cost": V_REQ_COST, "queued_attn": V_QUEUED_ATTN}


def view(n=4, **cols):
    """An idle cluster of ``n`` instances (1000 KV blocks each) with the given columns set."""
    v = np.zeros((n, N_VIEW))
    v[:, V_KV_CAPACITY] = 1000.0
    for name, vals in cols.items():
        v[:, COLUMNS[name]] = vals
    return v


def request(length=1000, turn=0, session=0, history=0, now=0.0):
    r = np.zeros(N_REQ)
    r[R_INPUT_LEN], r[R_TURN], r[R_SESSION], r[R_HISTORY], r[R_NOW] = length, turn, session, history, now
    r[R_PRIORITY], r[R_INDEX] = 1.0, 0
    return r


class Router:
    """One policy instance for a run: its id, parameter vector and persistent state."""

    def __init__(self, name, ctx=CTX, **overrides):
        self.spec = get(name)
        self.params, self.state = self.spec.build(ctx, overrides)

    def __call__(self, v, r=None, blocks=None, u=0.5):
        r = request() if r is None else r
        blocks = np.arange(int(-(-r[R_INPUT_LEN] // CTX.block_size)), dtype=np.int64) if blocks is None else blocks
        rand = np.full(N_RAND, u) if np.isscalar(u) else np.asarray(u, dtype=float)
        return int(route(self.spec.pid, v, r, np.asarray(blocks, dtype=np.int64), self.params, self.state, rand))


def attn(new, length, l_eq=CTX.l_eq):
    return new + new * (length - new / 2) / l_eq


# ------------------------------------------------------------------ load-only
def test_round_robin_cycles():
    rr = Router("round-robin")
    assert [rr(view()) for _ in range(6)] == [0, 1, 2, 3, 0, 1]


@pytest.mark.parametrize("signal, expect", [("in_flight", 2), ("queued_tokens", 1), ("batch_size", 3)])
def test_least_load_signals(signal, expect):
    v = view(in_flight=[5, 4, 1, 3], queued=[900, 100, 800, 700], running=[4, 6, 5, 2])
    assert Router("least-load", signal=signal)(v) == expect


def test_least_load_ties_go_to_lowest_index():
    assert Router("least-load")(view(in_flight=[3, 1, 1, 2])) == 1


def test_power_of_two_samples_distinct_pair_and_takes_lower_load():
    p2 = Router("power-of-two")
    # u = (0.1, 0.5): i1 = floor(0.4) = 0, i2 = (0 + 1 + floor(1.5)) % 4 = 2
    assert p2(view(queued=[500, 0, 100, 0]), u=[0.1, 0.5, 0, 0]) == 2
    assert p2(view(queued=[50, 0, 100, 0]), u=[0.1, 0.5, 0, 0]) == 0
    assert p2(view(queued=[100, 0, 100, 0]), u=[0.1, 0.5, 0, 0]) == 0      # tie -> first sample
    # u = (0.9, 0.99): i1 = 3, i2 = (3 + 1 + 2) % 4 = 2 -- never the same instance as i1
    assert p2(view(queued=[0, 0, 7, 5]), u=[0.9, 0.99, 0, 0]) == 3


def test_power_of_two_never_picks_the_same_instance_twice():
    # with the first sample loaded and every other instance idle, the pick is always the second sample
    p2 = Router("power-of-two", signal="in_flight")
    for u1 in np.linspace(0, 0.999, 40):
        for u2 in (0.0, 0.5, 0.999):
            i1 = int(u1 * 4)
            v = view(in_flight=[1 if k == i1 else 0 for k in range(4)])
            assert p2(v, u=[u1, u2, 0, 0]) != i1


# ------------------------------------------------------------------ SMETRIC
def test_smetric_first_turn_balances_cost_times_in_flight():
    # cost of 1000 new tokens: 1000 + 1000*(1000-500)/8000 = 1062.5
    # loads [1062.5, 1162.5, 1062.5, 1062.5] x (in_flight+1) [4, 1, 1, 2] -> [4250, 1162.5, 1062.5, 2125]
    # a 900-token hit on instance 0 cuts its cost to attn(100) = 111.875, but 12 in flight make it
    # 111.875 x 13 = 1454 > 1062.5: a first turn is balanced, not attracted by the cache
    v = view(queued_attn=[0, 100, 0, 0], in_flight=[12, 0, 0, 1], hbm=[900, 0, 0, 0])
    assert Router("smetric")(v, request(1000, turn=0)) == 2


def test_smetric_balance_ties_rotate_round_robin():
    sm = Router("smetric")
    assert [sm(view(), request(turn=0)) for _ in range(5)] == [0, 1, 2, 3, 0]


def test_smetric_follow_up_sticks_to_longest_local_hit():
    # instance 1 holds 800 of 1000 (>= 0.5 x history 1000); it is the busiest, but within the SLO:
    # load = 0 + attn(200, 1000) = 222.5 <= budget 1.0 * 10000 * (1 + 0.0625) = 10625
    v = view(hbm=[0, 600, 0, 0], dram=[0, 200, 0, 0], in_flight=[0, 9, 0, 0])
    assert Router("smetric")(v, request(1000, turn=3, history=1000)) == 1


def test_smetric_global_hits_do_not_make_a_sticky_target():
    # only instance-local tiers count as locality; a global hit alone (equal everywhere) does not
    v = view(glob=[800, 800, 800, 800], in_flight=[2, 0, 1, 1])
    assert Router("smetric")(v, request(1000, turn=2, history=900)) == 1


@pytest.mark.parametrize("hit, expect", [(500, 1), (499, 2)])
def test_smetric_eviction_guard_edge(hit, expect):
    # stay iff hit >= hit_ratio (0.5) x history (1000); otherwise route like a new session:
    # balance: loads (attn, in_flight+1): inst1 attn(501)=501+501*749.5/8000=547.9, x 6 = 3287 > inst2 1062.5 x 1
    v = view(hbm=[0, hit, 0, 0], in_flight=[3, 5, 0, 2])
    assert Router("smetric")(v, request(1000, turn=1, history=1000)) == expect


def test_smetric_hit_ratio_is_a_parameter():
    v = view(hbm=[0, 499, 0, 0], in_flight=[3, 5, 0, 2])
    assert Router("smetric", hit_ratio=0.4)(v, request(1000, turn=1, history=1000)) == 1


def test_smetric_no_local_hit_means_no_stickiness():
    # history unknown (0) and no hit anywhere: balance, not "argmax of zeros" = instance 0
    v = view(in_flight=[2, 1, 0, 1])
    assert Router("smetric")(v, request(1000, turn=4, history=0)) == 2


@pytest.mark.parametrize("queued, slack, expect", [
    (10625.0, 1.0, 1),   # load = budget exactly -> stays
    (10626.0, 1.0, 2),   # just over -> migrates to the balance choice
    (10626.0, 2.0, 1),   # SLACK 2 doubles the budget
])
def test_smetric_slo_guard_edge(queued, slack, expect):
    # instance 1 holds the full prompt: its load is its queue alone; budget = slack * 10000 * 1.0625
    v = view(hbm=[0, 1000, 0, 0], queued_attn=[5000, queued, 0, 3000], in_flight=[1, 1, 1, 1])
    assert Router("smetric", slack=slack)(v, request(1000, turn=2, history=1000)) == expect


def test_smetric_slo_guard_sticks_when_nobody_meets_the_slo():
    v = view(hbm=[0, 1000, 0, 0], queued_attn=[20000, 30000, 20000, 20000])
    assert Router("smetric")(v, request(1000, turn=2, history=1000)) == 1


@pytest.mark.parametrize("queued_prev, expect", [(300.0, 1), (301.0, 2)])
def test_smetric_overload_guard_edge(queued_prev, expect):
    # tokens cost model; mean queue = (100 + q + 100 + 100) / 4; stay iff q <= 2 x mean
    # q = 300: mean 150 -> 300 <= 300 stays; q = 301: mean 150.25 -> 301 > 300.5 migrates, and the
    # balance (queued + new) x (in_flight + 1) = [2200, 1806, 1100, 2200] picks instance 2
    v = view(hbm=[0, 1000, 0, 0], queued=[100, queued_prev, 100, 100], in_flight=[1, 5, 0, 1])
    sm = Router("smetric", guard="overload", cost="tokens")
    assert sm(v, request(1000, turn=1, history=1000)) == expect


def test_smetric_without_guard_always_sticks():
    v = view(hbm=[0, 1000, 0, 0], queued_attn=[0, 1e9, 0, 0], in_flight=[0, 500, 0, 0])
    assert Router("smetric", guard="none")(v, request(1000, turn=1, history=1000)) == 1
    assert Router("smetric")(v, request(1000, turn=1, history=1000)) == 0


def test_smetric_cost_models_disagree_on_long_context_queues():
    # instance 0 queues 1000 short-context tokens (attention units 1000), instance 1 queues 800 tokens
    # of long context (attention units 3000): tokens prefers 1, attention prefers 0
    v = view(queued=[1000, 800], queued_attn=[1000, 3000], n=2)
    assert Router("smetric", cost="tokens")(v, request(1000)) == 1
    assert Router("smetric", cost="attention")(v, request(1000)) == 0


# ------------------------------------------------------------------ LMetric
def test_lmetric_prefill_tokens_times_batch_plus_one():
    # P = queued + L - hit = [1000, 400, 1500, 1000]; BS = running + waiting = [2, 3, 0, 1]
    # score = P x (BS + 1) = [3000, 1600, 1500, 2000]
    v = view(queued=[0, 0, 500, 0], hbm=[0, 600, 0, 0], running=[2, 2, 0, 1], waiting=[0, 1, 0, 0])
    assert Router("lmetric")(v, request(1000)) == 2


def test_lmetric_ties_by_batch_size_then_index():
    # P = [1000, 500, 1000]; BS = [1, 3, 1] -> scores 2000, 2000, 2000: smaller BS wins, then index
    v = view(hbm=[0, 500, 0], running=[1, 3, 1], n=3)
    assert Router("lmetric")(v, request(1000)) == 0


def test_lmetric_ignores_the_global_store():
    v = view(glob=[0, 900, 0], in_flight=[0, 0, 0], running=[1, 1, 0], n=3)
    assert Router("lmetric")(v, request(1000)) == 2


# ------------------------------------------------------------------ BAILIAN
def test_bailian_samples_proportional_to_linear_score():
    # hit% [0, .5, 1] -> norm [0, .5, 1]; BS [0, 2, 4] -> 1 - norm = [1, .5, 0]; tokens [0, 100, 50] -> [1, 0, .5]
    # score = .7 hit + .15 bs + .15 tok = [0.3, 0.425, 0.775]; CDF [0.2, 0.4833, 1]
    v = view(hbm=[0, 500, 1000], running=[0, 2, 3], waiting=[0, 0, 1], context=[0, 100, 50], n=3)
    b = Router("bailian")
    assert [b(v, u=u) for u in (0.0, 0.19, 0.21, 0.48, 0.49, 0.999)] == [0, 0, 1, 1, 2, 2]


def test_bailian_uniform_when_scores_are_equal():
    b = Router("bailian")
    assert [b(view(), u=u) for u in (0.1, 0.3, 0.6, 0.9)] == [0, 1, 2, 3]


def test_bailian_weights_are_parameters():
    v = view(hbm=[0, 1000], running=[0, 5], n=2)
    # alpha=0, beta=1: score = 1 - norm(BS) = [1, 0]: instance 1 can never be drawn
    assert Router("bailian", alpha=0.0, beta=1.0, gamma=0.0)(v, u=0.999) == 0


# ------------------------------------------------------------------ Dynamo
def test_dynamo_cost_prefill_blocks_plus_decode_blocks():
    # B = 16, L = 1600. cost = (Q + L - hbm - .75 dram)/16 + (ctx + L - hbm)/16
    # inst0: 100 + 100 = 200; inst1 (full hit, ctx 3200): 0 + 200 = 200; inst2: (800+800)/16 + 800/16 = 150
    # inst3 (dram 800): (1600 - 600)/16 + 1600/16 = 162.5
    v = view(hbm=[0, 1600, 800, 0], dram=[0, 0, 0, 800], queued=[0, 0, 800, 0], context=[0, 3200, 0, 0])
    assert Router("dynamo")(v, request(1600)) == 2


def test_dynamo_overlap_weight_scales_the_prefill_term():
    # w = 4: [400+100, 0+200, 400+50, 250+100] -> the full hit (instance 1) wins
    v = view(hbm=[0, 1600, 800, 0], queued=[0, 0, 800, 0], context=[0, 3200, 0, 0])
    assert Router("dynamo", overlap_weight=4.0)(v, request(1600)) == 1


@pytest.mark.parametrize("host_weight, expect", [(0.75, 0), (0.5, 1), (0.0, 1)])
def test_dynamo_host_hits_are_credited_by_host_weight(host_weight, expect):
    # inst0 (800 in DRAM): (1600 - w 800)/16 + 1600/16 = 162.5 (w=.75), 175 (w=.5), 200 (w=0)
    # inst1 (800 in HBM, 1100 context): 800/16 + (1100 + 800)/16 = 168.75
    v = view(n=2, dram=[800, 0], hbm=[0, 800], context=[0, 1100])
    assert Router("dynamo", host_weight=host_weight)(v, request(1600)) == expect


def test_dynamo_ties_by_smaller_cache_then_random():
    v = view(n=3, kv_used=[10, 5, 5])
    assert Router("dynamo")(v, request(1600), u=0.9) in (1, 2)
    assert Router("dynamo")(v, request(1600), u=0.2) == 1
    assert Router("dynamo")(v, request(1600), u=0.7) == 2


def test_dynamo_temperature_softmax_over_normalised_cost():
    # costs [0+..]: make inst costs 100, 150, 200 blocks -> normalised [0, .5, 1], T = 1:
    # weights [1, e^-.5, e^-1] = [1, .6065, .3679] -> CDF [.5065, .8137, 1]
    v = view(n=3, context=[0, 800, 1600])
    d = Router("dynamo", temperature=1.0)
    assert [d(v, request(800), u=u) for u in (0.5, 0.51, 0.81, 0.82)] == [0, 1, 1, 2]


# ------------------------------------------------------------------ SGLang cache_aware
@pytest.mark.parametrize("loads, expect", [
    ([100, 30, 30, 31], 1),   # 70 > 64 and 100 > 45: imbalanced -> least load, first index
    ([94, 30, 30, 31], 3),    # diff 64 is not > 64: cache branch -> matched instance 3
    ([300, 200, 200, 201], 3),  # diff 100 but 300 is not > 1.5 x 200: cache branch
])
def test_sglang_imbalance_thresholds(loads, expect):
    v = view(in_flight=loads, hbm=[0, 0, 0, 900])
    assert Router("sglang", cache_view="engine")(v, request(1000)) == expect


@pytest.mark.parametrize("hit, expect", [(301, 3), (300, 1)])
def test_sglang_cache_threshold_edge(hit, expect):
    # rate must be > 0.3; otherwise least load (instance 1)
    v = view(in_flight=[2, 1, 2, 5], hbm=[0, 0, 0, hit])
    assert Router("sglang", cache_view="engine")(v, request(1000)) == expect


def test_sglang_router_tree_remembers_routed_prompts_not_engine_state():
    sg = Router("sglang")
    blocks = np.arange(100, 163)
    # nothing routed yet: rate 0 -> least load
    assert sg(view(in_flight=[2, 1, 1, 3]), request(1000), blocks) == 1
    # the same prompt again: the router's tree says instance 1 (the engine view says no hit anywhere)
    assert sg(view(in_flight=[0, 5, 0, 0]), request(1000), blocks) == 1
    # a prompt sharing only its first 12 of 63 blocks (rate 0.19) -> least load
    other = np.concatenate([blocks[:12], np.arange(900, 951)])
    assert sg(view(in_flight=[0, 5, 0, 0]), request(1000), other) == 0
    # sharing 32 blocks (rate 0.51): the deepest match is instance 1 (instance 0 also holds 12 blocks)
    third = np.concatenate([blocks[:32], np.arange(2000, 2031)])
    assert sg(view(in_flight=[0, 5, 0, 0]), request(1000), third) == 1


def test_sglang_equal_deepest_matches_pick_randomly():
    v = view(in_flight=[0, 0, 0, 0], hbm=[0, 800, 800, 0])
    sg = Router("sglang", cache_view="engine")
    assert sg(v, request(1000), u=0.2) == 1 and sg(v, request(1000), u=0.8) == 2


# ------------------------------------------------------------------ llm-d
def test_llmd_default_weights_precise_prefix():
    # prefix 3 x min(1, (hbm + .8 dram)/L) = [1.5, 2.4, 0]; queue 2 x (4 - q)/4 = [1, 0, 2];
    # kv 2 x (1 - used/cap) = [1, 2, 2] -> [3.5, 4.4, 4.0]
    v = view(n=3, hbm=[500, 0, 0], dram=[0, 1000, 0], waiting=[2, 4, 0], kv_used=[500, 0, 0])
    assert Router("llm-d", prefix="precise")(v, request(1000)) == 1
    # a fuller KV on instance 1 (kv score 2 x 0.5 = 1) tips it to instance 2: [3.5, 3.4, 4.0]
    v[1, V_KV_USED] = 500
    assert Router("llm-d", prefix="precise")(v, request(1000)) == 2


def test_llmd_load_aware_scorer():
    # 0.5 if nothing waits, else 0.5 (1 - min(q, 128)/128): waiting [64, 0, 200] -> [0.25, 0.5, 0]
    v = view(n=3, waiting=[64, 0, 200])
    la = Router("llm-d", w_prefix=0, w_queue=0, w_kv=0, w_load_aware=1)
    assert la(v, request(1000)) == 1


def test_llmd_ties_are_random():
    la = Router("llm-d", w_prefix=0, w_queue=1, w_kv=0)   # queue score [0, 1, 1, 1]
    v = view(waiting=[3, 1, 1, 1])
    assert [la(v, request(1000), u=u) for u in (0.1, 0.5, 0.9)] == [1, 2, 3]


def test_llmd_estimate_index_matches_at_most_256_blocks():
    from smetric.policies import llmd
    r = Router("llm-d")
    first = np.arange(300)
    assert r(view(waiting=[1, 1, 0, 1]), request(300 * 16), first) == 2
    # a prompt equal to the first over 256 blocks and different afterwards scores a full prefix match
    second = np.concatenate([first[:256], np.arange(5000, 5100)])
    s = llmd.scores(view(), request(356 * 16), second, r.params, r.state)
    assert s[2] == pytest.approx(3.0 + 2.0 + 2.0) and s[0] == pytest.approx(4.0)
    # uncapped, the match would be 256/356 of the prompt
    r2 = Router("llm-d", max_blocks=0)
    r2(view(waiting=[1, 1, 0, 1]), request(300 * 16), first)
    s2 = llmd.scores(view(), request(356 * 16), second, r2.params, r2.state)
    assert s2[2] == pytest.approx(3.0 * 256 / 356 + 4.0)


def test_llmd_dram_weight_half_is_the_tiered_gpu_and_cpu_scorers():
    # GPU 1 x hbm/L + CPU 1 x (hbm + dram)/L (write-through) = 2 x (hbm + 0.5 dram)/L:
    # instance 0 holds 600 in HBM (1.2), instance 1 1000 in DRAM only (1.0), instance 2 nothing; equal loads
    v = view(n=3, hbm=[600, 0, 0], dram=[0, 1000, 0])
    tiered = Router("llm-d", prefix="precise", w_prefix=2, w_queue=1, w_kv=1, dram_weight=0.5)
    assert tiered(v, request(1000)) == 0
    # at the precise scorer's own DRAM weight 0.8, the DRAM copy outscores the HBM one (1.6 > 1.2)
    assert Router("llm-d", prefix="precise", w_prefix=2, w_queue=1, w_kv=1)(v, request(1000)) == 1


def test_llmd_no_hit_lru_spreads_cold_requests_in_lru_order():
    # cold requests (no prefix anywhere) on an idle cluster: the scorer alone decides
    r = Router("llm-d", prefix="precise", w_prefix=0, w_queue=0, w_kv=0, w_no_hit_lru=1)
    # never-used instances score 1 - rank/3 in index order: [1, 2/3, 1/3, 0] -> 0, then 1, 2, 3
    assert [r(view(), request(1000), u=0.9) for _ in range(4)] == [0, 1, 2, 3]
    # all used, 0 the least recent: LRU ranks [0, 1, 2, 3] -> 0 again; then 1 (0 is now the most recent)
    assert [r(view(), request(1000), u=0.9) for _ in range(2)] == [0, 1]


def test_llmd_no_hit_lru_is_neutral_when_any_instance_has_a_match():
    r = Router("llm-d", prefix="precise", w_prefix=0, w_queue=1, w_kv=0, w_no_hit_lru=5)
    r(view(), request(1000))                                   # cold: instance 0, now the most recent
    # a match on instance 3: 0.5 everywhere; the queue decides (instance 0 is the shortest)
    assert r(view(waiting=[0, 1, 1, 1], hbm=[0, 0, 0, 16]), request(1000)) == 0
    # cold again: instance 0 (most recent) scores 5 x 0 + 1 and loses to 1 (5 x 1 + 0)
    assert r(view(waiting=[0, 1, 1, 1]), request(1000)) == 1
    # with no_hit_lru_on=all the matched request is scored by LRU too
    a = Router("llm-d", prefix="precise", w_prefix=0, w_queue=1, w_kv=0, w_no_hit_lru=5, no_hit_lru_on="all")
    a(view(), request(1000))
    assert a(view(waiting=[0, 1, 1, 1], hbm=[0, 0, 0, 16]), request(1000)) == 1


def test_llmd_no_hit_lru_keeps_the_estimate_index_intact():
    # the LRU stamps live after the index: a prompt routed by the estimate prefix is still matched afterwards
    r = Router("llm-d", w_no_hit_lru=2)
    first = np.arange(40)
    # cold: LRU 2 x [1, 2/3, 1/3, 0] + queue 2 x [0, 0, 1, 0] + kv 2 -> instance 2
    assert r(view(waiting=[1, 1, 0, 1]), request(640), first) == 2
    from smetric.policies import llmd
    s = llmd.scores(view(), request(640), first, r.params, r.state)
    assert s[2] == pytest.approx(3.0 + 2.0 + 2.0 + 1.0) and s[0] == pytest.approx(2.0 + 2.0 + 1.0)


# ------------------------------------------------------------------ vLLM production-stack
def test_vllm_prefix_random_among_longest_and_no_load_check():
    vp = Router("vllm-prefix")
    blocks = np.arange(40)
    assert vp(view(), request(640), blocks, u=0.6) == 2        # no match: uniform over all -> 2
    busy = view(in_flight=[0, 0, 99, 0], queued=[0, 0, 1e6, 0])
    assert vp(busy, request(640), blocks, u=0.1) == 2          # longest match wins whatever the load
    half = np.concatenate([blocks[:20], np.arange(700, 720)])
    assert vp(busy, request(640), half, u=0.9) == 2            # a partial match is still the longest


def test_vllm_prefix_engine_view():
    v = view(hbm=[0, 300, 300, 0])
    vp = Router("vllm-prefix", cache_view="engine")
    assert vp(v, u=0.2) == 1 and vp(v, u=0.7) == 2


def test_vllm_session_is_sticky_and_ignores_load():
    vs = Router("vllm-session")
    first = [vs(view(), request(session=s)) for s in range(200)]
    again = [vs(view(in_flight=np.arange(4) * 100), request(session=s)) for s in range(200)]
    assert first == again
    counts = np.bincount(first, minlength=4)
    assert counts.min() > 20                     # every instance owns part of the ring


def test_vllm_session_ring_is_consistent_when_an_instance_is_added():
    ctx5 = PolicyContext(**{**CTX.__dict__, "n_instances": 5})
    four, five = Router("vllm-session"), Router("vllm-session", ctx=ctx5)
    moved = [(a, b) for s in range(500)
             for a, b in [(four(view(4), request(session=s)), five(view(5), request(session=s)))] if a != b]
    assert all(b == 4 for _, b in moved)          # sessions move only to the new instance
    assert 0.1 < len(moved) / 500 < 0.35          # about 1/5 of them


def test_vllm_session_without_session_id_takes_lowest_windowed_qps():
    vs = Router("vllm-session", ctx=PolicyContext(**{**CTX.__dict__, "n_instances": 3}))
    v = view(3)
    def no_session(t):
        return request(session=-1, now=t)
    assert [vs(v, no_session(t)) for t in (0.0, 1.0, 2.0)] == [0, 1, 2]
    owner = vs(v, request(session=7, now=3.0))
    assert vs(v, no_session(4.0)) != owner        # the session request counted against its owner
    assert vs(v, no_session(200.0)) == 0          # past the 60 s window every count is 0 again


# ------------------------------------------------------------------ AIBrix
def test_aibrix_best_match_under_mean_plus_sigma():
    # running [10, 2, 3, 4]: spread 8 is not > 8; mean 4.75, std 3.11 -> limit 7.86: instance 0 is excluded
    # matches [1000, 500, 500, 0]: best eligible match 500 on 1 and 2, fewer running -> 1
    v = view(in_flight=[10, 2, 3, 4], hbm=[1000, 500, 500, 0])
    assert Router("aibrix", cache_view="engine")(v, request(1000)) == 1
    assert Router("aibrix", cache_view="engine", sigma_factor=2.0)(v, request(1000)) == 0


@pytest.mark.parametrize("sigma, expect", [(1.0, 1), (0.99, 0)])
def test_aibrix_sigma_limit_edge(sigma, expect):
    # running [0, 2]: mean 1, std 1 -> limit 1 + sigma; the only match (instance 1) runs 2
    v = view(n=2, in_flight=[0, 2], hbm=[0, 500])
    assert Router("aibrix", cache_view="engine", sigma_factor=sigma)(v, request(1000)) == expect


def test_aibrix_imbalance_restricts_to_least_running():
    # spread 9 > 8: candidates {1, 3}; neither has a match -> least-request, random among {1, 3}
    v = view(in_flight=[11, 2, 3, 2], hbm=[1000, 0, 500, 0])
    ab = Router("aibrix", cache_view="engine")
    assert ab(v, request(1000), u=0.2) == 1 and ab(v, request(1000), u=0.8) == 3


def test_aibrix_router_index_expires_after_ttl():
    ab = Router("aibrix", index_ttl=100.0)
    blocks = np.arange(63)
    assert ab(view(in_flight=[1, 1, 0, 1]), request(1000, now=0.0), blocks) == 2
    assert ab(view(), request(1000, now=50.0), blocks, u=0.0) == 2      # remembered (refreshed at 50 s)
    assert ab(view(), request(1000, now=151.0), blocks, u=0.0) == 0     # forgotten: least-request, u = 0


# ------------------------------------------------------------------ Preble
def test_preble_exploits_dominant_prefix_and_explores_otherwise():
    # cost = window + in_flight x 45 x 0.02 + req_cost
    v = view(hbm=[600, 0, 0, 0], in_flight=[2, 0, 1, 1], req_cost=[0.1, 0.5, 0.5, 0.5])
    # 600 > 400: exploit the holder (cost 1.9 vs 0.5) -- before warm-up no rebalancing
    assert Router("preble")(v, request(1000)) == 0
    v[0, V_HIT_HBM] = 400   # 400 < 600: explore -> argmin cost: [1.9, 0.5, 1.4, 1.4]
    assert Router("preble")(v, request(1000)) == 1


def test_preble_rebalances_the_heaviest_holder_after_warmup():
    # load = in_flight x 0.9 = [2.7, 0.9, 1.8, 1.8]; the holder (0) is the heaviest and 2.7 > 1.5 x 0.9:
    # the request goes to the cheapest cost = load + req_cost = [2.8, 1.4, 2.3, 2.3] -> 1
    v = view(hbm=[600, 0, 0, 0], in_flight=[3, 1, 2, 2], req_cost=[0.1, 0.5, 0.5, 0.5])
    assert Router("preble")(v, request(1000)) == 0                  # before warm-up: exploit
    assert Router("preble", warmup=0)(v, request(1000)) == 1
    assert Router("preble", warmup=0, rebalance=4.0)(v, request(1000)) == 0   # 2.7 < 4 x 0.9
    v[2, V_IN_FLIGHT] = 4                                            # the holder is no longer the heaviest
    assert Router("preble", warmup=0)(v, request(1000)) == 0


def test_preble_windowed_cost_remembers_routed_misses():
    pr = Router("preble")
    v = view(req_cost=[2.0, 2.0, 2.0, 2.0])
    assert pr(v, request(1000, now=0.0)) == 0      # all equal -> 0; its window now holds 2 s
    assert pr(v, request(1000, now=1.0)) == 1
    assert pr(v, request(1000, now=2.0)) == 2
    assert pr(v, request(1000, now=3.0)) == 3
    assert pr(v, request(1000, now=4.0)) == 0
    assert pr(v, request(1000, now=500.0)) == 0    # the 3-minute window has emptied


# ------------------------------------------------------------------ Mooncake
def test_mooncake_argmin_estimated_ttft():
    # L = 1000, best = 800 (inst0). T_prefill(L, h) = attn(L - h)/10000; transfer 2.5e5 tok/s.
    # inst0 (pre 800, queue 30 units): (30 + attn(200))/1e4 = 0.02525
    # inst1 (pre 0): 800/2.5e5 + attn(200)/1e4 = 0.0032 + 0.02225 = 0.02545
    # inst2 (pre 400, 800/400 = 2 >= 1.5): 400/2.5e5 + 0.02225 = 0.02385
    v = view(n=3, hbm=[800, 0, 400], queued_attn=[30, 0, 0])
    assert Router("mooncake")(v, request(1000)) == 2
    # theta 2.5: inst2 keeps its own 400 -> attn(600)/1e4 = 0.06525; inst0 0.02525 < inst1 0.02545
    assert Router("mooncake", theta=2.5)(v, request(1000)) == 0


def test_mooncake_global_store_is_a_transfer_source():
    # only the global store holds the prefix; every instance pulls it at the same transfer cost:
    # the least queued wins
    v = view(n=3, glob=[900, 900, 900], queued_attn=[50, 10, 30])
    assert Router("mooncake")(v, request(1000)) == 1


# ------------------------------------------------------------------ affinity
def test_session_sticky_pins_sessions_at_first_request():
    ss = Router("session-sticky")
    assert ss(view(in_flight=[3, 1, 2, 1]), request(session=5)) == 1
    assert ss(view(in_flight=[0, 99, 0, 0]), request(session=5, turn=1)) == 1
    assert ss(view(in_flight=[0, 99, 0, 0]), request(session=6)) == 0
    # a follow-up whose first turn was never seen is placed like a first turn
    assert ss(view(in_flight=[4, 4, 4, 0]), request(session=7, turn=3)) == 3


def test_cache_affinity_max_hit_then_least_in_flight():
    ca = Router("cache-affinity")
    assert ca(view(hbm=[100, 500, 400, 0], dram=[0, 0, 100, 0], in_flight=[0, 5, 3, 0])) == 2
    assert ca(view(in_flight=[2, 1, 1, 3])) == 1


def test_session_sticky_rejects_session_index_outside_the_map():
    with pytest.raises(ValueError, match="dense session indices below"):
        Router("session-sticky")(view(), request(session=CTX.n_sessions))


def test_mooncake_ties_are_random():
    v = view(n=3, hbm=[500, 500, 0])     # instances 0 and 1 tie on the best estimate
    mc = Router("mooncake")
    assert [mc(v, request(1000), u=u) for u in (0.2, 0.8)] == [0, 1]


# ------------------------------------------------------------------------------------------ deployed-router options
def test_lmetric_router_view_credits_where_the_prompt_was_sent_not_engine_hits():
    blocks = np.arange(63, dtype=np.int64)  # a 1000-token prompt in 16-token blocks
    for cache_view in ("engine", "router"):
        lm = Router("lmetric", cache_view=cache_view)
        assert lm(view(), request(1000), blocks) == 0  # idle: all scores 1000 x 1, ties to the lowest index
        # instance 0 now has 300 queued tokens and one request: engine view (no hits reported) scores it
        # (300 + 1000) x 2 = 2600 > 1000; the router remembers the prompt there: (300 + 0) x 2 = 600 < 1000
        busy = view(queued=[300, 0, 0, 0], waiting=[1, 0, 0, 0])
        assert lm(busy, request(1000), blocks) == (0 if cache_view == "router" else 1)
    # the router view ignores an engine hit it did not cause (it never routed there): scores tie, lowest index
    assert Router("lmetric", cache_view="router")(view(hbm=[0, 0, 1000, 0]), request(1000), blocks) == 0
    assert Router("lmetric")(view(hbm=[0, 0, 1000, 0]), request(1000), blocks) == 2


def test_lmetric_router_index_forgets_after_its_ttl():
    blocks = np.arange(63, dtype=np.int64)
    lm = Router("lmetric", cache_view="router", index_ttl=10.0)
    assert lm(view(), request(1000, now=0.0), blocks) == 0
    busy = view(queued=[300, 0, 0, 0], waiting=[1, 0, 0, 0])
    assert lm(busy, request(1000, now=5.0), blocks) == 0    # remembered (and refreshed at 5 s)
    assert lm(busy, request(1000, now=16.0), blocks) == 1   # 11 s since: forgotten, 1300 x 2 > 1000


def test_smetric_router_view_sticks_to_where_the_session_was_sent():
    first, follow = np.arange(63, dtype=np.int64), np.arange(94, dtype=np.int64)  # 1000 then 1500 tokens
    for cache_view, expect in (("engine", 1), ("router", 0)):
        sm = Router("smetric", cache_view=cache_view)
        assert sm(view(), request(1000, turn=0), first) == 0   # balance tie, round-robin pointer -> 1
        # the engine reports no hit (say the KV was evicted): the engine view balances (pointer: 1); the
        # router still matches 63 blocks = 1008 tokens on 0 >= 0.5 x 1000 history, load 492 new tokens
        # (569 attention-tokens) <= 10000 tok/s x 1.09 s: stick
        assert sm(view(), request(1500, turn=1, history=1000), follow) == expect


def _drain_run(router, k_max):
    """Follow-ups fully cached on instance 0 (cost 0); instance 0 drains 2000 attention-tokens per 0.1 s,
    instance 1 holds 5000 - 500 k. Returns the choices at arrivals k = 0..k_max (t = 0.1 k)."""
    out = []
    for k in range(k_max + 1):
        v = view(n=2, hbm=[1000, 0], queued_attn=[30000 - 2000 * k, 5000 - 500 * k])
        out.append(router(v, request(1000, turn=1, history=1000, now=0.1 * k)))
    return out


def test_smetric_online_rate_is_measured_per_instance_from_the_queue_drain():
    # fixed rate 10000/s: budget 10000 x 1.0625 = 10625 < instance 0's queue (>= 12000), and instance 1 meets
    # it (<= 5000 + 1062.5), so every follow-up migrates to 1 (balance: 1062.5 + queue < queue of 0)
    assert _drain_run(Router("smetric"), 9) == [1] * 10
    # online: instance 0's samples are (q_prev - q_now) / 0.1 s = 20000/s from k = 1; with 8 of them (k = 8)
    # its budget is 20000 x 1.0625 = 21250 >= 14000: stick. Before, the fixed constant applies.
    assert _drain_run(Router("smetric", rate="online"), 9) == [1] * 8 + [0, 0]
    assert _drain_run(Router("smetric", rate="online", rate_min_samples=9), 9) == [1] * 9 + [0]
    # a quantile below the sample values changes nothing here (all samples equal 20000/s)
    assert _drain_run(Router("smetric", rate="online", rate_quantile=0.1), 9) == [1] * 8 + [0, 0]


def test_smetric_online_rate_skips_intervals_where_the_queue_emptied():
    sm = Router("smetric", rate="online", rate_min_samples=1)
    # instance 0's queue goes 2000 -> 0 in 0.1 s: it may have idled, so no 20000/s sample is taken; the next
    # arrival's 12000 is new work (negative drain): still no sample, the fixed budget 10625 < 12000 applies
    choices = [sm(view(n=2, hbm=[1000, 0], queued_attn=[q, 2000]), request(1000, turn=1, history=1000, now=0.1 * k))
               for k, q in enumerate([2000, 0, 12000])]
    assert choices == [0, 0, 1]
    # a busy interval instead (14000 -> 12000: the queue never emptied) gives a sample
    sm = Router("smetric", rate="online", rate_min_samples=1)
    choices = [sm(view(n=2, hbm=[1000, 0], queued_attn=[q, 2000]), request(1000, turn=1, history=1000, now=0.1 * k))
               for k, q in enumerate([14000, 12000])]
    assert choices == [1, 0]  # k = 1: one sample of 20000/s -> budget 21250 >= 12000


@pytest.mark.parametrize("name, overrides, message", [
    ("smetric", {"rate_quantile": 0.0}, "rate_quantile"),
    ("smetric", {"rate_min_samples": 65}, "rate_min_samples"),
    ("smetric", {"rate_min_samples": 2.5}, "rate_min_samples"),
    ("smetric", {"index_ttl": -1}, "index_ttl"),
    ("smetric", {"rate": "ewma"}, "rate must be one of"),
    ("lmetric", {"index_ttl": -5}, "index_ttl"),
    ("lmetric", {"cache_view": "tree"}, "cache_view must be one of"),
])
def test_deployed_router_options_are_validated(name, overrides, message):
    with pytest.raises(ValueError, match=message):
        get(name).build(CTX, overrides)
