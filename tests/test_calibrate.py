"""``smetric calibrate``: only declared fittable parameters, only training runs, a fit that recovers known values and
is reproducible bit for bit. (The training and test folders' disjointness is tests/test_blis_specs.py's.)

Fits run on hand-made one-instance specs of a few requests in quick mode, whose "measured" numbers are the model's
own predictions at known parameter values.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from spec_support import SMALL

from smetric.cli import main
from smetric.context import run_context
from smetric.realcluster import calibrate as cal
from smetric.realcluster.runner import predict
from smetric.realcluster.spec import load_spec

DATA = run_context().data_dir
TEST_SPEC = "data/validation/blis-16-llama-3.1-8b-h100-tp1-general.yaml"
TP1_TRAINING_SPEC = "data/calibration/blis-train-64-qwen2.5-7b-h100-tp1-roleplay.yaml"

TINY = {**copy.deepcopy(SMALL), "name": "tiny-train",
        "load": {"arrival": "constant", "stages": [{"rate": 10, "duration": 6}], "measured_stages": "all",
                 "interval_s": 1.0},
        "measured": {"vllm": {"e2e_mean_s": 1.0, "ttft_mean_s": 0.1, "itl_mean_s": 0.01}}}
TINY["source"]["run"] = "tiny-1"


def _write(path, doc) -> str:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main(["calibrate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _truth_spec(tmp_path, name: str, tp: int, monkeypatch, *, engine: str | None = None,
                efficiency: dict | None = None) -> tuple[str, dict]:
    """A tiny spec whose measured means are the model's quick predictions with the given values put in; and the
    predictions at the tables' own values."""
    doc = copy.deepcopy(TINY)
    doc["name"], doc["source"]["run"], doc["cluster"]["tp"] = name, f"{name}-1", tp
    path = _write(tmp_path / f"{name}.yaml", doc)
    plain = predict(load_spec(path), quick=True)["vllm"]
    with monkeypatch.context() as m:
        if efficiency:
            m.setenv("SMETRIC_DATA", str(cal.write_data_folder(tmp_path / f"{name}-data", efficiency=efficiency)))
        truth = predict(load_spec(path), quick=True, engine=engine)["vllm"]
    doc["measured"]["vllm"] = {m: truth[m] for m in cal.METRICS}
    return _write(tmp_path / f"{name}.yaml", doc), plain


def test_a_test_spec_is_refused_in_one_line_and_nothing_is_written(tmp_path, capsys):
    out = tmp_path / "fit.json"
    code, _, err = _run(capsys, TEST_SPEC, "--out", str(out), "--quick")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"smetric calibrate: {TEST_SPEC}: is a test spec: data/validation/ is the test set")
    assert not out.exists() and not list(tmp_path.iterdir())


def test_a_test_spec_copied_elsewhere_is_refused_by_its_source_run(tmp_path, capsys):
    doc = yaml.safe_load(open(TEST_SPEC).read())
    doc["name"] = "renamed"
    path = _write(tmp_path / "renamed.yaml", doc)
    code, _, err = _run(capsys, path, "--out", str(tmp_path / "fit.json"), "--quick")
    assert code == 2 and err.count("\n") == 1
    assert f"{path}: is a test spec: its source run {doc['source']['run']!r} is that of {TEST_SPEC}" in err


@pytest.mark.parametrize(("args", "reason"), [
    (["--param", "layer_floor_s"], "--param layer_floor_s: not fittable: data/perf/efficiency.json fits it from "
                                   "measured profiles (h100: fit: vidur-linear"),
    (["--param", "api_server_s"], "--param api_server_s: not fittable: it has a public source in "
                                  "data/perf/serving_stack.json (vllm-v1-async: vllm-54628, "),
    (["--param", "eta_link"], "--param eta_link: not fittable: not declared in data/perf/efficiency.json's fittable"),
    (["--param", "no_such"], "--param no_such: unknown parameter (fittable: stream_per_token_s, allreduce_latency_s)"),
    (["--param", "allreduce_latency_s"], "--param allreduce_latency_s: no training spec exercises it"),
    (["--jobs", "0"], "--jobs must be >= 1, got 0"),
])
def test_refused_parameters_and_flags(tmp_path, capsys, args, reason):
    out = tmp_path / "fit.json"
    code, _, err = _run(capsys, TP1_TRAINING_SPEC, "--out", str(out), "--quick", *args)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"smetric calibrate: {reason}")
    assert not out.exists()


