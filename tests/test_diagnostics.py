"""Mechanism diagnostics (SimResult.diagnostics): imbalance over time, follow-ups moved, local reuse lost."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from engine_support import agent_workload, small_cluster

from smetric.cli import main
from smetric.cluster.result import SimResult
from smetric.cluster.simulate import simulate

DIAGNOSTIC_KEYS = {"imbalance_waiting_time_avg", "imbalance_running_time_avg", "n_followups_routed",
                   "followup_moved_share", "local_reuse_opportunity_tokens", "local_reuse_lost_moved_share",
                   "local_reuse_lost_stayed_share", "queued_prefill_max_mean", "hottest_instance_share"}


def _hand_built() -> SimResult:
    """Two sessions on instances 0 and 1 (instance 2 decodes); block size 16.

    r1 (child of r0) stays on 0: opportunity min(100 + 28, 160) = 128, local hits 96 -> 32 lost (stayed).
    r3 (child of r2) moves 1 -> 0: opportunity min(64 + 10, 100) = 74 -> 64 (whole blocks), hits 0 -> 64 lost.
    Queued prefill (arrival <= t < first token; r3 never gets one) at t = 0, 1, 2: instance 0 holds 100, 64,
    64 + 52; instance 1 holds 0, 64, 0.
    """
    requests = pd.DataFrame({
        "request": [0, 1, 2, 3], "session": [0, 0, 1, 1], "turn": [0, 1, 0, 1], "parent": [-1, 0, -1, 2],
        "instance": [0, 0, 1, 0], "scheduled": [0.0, 1.0, 0.5, 2.0],
        "input_len": [100, 160, 64, 100], "output_len": [28, 5, 10, 5],
        "hit_hbm": [0, 64, 0, 0], "hit_dram": [0, 32, 0, 0], "hit_global": [0, 0, 0, 48],
        "arrival": [0.0, 1.0, 0.5, 2.0], "first_token": [0.5, 2.5, 1.5, np.nan], "prefill_tokens": [100, 64, 64, 52],
    })
    instances = pd.DataFrame({"instance": [0, 1, 2], "role": ["prefill", "prefill", "decode"]})
    # waiting: max over instances (2, 0, 1), mean (1, 0, 1) -> 3 / 2; the decode instance never counts
    timeseries = pd.DataFrame({
        "time": [0.0, 1.0, 2.0] * 3, "instance": np.repeat([0, 1, 2], 3),
        "waiting": [2, 0, 1, 0, 0, 1, 50, 50, 50], "running": [1, 0, 3, 1, 0, 1, 9, 9, 9],
    })
    return SimResult(requests=requests, instances=instances, timeseries=timeseries, cluster=small_cluster(),
                     policy="hand", block_size=16)


def test_definitions_on_a_hand_built_run():
    d = _hand_built().diagnostics()
    assert set(d) == DIAGNOSTIC_KEYS
    assert d["imbalance_waiting_time_avg"] == pytest.approx(3.0 / 2.0)
    assert d["imbalance_running_time_avg"] == pytest.approx(4.0 / 3.0)  # max (1, 0, 3), mean (1, 0, 2)
    assert d["n_followups_routed"] == 2 and d["followup_moved_share"] == 0.5
    assert d["local_reuse_opportunity_tokens"] == 128 + 64
    assert d["local_reuse_lost_moved_share"] == pytest.approx(64 / 192)   # global hits do not count as local
    assert d["local_reuse_lost_stayed_share"] == pytest.approx(32 / 192)
    # queued prefill: max over instances (100, 64, 116), mean (50, 64, 58) -> 280 / 172
    assert d["queued_prefill_max_mean"] == pytest.approx(280 / 172)
    assert d["hottest_instance_share"] == pytest.approx(216 / 280)  # instance 0 computed 100 + 64 + 52 of 280


def test_since_drops_early_requests_and_samples():
    d = _hand_built().diagnostics(since=1.5)
    assert d["n_followups_routed"] == 1 and d["followup_moved_share"] == 1.0
    assert d["imbalance_waiting_time_avg"] == pytest.approx(1.0)
    assert d["queued_prefill_max_mean"] == pytest.approx(116 / 58)  # the sample at t = 2 counts r1 (before since)
    assert d["hottest_instance_share"] == 1.0  # only r3 is measured


def test_summary_keys_are_unchanged_by_the_diagnostics():
    """The figures store summary() wholesale: the diagnostics stay out of it."""
    wl = agent_workload(1, n_sessions=6, max_turns=4)
    result = simulate(wl, small_cluster(n_instances=2), "round-robin", engine="reference")
    assert not DIAGNOSTIC_KEYS & set(result.summary())
    assert "parent" in result.requests and np.array_equal(result.requests["parent"], wl.parent)


def test_sticky_routing_moves_no_follow_up_and_round_robin_does():
    wl = agent_workload(2, n_sessions=8, max_turns=4)
    cluster = small_cluster(n_instances=3)
    sticky = simulate(wl, cluster, "session-sticky", engine="reference").diagnostics()
    spread = simulate(wl, cluster, "round-robin", engine="reference").diagnostics()
    assert sticky["n_followups_routed"] == int((wl.parent >= 0).sum()) > 0
    assert sticky["followup_moved_share"] == 0.0 and sticky["local_reuse_lost_moved_share"] == 0.0
    assert spread["followup_moved_share"] > 0.3 and spread["local_reuse_lost_moved_share"] > 0.0


def test_simulate_json_prints_the_diagnostics(tmp_path, capsys):
    rows = [(0, 2000, 20, [0, 1, 2, 3]), (500, 1800, 10, [0, 5, 6, 7]), (4000, 2600, 30, [0, 1, 2, 3, 8, 9])]
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h})
                              for t, n, o, h in rows) + "\n")
    assert main(["simulate", "--model", "llama-3-8b", "--gpu", "a100", "--policy", "round_robin",
                 "--trace", str(path), "--instances", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert DIAGNOSTIC_KEYS <= set(out) and "goodput_tps" in out
