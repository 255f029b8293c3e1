"""Session inference from chained block hashes, and session/turn/gap from parent links."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smetric.workload import TRACES, Workload, data_dir, infer_sessions, load_trace
from smetric.workload.sessions import arrival_gaps, chain_sessions, infer_parents


def _csr(prompts):
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in prompts])]).astype(np.int64)
    ids = np.concatenate([np.asarray(p, dtype=np.int64) for p in prompts]) if prompts else np.zeros(0, np.int64)
    return offsets, ids


def _parents(prompts, min_shared_blocks=3):
    return list(infer_parents(*_csr(prompts), min_shared_blocks=min_shared_blocks))


# ------------------------------------------------------------------------------ the rule, case by case
def test_follow_up_must_share_all_but_the_parents_last_block():
    assert _parents([[0, 1, 2, 3], [0, 1, 2, 9, 10]]) == [-1, 0]  # P's partial last block differs: still linked
    assert _parents([[0, 1, 2, 3], [0, 1, 5, 9, 10]]) == [-1, -1]  # diverges inside P's run
    assert _parents([[0, 1, 2, 3], [0, 1, 2]]) == [-1, 0]  # C may stop right after P's run
    assert _parents([[0, 1, 2, 3], [0, 1]]) == [-1, -1]  # too short to contain P's run


def test_shared_run_must_reach_the_minimum():
    assert _parents([[0, 1, 2], [0, 1, 7, 8]]) == [-1, -1]  # run of 2 blocks: a system prompt, not a session
    assert _parents([[0, 1, 2], [0, 1, 7, 8]], min_shared_blocks=2) == [-1, 0]
    with pytest.raises(ValueError, match="min_shared_blocks must be at least 1"):
        _parents([[0]], min_shared_blocks=0)


def test_deepest_match_wins_and_the_most_recent_breaks_ties():
    a = [0, 1, 2, 3]
    b = [0, 1, 2, 3, 4, 5]  # extends a
    c = [0, 1, 2, 3, 4, 5, 6, 7]  # matches a (run 3) and b (run 5): b is deeper
    assert _parents([a, b, c]) == [-1, 0, 1]
    twin1, twin2 = [0, 1, 2, 3, 8], [0, 1, 2, 3, 9]  # same run [0, 1, 2, 3]
    assert _parents([twin1, twin2, [0, 1, 2, 3, 4, 6]]) == [-1, 0, 1]  # twin2 follows twin1, the last one wins
    assert _parents([[0, 1, 2, 3], [0, 1, 2, 3]]) == [-1, 0]  # an identical resend follows the original


def test_a_request_never_matches_itself_or_a_later_one():
    assert _parents([[0, 1, 2, 3, 4, 5], [0, 1, 2, 3]]) == [-1, -1]
    assert _parents([[5, 6, 7, 8]]) == [-1]
    assert _parents([]) == []


def _brute_force_parents(prompts, min_shared=3):
    """The rule as written: compare whole prefixes against every earlier request."""
    parents = []
    for c, cur in enumerate(prompts):
        best, best_run = -1, 0
        for p in range(c):
            run = len(prompts[p]) - 1
            if run >= min_shared and len(cur) >= run and cur[:run] == prompts[p][:run] and run >= best_run:
                best, best_run = p, run
        parents.append(best)
    return parents


@st.composite
def chained_prompts(draw):
    """Token sequences over a tiny alphabet (so prefixes collide), turned into chained block ids."""
    n = draw(st.integers(0, 30))
    prefix_id: dict[tuple, int] = {}
    prompts, pool = [], []
    for _ in range(n):
        base = draw(st.sampled_from(pool)) if pool and draw(st.booleans()) else []
        cut = draw(st.integers(0, len(base)))
        blocks = base[:cut] + draw(st.lists(st.integers(0, 2), max_size=8))
        pool.append(blocks)
        prompts.append([prefix_id.setdefault(tuple(blocks[:j + 1]), len(prefix_id)) for j in range(len(blocks))])
    return prompts


@settings(max_examples=150, deadline=None)
@given(prompts=chained_prompts(), min_shared=st.integers(1, 4))
def test_vectorised_inference_equals_the_rule_applied_by_brute_force(prompts, min_shared):
    assert _parents(prompts, min_shared) == _brute_force_parents(prompts, min_shared)


# ------------------------------------------------------------------------------ chains -> sessions
def test_chain_sessions_numbers_sessions_by_root_and_counts_turns():
    session, turn = chain_sessions(np.array([-1, -1, 0, 2, 1, -1]))
    assert list(session) == [0, 1, 0, 0, 1, 2]
    assert list(turn) == [0, 0, 1, 2, 1, 0]
    session, turn = chain_sessions(np.array([-1, 0, -1]), root_turn=np.array([4, 0, 2]))
    assert list(turn) == [4, 5, 2]
    with pytest.raises(ValueError, match="parent of row 1 is 1"):
        chain_sessions(np.array([-1, 1]))


@st.composite
def parent_links(draw):
    n = draw(st.integers(0, 60))
    return [draw(st.integers(-1, i - 1)) for i in range(n)], draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))


@settings(max_examples=100, deadline=None)
@given(links=parent_links())
def test_chain_sessions_equals_walking_each_chain(links):
    parent, root_turn = links
    session, turn = chain_sessions(np.array(parent, dtype=np.int64), np.array(root_turn, dtype=np.int64))
    roots = [i for i, p in enumerate(parent) if p < 0]
    for i in range(len(parent)):
        r, steps = i, 0
        while parent[r] >= 0:
            r, steps = parent[r], steps + 1
        assert session[i] == roots.index(r)
        assert turn[i] == root_turn[r] + steps


def test_arrival_gaps_are_arrival_to_arrival_from_the_parent():
    np.testing.assert_allclose(arrival_gaps(np.array([0.0, 1.0, 4.5, 10.0]), np.array([-1, -1, 0, 2])),
                               [0.0, 0.0, 4.5, 5.5])


def test_infer_sessions_replaces_the_session_columns_of_a_workload():
    prompts = [[0, 1, 2, 3], [0, 7, 8], [0, 1, 2, 4, 5]]
    offsets, ids = _csr(prompts)
    w = Workload(arrival=[0.0, 2.0, 5.0], input_len=[4 * 16, 3 * 16, 5 * 16], output_len=[1, 1, 1],
                 session=[0, 1, 2], turn=[0, 0, 0], parent=[-1, -1, -1], gap=[0, 0, 0],
                 block_offsets=offsets, block_ids=ids, block_size=16)
    got = infer_sessions(w)
    assert list(got.parent) == [-1, -1, 0] and list(got.turn) == [0, 0, 1]
    assert list(got.session) == [0, 1, 0] and list(got.gap) == [0.0, 0.0, 5.0]
    np.testing.assert_array_equal(got.block_ids, w.block_ids)


# ------------------------------------------------------------------------------ the shipped traces
@pytest.mark.parametrize("name", ["mooncake-conversation", "mooncake-synthetic"])
def test_inference_reproduces_the_shipped_reference_sessions_exactly(name):
    w = load_trace(name)
    ref = pd.read_csv(data_dir() / "traces" / TRACES[name].inferred_sessions_file)
    assert list(ref["row"]) == list(range(len(w)))
    np.testing.assert_array_equal(w.parent, ref["inferred_parent_row"])
    np.testing.assert_array_equal(w.session, ref["inferred_session"])
    np.testing.assert_array_equal(w.turn + 1, ref["inferred_turn"])  # the reference counts turns from 1


def _pct(values, q):
    return float(np.percentile(values, q))  # linear interpolation, as the published trace statistics


@pytest.mark.parametrize("name, sessions, mean, p90, p99, longest, multi_sessions, multi_requests, "
                         "turn_gap, parent_gap", [
    ("mooncake-conversation", 8469, 1.42, 2, 6, 43, 0.2129, 0.4459, (215.53, 126.0, 3.001), (218.9, 126.0, 5.999)),
    ("mooncake-synthetic", 2552, 1.56, 2, 10.49, 24, 0.116, 0.435, (95.44, 48.21, 0.003), (109.06, 52.66, 0.003)),
])
def test_inferred_sessions_match_the_published_statistics(name, sessions, mean, p90, p99, longest,
                                                         multi_sessions, multi_requests, turn_gap, parent_gap):
    w = load_trace(name)
    sizes = np.bincount(w.session)
    assert w.n_sessions == sessions
    assert round(sizes.mean(), 2) == mean and np.median(sizes) == 1
    assert round(_pct(sizes, 90), 2) == p90 and round(_pct(sizes, 99), 2) == p99
    assert sizes.max() == longest
    assert round(np.mean(sizes > 1), 4) == multi_sessions
    assert round(np.mean(sizes[w.session] > 1), 4) == multi_requests
    # Workload.gap runs from the parent's arrival ("child_minus_parent_arrival_s" in stats.json) ...
    gaps = w.gap[w.parent >= 0]
    assert (round(gaps.mean(), 2), round(_pct(gaps, 50), 2), round(gaps.min(), 3)) == parent_gap
    # ... and the README's inter-turn gap between consecutive requests of a session is smaller
    # where a session branches (two follow-ups of one parent)
    order = np.lexsort((w.arrival, w.session))
    same = w.session[order][1:] == w.session[order][:-1]
    consecutive = np.diff(w.arrival[order])[same]
    assert (round(consecutive.mean(), 2), round(_pct(consecutive, 50), 2), round(consecutive.min(), 3)) == turn_gap