def test_a_table_that_declares_a_sourced_parameter_fittable_is_refused(tmp_path, monkeypatch):
    folder = cal.write_data_folder(tmp_path / "data")
    table = json.loads((folder / "perf" / "serving_stack.json").read_text())
    table["fittable"]["api_server_s"] = {"low": 0.0, "high": 0.01, "points": 5, "note": "x"}
    (folder / "perf" / "serving_stack.json").write_text(json.dumps(table))
    monkeypatch.setenv("SMETRIC_DATA", str(folder))
    with pytest.raises(cal.CalibrationError, match=r"^data/perf/serving_stack.json: fittable.api_server_s: "
                                                   r"declared fittable, but row vllm-v0 gives it a source$"):
        cal.fittable_parameters()


def test_every_declared_parameter_is_an_assumption_in_its_table():
    declared = cal.fittable_parameters()
    assert declared, "the tables declare no fittable parameter"
    stack = json.loads((DATA / "perf" / "serving_stack.json").read_text())
    for par in declared.values():
        assert par.note and 0 <= par.low < par.high
        if par.table == "serving_stack.json":
            assert all("assumption" in row["params"][par.name] for row in stack["rows"].values())


def test_fit_recovers_a_known_streaming_cost_bit_for_bit(tmp_path, capsys, monkeypatch):
    truth = 0.0003  # a point of the table's level-0 grid: the fit must land on it with zero error
    path, plain = _truth_spec(tmp_path, "tiny-stream", 1, monkeypatch,
                              engine=f"vllm-v1-async:stream_per_token_s={truth}")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for out in (first, second):
        code, printed, _ = _run(capsys, path, "--param", "stream_per_token_s", "--quick", "--out", str(out))
        assert code == 0 and str(out) in printed
    assert first.read_bytes() == second.read_bytes()
    fit = json.loads(first.read_text())
    par = fit["parameters"]["stream_per_token_s"]
    assert par["fitted"] == truth and par["applies_to"] == ["vllm-v1-async"] and par["before"] == {"vllm-v1-async": 0.0}
    assert fit["fit_error"]["after"] == 0.0 < fit["fit_error"]["before"]
    assert fit["runs"] == [{"name": "tiny-stream", "file": str(Path(path).resolve()), "source_repo": "example/repo",
                            "source_run": "tiny-stream-1"}]
    measured = load_spec(path).measured["vllm"]
    assert fit["errors"]["before"]["tiny-stream"]["e2e_mean_s"] == round(plain["e2e_mean_s"] /
                                                                        measured["e2e_mean_s"] - 1, 6) < 0
    assert fit["apply"]["engine"] == [f"vllm-v1-async:stream_per_token_s={truth!r}"]
    folder = tmp_path / "applied"
    assert _run(capsys, "--apply", str(first), str(folder))[0] == 0
    table = json.loads((folder / "perf" / "serving_stack.json").read_text())
    assert table["rows"]["vllm-v1-async"]["params"]["stream_per_token_s"]["value"] == truth
    assert table["rows"]["vllm-v1-sync"] == json.loads((DATA / "perf" / "serving_stack.json").read_text())["rows"][
        "vllm-v1-sync"]


def test_apply_refuses_a_missing_fit_and_an_existing_folder(tmp_path, capsys):
    code, _, err = _run(capsys, "--apply", str(tmp_path / "none.json"), str(tmp_path / "dir"))
    assert code == 2 and err.startswith(f"smetric calibrate: --apply {tmp_path / 'none.json'}: not a fit file")
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"parameters": {}}))
    code, _, err = _run(capsys, "--apply", str(fit), str(tmp_path))
    assert code == 2 and err == f"smetric calibrate: --apply {tmp_path}: already exists; give a new folder\n"


def test_fit_recovers_a_known_allreduce_latency_and_apply_replays_it(tmp_path, capsys, monkeypatch):
    truth = 3e-5
    path, plain = _truth_spec(tmp_path, "tiny-tp2", 2, monkeypatch, efficiency={"h100": {"allreduce_latency_s": truth}})
    assert load_spec(path).measured["vllm"]["e2e_mean_s"] != plain["e2e_mean_s"]  # the latency moves the run
    out = tmp_path / "fit.json"
    code, _, _ = _run(capsys, path, "--param", "allreduce_latency_s", "--quick", "--out", str(out))
    assert code == 0
    fit = json.loads(out.read_text())
    assert fit["parameters"]["allreduce_latency_s"]["fitted"] == truth
    assert fit["parameters"]["allreduce_latency_s"]["applies_to"] == ["h100"]
    assert fit["fit_error"]["after"] == 0.0 < fit["fit_error"]["before"]
    folder = tmp_path / "applied"
    code, _, _ = _run(capsys, "--apply", str(out), str(folder))
    assert code == 0
    monkeypatch.setenv("SMETRIC_DATA", str(folder))
    replayed = predict(load_spec(path), quick=True)["vllm"]
    assert {m: replayed[m] for m in cal.METRICS} == load_spec(path).measured["vllm"]
    shutil.rmtree(folder)
