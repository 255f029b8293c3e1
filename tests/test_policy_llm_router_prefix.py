"""llm-router-prefix (zxuhan/llm-router ``prefixaware``) on hand-built states, and the sweep's load-only baselines.

Expected choices follow the router's published rule (``smetric/policies/llm_router_prefix.py``): longest
router-side match of *dispatched* prompts, fewest in flight among equals, random among exact ties, a 2-chunk
minimum (least in flight below it) and a saturation valve at 4 in flight.
"""

import numpy as np
import pytest

from smetric.policies import get
from smetric.policies.base import N_RAND, N_REQ, N_VIEW, R_INPUT_LEN, V_IN_FLIGHT, V_KV_CAPACITY, PolicyContext
from smetric.policies.dispatch import route

B = 16
CTX = PolicyContext(n_instances=4, n_sessions=8, block_size=B, max_num_seqs=64, kv_capacity_blocks=256,
                    l_eq=8000.0, prefill_rate=10000.0, ttft_base=1.0, ttft_per_1k=0.0625)
SYSTEM = np.arange(1, 191)          # a shared 190-block system prefix
PROMPT = np.concatenate([SYSTEM, [1001, 1002, 1003]])


class Router:
    """One llm-router-prefix (or baseline) instance for a run: its parameter vector and persistent state."""

    def __init__(self, name="llm-router-prefix", **overrides):
        self.spec = get(name)
        self.params, self.state = self.spec.build(CTX, overrides)

    def __call__(self, in_flight, blocks=PROMPT, u=(0.5, 0.5)):
        v = np.zeros((len(in_flight), N_VIEW))
        v[:, V_IN_FLIGHT], v[:, V_KV_CAPACITY] = in_flight, 1000.0
        req = np.zeros(N_REQ)
        req[R_INPUT_LEN] = len(blocks) * B
        rand = np.zeros(N_RAND)
        rand[:2] = u
        return int(route(self.spec.pid, v, req, np.asarray(blocks, dtype=np.int64), self.params, self.state, rand))

    def place(self, blocks, instance, n=4):
        """Record ``blocks`` under ``instance`` through a cold-path decision (it is the only idle instance)."""
        busy = np.full(n, 9.0)
        busy[instance] = 0.0
        assert self(busy, blocks) == instance


def own(session, turns=1):
    """A session's prompt: the system prefix, then ``turns`` blocks of its own."""
    return np.concatenate([SYSTEM, 5000 + 100 * session + np.arange(turns)])


def test_cold_router_falls_back_to_least_in_flight_lowest_index():
    r = Router()
    assert r([2, 1, 1, 3]) == 1          # no tree holds anything: match 0 < 2 -> least loaded, ties lowest index
    assert r([0, 0, 0, 0], blocks=np.arange(7000, 7300)) == 0


def test_longest_match_wins_over_load_below_saturation():
    r = Router()
    r.place(own(0, 3), 2)
    r.place(own(1), 0)
    # session 0's next turn: 193 blocks match on instance 2, 190 (the system prefix) on 0, nothing on 1 and 3
    assert r([0, 0, 3, 0], blocks=own(0, 4)) == 2
    # another session's first turn: instances 0 and 2 both match the 190 system blocks; fewer in flight wins
    assert r([2, 0, 1, 0], blocks=own(7)) == 2
    assert r([1, 0, 2, 0], blocks=own(8)) == 0


def test_min_match_is_two_chunks():
    r = Router()
    r.place(np.array([1, 2, 3, 4]), 3)
    assert r([1, 0, 1, 5], blocks=np.array([1, 90, 91])) == 1      # 1 shared block < 2: least in flight
    assert r([1, 0, 1, 2], blocks=np.array([1, 2, 92])) == 3       # 2 shared blocks: pinned despite its load
    loose = Router(min_match=1)
    loose.place(np.array([1, 2, 3, 4]), 3)
    assert loose([1, 0, 1, 2], blocks=np.array([1, 90, 91])) == 3


