"""Closed-loop multi-turn sessions (``multi-turn-sessions``), the ``llm-router`` metric definitions and runs over
trace seeds (``load.seeds`` with ``summary: seed-mean``)."""

import copy
import io
import math

import numpy as np
import pandas as pd
import pytest

import smetric
from smetric.cluster.config import ClusterConfig
from smetric.context import run_context
from smetric.realcluster.metrics import harness_metrics
from smetric.realcluster.runner import predict, run_metrics, seed_summary
from smetric.realcluster.spec import SpecError, check_spec
from smetric.workload.harness import harness_workload

TABLE = "validation/tables/zxuhan_llm_router_trace_tokens.csv"
OUTPUTS = {"output_first": 64, "output_follow_up": 4, "output_after_tool": 47}
TABLED = {"token_table": TABLE, **OUTPUTS}


def sessions(n):
    return {"arrival": "sessions", "stages": [{"sessions": n}]}


def rows(seed, n):
    """The token table's rows of ``seed``'s first ``n`` sessions, by (session, turn)."""
    t = pd.read_csv(run_context().data_dir / TABLE)
    return t[(t["seed"] == seed) & (t["session"] < n)].set_index(["session", "turn"]).sort_index()


def by_turn(w):
    """Row of each (session, turn)."""
    return {(int(s), int(t)): i for i, (s, t) in enumerate(zip(w.session, w.turn))}


def test_token_table_run_sends_the_tables_prompts_at_their_floors():
    hw = harness_workload("multi-turn-sessions", TABLED, sessions(4), 18)
    w, table = hw.workload, rows(18, 4)
    assert hw.closed and len(w) == 32 and set(hw.stage) == {0}
    index = by_turn(w)
    for (s, t), row in table.iterrows():
        i = index[(s, t)]
        assert w.input_len[i] == row["prompt_tokens"]
        floor = table.loc[(s, slice(0, t)), "min_send_ms"].max() / 1000.0   # a lower floor is raised to the parent's
        assert w.arrival[i] == pytest.approx(floor)
        assert w.gap[i] == 0.0
        assert w.parent[i] == (index[(s, t - 1)] if t else -1)
        expect = 64 if t == 0 else (47 if row["tool"] else 4)
        assert w.output_len[i] == expect


def test_each_prompt_extends_the_previous_and_prefixes_are_shared():
    hw = harness_workload("multi-turn-sessions", TABLED, sessions(8), 17)
    w, table = hw.workload, rows(17, 8)
    index = by_turn(w)
    for s in range(8):
        for t in range(1, 8):
            prev, cur = w.blocks(index[(s, t - 1)]), w.blocks(index[(s, t)])
            full = w.input_len[index[(s, t - 1)]] // 16
            assert np.array_equal(cur[:full], prev[:full])              # every full block of the previous prompt
            if w.input_len[index[(s, t - 1)]] % 16:
                assert cur[full] != prev[full]                          # its partial block grew: new content
    first = {s: w.blocks(index[(s, 0)]) for s in range(8)}
    code = [s for s in range(8) if table.loc[(s, 0), "code"]]
    plain = [s for s in range(8) if s not in code]
    assert len(code) >= 2 and len(plain) >= 2
    system = 3068 // 16                                                  # 191 full blocks of the system message
    assert len({tuple(b[:system]) for b in first.values()}) == 1
    assert len({b[system] for b in first.values()}) == len(plain) + 1   # code sessions share the next block
    shared = (3068 + 389) // 16
    assert len({tuple(first[s][:shared]) for s in code}) == 1
    assert len({first[s][shared] for s in code}) == len(code)           # their own messages begin


def test_a_smaller_session_set_is_the_first_sessions_of_a_larger_one():
    params = dict(OUTPUTS, turns=3)
    small = harness_workload("multi-turn-sessions", params, sessions(3), 5).workload
    large = harness_workload("multi-turn-sessions", params, sessions(6), 5).workload
    other = harness_workload("multi-turn-sessions", params, sessions(3), 6).workload
    pick = lambda w: sorted(zip(w.session, w.turn, w.input_len, w.arrival))  # noqa: E731
    assert pick(small) == [r for r in pick(large) if r[0] < 3]
    assert pick(small) != pick(other)


