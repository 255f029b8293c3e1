"""Priority tiers on sessions: a share of the sessions is high priority (the queue disciplines' ``P``).

Every request of a session carries its session's priority (the Workload's ``priority`` column): 1 for the
normal tier, :data:`HIGH_PRIORITY` for the high one. The value 2 is an **assumption** (the S-Metric
blueprint names a priority term ``beta * P`` but no scale; 2 is the smallest value above the normal
tier's 1, which the ``mlfq`` discipline's high level tests with ``P > 1``). Which sessions are high is drawn
per session from a dedicated seeded stream, so applying tiers moves no other random draw of a generator.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..ranges import FRACTION, POSITIVE
from .core import Workload

__all__ = ["HIGH_PRIORITY", "with_priority"]

HIGH_PRIORITY = 2.0  # an assumption: see the module docstring
_STREAM = 0x9A10  # the seed stream of the tier draws (any constant distinct from the generator's)


def with_priority(workload: Workload, share: float, value: float = HIGH_PRIORITY, seed: int = 0) -> Workload:
    """``workload`` with each session high priority (``value``) with probability ``share``, else 1.

    Works on any Workload (a synthetic one or a loaded trace); sessions are drawn in the order of their
    sorted ids, so the same (workload, share, seed) always marks the same sessions.
    """
    share = FRACTION.check("high-priority share", share)
    value = POSITIVE.check("high-priority value", value)
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"priority seed must be a non-negative integer, got {seed!r}")
    ids, dense = np.unique(workload.session, return_inverse=True)
    high = np.random.default_rng([int(seed), _STREAM]).random(len(ids)) < share
    return dataclasses.replace(workload, priority=np.where(high[dense.ravel()], value, 1.0))
