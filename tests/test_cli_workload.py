"""``smetric characterize`` and ``smetric synth``, end to end through real trace files."""

import json

import numpy as np
import pytest

from smetric.cli import main
from smetric.workload import load_trace
from smetric.workload.synthetic import AGENT_TARGETS, PRESETS, synth_chat_workload

REQUIRED_KEYS = ("n_requests", "n_sessions", "reuse_ratio", "intra_session_reuse_share", "first_turn_reuse_ratio",
                 "top25_session_token_share")


def _characterize_json(capsys, *args) -> dict:
    assert main(["characterize", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_characterize_mooncake_conversation_json(capsys):
    out = _characterize_json(capsys, "mooncake-conversation")
    assert set(REQUIRED_KEYS) <= set(out)
    assert out["reuse_ratio"] == pytest.approx(0.374, abs=0.002)
    assert out["n_requests"] == 12031 and isinstance(out["n_requests"], int)


def test_characterize_table_output(capsys):
    assert main(["characterize", "mooncake-synthetic", "--lru-blocks", "4000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# mooncake-synthetic") and "lru_reuse_ratio_4000" in out
    assert "lru_reuse_ratio_1000" not in out


def test_characterize_bad_trace_exits_nonzero_with_the_format_error(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n'
                   '{"timestamp": 10, "input_length": "many", "output_length": 5, "hash_ids": [1]}\n')
    assert main(["characterize", str(bad), "--format", "mooncake"]) != 0
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "line 2" in err and "input_length" in err


def test_characterize_missing_file_exits_nonzero(tmp_path, capsys):
    assert main(["characterize", str(tmp_path / "nope.jsonl")]) != 0
    assert "nope.jsonl" in capsys.readouterr().err


def test_synth_mooncake_then_characterize_meets_every_band(tmp_path, capsys):
    out = tmp_path / "agent.jsonl.gz"
    assert main(["synth", "--out", str(out), "--format", "mooncake", "--preset", "long-context", "--sessions", "3000",
                 "--seed", "0"]) == 0
    assert "3000 sessions" in capsys.readouterr().out
    stats = _characterize_json(capsys, str(out))  # sessions come back inferred from the hashes
    bad = {k: (stats[k], lo, hi) for k, (lo, hi, _) in AGENT_TARGETS.items() if not lo <= stats[k] <= hi}
    assert not bad, f"outside the calibration bands (value, low, high): {bad}"
    assert stats["n_sessions"] >= 3000  # compactions start new inferred sessions, nothing merges


def test_synth_bailian_coder_then_characterize_meets_the_issue_targets(tmp_path, capsys):
    out = tmp_path / "f.jsonl"
    assert main(["synth", "--preset", "bailian-coder", "--format", "bailian", "--sessions", "2000",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    stats = _characterize_json(capsys, str(out))
    assert abs(stats["input_mean"] / 5748 - 1) <= 0.15 and abs(stats["output_mean"] / 808 - 1) <= 0.20
    assert stats["reuse_ratio"] >= 0.80
    for key in ("input_mean", "input_p50", "input_p99", "output_mean", "output_p50", "turns_mean", "follow_up_share"):
        assert isinstance(stats[key], float)
    bad = {k: (stats[k], lo, hi) for k, (lo, hi, _) in PRESETS["bailian-coder"].targets.items()
           if not lo <= stats[k] <= hi}
    assert not bad, f"outside the calibration bands (value, low, high): {bad}"


@pytest.mark.parametrize("preset, fmt", [("toolagent", "mooncake"), ("chat", "bailian")])
def test_synth_other_presets_round_trip_within_their_bands(tmp_path, capsys, preset, fmt):
    out = tmp_path / f"{preset}.jsonl"
    assert main(["synth", "--preset", preset, "--format", fmt, "--sessions", "3000", "--out", str(out)]) == 0
    capsys.readouterr()
    stats = _characterize_json(capsys, str(out))
    bad = {k: (stats[k], lo, hi) for k, (lo, hi, _) in PRESETS[preset].targets.items() if not lo <= stats[k] <= hi}
    assert not bad, f"outside the calibration bands (value, low, high): {bad}"


def test_characterize_kvcache_tester_catalog_trace(capsys):
    out = _characterize_json(capsys, "claude-code")
    assert out["n_requests"] == 49334 and 0.95 <= out["reuse_ratio"] <= 0.98
    shared = _characterize_json(capsys, "claude-code", "--shared-prefix")
    assert shared["first_turn_reuse_ratio"] > out["first_turn_reuse_ratio"] + 0.05
    assert main(["characterize", "azure-code", "--shared-prefix"]) == 2
    assert "take no replay options" in capsys.readouterr().err


def test_synth_bailian_round_trip_keeps_sessions(tmp_path, capsys):
    out = tmp_path / "chat.jsonl"
    assert main(["synth", "--out", str(out), "--format", "bailian", "--preset", "chat", "--sessions", "200",
                 "--seed", "4", "--requests-per-minute", "120"]) == 0
    expected = synth_chat_workload(200, seed=4, requests_per_minute=120.0)
    loaded = load_trace(out)
    assert loaded.block_size == 16 and loaded.n_sessions == 200
    assert np.array_equal(loaded.input_len, expected.input_len)
    assert np.array_equal(loaded.parent, expected.parent)
    assert np.allclose(loaded.arrival, expected.arrival)


def test_synth_bad_parameters_exit_2(tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    assert main(["synth", "--out", str(out), "--format", "mooncake", "--sessions", "0"]) == 2
    assert "n_sessions" in capsys.readouterr().err
    assert main(["synth", "--out", str(out), "--format", "bailian", "--block-size", "512"]) == 2
    assert "16" in capsys.readouterr().err
    assert not out.exists()
