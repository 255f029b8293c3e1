"""The routers of the published real-cluster benchmarks on hand-built states: KubeAI's CHWBL prefix hash,
``random`` (a Kubernetes Service) and SGLang v0.4's cache_aware v1 setting of ``sglang``.

Expected choices follow the sources' rules (cited in each policy module), worked out by hand in the comments.
"""

import numpy as np
import pytest

from smetric.policies import get
from smetric.policies.base import N_RAND, N_REQ, N_VIEW, R_INPUT_LEN, V_IN_FLIGHT, V_KV_CAPACITY, PolicyContext
from smetric.policies.chwbl import prefix_key
from smetric.policies.dispatch import route
from smetric.policies.ring import first_point, point_owner

CTX = PolicyContext(n_instances=4, n_sessions=8, block_size=16, max_num_seqs=64, kv_capacity_blocks=256,
                    l_eq=8000.0, prefill_rate=10000.0, ttft_base=1.0, ttft_per_1k=0.0625)


class Router:
    def __init__(self, name, **overrides):
        self.spec = get(name)
        self.params, self.state = self.spec.build(CTX, overrides)

    def __call__(self, in_flight, blocks, u=0.5):
        v = np.zeros((len(in_flight), N_VIEW))
        v[:, V_KV_CAPACITY] = 1000.0
        v[:, V_IN_FLIGHT] = in_flight
        r = np.zeros(N_REQ)
        r[R_INPUT_LEN] = CTX.block_size * len(blocks)
        return int(route(self.spec.pid, v, r, np.asarray(blocks, dtype=np.int64), self.params, self.state,
                         np.full(N_RAND, u)))


def ring_order(router, blocks):
    """Distinct owners clockwise from the key's first point (the ring is built by the first call)."""
    m = int(router.params[router.spec.slot("replication")]) * CTX.n_instances
    r = np.zeros(N_REQ)
    k = first_point(router.state, 1, m, prefix_key(np.asarray(blocks, dtype=np.int64), r, router.params))
    order = []
    for j in range(m):
        owner = point_owner(router.state, 1, m, (k + j) % m)
        if owner not in order:
            order.append(owner)
    return order


PROMPT = [11, 12, 13, 14]


def test_equal_keys_go_to_one_instance_until_the_bound_then_clockwise():
    # KubeAI @ a2349bfe: endpoint OK iff load + 1 <= (total + 1) / 4 * 1.25; all pass when nothing is in flight;
    # none passing -> the key's first endpoint. Same-key requests, none finishing:
    # 1: total 0 -> o0.  2: thr 0.625, every load+1 >= 1 fails -> default o0.  3: thr 0.9375 -> o0 again.
    # 4: thr 1.25: o0 4 > 1.25, o1 1 <= 1.25 -> o1.  5: thr 1.5625: o0 4, o1 2 fail; o2 1 passes -> o2.
    chwbl = Router("chwbl")
    load = np.zeros(4)
    chosen = []
    for _ in range(5):
        i = chwbl(load, PROMPT)
        chosen.append(i)
        load[i] += 1
    o = ring_order(chwbl, PROMPT)
    assert chosen == [o[0], o[0], o[0], o[1], o[2]]


def test_without_the_plus_one_the_bound_spreads_sooner():
    # after PR #528: load <= (total + 1) / 4 * 1.25.  1: o0.  2: o0 1 > 0.625, o1 0 -> o1.
    # 3: thr 0.9375: o0, o1 at 1 fail -> o2.  4: thr 1.25: o0 1 <= 1.25 -> o0.
    chwbl = Router("chwbl", load_check="load")
    load = np.zeros(4)
    chosen = []
    for _ in range(4):
        i = chwbl(load, PROMPT)
        chosen.append(i)
        load[i] += 1
    o = ring_order(chwbl, PROMPT)
    assert chosen == [o[0], o[1], o[2], o[0]]


