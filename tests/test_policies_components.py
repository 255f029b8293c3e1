"""Building blocks of the policies: router-side prefix index, sliding windows, hashing, selection helpers."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smetric.policies.base import PolicyContext
from smetric.policies.hashing import hash52
from smetric.policies.router_index import INDEX_FACTOR, index_insert, index_match, index_size
from smetric.policies.selection import argmin_rotating, minmax, pick_tied, sample_weighted
from smetric.policies.windows import N_BUCKETS, window_add, window_size, window_sums

CTX = PolicyContext(n_instances=3, n_sessions=1, block_size=16, max_num_seqs=8, kv_capacity_blocks=100,
                    l_eq=8000.0, prefill_rate=1e4, ttft_base=1.0, ttft_per_1k=0.0625)


def fresh_index(ctx=CTX):
    return np.zeros(index_size(ctx))


def test_index_size_is_a_power_of_two_slots_covering_the_cluster():
    size = index_size(CTX)
    slots = size // 2
    assert slots & (slots - 1) == 0 and slots >= INDEX_FACTOR * 3 * 100


def test_index_matches_leading_blocks_per_instance():
    state = fresh_index()
    a = np.arange(10, dtype=np.int64)
    index_insert(state, 0, state.size, a, 1, 0.0)
    b = np.concatenate([a[:4], np.arange(100, 106)])
    index_insert(state, 0, state.size, b, 2, 1.0)
    query = np.concatenate([a[:7], np.arange(500, 503)])
    assert list(index_match(state, 0, state.size, query, 3, 2.0, 0.0, 0)) == [0, 7, 4]
    # the match stops at the first block the instance was not sent (chained ids: nothing after counts)
    query = np.concatenate([a[:2], np.arange(700, 708)])
    assert list(index_match(state, 0, state.size, query, 3, 2.0, 0.0, 0)) == [0, 2, 2]
    # max_blocks caps the walk
    assert list(index_match(state, 0, state.size, a, 3, 2.0, 0.0, 5)) == [0, 5, 4]


def test_index_ttl_forgets_old_inserts_and_refresh_renews():
    state = fresh_index()
    a = np.arange(20, dtype=np.int64)
    index_insert(state, 0, state.size, a, 0, 0.0)
    index_insert(state, 0, state.size, a[:5], 0, 90.0)       # refresh the first five blocks only
    assert index_match(state, 0, state.size, a, 1, 100.0, 120.0, 0)[0] == 20
    assert index_match(state, 0, state.size, a, 1, 150.0, 120.0, 0)[0] == 5   # blocks 5.. expired at 120 s
    assert index_match(state, 0, state.size, a, 1, 250.0, 120.0, 0)[0] == 0
    assert index_match(state, 0, state.size, a, 1, 1e9, 0.0, 0)[0] == 20      # ttl 0: never expires


def test_index_overflow_replaces_least_recent_entries():
    ctx = PolicyContext(**{**CTX.__dict__, "n_instances": 1, "kv_capacity_blocks": 1})
    state = fresh_index(ctx)            # 1024 slots
    for k in range(40):                 # 40 prompts of 64 blocks: 2560 blocks into 1024 slots
        index_insert(state, 0, state.size, np.arange(64, dtype=np.int64) + 10_000 * k, 0, float(k))
    newest = index_match(state, 0, state.size, np.arange(64, dtype=np.int64) + 390_000, 1, 40.0, 0.0, 0)[0]
    oldest = index_match(state, 0, state.size, np.arange(64, dtype=np.int64), 1, 40.0, 0.0, 0)[0]
    assert newest == 64 and oldest < 64
    assert np.count_nonzero(state[0::2]) == state.size // 2   # every slot used


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 30), st.integers(0, 3)), min_size=1, max_size=12))
def test_index_match_equals_brute_force_without_overflow(inserts):
    """Prompts are prefixes of one of four chains; the match is the longest prefix sent to the instance."""
    state = fresh_index()
    sent = {}
    for t, (inst, length, chain) in enumerate(inserts):
        blocks = np.arange(length, dtype=np.int64) + 1000 * chain
        index_insert(state, 0, state.size, blocks, inst, float(t))
        sent[(inst, chain)] = max(sent.get((inst, chain), 0), length)
    for chain in range(4):
        query = np.arange(25, dtype=np.int64) + 1000 * chain
        got = index_match(state, 0, state.size, query, 3, 100.0, 0.0, 0)
        assert list(got) == [min(sent.get((i, chain), 0), 25) for i in range(3)]


def test_hash52_is_exact_in_float64_and_separates_salts():
    values = [hash52(v, s) for v in (-(2 ** 62), -1, 0, 1, 2 ** 62) for s in (0, 1, 2)]
    assert all(1.0 <= h <= 2.0 ** 52 and float(int(h)) == h for h in values)
    assert len(set(values)) == len(values)


def test_window_sums_cover_the_last_width_seconds():
    state = np.zeros(window_size(2))
    window_add(state, 0, 2, 60.0, 0.0, 0, 1.0)
    window_add(state, 0, 2, 60.0, 30.0, 1, 2.0)
    window_add(state, 0, 2, 60.0, 59.0, 0, 4.0)
    assert list(window_sums(state, 0, 2, 60.0, 59.5)) == [5.0, 2.0]
    bucket = 60.0 / N_BUCKETS
    assert list(window_sums(state, 0, 2, 60.0, 60.0 + bucket)) == [4.0, 2.0]   # t=0 dropped
    assert list(window_sums(state, 0, 2, 60.0, 95.0)) == [4.0, 0.0]
    assert list(window_sums(state, 0, 2, 60.0, 200.0)) == [0.0, 0.0]
    window_add(state, 0, 2, 60.0, 200.0, 1, 3.0)                              # bucket reuse clears stale sums
    assert list(window_sums(state, 0, 2, 60.0, 200.0)) == [0.0, 3.0]


def test_selection_helpers():
    assert argmin_rotating(np.array([1.0, 0.0, 5.0, 0.0]), 2) == 3
    assert argmin_rotating(np.array([1.0, 0.0, 5.0, 0.0]), 0) == 1
    assert pick_tied(np.array([False, True, False, True]), 0.49) == 1
    assert pick_tied(np.array([False, True, False, True]), 0.51) == 3
    assert pick_tied(np.zeros(3, dtype=np.bool_), 0.5) == -1
    assert list(minmax(np.array([2.0, 4.0, 3.0]))) == [0.0, 1.0, 0.5]
    assert list(minmax(np.array([2.0, 2.0]))) == [0.0, 0.0]
    assert sample_weighted(np.array([0.0, 0.0, 0.0]), 0.7) == 2
    assert sample_weighted(np.array([0.0, 3.0, 0.0, 1.0]), 0.0) == 1


def test_sample_weighted_frequencies_follow_weights():
    w = np.array([1.0, 0.0, 3.0, 6.0])
    u = np.random.default_rng(5).uniform(size=20000)
    counts = np.bincount([sample_weighted(w, x) for x in u], minlength=4) / u.size
    assert counts[1] == 0.0
    assert counts == pytest.approx([0.1, 0.0, 0.3, 0.6], abs=0.015)


def test_cache_guard_flushes_when_dependencies_change(tmp_path, monkeypatch):
    import importlib

    from smetric.numba_cache import refresh_module

    (tmp_path / "guarded_mod.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    dep = tmp_path / "dep.py"
    dep.write_text("A = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("guarded_mod")
    assert mod.f(1) == 2                                   # compiled and cached
    index = next(Path(mod.f._cache.cache_path).glob("guarded_mod.f-*.nbi"))
    assert refresh_module(mod, [dep]) is True             # first check: no stamp yet
    assert refresh_module(mod, [dep]) is False            # unchanged
    empty = index.stat().st_size
    assert mod.f(1.5) == 2.5                               # a new signature is cached again
    size = index.stat().st_size
    assert size > empty
    dep.write_text("A = 2\n")
    assert refresh_module(mod, [dep]) is True             # changed: the index is emptied
    assert index.stat().st_size == empty
