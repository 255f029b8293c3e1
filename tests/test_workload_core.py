"""The columnar Workload: validation, slicing, coarsening, load scaling."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smetric.workload import Workload, WorkloadError


def _chain_workload(lens=(600, 1100, 1700), block_size=256, arrivals=None, output=10):
    """One session whose turns extend each other's prompts (shared chained block ids)."""
    n = len(lens)
    arrivals = np.arange(n, dtype=float) if arrivals is None else arrivals
    ids, offsets = [], [0]
    for k, length in enumerate(lens):
        nb = -(-length // block_size)
        # full blocks are shared with the previous prompt; the trailing partial block is unique
        row = [j if (j + 1) * block_size <= length else 1000 * (k + 1) + j for j in range(nb)]
        ids += row
        offsets.append(len(ids))
    return Workload(arrival=arrivals, input_len=list(lens), output_len=[output] * n, session=[7] * n,
                    turn=list(range(n)), parent=[-1] + list(range(n - 1)), gap=[0.0] + [1.0] * (n - 1),
                    block_offsets=offsets, block_ids=ids, block_size=block_size)


def test_valid_workload_fields_and_history():
    w = _chain_workload()
    assert len(w) == 3 and w.n_sessions == 1
    assert list(w.n_blocks) == [3, 5, 7]
    assert list(w.history_tokens()) == [0, 610, 1110]
    assert np.all(w.priority == 1.0)
    assert list(w.to_frame().columns)[:3] == ["arrival", "input_len", "output_len"]


@pytest.mark.parametrize("change, message", [
    (dict(arrival=[1.0, 0.0, 2.0]), "arrival is not sorted at row 1"),
    (dict(input_len=[600, -1, 1700]), "input_len is negative at row 1"),
    (dict(turn=[0, 2, 3]), "turn of row 1 is 2"),
    (dict(parent=[-1, 2, 1]), "parent of row 1 is 2"),
    (dict(session=[7, 8, 8]), "row 1 is in session 8"),
    (dict(gap=[0.0, -1.0, 1.0]), "gap is negative"),
    (dict(block_size=0), "block_size must be a positive integer"),
    (dict(join_to=[1, 0, -1]), "join_to of row 1 is 0"),
    (dict(join_to=[-1, -1, 3]), "join_to of row 2 is 3"),
])
def test_invalid_workloads_name_the_problem(change, message):
    w = _chain_workload()
    kwargs = dict(arrival=w.arrival, input_len=w.input_len, output_len=w.output_len, session=w.session,
                  turn=w.turn, parent=w.parent, gap=w.gap, block_offsets=w.block_offsets,
                  block_ids=w.block_ids, block_size=w.block_size)
    kwargs.update(change)
    with pytest.raises(WorkloadError, match=message):
        Workload(**kwargs)


def test_block_count_must_match_prompt_length():
    with pytest.raises(WorkloadError, match="row 0 has 1 blocks but input_len 600"):
        Workload(arrival=[0.0], input_len=[600], output_len=[1], session=[0], turn=[0], parent=[-1],
                 gap=[0.0], block_offsets=[0, 1], block_ids=[5], block_size=256)


def test_select_and_window_cut_parents():
    w = _chain_workload()
    sub = w.window(0.5, 10.0)
    assert len(sub) == 2
    assert list(sub.parent) == [-1, 0]
    assert list(sub.turn) == [1, 2]          # turn numbers are a property of the request
    assert sub.gap[0] == 0.0
    assert np.array_equal(sub.blocks(1), w.blocks(2))
    with pytest.raises(WorkloadError):
        w.window(3.0, 1.0)


def test_join_to_defaults_to_none_and_select_remaps_it():
    w = _chain_workload()
    assert np.all(w.join_to == -1)
    joined = Workload(arrival=w.arrival, input_len=w.input_len, output_len=w.output_len, session=w.session,
                      turn=w.turn, parent=w.parent, gap=w.gap, block_offsets=w.block_offsets,
                      block_ids=w.block_ids, block_size=w.block_size, join_to=[-1, 2, -1])
    assert list(joined.select(np.array([1, 2])).join_to) == [1, -1]
    assert list(joined.select(np.array([0, 1])).join_to) == [-1, -1]   # the joined row is cut
    with pytest.raises(WorkloadError, match="joins row 2 of another session"):
        Workload(arrival=w.arrival, input_len=w.input_len, output_len=w.output_len, session=[7, 7, 8],
                 turn=[0, 1, 0], parent=[-1, 0, -1], gap=w.gap, block_offsets=w.block_offsets,
                 block_ids=w.block_ids, block_size=w.block_size, join_to=[-1, 2, -1])


def test_scale_load_compresses_time():
    w = _chain_workload(arrivals=np.array([10.0, 14.0, 18.0]))
    s = w.scale_load(2.0)
    assert np.allclose(s.arrival, [10.0, 12.0, 14.0])
    assert np.allclose(s.gap, [0.0, 0.5, 0.5])
    with pytest.raises(WorkloadError):
        w.scale_load(0.0)


@settings(max_examples=40, deadline=None)
@given(lens=st.lists(st.integers(1, 5000), min_size=1, max_size=6).map(sorted), k=st.sampled_from([2, 3, 4]))
def test_coarsen_keeps_prefix_identity(lens, k):
    """Two prompts share a coarse block iff they shared the fine prefix up to its end."""
    w = _chain_workload(lens=tuple(lens), block_size=64)
    c = w.coarsen(64 * k)
    assert c.block_size == 64 * k
    assert list(c.n_blocks) == [-(-x // (64 * k)) for x in lens]
    for i in range(len(w)):
        fine = w.blocks(i)
        coarse = c.blocks(i)
        for j, cid in enumerate(coarse):
            assert cid == fine[min(k * j + k - 1, len(fine) - 1)]
    assert w.coarsen(64) is w
    with pytest.raises(WorkloadError):
        w.coarsen(100)
