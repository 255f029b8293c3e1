"""Start-up of ``smetric simulate``: what its process imports, the hidden optional imports, and metrics computed
on numpy columns that equal the DataFrame tables' (the result stays the same whichever is built first)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from engine_support import agent_workload, small_cluster

from smetric.cli import main
from smetric.cluster.result import SimResult
from smetric.cluster.simulate import simulate
from smetric.optional_imports import NUMBA_EXTRAS, hidden

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "matplotlib", "seaborn", "tqdm")


def _imported_after(code: str) -> dict:
    """Which of HEAVY and NUMBA_EXTRAS a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY + NUMBA_EXTRAS!r}}}))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_simulate_modules_import_no_dataframe_or_plotting_library():
    seen = _imported_after("import smetric.cluster.simulate, smetric.cli.simulate, smetric.workload.loaders, "
                           "smetric.policies")
    assert not any(seen[m] for m in HEAVY), seen


def test_a_simulate_command_imports_neither_pandas_nor_numbas_extras(tmp_path):
    rows = [(0, 2000, 20, [0, 1, 2, 3]), (500, 1800, 10, [0, 5, 6, 7])]
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h}) + "\n"
                            for t, n, o, h in rows))
    seen = _imported_after("from smetric.cli import main\n"
                           f"assert main(['simulate', '--trace', {str(path)!r}, '--policy', 'round-robin', '--model', "
                           "'qwen3-30b-a3b', '--gpu', 'h20', '--json']) == 0")
    assert not any(seen.values()), seen  # the summary is computed without building a DataFrame


def test_hidden_makes_a_module_look_absent_and_restores_it():
    name = "smetric_startup_probe_module"  # never installed: hiding it must not make it importable either
    with hidden([name, "json"]) as hid:
        assert hid == [name]  # json is imported already: left alone
        with pytest.raises(ImportError):
            __import__(name)
        assert sys.modules[name] is None
    assert name not in sys.modules
    with pytest.raises(TypeError, match="sequence of module names"):
        with hidden("coverage"):
            pass


def test_metrics_from_columns_equal_metrics_from_dataframes():
    """A result built from numpy columns (as simulate does) and one built from its DataFrames agree exactly."""
    wl = agent_workload(5, n_sessions=12, max_turns=4)
    result = simulate(wl, small_cluster(n_instances=2), "smetric", load=3.0, engine="reference")
    frames = SimResult(requests=result.requests.copy(), instances=result.instances.copy(),
                       timeseries=result.timeseries.copy(), cluster=result.cluster, policy=result.policy,
                       block_size=result.block_size, wall_time=result.wall_time)
    since = result.warmup_end(0.3)
    for name in ("summary", "diagnostics", "kpis"):
        for cut in (None, since):
            a, b = getattr(result, name)(cut), getattr(frames, name)(cut)
            assert a.keys() == b.keys()
            for key in a:
                assert type(a[key]) is type(b[key]) and (a[key] == b[key] or (math.isnan(a[key])
                                                                               and math.isnan(b[key]))), key
    assert isinstance(result.requests, pd.DataFrame) and result.requests is result.requests  # built once
    assert np.array_equal(result.columns("requests")["session"], wl.session)
    with pytest.raises(ValueError, match="table must be one of"):
        result.columns("sessions")


def test_busy_and_session_metrics_by_hand():
    """Two times x two instances; sessions 0 (two turns, one unfinished) and 1 (one done turn)."""
    requests = {"session": np.array([1, 0, 0]), "arrival": np.array([0.0, 1.0, 2.0]),
                "finish": np.array([3.0, 4.0, np.nan]), "admit": np.array([0.5, 1.0, np.nan]),
                "status": np.array(["completed", "completed", "stalled"], dtype=object),
                "scheduled": np.array([0.0, 1.0, 2.0])}
    timeseries = {"time": np.array([0.0, 1.0, 0.0, 1.0]), "instance": np.array([0, 0, 1, 1]),
                  "busy": np.array([True, True, False, True]), "waiting": np.array([2, 0, 0, 1]),
                  "running": np.array([1, 1, 0, 1])}
    instances = {"instance": np.array([0, 1]), "role": np.array(["colocated", "colocated"], dtype=object)}
    r = SimResult(requests, instances, timeseries, cluster=small_cluster(), policy="hand")
    from smetric.cluster.result import _by_time, _session_metrics
    top, mean = _by_time(r.columns("timeseries"), "busy")
    assert list(mean) == [0.5, 1.0] and list(top) == [True, True]
    s = _session_metrics(r.columns("requests"), l_max=0.25)
    assert s["n_sessions"] == 2 and s["n_sessions_completed"] == 1 and s["session_time_mean"] == 3.0
    assert s["queue_wait_max"] == 0.5 and s["sessions_starved_frac"] == 0.5  # session 1 waited 0.5 > 0.25
    top, mean = _by_time(r.columns("timeseries"), "waiting")
    assert list(top) == [2, 1] and list(mean) == [1.0, 0.5]


def test_cli_json_is_unchanged_by_the_column_path(tmp_path, capsys):
    """The printed JSON equals the one computed from the DataFrames (wall time aside)."""
    rows = [(0, 2000, 20, [0, 1, 2, 3]), (500, 1800, 10, [0, 5, 6, 7]), (4000, 2600, 30, [0, 1, 2, 3, 8, 9])]
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": n, "output_length": o, "hash_ids": h}) + "\n"
                            for t, n, o, h in rows))
    assert main(["simulate", "--trace", str(path), "--policy", "round-robin", "--model", "qwen3-30b-a3b",
                 "--gpu", "h20", "--json", "--out", str(tmp_path / "out")]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    frame = pd.read_csv(tmp_path / "out" / "requests.csv")
    assert printed["n_requests"] == len(frame) == 3
    for key, value in written.items():
        if key in printed and key != "wall_time_s":
            assert printed[key] == value or (printed[key] is None and math.isnan(value)), key
