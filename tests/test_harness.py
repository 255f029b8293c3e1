"""Workload generators of the published harnesses against the harnesses' own counts, lengths and order."""

import math
from collections import Counter

import numpy as np
import pytest

import smetric
from smetric.cluster.config import ClusterConfig
from smetric.workload.harness import KINDS, HarnessWorkload, harness_workload

LLM_D = dict(num_groups=150, num_prompts_per_group=5, system_prompt_len=6000, question_len=1200, output_len=1000)


def prompts(w):
    """Each request's block ids as a tuple."""
    return [tuple(w.blocks(i)) for i in range(len(w))]


def test_shared_prefix_llm_d_counts_lengths_and_fixed_prompts():
    ladder = [(15, 50), (3, 20), (10, 20.5)]
    hw = harness_workload("shared-prefix", LLM_D, {"arrival": "poisson",
                                                   "stages": [{"rate": r, "duration": d} for r, d in ladder]}, 0)
    w = hw.workload
    assert not hw.closed
    assert np.bincount(hw.stage).tolist() == [750, 60, 205]        # int(rate * duration) per stage
    assert set(w.input_len) == {7200} and set(w.output_len) == {1000}
    p = prompts(w)
    assert len(set(p)) == 750                                      # a fixed set of 150 x 5 prompts
    assert len({x[:375] for x in p}) == 150                        # 6000 / 16 system blocks shared per group
    assert len({x[:376] for x in p}) == 750                        # the first question block differs
    # the data index restarts every stage: stage 1 sends the same prompts in the same order as stage 0
    s1 = np.flatnonzero(hw.stage == 1)
    assert [p[i] for i in s1] == p[:60]
    assert np.all(np.diff(w.arrival) >= 0) and w.n_sessions == len(w)


def test_blis_as_run_constant_timer_fills_each_stage():
    params = dict(num_groups=10, num_prompts_per_group=10, system_prompt_len=100, question_len=447, output_len=248)
    stages = [{"rate": 8, "duration": 600}, {"rate": 20, "duration": 600}]
    hw = harness_workload("shared-prefix", params, {"arrival": "constant", "stages": stages}, 3)
    w = hw.workload
    assert np.bincount(hw.stage).tolist() == [4800, 12000]
    assert set(w.input_len) == {547} and len(set(prompts(w))) == 100
    assert len(set(w.block_ids[w.block_offsets[:-1] + 5])) == 10   # 6 full system blocks shared by each group
    for k, start in enumerate([0.0, 600.0]):
        t = w.arrival[hw.stage == k] - start
        assert t[0] > 0 and t[-1] == pytest.approx(600.0)         # gaps scaled to sum to the duration
        gaps = np.diff(t)
        assert 0.9 < gaps.std() / gaps.mean() < 1.1               # exponential gaps: CV ~ 1


def test_inference_perf_poisson_timer_rate():
    hw = harness_workload("shared-prefix", dict(LLM_D, num_groups=2), {"arrival": "poisson",
                                                                       "stages": [{"rate": 40, "duration": 100}]}, 1)
    t = hw.workload.arrival
    assert len(t) == 4000
    assert abs(t[-1] - 100.0) < 4 * math.sqrt(4000) / 40          # Poisson(rate) requests per one-second block


def test_sglang_generated_shared_prefix_defaults():
    hw = harness_workload("generated-shared-prefix", {}, {"arrival": "poisson", "stages": [{"rate": math.inf}]}, 0)
    w = hw.workload
    assert len(w) == 1024 and np.all(w.arrival == 0.0)
    assert set(w.input_len) == {2048 + 128} and set(w.output_len) == {256}
    p = prompts(w)
    assert len(set(p)) == 1024
    groups = [x[:128] for x in p]
    assert len(set(groups)) == 64 and all(groups.count(g) == 16 for g in set(groups))
    assert len(set(groups[:16])) > 1                              # shuffled, not sent group by group


