"""The numba cache structures behave like a dict and an ordered list."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from smetric.cluster.kvcache import h_delete, h_find, h_insert, lru_push_tail, lru_unlink, new_table, table_size


def test_table_size_keeps_load_at_most_one_half():
    for cap in (1, 2, 3, 100, 1000, 4097):
        size, shift = table_size(cap)
        assert size >= 2 * cap and size & (size - 1) == 0 and shift == 64 - size.bit_length() + 1


UNIVERSE = np.random.default_rng(0).integers(0, 2**50, 61)  # scattered ids: probe chains and wrap-around


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 60)), max_size=300))
def test_hash_row_matches_a_dict(ops):
    keys, vals, mask, shift = new_table(1, 40)
    k, v = keys[0], vals[0]
    model = {}
    for insert, idx in ops:
        key = int(UNIVERSE[idx])
        if insert and key not in model and len(model) < 40:
            h_insert(k, v, shift, mask, key, idx)
            model[key] = idx
        elif not insert and key in model:
            h_delete(k, v, shift, mask, key)
            del model[key]
        for probe in UNIVERSE:
            assert h_find(k, v, shift, mask, int(probe)) == model.get(int(probe), -1)
    assert (k >= 0).sum() == len(model)


def test_colliding_keys_survive_deletions():
    """Keys sharing one home slot: deleting from the middle of the probe chain keeps the rest findable."""
    keys, vals, mask, shift = new_table(1, 8)
    k, v = keys[0], vals[0]
    homes = {}
    for x in range(20000):  # home slot = Fibonacci hash (see kvcache._home)
        homes.setdefault(((x * 11400714819323198485) % 2**64) >> shift, []).append(x)
    chain = max(homes.values(), key=len)[:6]
    assert len(chain) == 6
    for x in chain:
        h_insert(k, v, shift, mask, x, x + 1)
    for gone in chain[::2]:
        h_delete(k, v, shift, mask, gone)
        assert h_find(k, v, shift, mask, gone) == -1
    for x in chain[1::2]:
        assert h_find(k, v, shift, mask, x) == x + 1


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=100))
def test_lru_list_matches_an_ordered_list(ops):
    prev = np.full(10, -1, dtype=np.int64)
    nxt = np.full(10, -1, dtype=np.int64)
    ends = np.array([-1, -1], dtype=np.int64)
    model = []
    for push, slot in ops:
        if push and slot not in model:
            lru_push_tail(prev, nxt, ends, slot)
            model.append(slot)
        elif not push and slot in model:
            lru_unlink(prev, nxt, ends, slot)
            model.remove(slot)
        walk, s = [], ends[0]
        while s >= 0:
            walk.append(int(s))
            s = nxt[s]
        assert walk == model
        assert ends[1] == (model[-1] if model else -1)
