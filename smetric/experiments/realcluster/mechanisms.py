"""The serving stack's mechanisms one at a time: how each moves the model's errors on published single-engine runs.

Starting from the ``legacy`` row (the model without serving-stack costs), each mechanism of a spec's own engine row
(:mod:`smetric.cluster.serving_stack`) is switched on alone, then all of them (the row as specified):

* ``iteration``: the row's per-iteration CPU time and whether it overlaps the GPU (only the residual gap adds);
* ``lag``: the first-token lag of async / overlap scheduling;
* ``outside``: time outside the engine (client and gateway, API server, the reply's way back, streaming).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import pandas as pd

from ...cluster.serving_stack import ServingStack, parse
from . import scoring
from .runner import predict_all
from .scoring import MECHANISM_ORDER
from .spec import ExperimentSpec

__all__ = ["MECHANISMS", "mechanism_stack", "mechanism_frame"]

#: mechanism -> the ServingStack fields it sets (``none``: the legacy row; ``all``: the spec's row)
MECHANISMS = dict(zip(MECHANISM_ORDER, (
    (),
    ("iteration_cpu_s", "cpu_overlaps_gpu", "overlap_gap_s"),
    ("first_token_lag_iterations",),
    ("client_to_router_s", "api_server_s", "after_last_token_s", "stream_per_token_s"),
    None,
)))


def mechanism_stack(row: str | ServingStack, mechanism: str) -> ServingStack:
    """``legacy`` with the fields of ``mechanism`` taken from engine row ``row`` (``all``: the row itself)."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r}; known: {', '.join(MECHANISMS)}")
    full = row if isinstance(row, ServingStack) else parse(row)
    if MECHANISMS[mechanism] is None:
        return full
    legacy = ServingStack.preset("legacy")
    return replace(legacy, name=f"legacy+{mechanism}",
                   **{f: getattr(full, f) for f in MECHANISMS[mechanism]})


def mechanism_frame(specs: Sequence[ExperimentSpec], mechanisms: Sequence[str] = tuple(MECHANISMS), *,
                    quick: bool = False, jobs: int = 1) -> pd.DataFrame:
    """:func:`.scoring.error_frame` of ``specs`` under each of ``mechanisms`` (column ``mechanism``), each spec with
    its own engine row."""
    frames = []
    by_row: dict[str, list[ExperimentSpec]] = {}
    for spec in specs:
        by_row.setdefault(str(spec.cluster["engine"]), []).append(spec)
    for mechanism in mechanisms:
        for group in by_row.values():
            row = group[0].engine_behaviour()["engine"]
            predicted = predict_all(group, quick=quick, jobs=jobs, engine=mechanism_stack(row, mechanism))
            frames.append(scoring.error_frame(group, predicted).assign(mechanism=mechanism))
    return pd.concat(frames, ignore_index=True)