def test_kubeai_conversations_counts_means_and_chains():
    hw = harness_workload("multi-turn-conversations", {"max_conversations": 800},
                          {"arrival": "concurrency", "stages": [{"concurrency": 800, "requests": 8000, "rate": 800}]},
                          12345)
    w = hw.workload
    assert hw.closed and len(w) == 8000
    p = prompts(w)
    assert len(set(p)) == 800 and p[:800] == p[800:1600]          # 800 pairs, shuffled once, cycled
    assert w.input_len.mean() == pytest.approx(832, rel=0.01)     # KubeAI's published means (1 % tolerance)
    assert w.output_len.mean() == pytest.approx(76, rel=0.01)
    assert w.input_len.max() <= 8192 and w.input_len.min() >= 4
    rows = np.arange(8000)
    assert np.array_equal(w.session, rows % 800) and np.array_equal(w.turn, rows // 800)
    assert np.array_equal(w.parent, np.where(rows >= 800, rows - 800, -1))
    assert np.all(np.diff(w.arrival) >= 0) and w.arrival[-1] < 20  # Poisson sends at 800/s
    # cumulative prompts of one thread share their common history: a shorter pair's full blocks prefix a longer one
    distinct = set(p)
    second = Counter(x[1] for x in distinct if len(x) > 2)     # block 1 is full in these prompts
    assert sum(c for c in second.values() if c > 1) > 400
    assert len({x[0] for x in distinct}) < 200                    # one first block per thread, not per pair


def test_prefix_repetition_counts_and_shared_prefixes():
    stages = [{"rate": 10, "duration": 100}, {"rate": 5, "requests": 1005}]
    hw = harness_workload("prefix-repetition", {"num_prefixes": 10}, {"arrival": "poisson", "stages": stages}, 0)
    w = hw.workload
    assert np.bincount(hw.stage).tolist() == [1000, 1000]        # num_prefixes * (n // num_prefixes)
    assert set(w.input_len) == {512} and set(w.output_len) == {128}
    p = prompts(w)
    assert len(set(p[:1000])) == 1000 and len({x[:16] for x in p}) == 10
    assert p[1000:] == p[:1000]                                   # same seed and size: the same dataset
    assert w.arrival[0] == 0.0 and w.arrival[1000] == pytest.approx(max(100.0, w.arrival[999]))


def test_multi_turn_shared_prefix_grows_context_and_chains_rounds():
    params = dict(num_groups=2, num_prompts_per_group=3, system_prompt_len=40, question_len=10, output_len=7,
                  enable_multi_turn_chat=True)
    stages = [{"rate": 3, "duration": 4}, {"rate": 2, "duration": 3}]
    hw = harness_workload("shared-prefix", params, {"arrival": "constant", "stages": stages}, 0)
    w = hw.workload
    assert hw.closed and len(w) == 18 and np.bincount(hw.stage).tolist() == [12, 6]
    r = w.turn
    assert np.array_equal(w.input_len, 40 + (r + 1) * 10 + r * 7)
    assert np.array_equal(w.session[:12], np.arange(12) % 6)
    assert np.array_equal(w.session[12:], np.arange(6))           # sessions persist across stages
    for i in np.flatnonzero(w.parent >= 0):
        par = w.parent[i]
        assert w.session[par] == w.session[i] and w.turn[i] == w.turn[par] + 1
        k = w.input_len[par] // w.block_size
        assert np.array_equal(w.blocks(i)[:k], w.blocks(par)[:k])  # the round extends the previous prompt
    assert len({tuple(w.blocks(i)[:2]) for i in range(6)}) == 2    # two system prompts (2 full blocks each)


def test_same_seed_same_workload_and_stage_starts_only_shift_times():
    load = {"arrival": "poisson", "stages": [{"rate": 5, "duration": 10}, {"rate": 8, "duration": 5}]}
    params = dict(LLM_D, num_groups=4, system_prompt_len=60)
    a = harness_workload("shared-prefix", params, load, 7)
    b = harness_workload("shared-prefix", params, load, 7)
    c = harness_workload("shared-prefix", params, load, 8)
    for name in ("arrival", "input_len", "block_ids", "block_offsets", "session", "parent"):
        assert np.array_equal(getattr(a.workload, name), getattr(b.workload, name))
    assert not np.array_equal(a.workload.arrival, c.workload.arrival)
    d = harness_workload("shared-prefix", params, load, 7, stage_starts=[100.0, 250.0])
    assert np.array_equal(a.workload.block_ids, d.workload.block_ids) and np.array_equal(a.stage, d.stage)
    s = a.stage == 1
    default_start = max(10.0, a.workload.arrival[~s][-1])
    assert np.allclose(d.workload.arrival[s] - 250.0, a.workload.arrival[s] - default_start)
    assert np.allclose(d.workload.arrival[~s] - 100.0, a.workload.arrival[~s])
    with pytest.raises(ValueError, match=r"stage_starts\[1\]"):
        harness_workload("shared-prefix", params, load, 7, stage_starts=[0.0, 1.0])
    with pytest.raises(ValueError, match="stage_starts"):
        harness_workload("shared-prefix", params, load, 7, stage_starts=[0.0])


@pytest.mark.parametrize(("kind", "params", "load", "match"), [
    ("sharegpt", {}, {"arrival": "poisson", "stages": [{"rate": 1, "duration": 1}]}, "kind"),
    ("shared-prefix", dict(LLM_D, groups=3), {"arrival": "poisson", "stages": [{"rate": 1, "duration": 1}]}, "groups"),
    ("shared-prefix", {"num_groups": 3}, {"arrival": "poisson", "stages": [{"rate": 1, "duration": 1}]},
     "num_prompts_per_group"),
    ("shared-prefix", dict(LLM_D, question_len=-1), {"arrival": "poisson", "stages": [{"rate": 1, "duration": 1}]},
     "question_len"),
    ("generated-shared-prefix", {"gsp_output_len": 1.5}, {"arrival": "poisson", "stages": [{"rate": 1}]},
     "gsp_output_len"),
    ("shared-prefix", LLM_D, {"arrival": "poisson", "stages": []}, "stages"),
    ("shared-prefix", LLM_D, {"arrival": "burst", "stages": [{"rate": 1, "duration": 1}]}, "arrival"),
    ("shared-prefix", LLM_D, {"arrival": "poisson", "stages": [{"rate": 1, "duration": 1}], "qps": 3}, "qps"),
    ("shared-prefix", LLM_D, {"arrival": "poisson", "stages": [{"rate": -1, "duration": 1}]}, "rate"),
    ("shared-prefix", LLM_D, {"arrival": "poisson", "stages": [{"rate": math.inf, "duration": 1}]}, "rate"),
    ("generated-shared-prefix", {}, {"arrival": "constant", "stages": [{"rate": 1, "duration": 1}]}, "constant"),
    ("multi-turn-conversations", {"max_conversations": 10}, {"arrival": "concurrency", "stages": [{"concurrency": 2}]},
     "requests"),
    ("multi-turn-conversations", {}, {"arrival": "concurrency", "stages": [{"concurrency": 2, "requests": 4}]},
     "max_conversations"),
    ("prefix-repetition", {}, {"arrival": "poisson", "stages": [{"rate": 1, "requests": 5}]}, "requests"),
    ("shared-prefix", dict(LLM_D, enable_multi_turn_chat=True),
     {"arrival": "concurrency", "stages": [{"concurrency": 2, "requests": 4}]}, "concurrency"),
])
def test_bad_input_names_the_key(kind, params, load, match):
    with pytest.raises(ValueError, match=match):
        harness_workload(kind, params, load, 0)


def test_harness_workload_checks_stage_rows():
    hw = harness_workload("generated-shared-prefix", {"gsp_num_groups": 2, "gsp_prompts_per_group": 2},
                          {"arrival": "poisson", "stages": [{"rate": math.inf}]}, 0)
    with pytest.raises(ValueError, match="stage"):
        HarnessWorkload(hw.workload, hw.stage[:-1], closed=False)


SMALL = {
    "shared-prefix": (dict(num_groups=3, num_prompts_per_group=2, system_prompt_len=300, question_len=50,
                           output_len=20, enable_multi_turn_chat=True),
                      {"arrival": "poisson", "stages": [{"rate": 4, "duration": 3}]}),
    "prefix-repetition": ({"num_prefixes": 2, "prefix_len": 200, "suffix_len": 40, "output_len": 16},
                          {"arrival": "poisson", "stages": [{"rate": 5, "requests": 12}]}),
    "generated-shared-prefix": ({"gsp_num_groups": 3, "gsp_prompts_per_group": 4, "gsp_system_prompt_len": 256,
                                 "gsp_question_len": 32, "gsp_output_len": 16},
                                {"arrival": "poisson", "stages": [{"rate": math.inf}]}),
    "multi-turn-conversations": ({"max_conversations": 20},
                                 {"arrival": "concurrency", "stages": [{"concurrency": 4, "requests": 30}]}),
    "multi-turn-sessions": ({"turns": 3, "output_first": 16, "output_follow_up": 4, "output_after_tool": 8},
                            {"arrival": "sessions", "stages": [{"sessions": 3}]}),
    "recorded-requests": ({"bundle": "recorded/rtxpro6000-llama-3.1-8b"},
                          {"arrival": "recorded", "stages": [{"requests": 12}]}),
}


@pytest.mark.parametrize("kind", KINDS)
def test_simulate_runs_each_kind(kind):
    params, load = SMALL[kind]
    hw = harness_workload(kind, params, load, 0)
    cluster = ClusterConfig(model="llama-3.1-8b", gpu="h100", n_instances=2, replay="closed" if hw.closed else "open")
    res = smetric.simulate(hw.workload, cluster, "round-robin")
    assert res.summary()["n_completed"] == len(hw.workload)
