"""The benchmark helpers that decide printed numbers: scaling windows and fits, peer detection and trace files."""

import csv
import json
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks.engine_scaling import extrapolate, scale_minutes, slope
from benchmarks.peers import (
    Peer,
    find_blis,
    find_splitwise,
    write_blis_trace,
    write_splitwise_config,
    write_splitwise_trace,
)


def test_scale_minutes_fixed_load_window():
    assert scale_minutes(32) == 15.0
    assert scale_minutes(128) == 3.75
    assert scale_minutes(1024) == 0.5 and scale_minutes(4096) == 0.5  # the floor
    with pytest.raises(ValueError, match="n >= 1"):
        scale_minutes(0)


def test_slope_recovers_power_law_and_extrapolates():
    x = np.array([32, 128, 512, 4096])
    assert slope(x, 3.0 * x ** 0.38) == pytest.approx(0.38)
    assert extrapolate(2.0, 2.0, 60.0, 1.0) == pytest.approx(60.0)
    assert extrapolate(2.0, 2.0, 60.0, 1.1) > 60.0
    with pytest.raises(ValueError, match="positive"):
        slope([1, 2], [0.0, 1.0])


def _workload():
    return SimpleNamespace(arrival=np.array([10.0, 10.5, 12.25]), input_len=np.array([3, 1, 2]),
                           output_len=np.array([2, 1, 4]))


def test_splitwise_trace_columns(tmp_path):
    path = tmp_path / "t.csv"
    write_splitwise_trace(_workload(), path)
    rows = list(csv.DictReader(open(path)))
    assert [float(r["arrival_timestamp"]) for r in rows] == [0.000001, 0.500001, 2.250001]  # SPLITWISE_START_S in
    assert [(int(r["prompt_size"]), int(r["token_size"])) for r in rows] == [(3, 2), (1, 1), (2, 4)]
    assert {r["request_type"] for r in rows} == {"2"}


def test_splitwise_config_drops_only_the_ray_launcher(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "config.yaml").write_text(
        "defaults:\n  - trace: test_trace\n  - override hydra/launcher: ray\n  - _self_\nseed: 0\n"
        "hydra:\n  run:\n    dir: x\n  launcher:\n    ray:\n      init:\n        address: a\n  job:\n    chdir: True\n")
    text = write_splitwise_config(tmp_path, tmp_path).read_text()
    assert "override hydra/launcher: basic" in text and "ray" not in text
    assert "  run:\n    dir: x\n  job:\n    chdir: True" in text and "seed: 0" in text


def test_blis_trace_lengths_and_unique_ids(tmp_path):
    path = tmp_path / "t.csv"
    write_blis_trace(_workload(), path)
    rows = list(csv.DictReader(open(path)))
    prompts = [json.loads(r["prefill_tokens"]) for r in rows]
    replies = [json.loads(r["decode_tokens"]) for r in rows]
    assert [len(p) for p in prompts] == [3, 1, 2] and [len(r) for r in replies] == [2, 1, 4]
    ids = [i for p, r in zip(prompts, replies) for i in p + r]
    assert len(ids) == len(set(ids))  # no request shares a token id: no spurious prefix hits


def test_peers_skipped_with_a_reason_when_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    env = {"SMETRIC_SPLITWISESIM": str(tmp_path / "none"), "SMETRIC_BLIS": str(tmp_path / "none")}
    assert "no SplitwiseSim checkout" in find_splitwise(env)
    assert "no BLIS binary" in find_blis(env)


def test_peers_found_and_their_command(tmp_path):
    home = tmp_path / "splitwise"
    (home / ".venv/bin").mkdir(parents=True)
    (home / "run.py").write_text("")
    (home / ".venv/bin/python").write_text("")
    peer = find_splitwise({"SMETRIC_SPLITWISESIM": str(home)})
    assert isinstance(peer, Peer) and "not the pinned 8f99e7d" in peer.version  # not a git checkout
    argv = peer.argv(tmp_path / "trace.csv", tmp_path / "out")
    assert f"trace.path={tmp_path / 'trace.csv'}" in argv and "cluster.servers.1.count=40" in argv
    assert argv[argv.index("--config-dir") + 1] == str(tmp_path) and "--config-name" in argv
    binary = tmp_path / "simulation_worker"
    binary.write_text("")
    blis = find_blis({"SMETRIC_BLIS": str(binary)})
    assert isinstance(blis, Peer) and blis.cwd == tmp_path
    assert blis.argv(tmp_path / "t.csv", tmp_path)[-1] == f"{tmp_path}/results.json"
    with pytest.raises(ValueError, match="Peer.name"):
        Peer("Vidur", ("x",), tmp_path, "v")


def test_benchmark_record_has_machine_date_target_and_verdict(tmp_path):
    from benchmarks.common import RESULT_COLUMNS, Row, write_rows

    path = write_rows([Row("g", "wall", 0.5, "s", "<= 1.0"), Row("g", "rate", 1234.5678, "req/s")],
                      tmp_path / "results.csv", mode="quick")
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == RESULT_COLUMNS and {r["mode"] for r in rows} == {"quick"}
    assert rows[0]["target"] == "<= 1.0" and rows[0]["verdict"] == "ok" and rows[1]["target"] == ""
    assert float(rows[1]["value"]) == 1234.5678 and rows[0]["machine"] and rows[0]["date"].startswith("20")
