"""Strict per-request replay: recorded bundles (loader, bad input), the recorded-engine metrics and the lss-* specs."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from smetric.realcluster.metrics import harness_metrics
from smetric.realcluster.runner import predict, recorded_request_errors
from smetric.realcluster.spec import SpecError, check_spec, load_spec, spec_paths
from smetric.workload.errors import TraceFormatError
from smetric.workload.harness import harness_workload
from smetric.workload.recorded import BLOCK_SIZE, load_bundle, shared_prefixes

T0 = 1000.0  # engine clock of the first queued request
# send order; row 2 is queued before row 1 (two engine cores); row 3 generates one token
ROWS = [
    {"request_id": "r0", "input_toks": 40, "output_toks": 5, "arrival_time": 1.7e9, "queued_ts": T0,
     "scheduled_ts": T0, "first_token_ts": T0 + 0.2, "last_token_ts": T0 + 0.6},
    {"request_id": "r1", "input_toks": 20, "output_toks": 3, "arrival_time": 1.7e9 + 0.1, "queued_ts": T0 + 0.15,
     "scheduled_ts": T0 + 0.5, "first_token_ts": T0 + 0.7, "last_token_ts": T0 + 0.9},
    {"request_id": "r2", "input_toks": 50, "output_toks": 4, "arrival_time": 1.7e9 + 0.12, "queued_ts": T0 + 0.12,
     "scheduled_ts": T0 + 0.12, "first_token_ts": T0 + 0.3, "last_token_ts": T0 + 0.6},
    {"request_id": "r3", "input_toks": 16, "output_toks": 1, "arrival_time": 1.7e9 + 0.3, "queued_ts": T0 + 0.3,
     "scheduled_ts": T0 + 0.3, "first_token_ts": T0 + 0.4, "last_token_ts": T0 + 0.4},
]
PREFIXES = "row,shares_with,shared_blocks\n2,0,2\n"   # row 2 starts with row 0's first two 16-token blocks


def _bundle(folder, rows=ROWS, prefixes=PREFIXES, raw_lines=None):
    folder.mkdir(parents=True, exist_ok=True)
    lines = raw_lines if raw_lines is not None else [json.dumps(r) for r in rows]
    (folder / "requests.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "meta.json").write_text(json.dumps({"vllm_version": "0.19.0"}))
    if prefixes is not None:
        (folder / "prefixes.csv").write_text(prefixes)
    return folder


def test_loader_round_trips_counts_arrivals_and_shared_prefixes(tmp_path):
    b = load_bundle(_bundle(tmp_path / "b"))
    assert len(b) == 4 and b.meta == {"vllm_version": "0.19.0"}
    # ordered by engine arrival (queued_ts), from the first one; send order kept in ``row``
    assert list(b.request_id) == ["r0", "r2", "r1", "r3"] and list(b.row) == [0, 2, 1, 3]
    np.testing.assert_allclose(b.arrival, [0.0, 0.12, 0.15, 0.3])
    np.testing.assert_allclose(b.sent, [0.0, 0.12, 0.1, 0.3], atol=1e-6)   # epoch seconds: ~0.2 us steps
    assert list(b.input_len) == [40, 50, 20, 16] and list(b.output_len) == [5, 4, 3, 1]
    np.testing.assert_allclose(b.ttft, [0.2, 0.18, 0.55, 0.1])
    np.testing.assert_allclose(b.tpot[:3], [0.4 / 4, 0.3 / 3, 0.2 / 2])
    assert np.isnan(b.tpot[3])   # one token: no TPOT
    np.testing.assert_allclose(b.latency, [0.6, 0.48, 0.75, 0.1])
    np.testing.assert_allclose(b.queue, [0.0, 0.0, 0.35, 0.0])
    wl = b.workload
    assert wl.block_size == BLOCK_SIZE and list(wl.n_blocks) == [3, 4, 2, 1]
    assert list(wl.blocks(1)[:2]) == list(wl.blocks(0)[:2])          # r2 shares r0's first two blocks
    assert wl.blocks(1)[2] != wl.blocks(0)[2]
    others = np.concatenate([wl.blocks(0), wl.blocks(1)[2:], wl.blocks(2), wl.blocks(3)])
    assert len(np.unique(others)) == len(others)                     # everything else is unique
    assert (wl.parent == -1).all() and len(np.unique(wl.session)) == 4


def test_without_prefixes_every_block_is_unique(tmp_path):
    wl = load_bundle(_bundle(tmp_path / "b", prefixes=None)).workload
    assert len(np.unique(wl.block_ids)) == len(wl.block_ids) == 10


def test_shared_prefixes_match_whole_blocks_only():
    a = list(range(40))
    b = a[:32] + [999] * 10                      # the same first two blocks, then different
    c = a[:15] + [7] + a[16:40]                  # differs inside block 0
    d = b[:35]                                   # shares b's (and a's) two full blocks, third is partial
    shares, blocks = shared_prefixes([a, b, c, d])
    assert list(shares) == [-1, 0, -1, 0] and list(blocks) == [0, 2, 0, 2]


def _row_with(**change):
    row = dict(ROWS[1])
    for key, value in change.items():
        if value is None:
            row.pop(key)
        else:
            row[key] = value
    return [json.dumps(ROWS[0]), json.dumps(row)]


@pytest.mark.parametrize(("lines", "prefixes", "where", "reason"), [
    (_row_with(first_token_ts=None), None, "requests.jsonl, line 2, field 'first_token_ts'", "is missing"),
    (_row_with(output_toks=0), None, "requests.jsonl, line 2, field 'output_toks'", "integer >= 1, got 0"),
    (_row_with(input_toks=12.5), None, "requests.jsonl, line 2, field 'input_toks'", "integer >= 1"),
    (_row_with(arrival_time=1.0e9), None, "requests.jsonl, line 2, field 'arrival_time'", "send order"),
    (_row_with(scheduled_ts=T0), None, "requests.jsonl, line 2, field 'scheduled_ts'", "before queued_ts"),
    (_row_with(first_token_ts="soon"), None, "requests.jsonl, line 2, field 'first_token_ts'",
     "finite number"),
    ([json.dumps(ROWS[0]), "{not json"], None, "requests.jsonl, line 2", "not valid JSON"),
    ([], None, "requests.jsonl, line 1", "holds no requests"),
    (None, "row,shares_with\n", "prefixes.csv, line 1, field 'shared_blocks'", "missing from the header"),
    (None, "row,shares_with,shared_blocks\n1,1,1\n", "prefixes.csv, line 2, field 'shares_with'", "earlier row"),
    (None, "row,shares_with,shared_blocks\n2,0,3\n", "prefixes.csv, line 2, field 'shared_blocks'", "1..2"),
    (None, "row,shares_with,shared_blocks\n9,0,1\n", "prefixes.csv, line 2, field 'row'", "not a request row"),
    (None, "row,shares_with,shared_blocks\n2,x,1\n", "prefixes.csv, line 2, field 'shares_with'", "integer"),
])
def test_bad_bundles_fail_in_one_line_naming_file_line_and_field(tmp_path, lines, prefixes, where, reason):
    folder = _bundle(tmp_path / "b", prefixes=prefixes or PREFIXES, raw_lines=lines)
    with pytest.raises(TraceFormatError) as err:
        load_bundle(folder)
    text = str(err.value)
    assert "\n" not in text and text.startswith(str(folder / where.split(",")[0])), text
    assert where in text and reason in text, text


def test_missing_meta_fails(tmp_path):
    folder = _bundle(tmp_path / "b")
    (folder / "meta.json").unlink()
    with pytest.raises(TraceFormatError, match=r"meta\.json, line 1: no such file"):
        load_bundle(folder)


def test_harness_kind_takes_the_first_requests_by_engine_arrival(tmp_path):
    folder = str(_bundle(tmp_path / "b"))
    hw = harness_workload("recorded-requests", {"bundle": folder}, {"arrival": "recorded", "stages": [{"requests": 3}]},
                          seed=0)
    assert not hw.closed and list(hw.stage) == [0, 0, 0]
    np.testing.assert_allclose(hw.workload.arrival, [0.0, 0.12, 0.15])
    assert list(hw.workload.input_len) == [40, 50, 20]
    for params, load, match in [
        ({"bundle": folder}, {"arrival": "recorded", "stages": [{"requests": 5}]}, r"1\.\.4"),
        ({"bundle": folder, "x": 1}, {"arrival": "recorded", "stages": [{"requests": 2}]}, "exactly one key"),
        ({"bundle": folder}, {"arrival": "poisson", "stages": [{"rate": 1, "requests": 2}]}, "must be 'recorded'"),
        ({"bundle": folder}, {"arrival": "recorded", "stages": [{"requests": 1}, {"requests": 1}]}, "one stage"),
    ]:
        with pytest.raises(ValueError, match=match):
            harness_workload("recorded-requests", params, load, seed=0)
    with pytest.raises(ValueError, match="only with kind recorded-requests"):
        harness_workload("prefix-repetition", {}, {"arrival": "recorded", "stages": [{"requests": 10}]}, seed=0)


def _spec_doc(bundle) -> dict:
    return {
        "name": "recorded-test",
        "source": {"repo": "example/repo", "path": "requests.jsonl", "commit": "0" * 40, "url": "https://example.org",
                   "note": "hand-made", "harness": "recorded-engine", "lss_error_pct": {"ttft_mean_s": -4.0}},
        "cluster": {"model": "llama-3.1-8b", "gpu": "rtx-4090", "tp": 1, "instances": 1, "kv_tokens": 41408,
                    "max_num_batched_tokens": 2048, "max_num_seqs": 256, "block_size": 16, "weight_dtype": "bf16",
                    "kv_dtype": "bf16", "cpu_offload": 0, "gpu_memory_utilization": 0.9, "engine": "vllm-0.19.0"},
        "workload": {"kind": "recorded-requests", "params": {"bundle": str(bundle)}, "seed": 0},
        "load": {"arrival": "recorded", "stages": [{"requests": 4}], "measured_stages": "all"},
        "routers": {"vllm": {"policy": "round-robin", "params": {}}},
        "measured": {"vllm": {"ttft_mean_s": 0.25, "tpot_p50_s": 0.1, "queue_mean_s": 0.09}},
    }


@pytest.mark.parametrize(("edit", "key", "reason"), [
    (lambda d: d["load"].update(arrival="poisson"), "load.stages[0].rate", "is missing"),
    (lambda d: d["load"]["stages"].append({"requests": 1}), "load.stages", "one stage"),
    (lambda d: d["workload"].update(kind="prefix-repetition", params={}), "load.arrival", "recorded-requests"),
    (lambda d: d["workload"]["params"].update(bundle="/no/such/bundle"), "workload.params", "no such file"),
    (lambda d: d["workload"]["params"].update(seed=3), "workload.params", "exactly one key"),
])
def test_bad_recorded_specs_name_the_key(tmp_path, edit, key, reason):
    doc = _spec_doc(_bundle(tmp_path / "b"))
    edit(doc)
    with pytest.raises(SpecError) as err:
        check_spec(doc, "spec.yaml")
    assert str(err.value).startswith(f"spec.yaml: {key}: ") and reason in str(err.value), str(err.value)


def test_a_recorded_spec_replays_and_pairs_request_by_request(tmp_path):
    spec = check_spec(_spec_doc(_bundle(tmp_path / "b")))
    table, summary = recorded_request_errors(spec)
    bundle = load_bundle(tmp_path / "b")
    assert list(table["request_id"]) == list(bundle.request_id)
    np.testing.assert_allclose(table["ttft_recorded"], bundle.ttft)
    assert (table["ttft_model"] > 0).all() and (table["latency_model"] >= table["ttft_model"]).all()
    assert table["tpot_model"].isna().tolist() == [False, False, False, True]
    assert list(summary["quantity"]) == ["ttft", "tpot", "latency", "queue"]
    row = summary.set_index("quantity").loc["ttft"]
    assert row["median_error"] == pytest.approx(row["model_median_s"] / row["recorded_median_s"] - 1)
    assert row["lss_mean_error"] == pytest.approx(-0.04) and np.isnan(row["lss_median_error"])


LSS = [p for p in spec_paths() if p.name.startswith("lss-")]


def _recorded_frame(bundle) -> pd.DataFrame:
    """The recorded run in SimResult's columns, for the harness definitions."""
    n = len(bundle)
    return pd.DataFrame({"arrival": bundle.arrival, "admit": bundle.scheduled, "first_token": bundle.first_token,
                         "finish": bundle.last_token, "input_len": bundle.input_len, "output_len": bundle.output_len,
                         "hit_hbm": np.zeros(n), "hit_dram": np.zeros(n), "status": ["completed"] * n})


