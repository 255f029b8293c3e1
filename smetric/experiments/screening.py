"""Comparators fixed before the comparison: a baseline screening on seeds disjoint from the comparison seeds.

A comparative claim judges SMETRIC (or the router it names) against **one comparator**. Picking it as
"the best baseline" by its mean on the very seeds the gain is then measured on biases the gain towards
0 (the winner of a noisy race is, on those seeds, luckier than its true rank). So every comparative
figure runs its baselines -- and only them -- on a few **screening seeds** (100, 101 by default),
disjoint from the comparison seeds; the comparator is the baseline whose screening-seed mean ``value``
is highest at its peak over the loads (one load: at that load), fixed there and held at every point of
the claim. Rows of a screening seed carry ``screen_seed = True`` and are never compared.

A frame without screening rows (hand-made test frames, runs made before the seeds were split) is read
alike, the comparator then chosen on the compared rows themselves; :func:`split_screening` says so.
fig06 (:mod:`~smetric.experiments.main_results`) and figs 3, 7, 8, 10, 14, 17 and 18 use these functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

__all__ = ["SCREEN_SEEDS", "SCREEN_COLUMN", "check_screen_seeds", "screen_rank", "split_screening",
           "screened_comparator", "top_by_name", "screening_note"]

#: The default screening seeds of every comparative figure (disjoint from the comparison seeds 0-7).
SCREEN_SEEDS = (100, 101)
#: The column that marks a screening row.
SCREEN_COLUMN = "screen_seed"


def check_screen_seeds(screen_seeds: Sequence[int], seeds: Sequence[int]) -> None:
    """Raise ``ValueError`` unless ``screen_seeds`` is non-empty and disjoint from the comparison ``seeds``."""
    if not len(screen_seeds) or set(map(int, screen_seeds)) & set(map(int, seeds)):
        raise ValueError(f"screen_seeds {list(screen_seeds)} must be non-empty and disjoint from the comparison "
                         f"seeds {list(seeds)} (a comparator chosen on the seeds it is judged on is biased)")


def screen_rank(screen: pd.DataFrame, by: Sequence[str] = (), value: str = "goodput_tps",
                load: str | None = "rpm_per_instance", policy: str = "policy", ties: str = "first") -> pd.DataFrame:
    """Per ``by`` group and policy of the screening rows: ``screen_peak_<value>``, the peak over ``load`` of the
    policy's screening-seed mean ``value`` (``load=None``: one point, its mean), and its ``rank`` in the group
    (1 = the comparator; ties: the first row's policy, or with ``ties="name"`` the first by name).
    Columns ``*by, policy, screen_peak_<value>, rank``."""
    by = list(by)
    loads = [load] if load is not None else []
    missing = [c for c in (*by, *loads, policy, value) if c not in screen.columns]
    if missing:
        raise ValueError(f"screen_rank: frame has no column(s) {missing}")
    if screen.empty:
        raise ValueError("screen_rank: no screening rows to rank the baselines on")
    column = "screen_peak_goodput" if value == "goodput_tps" else f"screen_peak_{value}"
    mean = screen.groupby([*by, policy, *loads], as_index=False, sort=False)[value].mean()
    peak = mean.groupby([*by, policy], as_index=False, sort=False)[value].max().rename(columns={value: column})
    if ties == "name":
        peak = peak.sort_values(policy, kind="stable")
    ranks = peak.groupby(by)[column] if by else peak[column]
    peak["rank"] = ranks.rank(ascending=False, method="first").astype(int)
    return peak.sort_values([*by, "rank"]).reset_index(drop=True)


def top_by_name(screen: pd.DataFrame, value: str = "goodput_tps", load: str | None = "rpm_per_instance") -> str:
    """The comparator of one group's screening rows (baselines only): the top of :func:`screen_rank`, ties broken
    by name (the rule figs. 14, 17 and 18 state)."""
    ranks = screen_rank(screen, value=value, load=load, ties="name")
    return str(ranks.loc[ranks["rank"] == 1, "policy"].iloc[0])


def split_screening(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """``(screen, compared, disjoint)``: the rows of the screening seeds, the others, and whether there was a
    screening; without one (no ``screen_seed`` column or no such row) both are the whole frame."""
    if SCREEN_COLUMN not in frame.columns or not frame[SCREEN_COLUMN].astype(bool).any():
        return frame, frame, False
    mask = frame[SCREEN_COLUMN].astype(bool)
    return frame[mask], frame[~mask], True


def screened_comparator(frame: pd.DataFrame, value: str = "goodput_tps", load: str | None = "rpm_per_instance",
                        ours: str = "smetric", baselines: Sequence[str] | None = None) -> tuple[str, bool]:
    """The comparator of one group's frame and whether it was fixed on disjoint screening seeds
    (:func:`split_screening`): the top of :func:`screen_rank` over the baselines -- ``baselines`` if given, else
    every policy but ``ours`` whose name does not start with ``ideal`` (bounds are not baselines)."""
    screen, _, disjoint = split_screening(frame)
    pool = screen[screen["policy"] != ours]
    pool = pool[pool["policy"].isin(list(baselines))] if baselines is not None else \
        pool[~pool["policy"].astype(str).str.startswith("ideal")]
    if pool.empty:
        raise ValueError(f"screened_comparator: no baseline rows to choose the comparator of {ours!r} from")
    ranks = screen_rank(pool, value=value, load=load)
    return str(ranks.loc[ranks["rank"] == 1, "policy"].iloc[0]), disjoint


def screening_note(frame: pd.DataFrame, seeds: str = "seed") -> str:
    """Where the comparator was fixed, for a claim's reason: the screening seeds, or that there were none."""
    screen, _, disjoint = split_screening(frame)
    if not disjoint:
        return "chosen on the comparison seeds (this frame has no screening rows)"
    names = "/".join(str(int(s)) for s in sorted(screen[seeds].unique()))
    return f"fixed on screening seeds {names} (baselines only, disjoint from the comparison seeds)"
