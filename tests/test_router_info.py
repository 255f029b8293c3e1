"""The router information model: stale snapshots, KV-event delay, router replicas.

Engine == reference with every mechanism on (random cases of the equivalence tests, with a random
:class:`RouterInfo`), and hand-built cases of what each mechanism does to a decision.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from engine_support import router_infos, small_cluster, unique_workload
from hypothesis import HealthCheck, given, settings
from test_engine_equivalence import assert_same_run, cases, tier_cases

from smetric.cluster.engine import run_engine
from smetric.cluster.inputs import prepare
from smetric.cluster.reference import run_reference
from smetric.cluster.router_info import RouterInfo, replica_of
from smetric.policies import registry
from smetric.workload.core import Workload


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), router_infos())
def test_engine_matches_reference_with_router_info(case, info):
    wl, cluster, policy, load, seed = case
    inp = prepare(wl, dataclasses.replace(cluster, router=info), policy, load=load, seed=seed, n_samples=50)
    assert_same_run(run_engine(inp), run_reference(inp))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tier_cases(), router_infos())
def test_engine_matches_reference_with_router_info_under_kv_pressure(case, info):
    wl, cluster, policy, seed = case
    inp = prepare(wl, dataclasses.replace(cluster, router=info), policy, seed=seed, n_samples=50)
    assert_same_run(run_engine(inp), run_reference(inp))


def _both(inp):
    a, b = run_engine(inp), run_reference(inp)
    assert_same_run(a, b)
    return a


def test_stale_queue_makes_two_arrivals_herd():
    """Two arrivals within one refresh period see the same (empty) queue and pick the same instance under
    least-load(queued_tokens); the exact view sees the first one's queued prefill and spreads them."""
    wl = unique_workload([0.2, 0.3], 6000, 5)
    cluster = small_cluster(n_instances=2, max_batched_tokens=512)
    exact = _both(prepare(wl, cluster, "least-load", {"signal": "queued_tokens"}))
    assert list(exact.instance) == [0, 1]
    stale = dataclasses.replace(cluster, router=RouterInfo(refresh_s=1.0))
    herd = _both(prepare(wl, stale, "least-load", {"signal": "queued_tokens"}))
    assert list(herd.instance) == [0, 0]
    # a refresh between them (boundary at 0.25) shows the first one's queue again
    fresh = _both(prepare(wl, dataclasses.replace(cluster, router=RouterInfo(refresh_s=0.25)), "least-load",
                          {"signal": "queued_tokens"}))
    assert list(fresh.instance) == [0, 1]


def test_each_replica_counts_only_its_own_in_flight_requests():
    """least-load(in_flight) over 3 instances, 4 long requests: one router spreads them 0, 1, 2, 0; two
    replicas (requests 0, 1 on the first, 2, 3 on the second) each see only their own: 0, 1, 0, 1."""
    wl = unique_workload([0.0, 0.1, 0.2, 0.3], 100, 2000)
    cluster = small_cluster(n_instances=3)
    one = prepare(wl, cluster, "least-load")
    assert list(_both(one).instance) == [0, 1, 2, 0]
    two = dataclasses.replace(one, n_replicas=2, replica=np.array([0, 0, 1, 1]))
    assert list(_both(two).instance) == [0, 1, 0, 1]


def test_replicas_keep_their_own_policy_state():
    """round-robin's pointer lives in the policy state: two replicas each start at instance 0."""
    wl = unique_workload([0.0, 0.1, 0.2, 0.3], 100, 5)
    inp = dataclasses.replace(prepare(wl, small_cluster(n_instances=4), "round-robin"), n_replicas=2,
                              replica=np.array([0, 1, 0, 1]))
    assert list(_both(inp).instance) == [0, 0, 1, 1]


def _repeat_prompt(gap: float) -> Workload:
    """Two requests with the same 1,600-token prompt; the second ``gap`` s after the first, whose long
    decode keeps it (and its KV) on its instance meanwhile."""
    ids = np.arange(100)
    return Workload(arrival=[0.0, gap], input_len=[1600, 1600], output_len=[3000, 5], session=[0, 1],
                    turn=[0, 0], parent=[-1, -1], gap=[0.0, 0.0], block_offsets=[0, 100, 200],
                    block_ids=np.concatenate([ids, ids]), block_size=16)


def test_kv_event_delay_hides_a_just_cached_prefix_from_llmd_precise():
    wl = _repeat_prompt(0.5)
    cluster = small_cluster(n_instances=2, block_size=16)
    params = {"prefix": "precise"}
    exact = _both(prepare(wl, cluster, "llm-d", params))
    assert exact.instance[1] == exact.instance[0] and exact.hit_hbm[1] > 0
    late = dataclasses.replace(cluster, router=RouterInfo(kv_event_delay_s=2.0))
    blind = _both(prepare(wl, late, "llm-d", params))
    assert blind.instance[1] != blind.instance[0] and blind.hit_hbm[1] == 0
    # a delay shorter than the gap: the prefix is visible again
    soon = _both(prepare(wl, dataclasses.replace(cluster, router=RouterInfo(kv_event_delay_s=0.2)), "llm-d", params))
    assert soon.instance[1] == soon.instance[0]