def test_the_key_is_the_block_covering_the_first_100_characters():
    # 100 chars / 4 per token = 25 tokens -> the first two 16-token blocks; later blocks do not matter
    chwbl = Router("chwbl")
    idle = np.zeros(4)
    assert chwbl(idle, [1, 2, 3, 4]) == chwbl(idle, [1, 2, 99, 98, 97]) == ring_order(chwbl, [1, 2])[0]
    keys = {float(prefix_key(np.array([1, b], dtype=np.int64), np.zeros(N_REQ), chwbl.params)) for b in range(2, 40)}
    assert len(keys) == 38  # the second block is part of the key
    one_block = Router("chwbl", prefix_chars=64)  # 16 tokens: the first block alone
    assert len({one_block(idle, [1, b]) for b in range(2, 40)}) == 1


def test_no_endpoint_under_the_bound_falls_back_to_the_keys_first_endpoint():
    chwbl = Router("chwbl")
    chwbl(np.zeros(4), PROMPT)
    # loads 2 each, total 8: thr 9/4*1.25 = 2.8125 and 3 > 2.8125 everywhere
    assert chwbl(np.full(4, 2.0), PROMPT) == ring_order(chwbl, PROMPT)[0]


def test_only_the_endpoint_under_the_bound_is_taken_wherever_it_sits_on_the_ring():
    chwbl = Router("chwbl")
    chwbl(np.zeros(4), PROMPT)
    light = ring_order(chwbl, PROMPT)[2]
    load = np.full(4, 2.0)
    load[light] = 1.0  # total 7, thr 2.5: only 1 + 1 <= 2.5
    assert chwbl(load, PROMPT) == light


def test_ring_is_deterministic_and_replication_is_a_parameter():
    a, b = Router("chwbl"), Router("chwbl")
    idle = np.zeros(4)
    assert [a(idle, [k, k + 1]) for k in range(50)] == [b(idle, [k, k + 1]) for k in range(50)]
    with pytest.raises(ValueError, match="chwbl.replication"):
        get("chwbl").resolve({"replication": 1000})
    spread = Router("chwbl", replication=20)
    assert len({spread(idle, [k, k + 1]) for k in range(200)}) == 4


@pytest.mark.parametrize("u, expect", [(0.0, 0), (0.2499, 0), (0.25, 1), (0.6, 2), (0.9999, 3)])
def test_random_is_floor_of_u_times_n(u, expect):
    assert Router("random")(np.array([9.0, 0, 0, 0]), PROMPT, u) == expect


def test_random_is_uniform_and_seeded():
    def counts(seed):
        rng = np.random.default_rng(seed)
        rr = Router("random")
        picks = [rr(np.zeros(4), PROMPT, rng.uniform()) for _ in range(4000)]
        return np.bincount(picks, minlength=4)
    c = counts(7)
    assert np.array_equal(c, counts(7)) and not np.array_equal(c, counts(8))
    assert np.all(np.abs(c - 1000) < 100)  # 4000 draws: sd of a count is ~27


V1 = {"cache_threshold": 0.5, "balance_abs": 1e18, "miss_route": "smallest_tree"}


def test_sglang_v1_routes_by_match_above_threshold_else_smallest_tree_never_by_load():
    v1 = Router("sglang", **V1)
    busy = np.array([100.0, 0, 0, 0])
    a = list(range(10))
    assert v1(busy, a) == 0                                # empty trees: smallest = first; load ignored
    assert v1(busy, a) == 0                                # match 10/10 > 0.5
    assert v1(busy, a[:5] + [100, 101, 102, 103, 104]) == 1  # 5/10 = 0.5, not above: smallest tree (0 tokens)
    assert v1(busy, a[:6] + [200, 201, 202, 203]) == 0     # 6/10 on instance 0 (5/10 on 1) > 0.5
    # the tree sizes now are 160 + 64 (instance 0) and 160 (instance 1): a miss goes to instance 2
    assert v1(busy, [300 + k for k in range(10)]) == 2


def test_sglang_default_sends_the_same_miss_to_the_least_loaded():
    assert Router("sglang")(np.array([100.0, 0, 0, 0]), list(range(10))) == 1  # imbalance branch
    gateway_miss = Router("sglang", balance_abs=1e18)
    assert gateway_miss(np.array([3.0, 1, 0, 2]), list(range(10))) == 2       # miss -> argmin load
