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
from .spec import ExperimentSpec

__all__ = ["MECHANISMS", "mechanism_stack", "mechanism_frame", "mechanism_table"]

#: mechanism -> the ServingStack fields it sets (``none``: the legacy row; ``all``: the spec's row)
MECHANISMS = {
    "none": (),
    "iteration": ("iteration_cpu_s", "cpu_overlaps_gpu", "overlap_gap_s"),
    "lag": ("first_token_lag_iterations",),
    "outside": ("client_to_router_s", "api_server_s", "after_last_token_s", "stream_per_token_s"),
    "all": None,
}
#: the single-engine metrics whose errors the table reports
METRICS = ("e2e_mean_s", "ttft_mean_s", "itl_mean_s")


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


def mechanism_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Median absolute relative error per mechanism and metric on the single-engine (``blis`` harness) runs, rows in
    :data:`MECHANISMS` order, with the number of runs scored (a mechanism without rows is left out)."""
    scored = frame[frame["metric"].isin(METRICS) & frame["measured"].notna() & (frame["harness"] == "blis")]
    rows = []
    for mechanism in MECHANISMS:
        sub = scored[scored["mechanism"] == mechanism]
        if sub.empty:
            continue
        row = {"mechanism": mechanism, "runs": int(sub["experiment"].nunique())}
        for metric in METRICS:
            errors = sub.loc[sub["metric"] == metric, "rel_error"].abs()
            row[metric] = float(errors.median()) if len(errors) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=["mechanism", "runs", *METRICS])
