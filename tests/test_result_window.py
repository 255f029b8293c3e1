"""SimResult.summary(since=...): the warm-up cut measures only later arrivals."""

import numpy as np

from smetric.cluster.config import ClusterConfig, HardwareSpec
from smetric.cluster.simulate import simulate
from smetric.workload import Workload


def _independent_requests(n=40, spacing=2.0, input_len=512, output_len=4):
    ids = np.arange(n * 2, dtype=np.int64) + 10
    return Workload(arrival=np.arange(n) * spacing, input_len=[input_len] * n, output_len=[output_len] * n,
                    session=np.arange(n), turn=[0] * n, parent=[-1] * n, gap=[0.0] * n,
                    block_offsets=np.arange(0, 2 * n + 1, 2), block_ids=ids, block_size=256)


def test_summary_since_counts_only_later_arrivals():
    cluster = ClusterConfig(model="example", gpu="example", n_instances=2, hardware=HardwareSpec.example())
    result = simulate(_independent_requests(), cluster, "round-robin")
    full, late = result.summary(), result.summary(since=40.0)
    assert full["n_requests"] == 40 and late["n_requests"] == 20
    rq = result.requests[result.requests["arrival"] >= 40.0]
    span = rq["finish"].max() - 40.0
    expected = (rq["input_len"] + rq["output_len"])[rq["slo_met"]].sum() / span
    assert np.isclose(late["goodput_tps"], expected)
    assert late["imbalance"] == full["imbalance"]      # instance metrics cover the whole run


def test_prefill_tps_window_ends_at_the_last_first_token():
    cluster = ClusterConfig(model="example", gpu="example", n_instances=2, hardware=HardwareSpec.example())
    result = simulate(_independent_requests(output_len=400), cluster, "round-robin")
    rq = result.requests
    span = rq["first_token"].max() - rq["arrival"].min()
    assert rq["finish"].max() > rq["first_token"].max()
    assert np.isclose(result.summary()["prefill_tps"], rq.loc[rq["ttft_ok"], "input_len"].sum() / span)


def test_the_warmup_cut_uses_scheduled_times_so_a_thinned_subset_never_measures_more():
    """Closed replay delays follow-ups past an overloaded cluster's finish times; cutting the warm-up on those
    delayed arrivals moved with the load (a higher load measured fewer requests than its own thinned subset)."""
    from smetric.testbeds import agent_workload, paper_cluster, run_point

    cluster = paper_cluster("30b", n_instances=4)
    counts = []
    for rpm in (30.0, 90.0):
        w = agent_workload(4, 3.0, 0, rpm_per_instance=rpm, reference_rpm=90.0, warmup_minutes=60.0)
        counts.append(run_point(w, cluster, "least-load", warmup_frac=0.25)["n_requests"])
        scheduled = w.arrival
        assert counts[-1] == int((scheduled >= scheduled.min() + 0.25 * (scheduled.max() - scheduled.min())).sum())
    assert counts[1] > counts[0]
