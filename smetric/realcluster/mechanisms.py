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

from ..cluster.serving_stack import ServingStack, parse
from . import scoring
from .scoring import MECHANISM_ORDER
from .spec import ExperimentSpec

__all__ = ["MECHANISMS", "mechanism_stack", "mechanism_cases", "mechanism_errors"]

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


def mechanism_cases(specs: Sequence[ExperimentSpec], mechanisms: Sequence[str] = tuple(MECHANISMS)
                    ) -> list[tuple[str, ExperimentSpec, ServingStack]]:
    """``(mechanism, spec, engine)`` for each of ``mechanisms`` and ``specs``, each spec with its own engine row
    (per mechanism, the specs grouped by engine row in order of first appearance)."""
    by_row: dict[str, list[ExperimentSpec]] = {}
    for spec in specs:
        by_row.setdefault(str(spec.cluster["engine"]), []).append(spec)
    cases = []
    for mechanism in mechanisms:
        for group in by_row.values():
            stack = mechanism_stack(group[0].engine_behaviour()["engine"], mechanism)
            cases += [(mechanism, spec, stack) for spec in group]
    return cases


def mechanism_errors(cases: Sequence[tuple[str, ExperimentSpec, ServingStack]], predicted: Sequence[dict]
                     ) -> pd.DataFrame:
    """:func:`.scoring.error_frame` of each :func:`mechanism_cases` case's predictions (column ``mechanism``)."""
    frames = [scoring.error_frame([spec], {spec.name: p}).assign(mechanism=mechanism)
              for (mechanism, spec, _), p in zip(cases, predicted)]
    return pd.concat(frames, ignore_index=True)
