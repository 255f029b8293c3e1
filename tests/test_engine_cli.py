"""``smetric simulate``: JSON summary, CSV output, disaggregated mode, loud argument errors;
the resumable engine (progress bar) gives the same run as one call."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from engine_support import agent_workload, small_cluster, store

from smetric.cli import main
from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare

JSON_KEYS = {"n_requests", "n_completed", "goodput_tps", "throughput_tps", "prefill_tps", "hit_ratio", "imbalance",
             "slo_attainment", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99"}


@pytest.fixture
def trace(tmp_path):
    """A small Mooncake-format trace: two sessions sharing a system prompt, 512-token chained hashes."""
    rows = [(0, 2000, 20, [0, 1, 2, 3]), (500, 1800, 10, [0, 5, 6, 7]), (4000, 2600, 30, [0, 1, 2, 3, 8, 9]),
            (4500, 2400, 15, [0, 5, 6, 7, 10])]
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h})
                              for t, n, o, h in rows) + "\n")
    return str(path)


BASE = ["simulate", "--model", "llama-3-8b", "--gpu", "a100", "--policy", "round_robin"]


def test_json_summary_has_the_documented_keys(trace, capsys):
    assert main(BASE + ["--trace", trace, "--instances", "2", "--global-store", "provisioned", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert JSON_KEYS <= set(out)
    assert out["n_requests"] == 4 and out["n_completed"] == 4
    assert 0 < out["hit_ratio"] < 1  # follow-ups re-use their session's blocks


def test_out_writes_the_tables(trace, tmp_path, capsys):
    out_dir = tmp_path / "res"
    assert main(BASE + ["--trace", trace, "--instances", "2", "--out", str(out_dir)]) == 0
    requests = pd.read_csv(out_dir / "requests.csv")
    assert len(requests) == 4 and {"ttft", "tpot", "slo_met", "hit_hbm"} <= set(requests.columns)
    assert len(pd.read_csv(out_dir / "instances.csv")) == 2
    assert "goodput_tps" in pd.read_csv(out_dir / "summary.csv").columns
    assert "goodput_tps" in capsys.readouterr().out


def test_disaggregated_counts_instances_from_the_parts(trace, capsys):
    args = ["--trace", trace, "--mode", "disaggregated", "--prefill-instances", "1", "--decode-instances", "2",
            "--json"]
    assert main(BASE + args) == 0
    out = json.loads(capsys.readouterr().out)
    assert "1P+2D" in out["cluster"] and out["n_completed"] == 4


@pytest.mark.parametrize("extra, message", [
    (["--param", "nonsense"], "--param needs KEY=VALUE"),
    (["--param", "no_such=1"], "has no parameter"),
    (["--mode", "disaggregated", "--prefill-instances", "1"], "n_decode must be a positive integer"),
    (["--global-store", "fast"], "--global-store must be"),
    (["--load", "0"], "load factor must be a positive"),
])
def test_bad_arguments_exit_2_with_a_message(trace, capsys, extra, message):
    assert main(BASE + ["--trace", trace] + extra) == 2
    assert message in capsys.readouterr().err


def test_unreadable_trace_exits_1(tmp_path, capsys):
    assert main(BASE + ["--trace", str(tmp_path / "missing.jsonl")]) == 1
    assert "smetric simulate" in capsys.readouterr().err


def test_resumed_engine_equals_one_call():
    """The progress bar runs the engine in chunks of arrivals; the result must not change."""
    wl = agent_workload(3, n_sessions=25, max_turns=4, span=2.0)
    cluster = small_cluster(kv_tokens=6000, n_instances=3, block_size=16, max_num_seqs=8, max_batched_tokens=512,
                            global_store=store(capacity_gb=0.3), replay="closed")
    inp = prepare(wl, cluster, "power-of-two", seed=4)
    one, chunked = run_engine(inp), run_engine(inp, progress=True, chunk=3)
    for name in ("instance", "admit", "first_token", "finish", "hit_global"):
        assert np.array_equal(getattr(one, name), getattr(chunked, name), equal_nan=True)


@pytest.mark.parametrize("extra, hit", [(["--no-cache-replies"], 4096), ([], 4608),
                                        (["--kv-connector", "lmcache-mooncake", "--global-store", "provisioned",
                                          "--kv-connector-param", "layerwise=true"], 4608)])
def test_two_turn_session_hits_the_reply_from_the_out_csv(tmp_path, extra, hit):
    """4096-token prompt with a 1024-token reply, then a 5632-token follow-up on the same instance (512-token
    trace blocks): the follow-up hits 4096 tokens, or >= 5120 - one 512-token block with replies cached."""
    path = tmp_path / "two.jsonl"
    rows = [(0, 4096, 1024, list(range(8))), (100_000, 5632, 8, list(range(11)))]
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h})
                              for t, n, o, h in rows) + "\n")
    out_dir = tmp_path / "res"
    assert main(BASE + ["--trace", str(path), "--instances", "1", "--out", str(out_dir)] + extra) == 0
    requests = pd.read_csv(out_dir / "requests.csv")
    assert requests["hit_hbm"].tolist() == [0, hit]
    assert hit == 4096 or hit >= 5120 - 512


def test_unknown_kv_connector_is_a_usage_error(trace, capsys):
    assert main(BASE + ["--trace", trace, "--kv-connector", "nvme"]) == 2
    assert "unknown KV connector" in capsys.readouterr().err


def test_fp8_flags_reach_the_cluster(trace, capsys):
    runs = {}
    for dtype in ("bf16", "fp8"):
        assert main(BASE + ["--trace", trace, "--gpu", "h100", "--weight-dtype", dtype, "--kv-dtype", dtype,
                            "--json"]) == 0
        runs[dtype] = json.loads(capsys.readouterr().out)
    assert runs["fp8"]["n_completed"] == runs["bf16"]["n_completed"] == 4
    # FP8 GEMMs at the H100's FP8 peak and half the KV bytes: the same requests finish sooner
    assert runs["fp8"]["ttft_p50"] < runs["bf16"]["ttft_p50"]
    with pytest.raises(SystemExit) as exc:
        main(BASE + ["--trace", trace, "--kv-dtype", "int4"])
    assert exc.value.code == 2 and "--kv-dtype" in capsys.readouterr().err


def test_batching_reaches_the_cluster(trace, capsys):
    """``--batching``: every mode completes the trace; a prompt-only iteration never beats a mixed one on TPOT."""
    runs = {}
    for mode in ("mixed", "prefill-first", "whole-prompts"):
        assert main(BASE + ["--trace", trace, "--batching", mode, "--json"]) == 0
        runs[mode] = json.loads(capsys.readouterr().out)
    assert all(r["n_completed"] == 4 for r in runs.values())
    assert runs["prefill-first"]["tpot_p99"] >= runs["mixed"]["tpot_p99"]
    assert main(BASE + ["--trace", trace, "--batching", "whole-prompts", "--mode", "disaggregated",
                        "--prefill-instances", "1", "--decode-instances", "1"]) == 2
    assert "implemented for mode='colocated' only" in capsys.readouterr().err
