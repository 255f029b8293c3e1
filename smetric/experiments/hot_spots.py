"""Hot spots: SMETRIC's gain as the mechanisms that pile sessions onto few instances strengthen.

An **axis** is one entry of :data:`AXES`: its name and its levels, each a label and the config overrides it
applies (:func:`resolve`); the first level of every axis is the testbed default (no override), so each axis
moves one mechanism at a time from the same point. Override keys:

* ``arrival`` -- the session-start process, ``poisson`` or ``TRACE:KIND`` (a process fitted to a public trace,
  ``data/presets/arrivals.json``; :func:`~smetric.experiments.robustness.arrival_process`);
* ``router`` -- the router information model: :class:`~smetric.cluster.router_info.RouterInfo` fields applied to
  every policy, or ``"as-deployed"`` (each policy with its sourced preset, ``data/routers/as_deployed.json``);
* ``workload`` -- further generator fields of the workload preset (``SessionWorkloadConfig``), or a trace's loader
  options (``subagents``); ``fanout`` is ``NAME`` (the fan-out measured on trace ``NAME``,
  ``data/presets/fanout.json``) or ``NAME@P`` (the same with spawn probability ``P`` per turn);
* ``only`` -- the workloads the level applies to (a mechanism a workload does not have is not run there).

A level on a workload is one panel of a :class:`~smetric.experiments.comparison.Comparison` (its setup
:func:`level_setup`): every policy at one offered load, with the summary and the mechanism diagnostics
(``SimResult.diagnostics``) of the measured window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ..verdicts import PaperValue, gain_interval, point_table
from ..workload.context import CONTEXT_VARIANTS
from .screening import top_by_name

__all__ = ["AXES", "DEFAULT", "DIAGNOSTICS", "COMPARATORS", "applies", "resolve", "levels", "level_setup", "gains",
           "judge", "point_label"]

#: The label of the testbed default (the first level of every axis).
DEFAULT = "default"

#: axis -> ((level label, overrides), ...); the first level is the default (no override). Sources of the levels:
#: burstiness -- the Gamma-renewal and two-state MMPP processes fitted to the Azure LLM inference trace 2023 (code),
#: the match for the coding presets and the burstiest shipped trace (session-start CV 13.2, index of dispersion
#: 164 at 60 s; data/presets/arrivals.json); refresh -- the engine-state and KV-utilisation snapshot interval of
#: data/routers/as_deployed.json's presets: 50 ms (llm-d's refresh-metrics-interval default, llm-d-router #2514),
#: 1 s (AIBrix's gateway metrics cache, aibrix #2569), 5 s (SGLang's power-of-two load poll, sgl-model-gateway
#: power_of_two.rs), prefix hits from KV events at once; replicas -- router replicas each seeing only its own
#: dispatches, requests spread uniformly or by session hash (production deployments run several);
#: information -- each policy with its sourced "as deployed" preset; fan-out -- the sub-agent fan-out measured on
#: the Claude Code trace (data/presets/fanout.json: 0.078 % of its conversations' calls spawn, 1-3 sub-agents of ~11
#: calls), the same with 10 % of turns spawning (an assumption: a stress level, no source measures it), and on the
#: trace itself its sub-agents split into sessions of their own (the default keeps them attached and joined);
#: context growth -- bailian-coder's 14k compaction cap (an assumption, about the public p99 prompt) replaced by the
#: threshold and summary measured on the Claude Code trace (data/presets/compaction.json).
AXES: dict[str, tuple[tuple[str, dict], ...]] = {
    "burstiness": ((DEFAULT, {}), ("gamma (azure-code)", {"arrival": "azure-code:gamma"}),
                   ("mmpp (azure-code)", {"arrival": "azure-code:mmpp"})),
    "refresh": ((DEFAULT, {}),
                *((f"{r:g} s", {"router": {"refresh_s": r, "kv_refresh_s": r}}) for r in (0.05, 1.0, 5.0))),
    "replicas": ((DEFAULT, {}),
                 *((f"{k} {how}", {"router": {"router_replicas": k, "replica_assignment": how}})
                   for how in ("uniform", "session") for k in (4, 8))),
    "information": ((DEFAULT, {}), ("as deployed", {"router": "as-deployed"})),
    "fan-out": ((DEFAULT, {}),
                ("measured (claude-code)", {"workload": {"fanout": "claude-code"}, "only": ("bailian-coder",)}),
                ("10 % of turns spawn", {"workload": {"fanout": "claude-code@0.1"}, "only": ("bailian-coder",)}),
                ("sub-agents split off", {"workload": {"subagents": "separate"}, "only": ("claude-code",)})),
    "context growth": ((DEFAULT, {}),
                       ("claude-measured compaction", {"workload": CONTEXT_VARIANTS["claude-measured"],
                                                       "only": ("bailian-coder",)}),),
}

#: The mechanism diagnostics kept beside each point (``SimResult.diagnostics`` keys).
DIAGNOSTICS = ("imbalance_waiting_time_avg", "imbalance_running_time_avg", "followup_moved_share",
               "local_reuse_lost_moved_share")
#: The comparators of every point: the best baseline (fixed on the screening seeds), then named baselines.
COMPARATORS = ("best", "lmetric", "dynamo")
_KEYS = ("arrival", "router", "workload", "only")


def levels(axes: Mapping[str, Sequence]) -> list[tuple[str, str, dict]]:
    """``(axis, label, overrides)`` of every level to run: the default once (axis ``default``), then each axis's
    other levels. Raises when an axis does not start with the default or a level is malformed."""
    out = [(DEFAULT, DEFAULT, {})]
    for axis, entries in axes.items():
        entries = [tuple(e) for e in entries]
        if not entries or entries[0] != (DEFAULT, {}):
            raise ValueError(f"axis {axis!r} must start with the default level ({DEFAULT!r}, {{}}), got "
                             f"{entries[:1]}")
        for entry in entries[1:]:
            if len(entry) != 2 or not isinstance(entry[0], str) or not isinstance(entry[1], Mapping):
                raise ValueError(f"axis {axis!r}: a level is (label, overrides), got {entry!r}")
            bad = sorted(set(entry[1]) - set(_KEYS))
            if bad or not entry[1]:
                raise ValueError(f"axis {axis!r}, level {entry[0]!r}: overrides must be a non-empty dict of "
                                 f"{_KEYS}, got {dict(entry[1])!r}")
            out.append((axis, entry[0], dict(entry[1])))
    names = [(a, lab) for a, lab, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"level labels must be distinct within an axis, got {names}")
    return out


def resolve(overrides: Mapping, policy: str) -> tuple[dict, dict]:
    """``(cluster overrides, workload overrides)`` of one level for ``policy``."""
    import dataclasses

    from ..cluster.router_info import RouterInfo
    from ..workload.fanout import fitted_fanout
    from .robustness import arrival_process, router_info

    cluster, workload = {}, dict(overrides.get("workload", {}))
    if isinstance(workload.get("fanout"), str):  # NAME or NAME@P (module docstring)
        name, _, prob = workload["fanout"].partition("@")
        fan = fitted_fanout(name)
        workload["fanout"] = dataclasses.replace(fan, spawn_prob=float(prob)) if prob else fan
    if "arrival" in overrides:
        workload["arrival"] = arrival_process(overrides["arrival"])
    router = overrides.get("router")
    if isinstance(router, str):
        cluster["router"] = router_info(router, policy)
    elif router is not None:
        cluster["router"] = RouterInfo(**router)
    return cluster, workload


def applies(overrides: Mapping, workload: str) -> bool:
    """Whether a level runs on ``workload`` (its ``only`` list, when it has one, names it)."""
    return "only" not in overrides or workload in overrides["only"]


def level_setup(policy: str, *, overrides: Mapping, workload: str, reference_rpm: float, minutes: float,
                n_instances: int, testbed: str = "30b") -> dict:
    """A panel's :func:`~smetric.testbeds.offered_point` keywords for ``policy`` (the router information model may
    differ per policy): ``workload`` thinned from ``reference_rpm`` with the level's ``overrides``, and the mechanism
    diagnostics of the measured window."""
    cluster, extra = resolve(overrides, policy)
    return {"testbed": testbed, "n_instances": n_instances, "minutes": minutes, "cluster_overrides": cluster,
            "diagnostics": True, "workload_overrides": {"preset": workload, "reference_rpm": reference_rpm, **extra}}


def gains(results: pd.DataFrame, screening: Sequence[int], comparators: Sequence[str] = COMPARATORS) -> pd.DataFrame:
    """Per seed (the comparison seeds), workload, level and comparator: SMETRIC's relative goodput gain and both
    policies' diagnostics. ``best`` is the baseline fixed on the ``screening`` seeds of that workload at the default
    level and held at every level (a comparator re-chosen per level would mix its switch into the level's effect).
    Columns ``workload, axis, level, comparator, baseline, seed, gain, smetric_<diag>, baseline_<diag>``."""
    rows = []
    screened = results["seed"].isin(list(screening))
    default = results[screened & (results["axis"] == DEFAULT) & (results["policy"] != "smetric")]
    best = {w: top_by_name(screen, load=None) for w, screen in default.groupby("workload", sort=False)}
    for (w, axis, level), sub in results.groupby(["workload", "axis", "level"], sort=False):
        test = sub[~sub["seed"].isin(list(screening))].set_index(["policy", "seed"])
        ours = test.loc["smetric"]
        for comp in comparators:
            base = best[w] if comp == "best" else comp
            theirs = test.loc[base]
            for seed in ours.index:
                mine, other = ours.loc[seed, "goodput_tps"], theirs.loc[seed, "goodput_tps"]
                if not other > 0:
                    raise ValueError(f"{w}, {axis}={level}: {base} has goodput {other!r} at seed {seed}; a relative "
                                     "gain needs a positive baseline")
                rows.append({"workload": w, "axis": axis, "level": level, "comparator": comp, "baseline": base,
                             "seed": int(seed), "gain": mine / other - 1.0, "smetric_goodput_tps": mine,
                             "baseline_goodput_tps": other, **{f"smetric_{k}": ours.loc[seed, k] for k in DIAGNOSTICS},
                             **{f"baseline_{k}": theirs.loc[seed, k] for k in DIAGNOSTICS}})
    return pd.DataFrame(rows)


def judge(per_seed: pd.DataFrame, gain_paper: PaperValue, growth_paper: PaperValue) -> pd.DataFrame:
    """The figure's table from :func:`gains`: one row per (statistic, comparator, workload, axis, level).

    ``statistic="gain"``: SMETRIC's gain (mean, paired t-interval over seeds), judged against ``gain_paper``;
    ``statistic="growth"`` (non-default levels): the per-seed change of that gain from the default level,
    judged against ``growth_paper``; a level that leaves both runs as at the default (every per-seed change exactly
    0, e.g. "as deployed" where SMETRIC's and the comparator's presets are exact) has no growth point, its change
    being 0 by construction. Each (statistic, comparator) family is one claim: Holm over its points.
    Diagnostics and goodputs are seed means."""
    diag = [c for c in per_seed.columns if c.startswith(("smetric_", "baseline_"))]
    keys = ["workload", "axis", "level", "comparator"]
    rules = ["rule", "p_value", "p_adjusted", "mde", "verdict", "verdict_uncorrected"]  # verdicts.point_table's
    default = per_seed[per_seed["axis"] == DEFAULT].set_index(["workload", "comparator", "seed"])["gain"]
    parts = []
    for statistic, paper in (("gain", gain_paper), ("growth", growth_paper)):
        for comp in dict.fromkeys(per_seed["comparator"]):
            sub = per_seed[per_seed["comparator"] == comp]
            if statistic == "growth":
                sub = sub[sub["axis"] != DEFAULT]
                base = default.loc[list(zip(sub["workload"], sub["comparator"], sub["seed"]))].to_numpy()
                sub = sub.assign(gain=sub["gain"].to_numpy() - base)
            rows = []
            for key, g in sub.groupby(keys, sort=False):
                if statistic == "growth" and (g["gain"] == 0.0).all():
                    continue  # SMETRIC and the comparator ran exactly as at the default: no change to test
                iv = gain_interval(g["gain"])
                rows.append({**dict(zip(keys, key)), "statistic": statistic, "baseline": "/".join(dict.fromkeys(
                    g["baseline"])), "gain_mean": iv.mean, "ci_low": iv.low, "ci_high": iv.high, "n_seeds": iv.n,
                    **g[diag].mean().to_dict()})
            if rows:  # one claim: Holm over the family's points, as verdicts.claim_columns judges a claim
                family = pd.DataFrame(rows)
                judged = point_table(paper, family["gain_mean"].tolist(), family["ci_low"].tolist(),
                                     family["ci_high"].tolist(), family["n_seeds"].astype(int).tolist())
                parts.append(family.assign(**{c: judged[c].to_numpy() for c in rules}))
    table = pd.concat(parts, ignore_index=True)
    first = ["statistic", *keys, "baseline", "gain_mean", "ci_low", "ci_high", "n_seeds", *rules]
    return table[first + [c for c in table.columns if c not in first]]


def point_label(row) -> str:
    """A claim point's label: ``workload: axis level`` (``workload: default``)."""
    return f"{row['workload']}: {DEFAULT}" if row["axis"] == DEFAULT else \
        f"{row['workload']}: {row['axis']} {row['level']}"
