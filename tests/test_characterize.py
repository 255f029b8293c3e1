"""Characterization: the published Mooncake statistics, and the numba kernels against plain-Python references."""

from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smetric.workload import Workload, load_trace
from smetric.workload.characterize import characterize, prefix_reuse, session_token_lorenz, session_tokens


@pytest.fixture(scope="module")
def conversation():
    return load_trace("mooncake-conversation")


@pytest.fixture(scope="module")
def conversation_stats(conversation):
    return characterize(conversation)


# ------------------------------------------------------------------ published numbers (Mooncake FAST'25 traces)
def test_conversation_reuse_matches_published(conversation_stats):
    s = conversation_stats
    assert s["reuse_ratio"] == pytest.approx(0.3736, abs=5e-4)
    for cap, published in {1000: 0.0454, 4000: 0.0874, 16000: 0.2678, 64000: 0.3663}.items():
        assert s[f"lru_reuse_ratio_{cap}"] == pytest.approx(published, abs=5e-4)
    assert s["session_reuse_ratio"] == pytest.approx(0.3187, abs=5e-4)  # inferred sessions
    assert s["intra_session_reuse_share"] == pytest.approx(0.3187 / 0.3736, abs=2e-3)


def test_conversation_reuse_distance_and_sessions_match_published(conversation_stats):
    s = conversation_stats
    assert s["reuse_distance_p50"] == pytest.approx(123.0, abs=0.5)
    assert s["reuse_distance_p90"] == pytest.approx(483.0, abs=0.5)
    assert s["reuse_distance_p99"] == pytest.approx(1476.87, abs=0.5)
    assert s["n_sessions"] == 8469
    assert s["turns_mean"] == pytest.approx(1.42, abs=0.005)
    assert (s["turns_p90"], s["turns_p99"], s["turns_max"]) == (2, 6, 43)
    # 21.3 % of 8,469 sessions are multi-turn and hold 44.6 % of the 12,031 requests: the rest are roots
    assert s["follow_up_share"] == pytest.approx((12031 - 8469) / 12031, abs=1e-9)
    assert s["multi_turn_session_share"] == pytest.approx(0.2129, abs=5e-4)
    assert s["turn_interval_p50"] == pytest.approx(126.0, abs=0.5)
    assert (s["input_mean"], s["input_p50"], s["input_p90"]) == pytest.approx((12035.06, 6909, 27367), abs=0.5)
    assert (s["output_mean"], s["output_p50"]) == pytest.approx((342.62, 350), abs=0.01)


def test_synthetic_trace_matches_published():
    s = characterize(load_trace("mooncake-synthetic"))
    assert s["reuse_ratio"] == pytest.approx(0.6512, abs=5e-4)
    for cap, published in {1000: 0.0840, 4000: 0.2345, 16000: 0.5394, 64000: 0.6512}.items():
        assert s[f"lru_reuse_ratio_{cap}"] == pytest.approx(published, abs=5e-4)
    assert s["session_reuse_ratio"] == pytest.approx(0.5095, abs=5e-4)
    assert s["reuse_distance_p50"] == pytest.approx(63.55, abs=0.05)
    assert s["n_sessions"] == 2552


# ------------------------------------------------------------------ hand-checked small cases
def _workload(prompts, arrival=None, session=None, input_len=None, block_size=4, turn=None):
    n = len(prompts)
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in prompts])])
    ids = np.concatenate([np.asarray(p, dtype=np.int64) for p in prompts]) if n else np.zeros(0, np.int64)
    return Workload(
        arrival=np.arange(n, dtype=float) if arrival is None else arrival,
        input_len=[len(p) * block_size for p in prompts] if input_len is None else input_len,
        output_len=np.ones(n, dtype=np.int64), session=np.arange(n) if session is None else session,
        turn=np.zeros(n, dtype=np.int64) if turn is None else turn, parent=np.full(n, -1), gap=np.zeros(n),
        block_offsets=offsets, block_ids=ids, block_size=block_size,
    )


