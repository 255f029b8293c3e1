"""Session/starvation/busy metrics of SimResult.summary and the ``--queue`` option of ``smetric simulate``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from engine_support import agent_workload, small_cluster, unique_workload

from smetric.cli import main
from smetric.cluster.queueing import QueueDiscipline
from smetric.cluster.simulate import simulate


def test_session_metrics_against_a_direct_computation():
    wl = agent_workload(3, n_sessions=12, max_turns=4, span=1.0, first_prompt=(20, 1500))
    cluster = small_cluster(kv_tokens=6000, n_instances=2, block_size=16, max_num_seqs=4, max_batched_tokens=512,
                            replay="closed", queue=QueueDiscipline("smetric-score", l_max=0.05))
    res = simulate(wl, cluster, "least-load", load=2.0)
    s, rq = res.summary(), res.requests
    assert (rq["status"] == "completed").all()
    spans, worst = [], []
    for _, g in rq.groupby("session"):
        spans.append(g["finish"].max() - g["arrival"].min())
        worst.append((g["admit"] - g["arrival"]).max())
    assert s["n_sessions"] == s["n_sessions_completed"] == len(spans)
    assert s["session_time_mean"] == pytest.approx(np.mean(spans))
    assert s["session_time_p99"] == pytest.approx(np.percentile(spans, 99))
    assert s["queue_wait_max"] == pytest.approx(max(worst))
    assert s["sessions_starved_frac"] == pytest.approx(np.mean(np.array(worst) > 0.05))
    assert 0 < s["sessions_starved_frac"] < 1  # the case is busy enough to matter, not hopeless
    assert s["latency_p50"] <= s["latency_p90"] <= s["latency_p99"]
    assert s["ttft_p50"] <= s["ttft_p90"] <= s["ttft_p99"] <= s["latency_p99"]
    assert 0 < s["busy_mean"] <= 1 and s["busy_cv"] >= 0


def test_closed_replay_session_time_covers_think_gaps():
    """A session's completion time includes its tool/think gaps (they are not GPU time)."""
    wl = agent_workload(5, n_sessions=3, max_turns=3, gap=(2.0, 2.0), span=0.1)
    res = simulate(wl, small_cluster(replay="closed"), "round-robin", queue="smetric-score")
    turns = res.requests.groupby("session")["turn"].max()
    assert res.summary()["session_time_mean"] >= 2.0 * turns.mean()


def test_busy_fraction_is_zero_while_idle():
    wl = unique_workload([0.0, 100.0], [64, 64], [2, 2])
    res = simulate(wl, small_cluster(), "round-robin", n_samples=100)
    assert res.timeseries["busy"].mean() < 0.1
    assert res.summary()["busy_cv"] > 1  # two blips in a long idle stretch: very uneven


def test_cli_queue_option(tmp_path, capsys):
    rows = [(0, 2000, 20, [0, 1, 2, 3]), (0, 1800, 10, [0, 5, 6, 7]), (10, 600, 30, [8, 9]), (20, 400, 15, [10])]
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h})
                              for t, n, o, h in rows) + "\n")
    base = ["simulate", "--model", "llama-3-8b", "--gpu", "a100", "--policy", "round_robin", "--trace", str(path),
            "--json", "--queue", "mlfq", "--queue-param", "t_medium=3", "--queue-param", "t_low=1"]
    assert main(base) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["queue"] == "mlfq" and out["n_completed"] == 4
    assert {"session_time_mean", "session_time_p99", "queue_wait_max", "sessions_starved_frac", "latency_p99",
            "busy_cv"} <= set(out)
    assert main(base + ["--queue-param", "gama=1"]) == 2
    assert "unknown queue parameter 'gama'" in capsys.readouterr().err
    assert main(base + ["--queue-param", "t_low=9"]) == 2  # t_low > t_medium
    assert "t_low" in capsys.readouterr().err
