"""End to end through the simulator: every policy runs, and the paper's trade-off shows on an agent workload.

On a small agent workload at high load (8 instances, no global store), cache-affinity
concentrates work (max/mean instance work > 1.5), least-load loses prefix reuse, and SMETRIC
keeps reuse near cache-affinity's while staying far better balanced.
"""

import numpy as np
import pytest

from smetric.cluster.config import ClusterConfig
from smetric.cluster.simulate import simulate
from smetric.policies import available
from smetric.workload import synth_agent_workload

CLUSTER = ClusterConfig(model="qwen3-coder-30b-a3b", gpu="h20", n_instances=8)


@pytest.fixture(scope="module")
def agent_workload():
    return synth_agent_workload(n_sessions=120, seed=0)


@pytest.mark.parametrize("name", [spec.name for spec in available()])
def test_every_policy_runs_in_the_simulator(name):
    w = synth_agent_workload(n_sessions=10, seed=3)
    result = simulate(w, ClusterConfig(model="qwen3-coder-30b-a3b", gpu="h20", n_instances=3), name, load=4.0)
    rq = result.requests
    assert (rq["status"] == "completed").all()  # nothing too large or stalled on this cluster
    assert set(rq["instance"]) <= {0, 1, 2}
    # every prompt token is either found in a cache or computed, once
    np.testing.assert_array_equal(rq["hit_tokens"] + rq["prefill_tokens"], rq["input_len"])
    assert (rq["arrival"] <= rq["admit"]).all() and (rq["admit"] <= rq["first_token"]).all()
    assert (rq["first_token"] <= rq["finish"]).all()
    # the per-instance table agrees with the per-request one
    routed = rq["instance"].value_counts().reindex(range(3), fill_value=0).to_numpy()
    np.testing.assert_array_equal(result.instances["routed"].to_numpy(), routed)
    np.testing.assert_array_equal(result.instances["prefill_tokens"].to_numpy(),
                                  rq.groupby("instance")["prefill_tokens"].sum().reindex(range(3), fill_value=0))
    again = simulate(w, ClusterConfig(model="qwen3-coder-30b-a3b", gpu="h20", n_instances=3), name, load=4.0)
    np.testing.assert_array_equal(again.requests["instance"], rq["instance"])  # same seed, same decisions


def test_smetric_balances_without_giving_up_reuse(agent_workload):
    runs = {name: simulate(agent_workload, CLUSTER, name, load=4.0, seed=0).summary()
            for name in ("cache-affinity", "least-load", "smetric")}
    for name, s in runs.items():
        print(f"{name:15s} goodput {s['goodput_tps']:7.0f} tok/s  hit {s['hit_ratio']:.3f}  "
              f"imbalance {s['imbalance']:.2f}  SLO {s['slo_attainment']:.2f}")
    ca, ll, sm = runs["cache-affinity"], runs["least-load"], runs["smetric"]
    assert ca["imbalance"] > 1.5                      # cache affinity concentrates load
    assert ll["hit_ratio"] < ca["hit_ratio"] - 0.05   # load balance alone loses reuse
    assert sm["hit_ratio"] > ll["hit_ratio"] + 0.05   # SMETRIC keeps most of it
    assert sm["imbalance"] < ca["imbalance"] - 0.5    # ... and stays balanced