def test_hand_checked_reuse():
    # request 1 shares 2 leading blocks with request 0, request 2 shares 1 with request 0 and is in session 0
    w = _workload([[1, 2, 3], [1, 2, 9, 8], [1, 7]], arrival=np.array([0.0, 10.0, 25.0]),
                  session=np.array([0, 1, 0]), input_len=np.array([12, 15, 6]))
    r = prefix_reuse(w, lru_blocks=(2,))
    assert r["matched_blocks"].tolist() == [0, 2, 1]
    assert r["hit_tokens"].tolist() == [0, 8, 4]
    assert r["session_hit_tokens"].tolist() == [0, 0, 4]
    assert r["reuse_distance"].iloc[1] == 10.0 and r["reuse_distance"].iloc[2] == 15.0
    assert np.isnan(r["reuse_distance"].iloc[0])
    # LRU(2): after request 0 the cache holds {2, 3}: block 1 (looked up first) is gone -> no hit;
    # after request 1 it holds {9, 8} -> request 2 misses too
    assert r["lru_hit_tokens_2"].tolist() == [0, 0, 0]
    s = characterize(w, lru_blocks=(), min_match_blocks=1)
    assert s["reuse_ratio"] == pytest.approx(12 / 33)
    assert s["intra_session_reuse_share"] == pytest.approx(4 / 12)
    assert s["reuse_within_100s"] == 1.0


def test_hit_is_capped_by_input_length():
    # the second prompt is identical but its last block is partial: hit = min(2*4, 7) = 7
    w = _workload([[5, 6], [5, 6]], input_len=np.array([7, 7]))
    assert prefix_reuse(w)["hit_tokens"].tolist() == [0, 7]


def test_large_sparse_ids_are_remapped():
    w = _workload([[10**15, 3 * 10**15], [10**15, 7]])
    assert prefix_reuse(w)["matched_blocks"].tolist() == [0, 1]


def test_bad_arguments_fail_loudly():
    w = _workload([[1, 2]])
    with pytest.raises(ValueError, match="lru_blocks"):
        prefix_reuse(w, lru_blocks=(0,))
    with pytest.raises(ValueError, match="min_match_blocks"):
        characterize(w, min_match_blocks=0)
    with pytest.raises(ValueError, match="empty"):
        characterize(_workload([]))
    with pytest.raises(ValueError, match="lru_hit_tokens_3"):
        characterize(w, lru_blocks=(3,), reuse=prefix_reuse(w))


# ------------------------------------------------------------------ kernels vs plain-Python references
def _reference(prompts, session, capacity):
    seen, seen_in = set(), set()
    lru: OrderedDict = OrderedDict()
    glob, sess, lru_hits = [], [], []
    for p, s in zip(prompts, session):
        glob.append(next((j for j, b in enumerate(p) if b not in seen), len(p)))
        sess.append(next((j for j, b in enumerate(p) if (s, b) not in seen_in), len(p)))
        lru_hits.append(next((j for j, b in enumerate(p) if b not in lru), len(p)))
        for b in p:
            seen.add(b)
            seen_in.add((s, b))
            lru.pop(b, None)
            lru[b] = True
            if len(lru) > capacity:
                lru.popitem(last=False)
    return glob, sess, lru_hits


@st.composite
def _chained_prompts(draw):
    """Prompts that walk a small random prefix tree, so ids are chained like real hashes."""
    n = draw(st.integers(1, 25))
    children: dict = {}
    prompts = []
    for _ in range(n):
        node, prompt = -1, []
        for _ in range(draw(st.integers(1, 6))):
            branch = draw(st.integers(0, 2))
            key = (node, branch)
            if key not in children:
                children[key] = len(children)
            node = children[key]
            prompt.append(node)
        prompts.append(prompt)
    session = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return prompts, session, draw(st.integers(1, 8))


@settings(max_examples=150, deadline=None)
@given(_chained_prompts())
def test_kernels_match_reference(case):
    prompts, session, capacity = case
    w = _workload(prompts, session=np.asarray(session))
    r = prefix_reuse(w, lru_blocks=(capacity,))
    glob, sess, lru_hits = _reference(prompts, session, capacity)
    assert r["matched_blocks"].tolist() == glob
    assert (r["session_hit_tokens"] // 4).tolist() == sess
    assert (r[f"lru_hit_tokens_{capacity}"] // 4).tolist() == lru_hits


# ------------------------------------------------------------------ session skew
def test_lorenz_curve_and_top_share():
    # four sessions carrying 2, 2, 3 and 13 tokens (input + one output token per request)
    prompts = [[1], [2], [3, 4], [5, 6, 7, 8, 9, 10], [11, 12, 13, 14, 15]]
    w = _workload(prompts, session=np.array([0, 1, 2, 3, 3]), block_size=1)
    assert session_tokens(w).tolist() == [2, 2, 3, 13]
    curve = session_token_lorenz(w, n_points=5)
    assert curve["session_share"].tolist() == pytest.approx([0, 0.25, 0.5, 0.75, 1])
    assert curve["token_share"].tolist() == pytest.approx([0, 13 / 20, 16 / 20, 18 / 20, 1])
    assert characterize(w, lru_blocks=())["top25_session_token_share"] == pytest.approx(13 / 20)