_SUMMARY = {"TTFT": ("ttft_mean_s", "ttft_p50_s", "ttft_p90_s", None, "ttft_p99_s"),
            "TPOT": ("tpot_mean_s", "tpot_p50_s", None, None, None),
            "Latency": ("e2e_mean_s", "e2e_p50_s", "e2e_p90_s", None, "e2e_p99_s")}


@pytest.mark.parametrize("path", LSS, ids=lambda p: p.stem)
def test_shipped_lss_specs_measure_what_the_bundle_and_llmservingsim_say(path):
    spec = load_spec(path)
    bundle = load_bundle(spec.workload["params"]["bundle"])
    assert spec.load["stages"] == [{"requests": len(bundle)}] and spec.harness == "recorded-engine"
    mine = harness_metrics(_recorded_frame(bundle), "recorded-engine")
    for metric, value in spec.measured["vllm"].items():
        assert value == pytest.approx(mine[metric], rel=1e-5), metric
    # the vLLM column of LLMServingSim's summary.txt (ms, one decimal): Mean, Median, P90, P95, P99
    text = (bundle.path / "summary.txt").read_text()
    for name, metrics in _SUMMARY.items():
        row = re.search(rf"^{name} Mean\s+([\d.]+)", text, re.M)
        assert row is not None
        for stat, metric in zip(("Mean", "Median", "P90", "P95", "P99"), metrics):
            if metric is not None:
                real = float(re.search(rf"^{name} {stat}\s+([\d.]+)", text, re.M).group(1))
                assert mine[metric] * 1e3 == pytest.approx(real, abs=0.051), (name, stat)


