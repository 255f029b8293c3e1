"""The paper setups shared by the figures."""

import numpy as np
import pytest

from smetric import testbeds
from smetric.testbeds import TESTBEDS, agent_workload, offered_point, paper_cluster, run_point


def test_paper_clusters():
    c = paper_cluster("30b")
    assert (c.model, c.gpu, c.tp, c.n_instances) == TESTBEDS["30b"]
    assert c.global_store is not None
    assert paper_cluster("235b", global_store=None).global_store is None
    assert paper_cluster("30b", n_instances=4, max_num_seqs=64).max_num_seqs == 64
    with pytest.raises(ValueError, match="testbed"):
        paper_cluster("7b")


def test_run_point_measures_after_warmup_and_takes_policy_params():
    w = agent_workload(2, 2.0, warmup_minutes=5.0)
    c = paper_cluster("30b", n_instances=2)
    full = run_point(w, c, "smetric", load=0.2)
    late = run_point(w, c, "smetric", load=0.2, warmup_frac=0.5, param_hit_ratio=0.9)
    assert late["n_requests"] < full["n_requests"]
    with pytest.raises(TypeError):
        run_point(w, c, "smetric", hit_ratio=0.9)
    with pytest.raises(ValueError):
        run_point(w, c, "smetric", warmup_frac=1.0)


def test_offered_point_scales_sessions_not_time():
    w_low = agent_workload(8, 5.0, 0, rpm_per_instance=2.0)
    w_high = agent_workload(8, 5.0, 0, rpm_per_instance=6.0)
    assert len(w_high) > 2 * len(w_low)
    assert abs(w_low.duration - w_high.duration) < 60.0   # same window: more sessions, not less time
    s = offered_point(2.0, "least-load", n_instances=8, minutes=5.0, warmup_frac=0.0)
    assert s["n_requests"] == len(w_low)


def test_lower_loads_are_thinned_subsets_of_higher_ones():
    low = agent_workload(8, 5.0, 0, rpm_per_instance=6.0)
    high = agent_workload(8, 5.0, 0, rpm_per_instance=12.0)
    low_sessions, high_sessions = set(low.session), set(high.session)
    assert low_sessions < high_sessions                     # common random numbers
    assert 0.35 < len(low) / len(high) < 0.65               # about half the sessions, half the requests
    sub = high.select(np.isin(high.session, list(low_sessions)))
    assert np.array_equal(sub.arrival, low.arrival) and np.array_equal(sub.block_ids, low.block_ids)
    with pytest.raises(ValueError):
        agent_workload(8, 5.0, 0, rpm_per_instance=0.0)


def test_clearing_the_workload_cache_regenerates_the_same_workload():
    first = agent_workload(4, 2.0, 3, rpm_per_instance=20.0, warmup_minutes=30.0)
    testbeds.clear_workload_cache()
    assert testbeds._generated.cache_info().currsize == 0
    again = agent_workload(4, 2.0, 3, rpm_per_instance=20.0, warmup_minutes=30.0)
    assert np.array_equal(again.arrival, first.arrival) and np.array_equal(again.block_ids, first.block_ids)
    assert np.array_equal(again.block_offsets, first.block_offsets) and np.array_equal(again.parent, first.parent)


def test_testbeds_run_the_paper_stack_closed_by_default():
    c = paper_cluster("30b")
    assert (c.replay, c.kv_connector.name, c.cache_replies, c.hit_granularity) == (
        "closed", "lmcache-mooncake", True, 16)
    assert paper_cluster("30b", replay="open", kv_connector="ideal").kv_connector.ideal


@pytest.mark.parametrize("preset", ["bailian-coder", "long-context"])
def test_the_window_runs_at_the_offered_rate(preset):
    w = agent_workload(16, 10.0, 0, rpm_per_instance=48.0, preset=preset)
    assert len(w) / 10.0 / 16 == pytest.approx(48.0, rel=0.06)


def test_a_real_trace_is_a_workload_and_unknown_names_are_refused():
    w = agent_workload(8, 10.0, 0, rpm_per_instance=2.0, preset="claude-code")
    assert w.input_len.mean() > 50_000 and (w.turn > 0).mean() > 0.9
    with pytest.raises(ValueError, match="workload must be one of"):
        agent_workload(8, 10.0, 0, preset="nope")


def test_the_claude_code_trace_takes_the_subagents_option():
    """Sub-agents attached (fan-out children in their conversation's session: the loader's default and the
    figures' FIGURE_SUBAGENTS) or as separate sessions."""
    from smetric.testbeds import FIGURE_SUBAGENTS, trace_conversations

    assert FIGURE_SUBAGENTS == "attached" and trace_conversations("claude-code").subagents == "attached"
    separate = agent_workload(8, 10.0, 0, rpm_per_instance=2.0, preset="claude-code", subagents="separate")
    attached = agent_workload(8, 10.0, 0, rpm_per_instance=2.0, preset="claude-code")
    assert (separate.join_to == -1).all() and len(separate) > 0 and len(attached) > 0  # thinned by session: not paired
    assert trace_conversations("claude-code", "separate").subagents == "separate"
    with pytest.raises(ValueError, match="only the subagents and arrival options"):
        agent_workload(8, 10.0, 0, rpm_per_instance=2.0, preset="claude-code", block_size=16)


def test_a_timestamped_trace_file_replays_at_the_offered_rate(tmp_path):
    from smetric.testbeds import trace_workload
    from smetric.workload.synthetic import synth_agent_workload
    from smetric.workload.writers import write_trace

    path = write_trace(synth_agent_workload(duration=1200.0, warmup=3600.0, seed=3, preset="bailian-coder",
                                            requests_per_minute=120.0), tmp_path / "coder.jsonl", "bailian")
    w = trace_workload(str(path), n_instances=4, minutes=5.0, rpm_per_instance=60.0)
    assert w.arrival.min() >= 0 and w.arrival.max() < 300.0
    assert len(w) / 5.0 / 4 == pytest.approx(60.0, rel=0.03)
    s = offered_point(60.0, "least-load", n_instances=4, minutes=5.0, warmup_frac=0.0, trace=str(path))
    assert s["n_requests"] == len(w)
    with pytest.raises(ValueError, match="cannot fill"):
        trace_workload(str(path), n_instances=4, minutes=5.0, rpm_per_instance=600.0)
