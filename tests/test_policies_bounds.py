"""The ideal TPS bound: closed forms on tiny workloads, reuse accounting, validation."""

import numpy as np
import pytest

from smetric.hardware import PerfModel
from smetric.hardware.kernel import C_ATTN_DECODE, C_ATTN_PREFILL, C_LIN_PER_TOKEN, N_COEF
from smetric.policies import ideal_bound
from smetric.policies.bounds import work_seconds
from smetric.workload import Workload


def workload(rows, block_size=100):
    """rows: (arrival, input_len, output_len, session, parent, block ids)."""
    ids, offsets = [], [0]
    for r in rows:
        ids += list(r[5])
        offsets.append(len(ids))
    turn, parent = [], []
    for _k, r in enumerate(rows):
        parent.append(r[4])
        turn.append(0 if r[4] < 0 else turn[r[4]] + 1)
    return Workload(arrival=[r[0] for r in rows], input_len=[r[1] for r in rows], output_len=[r[2] for r in rows],
                    session=[r[3] for r in rows], turn=turn, parent=parent, gap=[0.0] * len(rows),
                    block_offsets=offsets, block_ids=ids, block_size=block_size)


def coef_lin(a):
    c = np.zeros(N_COEF)
    c[C_LIN_PER_TOKEN] = a
    return c


def test_linear_only_closed_form():
    # one request: 1000 prompt tokens, 11 output tokens -> 1000 prefill + 10 decode steps at 1 ms per token
    w = workload([(0.0, 1000, 11, 0, -1, range(10))])
    b = ideal_bound(w, coef_lin(1e-3), 4)
    assert b.tps == pytest.approx(1011 * 4 / (1010 * 1e-3))
    assert b.tps == b.tps_no_reuse and b.reuse_ratio == 0.0
    assert ideal_bound(w, coef_lin(1e-3), 8).tps == pytest.approx(2 * b.tps)


def test_attention_terms_closed_form():
    c = np.zeros(N_COEF)
    c[C_ATTN_PREFILL] = 1e-9
    c[C_ATTN_DECODE] = 1e-6
    w = workload([(0.0, 1000, 3, 0, -1, range(10))])
    # prefill: 1000 * (0 + 500) = 5e5 units; decode steps k = 1, 2 read 1001 + 1002 tokens
    assert work_seconds(w, np.zeros(1), c) == pytest.approx(5e5 * 1e-9 + 2003 * 1e-6)
    # with 600 tokens cached: 400 * (600 + 200) = 3.2e5 units
    assert work_seconds(w, np.array([600.0]), c) == pytest.approx(3.2e5 * 1e-9 + 2003 * 1e-6)


def test_reuse_cross_session_intra_session_and_history():
    sys_prompt = [1, 2]                       # 200 tokens shared by both sessions
    rows = [
        (0.0, 500, 100, 0, -1, sys_prompt + [10, 11, 12]),
        (1.0, 500, 100, 1, -1, sys_prompt + [20, 21, 22]),       # 200 reusable (cross-session)
        (2.0, 900, 100, 0, 0, sys_prompt + [10, 11, 12, 13, 14, 15, 16]),  # prompt match 500, history 600
    ]
    w = workload(rows)
    b = ideal_bound(w, coef_lin(1e-3), 1)
    # all reuse: 0 + 200 + 600 = 800 of 1900; intra-session: 0 + 0 + 600
    assert b.reuse_ratio == pytest.approx(800 / 1900)
    assert b.intra_session_reuse_ratio == pytest.approx(600 / 1900)
    tokens = 1900 + 300
    assert b.tps == pytest.approx(tokens / (1e-3 * (1900 - 800 + 297)))
    assert b.tps_intra_session == pytest.approx(tokens / (1e-3 * (1900 - 600 + 297)))
    assert b.tps > b.tps_intra_session > b.tps_no_reuse
    assert b.offered_tps == pytest.approx(tokens / 2.0)
    assert set(b.to_dict()) >= {"tps", "tps_intra_session", "offered_tps", "n_instances"}


def test_bound_with_a_real_perf_model_is_finite_and_ordered():
    from smetric.workload import synth_agent_workload
    w = synth_agent_workload(n_sessions=20, seed=1)
    perf = PerfModel("qwen3-30b-a3b", "h20", 1)
    b = ideal_bound(w, perf, 4)
    assert np.isfinite(b.tps) and b.tps > b.tps_intra_session > b.tps_no_reuse > 0
    assert ideal_bound(w, perf.coefficients(), 4) == b


def test_validation():
    w = workload([(0.0, 1000, 11, 0, -1, range(10))])
    with pytest.raises(ValueError, match="n_instances must be a positive integer"):
        ideal_bound(w, coef_lin(1e-3), 0)
    with pytest.raises(ValueError, match="coefficient vector of length"):
        ideal_bound(w, np.zeros(3), 2)
    with pytest.raises(ValueError, match="between 0 and the request's input_len"):
        work_seconds(w, np.array([2000.0]), coef_lin(1e-3))