def test_a_shipped_lss_spec_replays_in_quick_mode():
    spec = load_spec(next(p for p in LSS if "rtx4090" in p.name))
    got = predict(spec, quick=True)["vllm"]
    assert got["success_ratio"] == 1.0
    assert 0 < got["ttft_p50_s"] <= got["e2e_p50_s"] and 0 < got["tpot_p50_s"] < got["e2e_p50_s"]
    assert got["queue_mean_s"] >= 0 and got["queue_mean_s"] <= got["ttft_mean_s"]


def test_strict_replay_target_compares_each_median_with_llmservingsims_own_error():
    from smetric.realcluster.scoring import recorded_table, targets

    def row(experiment, metric, measured, predicted, lss):
        return {"experiment": experiment, "router": "vllm", "baseline": "vllm", "harness": "recorded-engine",
                "metric": metric, "measured": measured, "predicted": predicted, "rel_error": predicted / measured - 1,
                "blis_error": np.nan, "lss_error": lss}

    frame = pd.DataFrame([row("a", "ttft_p50_s", 1.0, 1.05, -0.08), row("a", "tpot_p50_s", 0.02, 0.021, 0.01),
                          row("a", "ttft_mean_s", 1.0, 3.0, 0.0), row("b", "e2e_p50_s", 10.0, 9.0, 0.1)])
    table = recorded_table(frame)
    assert list(table["metric"]) == ["ttft_p50_s", "tpot_p50_s", "e2e_p50_s"]  # medians only
    assert list(table["within"]) == [True, False, True]  # |+5 %| <= |-8 %|; +5 % > 1 %; |-10 %| <= 10 %
    strict = targets(frame).set_index("target").loc["strict_replay"]
    assert strict["verdict"] == "missed" and strict["detail"] == "2 of 3 within; outside: a (1)"
    none = targets(frame.drop(columns="lss_error")).set_index("target").loc["strict_replay"]
    assert none["verdict"] == "n/a"