def test_exact_ties_are_random_from_the_policy_stream():
    r = Router()
    for i in range(4):
        r.place(own(i), i)
    # new sessions: their 190 system blocks match everywhere (each is then recorded, so each call uses a new one)
    assert r([1, 0, 0, 1], blocks=own(9), u=(0.0, 0.5)) == 1         # two tied on (match, in flight): u picks
    assert r([1, 0, 0, 1], blocks=own(10), u=(0.99, 0.5)) == 2
    picks = [r([0, 0, 0, 0], blocks=own(11 + k), u=(u, 0.5)) for k, u in enumerate((0.1, 0.3, 0.6, 0.9))]
    assert picks == [0, 1, 2, 3]


def history():
    """Session 0's history on instance 0, the system prefix alone on 1 and 2, nothing on 3."""
    r = Router()
    for session, turns, instance in ((0, 3, 0), (1, 1, 1), (2, 1, 2)):
        r.place(own(session, turns), instance)
    return r


@pytest.mark.parametrize(("in_flight", "u", "chosen"), [
    # best (instance 0, 193 blocks) has 4 in flight: the next in (match desc, in flight asc) order with match >= 2
    # and < 4 in flight is instance 2 (190 blocks, 1 in flight) before 1 (190, 3); 3 holds nothing (match 0)
    ([4, 3, 1, 0], 0.5, 2),
    ([4, 4, 3, 0], 0.5, 2),           # 1 is saturated too
    ([4, 2, 2, 0], 0.0, 1),           # tied spill targets: the second draw picks
    ([4, 2, 2, 0], 0.99, 2),
    ([5, 4, 6, 2], 0.5, 3),           # no unsaturated match: least in flight
    ([3, 0, 0, 0], 0.5, 0),           # below saturation the best match stays
])
def test_saturated_best_spills_to_the_next_matching_candidate(in_flight, u, chosen):
    assert history()(in_flight, blocks=own(0, 4), u=(0.5, u)) == chosen


def test_saturation_zero_disables_the_valve():
    r = Router(saturation=0)
    r.place(own(0, 3), 0)
    assert r([9, 0, 0, 0], blocks=own(0, 4)) == 0                         # always the best match
    assert Router(saturation=0)([9, 0, 0, 0], blocks=own(5)) == 1         # a cold router still falls back


def test_prompt_is_recorded_under_whatever_chose_it():
    r = Router()
    assert r([1, 1, 0, 1], blocks=own(3)) == 2                       # cold: least loaded, then recorded there
    assert r([0, 0, 3, 0], blocks=own(3, 2)) == 2                    # the next turn follows it (match 190 + 1)
    spilled = r([0, 1, 4, 1], blocks=own(3, 3))                      # saturated: spills to 0 (least in flight
    assert spilled == 0                                              # among the non-matching ones)
    assert r([0, 0, 4, 0], blocks=own(3, 4)) == 0                    # the spill's record is the longest now


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="llm-router-prefix.saturation"):
        get("llm-router-prefix").resolve({"saturation": 2.5})
    with pytest.raises(ValueError, match="llm-router-prefix.min_match"):
        get("llm-router-prefix").resolve({"min_match": -1})


def test_the_sweeps_load_only_baselines():
    rr = Router("round-robin")
    assert [rr([5, 0, 0, 0]) for _ in range(6)] == [0, 1, 2, 3, 0, 1]   # a global counter from index 0
    ll = Router("least-load", signal="in_flight")
    assert ll([2, 1, 1, 3]) == 1 and ll([0, 0, 0, 0]) == 0              # fewest in flight, ties lowest index
    rnd = Router("random")
    assert [rnd([0, 0, 0, 0], u=(u, 0.5)) for u in (0.0, 0.26, 0.51, 0.99)] == [0, 1, 2, 3]