def test_drawn_sessions_follow_the_composition_parameters():
    params = dict(OUTPUTS, turns=6, second_prefix_share=0.5, tool_share=0.25)
    w = harness_workload("multi-turn-sessions", params, sessions(400), 1).workload
    f = w.to_frame()
    step = f.sort_values(["session", "turn"]).groupby("session")["input_len"].diff().dropna()
    # later turns add reply 5 + user 58..76 + generation prompt 3, and a tool loop 10 + 55..67 on top
    plain, tool = step[step < 100], step[step >= 100]
    assert plain.between(66, 84).all() and tool.between(131, 161).all()
    assert 0.22 < len(tool) / len(step) < 0.28
    first = f[f["turn"] == 0]["input_len"]
    with_code = first >= 3068 + 389 + 61
    assert 0.45 < with_code.mean() < 0.55
    starts = f[f["turn"] == 0]["arrival"]
    assert starts.min() >= 0.0 and starts.max() <= 0.2 + 0.049      # U{0..200} ms + U{0..49} ms
    assert f["output_len"].max() == 64 and set(f["output_len"]) <= {4, 47, 64}


def test_the_reply_enters_the_history_when_asked():
    base = dict(OUTPUTS, turns=4)
    kept = harness_workload("multi-turn-sessions", dict(base, reply_in_history=True), sessions(2), 3).workload
    fixed = harness_workload("multi-turn-sessions", base, sessions(2), 3).workload
    a, b = by_turn(kept), by_turn(fixed)
    for s in range(2):
        grown = 0
        for t in range(4):
            assert kept.input_len[a[(s, t)]] == fixed.input_len[b[(s, t)]] + grown
            grown += kept.output_len[a[(s, t)]] - 5      # the previous reply instead of the 5-token "ack tN"


def test_outputs_are_capped_at_max_tokens():
    w = harness_workload("multi-turn-sessions", dict(TABLED, max_tokens=16), sessions(2), 17).workload
    assert set(w.output_len) == {4, 16}


def test_closed_replay_sends_each_turn_after_its_parent_and_floor():
    hw = harness_workload("multi-turn-sessions", dict(TABLED, turns=3), sessions(3), 19)
    cluster = ClusterConfig(model="llama-3.1-8b", gpu="h100", n_instances=2, replay="closed")
    rq = smetric.simulate(hw.workload, cluster, "round-robin").requests
    assert (rq["status"] == "completed").all()
    w = hw.workload
    for i in range(len(w)):
        p = w.parent[i]
        release = w.arrival[i] if p < 0 else max(w.arrival[i], rq["finish"].iloc[p])
        assert rq["arrival"].iloc[i] == pytest.approx(release)


def _missing_row(tmp_path):
    t = pd.read_csv(run_context().data_dir / TABLE)
    t = t[~((t["seed"] == 17) & (t["session"] == 1) & (t["turn"] == 5))]
    path = tmp_path / "tokens.csv"
    t.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize(("params", "load", "match"), [
    (dict(TABLED, think_ms=5), sessions(2), "unknown key 'think_ms'"),
    ({"token_table": TABLE, "output_first": 64, "output_follow_up": 4}, sessions(2), "missing key 'output_after_tool'"),
    (dict(TABLED, output_first=0), sessions(2), "output_first must be a positive integer"),
    (dict(OUTPUTS, tool_share=1.5), sessions(2), r"tool_share must be a share in \[0, 1\]"),
    (dict(OUTPUTS, user_tokens_min=80), sessions(2), "user_tokens_min .* must not exceed user_tokens_max"),
    (dict(TABLED, tool_share=0.5), sessions(2), "tool_share is given by the token_table"),
    (dict(TABLED, reply_in_history=True), sessions(2), "reply_in_history must be false"),
    (dict(TABLED, token_table="validation/tables/none.csv"), sessions(2), "none.csv: no such file"),
    (TABLED, sessions(25), "no row for seed 17 session 24 turn 0"),
    (dict(TABLED, turns=9), sessions(2), "no row for seed 17 session 0 turn 8"),
    (TABLED, {"arrival": "poisson", "stages": [{"sessions": 2}]}, "load.arrival must be 'sessions'"),
    (TABLED, {"arrival": "sessions", "stages": [{"sessions": 2}, {"sessions": 4}]}, "exactly one stage"),
    (TABLED, {"arrival": "sessions", "stages": [{"sessions": 0}]}, "sessions must be a positive integer"),
    (TABLED, {"arrival": "sessions", "stages": [{"sessions": 2, "rate": 1}]}, r"must be \{sessions: N\}"),
])
def test_bad_input_names_the_key(params, load, match):
    with pytest.raises(ValueError, match=match):
        harness_workload("multi-turn-sessions", params, load, 17)