@pytest.mark.parametrize("policy", ["least-load", "llm-d", "smetric", "sglang"])
def test_default_router_info_is_the_exact_view_bit_for_bit(policy):
    """RouterInfo() and its explicit spellings (one replica by session hash) give identical runs."""
    from engine_support import agent_workload

    wl = agent_workload(5, n_sessions=12, max_turns=3, span=1.0, output=(1, 60))
    cluster = small_cluster(n_instances=3, kv_tokens=8000, dram_gb=0.05)
    base = run_engine(prepare(wl, cluster, policy, seed=2))
    same = dataclasses.replace(cluster, router=RouterInfo(router_replicas=1, replica_assignment="session"))
    other = run_engine(prepare(wl, same, policy, seed=2))
    for name in ("instance", "first_token", "finish", "hit_hbm", "hit_dram"):
        assert np.array_equal(getattr(base, name), getattr(other, name), equal_nan=True), name


@pytest.mark.parametrize("field, value", [("refresh_s", -1.0), ("kv_refresh_s", float("nan")),
                                          ("kv_event_delay_s", "0.1"), ("router_replicas", 0),
                                          ("router_replicas", 1.5), ("replica_assignment", "random")])
def test_router_info_rejects_bad_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        RouterInfo(**{field: value})


def test_replica_assignment_is_deterministic_and_spread():
    session = np.repeat(np.arange(50), 4)
    uni = RouterInfo(router_replicas=4)
    a, b = replica_of(uni, session, seed=7), replica_of(uni, session, seed=7)
    assert np.array_equal(a, b) and set(a) == {0, 1, 2, 3}
    assert not np.array_equal(a, replica_of(uni, session, seed=8))
    sticky = replica_of(RouterInfo(router_replicas=4, replica_assignment="session"), session, seed=7)
    assert all(len(set(sticky[session == s])) == 1 for s in range(50)) and len(set(sticky)) == 4
    # the policies' random draws do not depend on the replica model
    wl = unique_workload(np.linspace(0, 1, 20), 50, 2)
    r1 = prepare(wl, small_cluster(n_instances=2), "power-of-two", seed=3).rand
    r4 = prepare(wl, small_cluster(n_instances=2, router=uni), "power-of-two", seed=3).rand
    assert np.array_equal(r1, r4)


@pytest.mark.parametrize("policy", [s.name for s in registry.available()])
def test_every_policy_has_an_as_deployed_entry(policy):
    info = RouterInfo.as_deployed(policy)
    assert isinstance(info, RouterInfo)


def test_as_deployed_llmd_is_the_50ms_scrape():
    info = RouterInfo.as_deployed("llm-d")
    assert info.refresh_s == pytest.approx(0.05) and info.kv_refresh_s == pytest.approx(0.05)
    with pytest.raises(ValueError, match="no-such-policy"):
        RouterInfo.as_deployed("no-such-policy")


def test_cluster_config_rejects_a_non_router_info():
    with pytest.raises(ValueError, match="router"):
        small_cluster(router={"refresh_s": 1.0})


def _cli_args(*extra):
    import argparse

    from smetric.cli.simulate import register_simulate

    parser = argparse.ArgumentParser()
    register_simulate(parser)
    return parser.parse_args(["--trace", "x", "--model", "m", "--gpu", "g", *extra])


def test_cli_router_flags_build_the_router_info():
    from smetric.cli.simulate import _router_info

    assert _router_info(_cli_args("--policy", "llm-d")) == RouterInfo()
    info = _router_info(_cli_args("--policy", "llm_d", "--as-deployed", "--router-replicas", "4",
                                  "--replica-assignment", "session", "--kv-event-delay", "0"))
    assert info == RouterInfo(refresh_s=0.05, kv_refresh_s=0.05, kv_event_delay_s=0.0, router_replicas=4,
                              replica_assignment="session")
    assert _router_info(_cli_args("--policy", "smetric", "--router-refresh", "0.1")).refresh_s == 0.1


def test_cli_simulate_runs_with_every_router_flag(tmp_path, capsys):
    import json

    from smetric.cli import main

    rows = [(0, 2000, 20, [0, 1, 2, 3]), (30, 1800, 10, [0, 5, 6, 7]), (60, 2600, 30, [0, 1, 2, 3, 8, 9])]
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h})
                              for t, n, o, h in rows) + "\n")
    args = ["simulate", "--trace", str(path), "--model", "llama-3-8b", "--gpu", "a100", "--policy", "llm-d",
            "--instances", "2", "--router-refresh", "0.05", "--kv-refresh", "0.05", "--kv-event-delay", "0.05",
            "--router-replicas", "2", "--replica-assignment", "uniform", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["n_completed"] == 3
    assert main(args[:-1] + ["--router-replicas", "0"]) == 2
    assert "router_replicas" in capsys.readouterr().err
