"""Quick-mode back-test: every figure's quick preset reproduces the committed tests/expected/quick files.

Refresh after an intended change: ``python -m smetric.experiments.backtest --write [figNN ...]``.
"""

import pandas as pd
import pytest

from smetric.experiments import backtest
from smetric.experiments.figures import figure_modules


@pytest.mark.parametrize("name", sorted(figure_modules()))
def test_quick_outputs_match_the_committed_expected_files(name):
    problems = backtest.check(figure_modules()[name])
    assert not problems, "\n".join(problems)


def test_every_figure_has_expected_files():
    have = {p.name.split("_", 1)[0] for p in backtest.expected_dir().glob("*.csv")}
    assert {n.split("_", 1)[0] for n in figure_modules()} <= have


def test_compare_catches_a_hand_edited_number_a_text_and_a_column():
    frame = pd.DataFrame({"policy": ["smetric", "lmetric"], "goodput_tps": [61234.5, 60001.25], "n": [3, 4]})
    assert backtest.compare(frame, frame.copy()) == []
    assert backtest.compare(frame, frame.assign(goodput_tps=[61234.5 * (1 + 1e-12), 60001.25])) == []
    moved = frame.assign(goodput_tps=[61234.5, 60001.3])
    assert "goodput_tps" in backtest.compare(frame, moved)[0]
    assert "policy" in backtest.compare(frame, frame.assign(policy=["smetric", "dynamo"]))[0]
    assert "columns differ" in backtest.compare(frame, frame.drop(columns="n"))[0]
    assert "rows" in backtest.compare(frame, frame.iloc[:1])[0]


def test_check_reports_a_changed_expected_file(tmp_path):
    module = figure_modules()["fig05_load_metric"]
    backtest.write_expected(module, tmp_path)
    assert backtest.check(module, tmp_path) == []
    path = tmp_path / "fig05_load_metric.csv"
    text = path.read_text().splitlines()
    header, row = text[0].split(","), text[1].split(",")
    value = header.index("value")
    row[value] = str(float(row[value]) + 0.01)
    path.write_text("\n".join([text[0], ",".join(row), *text[2:]]) + "\n")
    problems = backtest.check(module, tmp_path)
    assert len(problems) == 1 and "column 'value'" in problems[0]
