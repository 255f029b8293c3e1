"""The queue-discipline module on hand-built queues: the S score, the mlfq levels, promotion, validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smetric.cluster.config import ClusterConfig, HardwareSpec
from smetric.cluster.queueing import (
    LEVEL_HIGH,
    LEVEL_LOW,
    LEVEL_MEDIUM,
    QueueDiscipline,
    decode_estimates,
    queue_order,
    rank_nb,
)
from smetric.hardware.kernel import example_coefficients, iteration_time_nb


def order(q: QueueDiscipline, *, est, now=0.0, arrival=None, priority=None, turn=None, need=None, free=100.0):
    n = len(est)
    return queue_order(q.vector(), est=est, now=now,
                       arrival=np.zeros(n) if arrival is None else arrival,
                       priority=np.ones(n) if priority is None else priority,
                       turn=np.ones(n, dtype=np.int64) if turn is None else turn,
                       need=np.ones(n) if need is None else need, free=free)


def test_score_formula_on_one_request():
    q = QueueDiscipline("smetric-score", alpha=2.0, beta=0.5, gamma=3.0, delta=4.0, l_max=8.0)
    level, s = rank_nb(q.vector(), 0.25, 2.0, 1, 10.0, 14.0, 30.0, 120.0)
    # 2/0.25 + 0.5*2 + 3*(4/8) - 4*(30/120)
    assert level == LEVEL_MEDIUM
    assert s == pytest.approx(8.0 + 1.0 + 1.5 - 1.0)


def test_score_prefers_short_turns_by_default():
    assert order(QueueDiscipline("smetric-score"), est=[2.0, 0.05, 0.5]) == [1, 2, 0]


def test_waiting_time_overtakes_urgency():
    """gamma * L / L_max grows without bound: an old long turn eventually beats a fresh short one."""
    q = QueueDiscipline("smetric-score", alpha=1.0, gamma=1.0, l_max=10.0)
    est = [4.0, 0.5]  # urgency 0.25 vs 2.0: the short one wins by 1.75 at equal waits
    assert order(q, est=est, now=10.0, arrival=[0.0, 10.0]) == [1, 0]  # long waited 10 s: +1.0
    assert order(q, est=est, now=20.0, arrival=[0.0, 20.0]) == [0, 1]  # waited 20 s: +2.0
    assert order(QueueDiscipline("smetric-score", gamma=0.0), est=est, now=1e6, arrival=[0.0, 1e6]) == [1, 0]


def test_resource_term_penalises_large_requests_and_priority_lifts():
    q = QueueDiscipline("smetric-score", alpha=0.0, delta=1.0)
    assert order(q, est=[1.0, 1.0], need=[80, 10], free=100.0) == [1, 0]
    qp = QueueDiscipline("smetric-score", alpha=0.0, beta=1.0, delta=0.0)
    assert order(qp, est=[1.0, 1.0, 1.0], priority=[0.5, 2.0, 1.0]) == [1, 2, 0]


def test_ties_keep_routing_order():
    assert order(QueueDiscipline("smetric-score"), est=[1.0] * 5) == [0, 1, 2, 3, 4]
    assert order(QueueDiscipline("fcfs"), est=[3.0, 0.1, 1.0]) == [0, 1, 2]


def test_mlfq_levels():
    q = QueueDiscipline("mlfq", short_s=0.1, long_s=2.0, t_low=5.0, t_medium=10.0)
    v = q.vector()
    assert rank_nb(v, 0.5, 1.0, 0, 0.0, 0.0, 1.0, 10.0)[0] == LEVEL_HIGH  # first turn
    assert rank_nb(v, 0.05, 1.0, 3, 0.0, 0.0, 1.0, 10.0)[0] == LEVEL_HIGH  # short estimate
    assert rank_nb(v, 0.5, 2.0, 3, 0.0, 0.0, 1.0, 10.0)[0] == LEVEL_HIGH  # priority session
    assert rank_nb(v, 0.5, 1.0, 3, 0.0, 0.0, 1.0, 10.0)[0] == LEVEL_MEDIUM
    assert rank_nb(v, 3.0, 1.0, 3, 0.0, 0.0, 1.0, 10.0)[0] == LEVEL_LOW
    # promotion: low -> medium after t_low, anything -> high after t_medium
    assert rank_nb(v, 3.0, 1.0, 3, 0.0, 4.9, 1.0, 10.0)[0] == LEVEL_LOW
    assert rank_nb(v, 3.0, 1.0, 3, 0.0, 5.0, 1.0, 10.0)[0] == LEVEL_MEDIUM
    assert rank_nb(v, 3.0, 1.0, 3, 0.0, 10.0, 1.0, 10.0)[0] == LEVEL_HIGH
    assert rank_nb(v, 0.5, 1.0, 3, 0.0, 10.0, 1.0, 10.0)[0] == LEVEL_HIGH


def test_mlfq_strict_priority_and_fifo_within_high():
    q = QueueDiscipline("mlfq", short_s=0.1, long_s=2.0, t_low=5.0, t_medium=10.0)
    # rows: medium (0.5 s), low (3 s), high first turn arriving late, high short arriving early, medium 1 s
    got = order(q, est=[0.5, 3.0, 0.8, 0.05, 1.0], turn=[2, 2, 0, 2, 2], arrival=[0.0, 0.0, 0.3, 0.2, 0.0],
                now=1.0)
    assert got == [3, 2, 0, 4, 1]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(1e-3, 100.0), min_size=2, max_size=12), st.floats(0.0, 50.0))
def test_promotion_bound_holds_for_any_queue(estimates, waited):
    """A request that waited t_medium is never behind a request that arrived after it."""
    q = QueueDiscipline("mlfq", t_low=2.0, t_medium=4.0)
    n = len(estimates)
    arrival = np.linspace(0.0, 1.0, n)  # row 0 is the oldest
    now = 1.0 + waited
    got = order(q, est=estimates, arrival=arrival, now=now, turn=np.ones(n, dtype=np.int64))
    if now - arrival[0] >= q.t_medium:
        assert got[0] == 0


def test_decode_estimate_is_gpu_time_of_the_output_only():
    coef = example_coefficients()
    est = decode_estimates(coef, np.array([1000, 1000, 50]), np.array([1, 11, 11]))
    assert est[0] == 0.0  # one token: produced by the prefill
    assert est[1] == pytest.approx(10 * iteration_time_nb(coef, 1.0, 0.0, 1005.5, 1.0))
    assert est[1] > est[2] > 0.0  # longer context, slower steps


def test_validation_names_the_problem():
    with pytest.raises(ValueError, match="queue discipline"):
        QueueDiscipline("sjf")
    with pytest.raises(ValueError, match="alpha"):
        QueueDiscipline("smetric-score", alpha=-1.0)
    with pytest.raises(ValueError, match="l_max"):
        QueueDiscipline("smetric-score", l_max=0.0)
    with pytest.raises(ValueError, match="short_s"):
        QueueDiscipline("mlfq", short_s=3.0, long_s=2.0)
    with pytest.raises(ValueError, match="t_low"):
        QueueDiscipline("mlfq", t_low=20.0, t_medium=10.0)
    with pytest.raises(ValueError, match="unknown queue parameter 'gama'"):
        QueueDiscipline.parse("smetric-score", {"gama": "1"})
    with pytest.raises(ValueError, match="queue"):
        ClusterConfig("example", "example", hardware=HardwareSpec.example(), queue=3)


def test_parse_and_cluster_field():
    q = QueueDiscipline.parse("smetric_score", {"alpha": "5", "l_max": "2.5"})
    assert (q.name, q.alpha, q.l_max, q.gamma) == ("smetric-score", 5.0, 2.5, 1.0)
    cluster = ClusterConfig("example", "example", hardware=HardwareSpec.example(), queue="mlfq")
    assert cluster.queue == QueueDiscipline("mlfq")
    assert ClusterConfig("example", "example", hardware=HardwareSpec.example()).queue.name == "fcfs"


@pytest.mark.parametrize("name, params, message", [
    ("fcfs", {"alpha": "2"}, "queue parameter alpha does not apply to fcfs"),
    ("smetric-score", {"t_low": "1"}, "queue parameter t_low does not apply to smetric-score"),
    ("mlfq", {"l_max": "abc"}, "queue parameter l_max must be a number > 0, got 'abc'"),
    ("mlfq", {"delta": "-1"}, "queue parameter delta must be a number >= 0"),
    ("mlfq", {"short_s": "inf"}, "queue parameter short_s must be finite"),
])
def test_parse_rejects_values_naming_the_parameter(name, params, message):
    with pytest.raises(ValueError, match=message):
        QueueDiscipline.parse(name, params)


def test_l_max_applies_to_every_discipline():
    assert QueueDiscipline.parse("fcfs", {"l_max": "3"}).l_max == 3.0  # the starvation threshold