def test_a_table_with_a_missing_row_names_it(tmp_path):
    path = _missing_row(tmp_path)
    with pytest.raises(ValueError, match=r"tokens.csv: no row for seed 17 session 1 turn 5"):
        harness_workload("multi-turn-sessions", dict(TABLED, token_table=path), sessions(2), 17)
    assert len(harness_workload("multi-turn-sessions", dict(TABLED, token_table=path), sessions(1), 17).workload) == 8


# ---------------------------------------------------------------------------------------------- metrics, seeds
def test_llm_router_metric_definitions():
    n = 20
    arrival = np.arange(n) * 0.1
    e2e = np.arange(1, n + 1) * 0.05                  # 0.05 .. 1.0 s
    rq = pd.DataFrame({"arrival": arrival, "first_token": arrival + 0.01, "finish": arrival + e2e,
                       "input_len": np.full(n, 1000), "output_len": np.full(n, 11), "hit_hbm": np.full(n, 800.0),
                       "hit_dram": np.full(n, 100.0), "status": ["completed"] * (n - 1) + ["rejected"]})
    m = harness_metrics(rq, "llm-router")
    done = e2e[:-1]                                    # 19 successful requests
    # nearest rank: the ceil(q/100 * 19)-th smallest: p50 -> 10th, p95 -> 19th, p99 -> 19th
    assert m["ttft_p50_s"] == pytest.approx(done[9]) and m["ttft_p95_s"] == pytest.approx(done[18])
    assert m["ttft_p99_s"] == pytest.approx(done[18]) and m["ttft_p90_s"] == pytest.approx(done[17])
    assert m["ttft_mean_s"] == pytest.approx(done.mean())        # non-streaming: "TTFT" is the whole response
    assert m["request_tps"] == pytest.approx(19 / ((arrival + e2e)[:-1].max() - 0.0))
    assert m["hit_ratio"] == pytest.approx(0.8)                    # HBM hits of the successful requests only
    assert m["itl_mean_s"] == pytest.approx(np.mean((e2e[:-1] - 0.01) / 10))   # the engine's, not the client's
    streaming = harness_metrics(rq, "kubeai-chat")
    assert streaming["ttft_p50_s"] == pytest.approx(0.01) and streaming["hit_ratio"] == pytest.approx(0.9)


SPEC = {
    "name": "sessions-test",
    "source": {"repo": "example/repo", "path": "results.md", "commit": "0" * 40, "url": "https://example.org",
               "note": "hand-made", "harness": "llm-router"},
    "cluster": {"model": "qwen2.5-7b", "gpu": "a100", "tp": 1, "instances": 2, "kv_tokens": None,
                "max_num_batched_tokens": 8192, "max_num_seqs": 256, "block_size": 16, "weight_dtype": "bf16",
                "kv_dtype": "bf16", "cpu_offload": 0, "gpu_memory_utilization": 0.9, "engine": "vllm-0.6.4"},
    "workload": {"kind": "multi-turn-sessions", "params": dict(TABLED, turns=2), "seed": 17},
    "load": {"arrival": "sessions", "stages": [{"sessions": 3}], "measured_stages": "all", "summary": "seed-mean",
             "seeds": [17, 18, 19]},
    "routers": {"rr": {"policy": "round-robin", "params": {}},
                "prefix": {"policy": "llm-router-prefix", "params": {}}},
    "measured": {"rr": {"request_tps": 10.0, "hit_ratio": 0.5, "ttft_p95_s": 1.0}},
}


