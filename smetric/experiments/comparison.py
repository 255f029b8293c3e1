"""The comparative experiment, declared once: panels × policies × offered loads × seeds, a screened comparator.

Most figures run the same experiment. A :class:`Comparison` declares it:

* ``panels`` -- the settings compared in (a testbed, a workload, a PD split, a store ...): each a
  :class:`Panel` holding the :func:`~smetric.testbeds.offered_point` keywords of its cluster and workload
  and its grid of offered loads (requests/min/instance), keyed by a tuple labelled ``panel_columns``;
* ``policies`` -- the routers compared, by label (a registered policy, or a label that ``variants`` maps to
  ``(policy, params)``: SMETRIC's ablation variants);
* ``seeds`` -- the workload and policy seeds of the comparison (statistics pair them);
* ``screen_seeds`` -- seeds disjoint from ``seeds`` on which the baselines alone run first; the comparator
  is fixed there (:mod:`~smetric.experiments.screening`), and with ``n_keep`` only the ``n_keep`` baselines
  of highest screening peak ``measure`` go on to the comparison seeds;
* ``loops`` and ``columns`` -- the order points are run in and the order of their label columns in the
  result;
* ``simulate`` -- the simulation of one point: :func:`~smetric.testbeds.offered_point` (one row of summary
  metrics), or a function with its keywords returning a frame of rows (fig. 8's latency quantiles).

:func:`run_comparison` runs it with one :func:`~smetric.experiments.sweep.sweep` per stage: one row per point with
its labels, ``policy``, every summary metric, ``screen_seed`` (a screening row) and, with ``n_keep``, ``kept``.
Figs. 2, 3, 6-9, 14 and 17 are comparisons; :func:`run_cases` is the layer below, for grids that are not a
product (figs. 10 and 11 list their points one by one). The analysis of a comparison -- the comparator, paired
gains, their interval -- is :mod:`~smetric.experiments.screening` and :mod:`~smetric.verdicts`;
:func:`gain_columns` is the row every gain table shares, :func:`row_interval` reads it back.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..testbeds import WORKLOADS, offered_point
from ..verdicts import Interval, gain_interval
from .screening import check_screen_seeds, screen_rank
from .sweep import sweep

__all__ = ["Panel", "Comparison", "run_comparison", "run_cases", "workload_setup", "gain_columns",
           "row_interval"]

_AXES = ("panel", "seed", "rpm_per_instance", "policy")


@dataclass(frozen=True)
class Panel:
    """One setting of a comparison: ``setup`` (:func:`offered_point` keywords, or a picklable function of the policy
    returning them, when each router runs with its own information model) at each load of ``loads``.

    ``screened_by`` names another panel whose screening fixes this one's comparator and kept baselines (a
    variant of a setting, compared against the setting's comparator); such a panel is not screened itself.
    """

    setup: Mapping[str, Any] | Callable[[str], Mapping[str, Any]]
    loads: Sequence[float]
    screened_by: tuple | None = None


@dataclass(frozen=True)
class Comparison:
    """Panels × policies × offered loads × seeds, baselines screened on ``screen_seeds`` (see the module).

    ``screen_seeds=None``: no screening stage and no ``screen_seed`` column. ``loops`` orders the axes
    ``panel, seed, rpm_per_instance, policy`` (outermost first; a panel before its loads), ``columns`` the
    label columns of the result (default: the panel columns, then ``label, rpm_per_instance, seed``).
    """

    panels: Mapping[tuple, Panel]
    policies: Sequence[str]
    seeds: Sequence[int]
    panel_columns: Sequence[str] = ()
    screen_seeds: Sequence[int] | None = None
    n_keep: int | None = None
    ours: str = "smetric"
    measure: str = "goodput_tps"
    variants: Mapping[str, tuple[str, Mapping]] = field(default_factory=dict)
    label: str = "policy"
    loops: Sequence[str] = _AXES
    columns: Sequence[str] | None = None
    warmup_frac: float = 0.25
    simulate: Callable[..., Mapping | pd.DataFrame] = offered_point

    def __post_init__(self) -> None:
        if sorted(self.loops) != sorted(_AXES) or list(self.loops).index("panel") > list(self.loops).index(
                "rpm_per_instance"):
            raise ValueError(f"loops must order {_AXES} with the panel before its loads, got {self.loops}")
        if self.columns is None:
            object.__setattr__(self, "columns", (*self.panel_columns, self.label, "rpm_per_instance", "seed"))
        if sorted(self.columns) != sorted((*self.panel_columns, self.label, "rpm_per_instance", "seed")):
            raise ValueError(f"columns must order the panel columns, {self.label}, rpm_per_instance and seed, "
                             f"got {self.columns}")
        if any(len(key) != len(self.panel_columns) for key in self.panels):
            raise ValueError(f"every panel key needs one value per panel column {list(self.panel_columns)}")
        if self.screen_seeds:
            check_screen_seeds(self.screen_seeds, self.seeds)
        if self.n_keep is not None and (self.n_keep < 1 or not self.screen_seeds):
            raise ValueError(f"n_keep needs screening seeds and must be >= 1, got {self.n_keep}")

    @property
    def baselines(self) -> list[str]:
        """Every policy label but ``ours``."""
        return [p for p in self.policies if p != self.ours]

    def screened(self) -> list[tuple]:
        """The panels screened (not ``screened_by`` another)."""
        return [key for key, panel in self.panels.items() if panel.screened_by is None]

    def cases(self) -> dict[str, tuple[str, Mapping]]:
        """Policy label -> (registered policy, its parameters)."""
        return {p: self.variants.get(p, (p, {})) for p in self.policies}

    def points(self, panels: Sequence[tuple], policies: Callable[[tuple], Sequence[str]] | Sequence[str],
               seeds: Sequence[int]) -> list[dict]:
        """The points of ``panels`` for ``policies`` (or a panel's, when a function of it) on ``seeds``, in
        ``loops`` order, labelled as ``columns``."""
        out: list[dict] = []

        def walk(depth: int, at: dict) -> None:
            if depth == len(self.loops):
                labels = {**dict(zip(self.panel_columns, at["panel"])), self.label: at["policy"],
                          "rpm_per_instance": at["rpm_per_instance"], "seed": at["seed"]}
                out.append({c: labels[c] for c in self.columns})
                return
            axis = self.loops[depth]
            if axis == "panel":
                values = list(panels)
            elif axis == "seed":
                values = [int(s) for s in seeds]
            elif axis == "rpm_per_instance":
                values = [float(r) for r in self.panels[at["panel"]].loads]
            else:
                values = list(policies(at["panel"]) if callable(policies) else policies)
            for v in values:
                walk(depth + 1, {**at, axis: v})

        walk(0, {})
        return out


def run_comparison(comparison: Comparison, *, jobs: int | None = None) -> pd.DataFrame:
    """Run ``comparison``: the baselines on the screening seeds, then the compared policies on every seed.

    Without ``n_keep`` one sweep runs the screening points first -- each panel's before its comparison
    points when panels are the outermost loop; with ``n_keep`` the screening is a sweep of its own, after
    which each panel compares ``ours`` with the ``n_keep`` baselines of highest screening peak ``measure`` (of
    the panel it is ``screened_by``).
    """
    c = comparison
    screening = c.screen_seeds or ()
    screened = c.screened()
    if c.n_keep is None:
        if c.loops[0] == "panel":
            points = [pt for key in c.panels for pt in (*c.points([key] if key in screened else [], c.baselines,
                                                                  screening), *c.points([key], c.policies, c.seeds))]
        else:
            points = c.points(screened, c.baselines, screening) + c.points(list(c.panels), c.policies, c.seeds)
        out = _run(c, points, jobs)
    else:
        screen = _run(c, c.points(screened, c.baselines, screening), jobs)
        ranks = screen_rank(screen, by=c.panel_columns, value=c.measure, policy=c.label)
        kept = {key: list(sub.loc[sub["rank"] <= c.n_keep, c.label])
                for key, sub in ranks.groupby(list(c.panel_columns), sort=False)}
        kept = {key: kept[panel.screened_by or key] for key, panel in c.panels.items()}
        main = _run(c, c.points(list(c.panels), lambda key: [c.ours, *kept[key]], c.seeds), jobs)
        out = pd.concat([screen, main], ignore_index=True)
    if c.screen_seeds is not None:
        out["screen_seed"] = out["seed"].isin([int(s) for s in screening])
    if c.n_keep is not None:
        keys = list(zip(*(out[col] for col in c.panel_columns)))
        out["kept"] = [p == c.ours or p in kept[key] for key, p in zip(keys, out[c.label])]
    return out


def _run(c: Comparison, points: list[dict], jobs: int | None) -> pd.DataFrame:
    setups = {key: panel.setup for key, panel in c.panels.items()}
    return run_cases(points, c.cases(), setups, warmup_frac=c.warmup_frac, jobs=jobs, case=c.label,
                     setup=tuple(c.panel_columns), simulate=c.simulate)


def _key(value: Hashable) -> Hashable:
    """A setup key that survives pickling: NaN labels (a store without a bandwidth) compare equal."""
    if isinstance(value, tuple):
        return tuple("NaN" if isinstance(v, float) and v != v else v for v in value)
    return value


def _case_point(*, cases: Mapping, setups: Mapping, case_column: str, setup_column: str | tuple, warmup_frac: float,
                simulate: Callable, **point) -> Mapping | pd.DataFrame:
    """One simulation (sweep point function): the point's case in the point's setup at its load and seed."""
    policy, params = cases[point[case_column]]
    key = point[setup_column] if isinstance(setup_column, str) else _key(tuple(point[c] for c in setup_column))
    setup = setups[key](policy) if callable(setups[key]) else setups[key]
    return simulate(point["rpm_per_instance"], policy, seed=point["seed"], warmup_frac=warmup_frac, params=params,
                    **setup)


def run_cases(points: Sequence[Mapping], cases: Mapping[str, tuple[str, Mapping]],
              setups: Mapping[Hashable, Mapping], *, warmup_frac: float = 0.25, jobs: int | None = None,
              case: str = "case", setup: str | Sequence[str] = "setup",
              simulate: Callable[..., Mapping | pd.DataFrame] = offered_point) -> pd.DataFrame:
    """Simulate every point and return one row per point: its columns, ``policy``, then the summary metrics.

    Each point names a ``case`` (its column ``case``: a key of ``cases``, ``(policy, params)``) and a setup
    (its column ``setup``, or the tuple of its columns when ``setup`` names several: a key of ``setups``,
    keyword arguments of :func:`offered_point` -- ``testbed, n_instances, minutes, global_store,
    cluster_overrides, workload_overrides, trace, diagnostics`` -- or a function of the policy returning them)
    and gives ``rpm_per_instance`` (offered load) and ``seed`` (workload and policy seed); any other columns are
    labels carried into the result. All points must have the same columns. Points sharing a workload should be
    adjacent (workers cache a few workloads). A ``policy`` column is added after the point's columns unless
    ``case`` is ``policy``. ``simulate`` runs one point (:class:`Comparison`'s ``simulate``). A failed
    simulation raises.
    """
    points = [dict(p) for p in points]
    setup = setup if isinstance(setup, str) else tuple(setup)
    setups = {_key(k): v for k, v in setups.items()}
    for i, point in enumerate(points):
        key = point.get(setup) if isinstance(setup, str) else _key(tuple(point.get(c) for c in setup))
        for name, value, table in ((case, point.get(case), cases), (setup, key, setups)):
            if value not in table:
                raise ValueError(f"point {i}: unknown {name} {value!r}; known: {sorted(map(str, table))}")
        for name in ("rpm_per_instance", "seed"):
            if name not in point:
                raise ValueError(f"point {i} has no {name!r} column: {point}")
        if not point["rpm_per_instance"] > 0:
            raise ValueError(f"point {i}: rpm_per_instance must be > 0, got {point['rpm_per_instance']!r}")
    shared = {"cases": dict(cases), "setups": {k: v if callable(v) else dict(v) for k, v in setups.items()},
              "case_column": case, "setup_column": setup, "warmup_frac": warmup_frac, "simulate": simulate}
    frame = sweep(points, _case_point, shared=shared, jobs=jobs, on_error="raise")
    if case != "policy":
        frame.insert(len(points[0]) if points else 0, "policy", frame[case].map(lambda c: cases[c][0]))
    return frame


def workload_setup(workload: str, trace: str | None, top_rpm: float) -> dict:
    """A panel's workload keywords of :func:`offered_point`: ``workload`` thinned from one generation at ``top_rpm``
    (common random numbers over the load grid), or a ``trace`` file or catalog name."""
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    return {"workload_overrides": {"preset": workload, "reference_rpm": float(top_rpm)}, "trace": trace}


def gain_columns(gains: pd.DataFrame) -> dict:
    """The columns every paired-gain table shares, from a :func:`~smetric.verdicts.paired_gains`
    frame: ``smetric, baseline`` (seed means), ``gain_mean, ci_low, ci_high, n_seeds`` (paired t-interval)."""
    iv = gain_interval(gains["gain"])
    return {"smetric": gains["ours"].mean(), "baseline": gains["baseline"].mean(), "gain_mean": iv.mean,
            "ci_low": iv.low, "ci_high": iv.high, "n_seeds": iv.n}


def row_interval(row: pd.Series) -> Interval:
    """The :class:`~smetric.verdicts.Interval` a gain table's row stores (``gain_mean, ci_low, ci_high,
    n_seeds``)."""
    return Interval(float(row["gain_mean"]), float(row["ci_low"]), float(row["ci_high"]), int(row["n_seeds"]))
