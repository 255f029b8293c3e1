"""fig11 and fig12 with a real trace: the phase diagram's turns axis collapses to the trace's own sessions, and both
figures get the claude-code row beside the main workload."""

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from smetric.experiments.figures import fig11_phase_diagram as fig11
from smetric.experiments.figures import fig12_queue_discipline as fig12
from smetric.experiments.phase import phase_cells, phase_diagram, phase_findings, plot_phase, session_lengths

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    from smetric.workload.synthetic import synth_agent_workload
    from smetric.workload.writers import write_trace

    w = synth_agent_workload(duration=900.0, warmup=1800.0, seed=5, preset="bailian-coder", requests_per_minute=120.0)
    return w, write_trace(w, tmp_path_factory.mktemp("trace") / "coder.jsonl", "bailian")


def test_session_lengths_of_a_trace_file_are_its_own_sessions(trace_file):
    w, path = trace_file
    counts = np.unique(w.session, return_counts=True)[1]
    assert counts.max() > 1  # a real length distribution, not one call per session
    assert session_lengths("bailian-coder", str(path)) == pytest.approx((np.median(counts), counts.mean()))
    with pytest.raises(ValueError, match="not a real trace"):
        session_lengths("bailian-coder")


def test_phase_diagram_on_a_trace_file_has_one_turns_value(trace_file):
    w, path = trace_file
    median, mean = session_lengths("bailian-coder", str(path))
    df = phase_diagram(bandwidths=(2.0, 24.0), turns_medians=(1, 4, 16), rpm_per_instance=(20.0, 30.0),
                       policies=("smetric", "least-load"), n_instances=4, minutes=2.0, seeds=(0, 1),
                       trace=str(path), jobs=1)
    assert len(df) == 2 * 1 * 2 * 2 * 2  # bandwidths x one turns value x loads x policies x seeds
    assert set(df["turns_source"]) == {"trace"}
    assert df["turns_median"].unique().tolist() == [median] and df["mean_turns"].unique().tolist() == [mean]
    # the file replayed at the offered rate, the same requests for every seed
    for rpm, sub in df.groupby("rpm_per_instance"):
        assert sub["offered_rpm_per_instance"].to_numpy() == pytest.approx(rpm, rel=0.05)
        assert sub["ideal_tps"].nunique() == 1
    cells = phase_cells(df)
    assert len(cells) == 4 and set(cells["turns_source"]) == {"trace"}
    text = phase_findings(cells)
    assert f"own sessions (median {median:g} calls" in text and "Mean gain by median turns" not in text
    fig = plot_phase(cells)
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert any(t.startswith("trace") for t in ticks)


def test_a_synthetic_preset_keeps_its_turns_axis_and_unknown_workloads_are_refused():
    with pytest.raises(ValueError, match="synthetic preset"):
        phase_diagram(workload="nope", n_instances=4, minutes=1.0, jobs=1)


@pytest.fixture(scope="module")
def fig11_quick():
    return fig11.compute(fig11.Params.quick(), jobs=1)


def test_fig11_quick_has_the_claude_code_row_with_its_own_sessions(fig11_quick):
    df = fig11_quick
    assert list(dict.fromkeys(df["workload"])) == ["bailian-coder", "claude-code"]
    main, real = df[df["workload"] == "bailian-coder"], df[df["workload"] == "claude-code"]
    assert set(main["turns_source"]) == {"generator"} and sorted(main["turns_median"].unique()) == [1.0, 4.0]
    assert set(real["turns_source"]) == {"trace"} and real["turns_median"].nunique() == 1
    assert real["turns_median"].iloc[0] > 10  # claude-code conversations run dozens of calls
    loads = sorted(fig11.Params.quick().second_row["rpm_per_instance"])
    assert sorted(real["rpm_per_instance"].unique()) == loads and set(real["seed"]) == set(main["seed"])
    cells = fig11.overview(df)
    assert cells.groupby("workload").size().to_dict() == {"bailian-coder": 4, "claude-code": 2}
    text = fig11.findings(df)
    assert "bailian-coder:" in text and "claude-code:" in text
    fig = fig11.plot(df)
    assert sum(ax.get_visible() for ax in fig.axes if ax.get_title()) == 4  # 2 panels per workload row


def test_fig12_keeps_a_claude_code_row_beside_the_cluster_part():
    """The full run adds the real trace as a second cluster row near and past its knee; quick mode leaves it out
    (``second_row={}``) and runs the stream and the bailian-coder cluster part only."""
    full = fig12.Params()
    assert full.second_row["workload"] == "claude-code" and len(full.second_row["loads"]) == 2
    assert fig12.Params.quick().second_row == {}
    committed = pd.read_csv(Path(__file__).resolve().parents[1] / "figures" / "fig12_queue_discipline.csv")
    cluster = committed[committed["part"] == "cluster"]
    assert set(cluster["workload"]) == {"bailian-coder", "claude-code"}
    assert sorted(cluster.loc[cluster["workload"] == "claude-code", "rpm"].unique()) == sorted(
        full.second_row["loads"])