def test_seed_mean_is_the_mean_of_independent_runs():
    spec = check_spec(copy.deepcopy(SPEC))
    cache: dict = {}
    runs = run_metrics(spec, "rr", cache=cache)
    assert list(runs.index) == [17, 18, 19] and len(cache) == 3
    predicted = predict(spec, cache=cache)
    assert len(cache) == 6                                            # each router once per seed
    for metric in ("request_tps", "ttft_p50_s", "hit_ratio"):
        assert predicted["rr"][metric] == pytest.approx(runs[metric].mean())
    assert runs["request_tps"].nunique() == 3                         # the seeds are different traces
    spread = seed_summary(spec, cache=cache).set_index(["router", "metric"])
    assert spread.loc[("rr", "hit_ratio"), "sd"] == pytest.approx(runs["hit_ratio"].std(ddof=1))
    assert len(cache) == 6
    quick = run_metrics(spec, "rr", quick=True)
    assert list(quick.index) == [17]                                  # quick mode: the first seed only
    assert math.isnan(seed_summary(spec, quick=True).set_index(["router", "metric"]).loc[("rr", "hit_ratio"), "sd"])


@pytest.mark.parametrize(("edit", "key", "reason"), [
    (lambda d: d["load"].pop("seeds"), "load.seeds", "need both"),
    (lambda d: d["load"].pop("summary"), "load.seeds", "need both"),
    (lambda d: d["load"].update(seeds=[17, 17]), "load.seeds", "distinct"),
    (lambda d: d["load"].update(seeds=[17, -1]), "load.seeds[1]", ">= 0"),
    (lambda d: d["load"].update(seeds=[]), "load.seeds", "non-empty"),
    (lambda d: d["load"].update(stages=[{"sessions": 2}, {"sessions": 3}]), "load.stages", "one stage"),
    (lambda d: d["load"]["stages"][0].update(sessions=1.5), "load.stages[0].sessions", "an integer"),
    (lambda d: d["workload"].update(kind="shared-prefix"), "load.arrival", "'sessions' goes with"),
    (lambda d: d["source"].update(harness="llm-routr"), "source.harness", "must be one of"),
    (lambda d: d["workload"]["params"].update(think_ms=5), "workload.params.think_ms", "unknown key"),
    (lambda d: d["workload"]["params"].pop("output_first"), "workload.params.output_first", "missing key"),
    (lambda d: d["workload"]["params"].update(max_tokens=0), "workload.params.max_tokens", "positive integer"),
    (lambda d: d["load"]["stages"][0].update(sessions=25), "workload.params.token_table", "no row for seed 17 session"),
    (lambda d: d["load"]["stages"][0].update(rate=2), "load", "must be {sessions: N}"),
])
def test_bad_session_spec_names_the_key(edit, key, reason):
    doc = copy.deepcopy(SPEC)
    edit(doc)
    with pytest.raises(SpecError) as err:
        check_spec(doc, "s.yaml")
    assert str(err.value).startswith(f"s.yaml: {key}: ") and reason in str(err.value)


def test_the_shipped_session_specs_replay_in_quick_mode(capsys):
    from smetric.cli import main
    from smetric.realcluster.spec import load_specs, spec_paths

    paths = [p for p in spec_paths() if p.name.startswith("zxuhan-")]
    specs = load_specs(paths)
    assert sorted(int(s.load["stages"][0]["sessions"]) for s in specs) == [4, 8, 12, 16, 24]
    assert main(["validate", *map(str, paths), "--quick", "--json"]) == 0
    rows = pd.read_json(io.StringIO(capsys.readouterr().out))
    published = sum(len(v) for s in specs for v in s.measured.values())
    assert len(rows) == published and np.isfinite(rows["predicted"]).all() and (rows["predicted"] > 0).all()
