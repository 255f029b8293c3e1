"""The second workload row of a figure: parameters applied, rows labelled, claims judged on the main row."""

from dataclasses import dataclass

import pandas as pd
import pytest

from smetric.experiments import workload_rows as wr
from smetric.experiments.figure import FigureParams, param


@dataclass(frozen=True)
class Rows(FigureParams):
    workload: str = param("bailian-coder", "workload")
    trace: str | None = param(None, "trace")
    loads: tuple[float, ...] = param((40.0, 50.0), "loads")
    second_row: dict = param({"workload": "claude-code", "loads": (1.0, 2.0)}, "the second row")


def _run(q: Rows) -> pd.DataFrame:
    return pd.DataFrame({"load": list(q.loads), "value": [len(q.workload) * x for x in q.loads]})


def _claims(frame: pd.DataFrame) -> list[dict]:
    return [{"claim_id": "C9_load_only_gap", "verdict": "tie", "gain_mean": float(frame["value"].mean()),
             "reproduced": f"{len(frame)} rows", "reason": "test"}]


def test_compute_rows_runs_the_second_row_with_its_own_parameters():
    df = wr.compute_rows(Rows(), _run)
    assert list(df.columns[:1]) == ["workload"]
    assert df["workload"].tolist() == ["bailian-coder"] * 2 + ["claude-code"] * 2
    assert df["load"].tolist() == [40.0, 50.0, 1.0, 2.0]
    assert wr.main_rows(df)["load"].tolist() == [40.0, 50.0]
    assert [w for w, _ in wr.workload_frames(df)] == ["bailian-coder", "claude-code"]


def test_no_second_row_and_trace_labels():
    alone = wr.compute_rows(Rows(second_row={}), _run)
    assert set(alone["workload"]) == {"bailian-coder"}
    traced = wr.compute_rows(Rows(trace="my.jsonl"), _run)
    assert traced["workload"].tolist()[:2] == ["my.jsonl"] * 2 and traced["workload"].iloc[-1] == "claude-code"
    assert wr.second_params(Rows(trace="my.jsonl")).trace is None


@pytest.mark.parametrize("second, match", [({"loads": (1.0,)}, "must name its workload"),
                                           ({"workload": "claude-code", "rpm": 1}, r"unknown parameter\(s\) \['rpm'\]"),
                                           ({"workload": "bailian-coder"}, "repeats the main workload")])
def test_bad_second_rows_are_refused(second, match):
    with pytest.raises(ValueError, match=match):
        wr.compute_rows(Rows(second_row=second), _run)


def test_claims_read_the_main_row_and_row_claims_the_others():
    df = wr.compute_rows(Rows(), _run)
    main = wr.on_main(_claims)(df)
    assert main[0]["gain_mean"] == pytest.approx(len("bailian-coder") * 45.0)
    table = wr.row_claims(df, _claims)
    assert table["workload"].tolist() == ["claude-code"]
    assert table["gain_mean"].iloc[0] == pytest.approx(len("claude-code") * 1.5)
    assert list(table.columns[:3]) == ["workload", "claim_id", "verdict"] and pd.isna(table["ci_low"].iloc[0])
    assert wr.row_claims(wr.compute_rows(Rows(second_row={}), _run), _claims).empty


def test_frames_without_a_workload_column_are_one_row():
    frame = pd.DataFrame({"x": [1, 2]})
    assert [(w, len(f)) for w, f in wr.workload_frames(frame)] == [("", 2)]


def test_per_workload_tables_and_row_titles():
    df = wr.compute_rows(Rows(), _run)
    table = wr.per_workload(df, lambda sub: pd.DataFrame({"n": [len(sub)], "top": [sub["value"].max()]}))
    assert table.to_dict("list") == {"workload": ["bailian-coder", "claude-code"], "n": [2, 2],
                                     "top": [len("bailian-coder") * 50.0, len("claude-code") * 2.0]}
    plain = wr.per_workload(pd.DataFrame({"value": [1.0, 3.0]}), lambda sub: sub.sum().to_frame().T)
    assert list(plain.columns) == ["value"] and plain["value"].iloc[0] == 4.0
    assert wr.row_title("claude-code", "TTFT") == "claude-code: TTFT" and wr.row_title("", "TTFT") == "TTFT"
    assert wr.row_title("claude-code") == "claude-code: "
