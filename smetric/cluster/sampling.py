"""The per-instance time series both engines record: fixed-count samples that stretch to cover the run.

Sample ``k`` holds an instance's state (waiting, running, KV blocks used) just after time
``t0 + k * dt``, where ``t0`` is the first arrival. Neither engine knows in advance when the run
ends, so the spacing starts at ``dt`` from :func:`smetric.cluster.inputs.prepare` and, whenever an
instance needs a sample beyond the ``n_samples`` slots, every instance keeps its even samples
(0, 2, 4, ... become 0, 1, 2, ...) and the spacing doubles. At the end each instance is sampled up
to the last event (the last finish), so the series covers the whole run with between
``n_samples / 2`` and ``n_samples`` points, the same count for every instance.
"""

from __future__ import annotations

import sys

from numba import njit

from ..numba_cache import refresh_module

__all__ = ["halve_samples"]


@njit(cache=True, _nrt=False)
def halve_samples(ts, sampled):
    """Keep the even samples of every instance in ``ts[i, :sampled[i]]``, moved to the front; update ``sampled``."""
    for i in range(ts.shape[0]):
        kept = (sampled[i] + 1) // 2
        for j in range(kept):
            for c in range(ts.shape[2]):
                ts[i, j, c] = ts[i, 2 * j, c]
        sampled[i] = kept


refresh_module(sys.modules[__name__])  # flush cached kernels whose imported sources changed
