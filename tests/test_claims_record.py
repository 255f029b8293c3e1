"""The committed record agrees with itself: figure CSVs -> claims.csv -> the README's generated verdict table.

Every comparative interval of ``figures/claims.csv`` (and of ``claims_second_row.csv``) is recomputed here
from the committed per-seed figure CSVs with the figure modules' own claims functions, and the README's
generated block must be exactly :func:`~smetric.experiments.claims.summary_table` of ``claims.csv`` (the
per-point tables of ``docs/results.md`` are checked with every other page, ``tests/test_docs_pages.py``).
"""

import pandas as pd
import pytest

from smetric.experiments.claims import README_BEGIN, README_END, paper_claims, summary_table, tidy_claims
from smetric.experiments.figures import csv_frames, figure_id, figure_modules
from smetric.experiments.reproduce import repo_root

FIGURES = repo_root() / "figures"
KEY = ["claim_id", "point"]
CHECKED = ["gain_mean", "ci_low", "ci_high", "n_seeds", "verdict", "verdict_uncorrected", "comparator"]


def _recomputed() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Main-row and second-row claims of every figure, re-derived from its committed CSV (nothing simulated)."""
    paper = paper_claims()[["paper_value", "unit"]]
    main, second = [], []
    for name, module in figure_modules().items():
        path = FIGURES / f"{name}.csv"
        if not path.exists():
            continue
        df = pd.read_csv(path)
        rows = module.claims(df)
        if rows:
            main.append(pd.DataFrame(rows).assign(figure=figure_id(module)))
        for stem, frame in csv_frames(module, df).items():
            if stem.endswith("_second_row_claims") and not frame.empty:
                second.append(frame)
    join = lambda parts: tidy_claims(pd.concat(parts, ignore_index=True).join(paper, on="claim_id"))  # noqa: E731
    return join(main), join(second)


@pytest.fixture(scope="module")
def recomputed():
    return _recomputed()


def _compare(committed: pd.DataFrame, fresh: pd.DataFrame, keys: list[str]) -> None:
    committed = committed[committed["ci_low"].notna()].copy()
    fresh = fresh[fresh["ci_low"].notna()].copy()
    for t in (committed, fresh):
        t["point"] = t["point"].fillna("").astype(str)
    a, b = committed.set_index(keys).sort_index(), fresh.set_index(keys).sort_index()
    assert list(a.index) == list(b.index), "the claim points differ"
    for col in CHECKED:
        if a[col].dtype.kind in "fi":
            pd.testing.assert_series_equal(a[col].astype(float), b[col].astype(float), atol=1e-4, rtol=0,
                                           check_names=False)
        else:
            assert a[col].fillna("").astype(str).tolist() == b[col].fillna("").astype(str).tolist(), col


def test_every_comparative_interval_follows_from_the_figure_csvs(recomputed):
    _compare(pd.read_csv(FIGURES / "claims.csv"), recomputed[0], KEY)


def test_second_row_intervals_follow_from_the_figure_csvs(recomputed):
    _compare(pd.read_csv(FIGURES / "claims_second_row.csv"), recomputed[1], ["workload", *KEY])


def test_descriptive_verdicts_follow_from_the_figure_csvs(recomputed):
    committed = pd.read_csv(FIGURES / "claims.csv")
    fresh = recomputed[0][recomputed[0]["ci_low"].isna()]
    committed, fresh = (t.assign(point=t["point"].fillna("").astype(str)).set_index(["claim_id", "point"])
                        for t in (committed, fresh))
    assert committed.loc[fresh.index, "verdict"].tolist() == fresh["verdict"].tolist()
    described = fresh.index[fresh["verdict"] != "undetermined"]  # a comparative point without an interval has no band
    assert committed.loc[described, "band_source"].notna().all()  # every band has its source


def test_readme_verdict_table_is_generated_from_claims_csv():
    text = (repo_root() / "README.md").read_text()
    block = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0]
    expected = summary_table(pd.read_csv(FIGURES / "claims.csv"))
    assert block == "\n" + expected, "README verdict table differs: run python -m smetric.experiments.claims --readme"


def test_claims_csv_is_tidy():
    table = pd.read_csv(FIGURES / "claims.csv")
    for col in ("gain_mean", "ci_low", "ci_high", "p_value", "p_adjusted", "mde", "n_seeds"):
        assert pd.api.types.is_numeric_dtype(table[col]), col
    assert not table.duplicated(KEY).any()
    comparative = table[table["ci_low"].notna()]
    assert comparative["mde"].gt(0).all() and comparative["comparator"].notna().all()
    assert (comparative["p_adjusted"] >= comparative["p_value"] - 1e-12).all()
    c12 = comparative[comparative["claim_id"] == "C12_gain_vs_load"]
    assert c12["comparator"].nunique() == 1 and len(c12) == 4  # one comparator at every load
    # one comparator per claim, fixed before the comparison (C12's loads, C15's testbeds, C17's conditions)
    # (C18's points are "workload: level": one comparator per workload, screened at its default level)
    c18 = comparative["claim_id"].str.startswith("C18")
    population = comparative["claim_id"] + ("/" + comparative["point"].str.split(":").str[0]).where(c18, "")
    assert (comparative.groupby(population)["comparator"].nunique() == 1).all()
    gains = comparative[comparative["rule"] == "gain"]  # each says whether the paper's value was detectable
    assert gains["paper_detectable"].notna().all()
    assert (gains["paper_detectable"].astype(str) == (gains[["paper_low", "paper_high"]].abs().min(axis=1)
                                                      >= gains["mde"]).astype(str)).all()


def test_comparative_figures_fix_their_comparator_on_disjoint_screening_seeds():
    """Every committed per-seed CSV of a figure whose claim picks a comparator holds screening rows (baselines only:
    never the judged router, least-load for C9, SMETRIC elsewhere) on seeds none of its compared rows use."""
    judged = {"fig03_global_tier_sweep": "least-load", "fig06_tps_vs_load": "smetric",
              "fig07_pd_disaggregation": "smetric", "fig08_latency": "smetric", "fig10_sensitivity": "smetric"}
    for name, ours in judged.items():
        df = pd.read_csv(FIGURES / f"{name}.csv")
        screen = df[df["screen_seed"]]
        assert not screen.empty, name
        assert ours not in set(screen["policy"]), name
        assert not set(screen["seed"]) & set(df.loc[~df["screen_seed"], "seed"]), name
