"""BLIS's real vLLM runs as specs: the test split (``data/validation/blis-*.yaml``) and the training split
(``data/calibration/``), the generator that writes them (``scripts/make_blis_specs.py``), and the client-counted
output mean of the ``blis`` harness's ITL.

Spec loading and small files only: no replay.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from smetric.context import run_context
from smetric.realcluster.metrics import harness_metrics
from smetric.realcluster.spec import SpecError, check_spec, load_specs, spec_paths

ROOT = run_context().root
VALIDATION = [s for s in load_specs(spec_paths()) if s.name.startswith("blis-")]
CALIBRATION = load_specs(spec_paths(ROOT / "data" / "calibration"))
# the folder holding the published run lists (blis_eval_runs.csv, blis_trainval_runs.csv), where one is given
RUN_LISTS = os.environ.get("SMETRIC_BLIS_RUN_LISTS")
RUN_ID = re.compile(r"^(\d{8}-\d{6}|\d+)-")

_gen_spec = importlib.util.spec_from_file_location("make_blis_specs", ROOT / "scripts" / "make_blis_specs.py")
gen = importlib.util.module_from_spec(_gen_spec)
_gen_spec.loader.exec_module(gen)


def _run_id(spec) -> str:
    return RUN_ID.match(spec.source["run"]).group(1)


def test_both_splits_load_and_are_disjoint_by_name_and_source_run():
    assert len(VALIDATION) == 33 and len(CALIBRATION) == 13
    assert all(s.name.startswith("blis-train-") for s in CALIBRATION)
    assert not any(s.name.startswith("blis-train-") for s in VALIDATION)
    assert not {s.name for s in VALIDATION} & {s.name for s in CALIBRATION}
    test_runs, train_runs = {_run_id(s) for s in VALIDATION}, {_run_id(s) for s in CALIBRATION}
    assert len(test_runs) == 33 and len(train_runs) == 13
    assert not test_runs & train_runs
    assert not {s.source["run"] for s in VALIDATION} & {s.source["run"] for s in CALIBRATION}
    for spec in VALIDATION:  # the name carries the run's id
        assert spec.name == f"blis-{int(_run_id(spec)):02d}"


@pytest.mark.parametrize("spec", VALIDATION + CALIBRATION, ids=lambda s: s.name)
def test_client_output_mean_is_the_published_triple(spec):
    """(E2E - TTFT) / ITL + 1 from the spec's own measured numbers (kept to 0.01 ms) within their rounding."""
    m = spec.measured["vllm"]
    e2e, ttft, itl = (1000 * m[k] for k in ("e2e_mean_s", "ttft_mean_s", "itl_mean_s"))
    derived = (e2e - ttft) / itl + 1
    half = 0.005  # ms
    bound = (derived - 1) * (2 * half / (e2e - ttft) + half / itl) + 0.005
    assert spec.harness == "blis" and abs(spec.client_output_mean - derived) <= bound
    assert spec.workload["params"]["output_len"] > 1  # the engine generates the nominal length


@pytest.mark.skipif(not RUN_LISTS or not (Path(RUN_LISTS) / "blis_eval_runs.csv").is_file(),
                    reason="SMETRIC_BLIS_RUN_LISTS names no folder with the published run lists")
@pytest.mark.parametrize(("csv_name", "specs", "key", "columns"), [
    ("blis_eval_runs.csv", VALIDATION, "id", gen.TEST_COLUMNS),
    ("blis_trainval_runs.csv", CALIBRATION, "experiment", gen.TRAIN_COLUMNS),
])
def test_every_listed_run_has_a_spec_with_its_numbers(csv_name, specs, key, columns):
    with open(Path(RUN_LISTS) / csv_name, newline="") as fh:
        rows = {row[key]: row for row in csv.DictReader(fh)}
    by_run = {(_run_id(s) if key == "id" else s.source["run"]): s for s in specs}
    assert set(by_run) == set(rows)
    names, half = columns
    for run, row in rows.items():
        spec = by_run[run]
        assert spec.cluster["tp"] == int(row["tp"]) and spec.cluster["max_num_batched_tokens"] == int(row["mbt"])
        for metric, column in names.items():
            assert abs(1000 * spec.measured["vllm"][f"{metric}_s"] - float(row[column])) <= half + 0.005 + 1e-9


def test_blis_itl_divides_by_the_client_count_when_the_spec_states_it():
    rq = pd.DataFrame({"arrival": [0.0, 1.0], "first_token": [0.1, 1.3], "finish": [1.1, 3.3],
                       "output_len": [11, 21], "input_len": [100, 100], "hit_hbm": [0.0, 0.0],
                       "hit_dram": [0.0, 0.0], "status": ["completed"] * 2})
    decode = np.mean([1.1, 2.3]) - np.mean([0.1, 0.3])
    assert math.isclose(harness_metrics(rq, "blis")["itl_mean_s"], decode / (16 - 1))
    assert math.isclose(harness_metrics(rq, "blis", 12.5)["itl_mean_s"], decode / (12.5 - 1))
    with pytest.raises(ValueError, match="only the blis harness"):
        harness_metrics(rq, "kubeai-chat", 12.5)


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda s: s.update(client_output_mean=1), "must be > 1"),
    (lambda s: s.update(client_output_mean="many"), "must be a number"),
    (lambda s: s.update(harness="inference-perf"), "only the blis harness"),
])
def test_bad_client_output_mean_names_file_and_key(edit, reason):
    doc = yaml.safe_load(open(VALIDATION[0].path).read())
    edit(doc["source"])
    with pytest.raises(SpecError) as err:
        check_spec(doc, "spec.yaml")
    assert str(err.value).startswith("spec.yaml: source.client_output_mean: ") and reason in str(err.value)


# ---------------------------------------------------------------- the generator on small published-format inputs

RECORD_COLUMNS = ["simulator", "experiment_folder", "model", "workload", "stage_index", "metric_name", "predicted",
                  "actual", "mape", "mpe", "absolute_error", "exp_id", "hardware", "dp", "cpu_offload",
                  "gpu_mem_util", "precision", "tp", "max_num_batched_tokens"]
ACTUAL = {"e2e_mean": 2000.004, "e2e_p90": 2100.0, "e2e_p99": 2200.0, "ttft_mean": 30.0, "ttft_p90": 35.0,
          "ttft_p99": 40.0, "itl_mean": 8.0}


def _physics(path):
    def exp(eid, rates, q=447, out=248):
        stages = [{"duration": 600, "rate": r} for r in rates]
        return {"id": eid, "tp": 1, "max_num_batched_tokens": 2048, "total_kv_blocks": 7463, "cpu_kv_blocks": 0,
                "workload": {"inference_perf": {"shared_prefix": {"system_prompt_len": 100, "question_len": q,
                                                                  "output_len": out}, "stages": stages}}}
    doc = {"experiments": [exp("20260217-231439", [8.0, 20.0]), exp("17", [2.5, 6.0]), exp("20", [5.0, 10.0], 466, 247),
                           exp("21", [6.0]), exp("48", [1.0])]}
    path.write_text(json.dumps(doc))


def _inputs(tmp_path, gpu_mem="0.9"):
    with open(tmp_path / "records.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(RECORD_COLUMNS)
        for metric, actual in ACTUAL.items():
            w.writerow(["blis-trained-physics", "/x/5-llama-3-1-8b-tp1-general-1", "meta-llama/Llama-3.1-8B-Instruct",
                        "general", -1, metric, 0, actual, 0, 0, 0, 5, "H100", "", "False", gpu_mem, "FP16", 1, 2048])
    runs = ["id,model,workload,gpu,tp,mbt,cpu_offload,gpu_mem,stages,e2e_mean_ms,e2e_p90,e2e_p99,ttft_mean_ms,"
            "ttft_p90,ttft_p99,tpot_ms,blis_tp_mpe_e2e,blis_tp_mpe_ttft,blis_tp_mpe_itl",
            "5,Llama-3.1-8B-Instruct,general,H100,1,2048,False,0.9,2,2000.0,2100.0,2200.0,30.0,35.0,40.0,8.0,1.5,-2.0,3.1"]
    (tmp_path / "runs.csv").write_text("\n".join(runs) + "\n")
    _physics(tmp_path / "physics.json")
    return [str(tmp_path / "runs.csv"), "--records", str(tmp_path / "records.csv"), "--physics",
            str(tmp_path / "physics.json"), "--out", str(tmp_path / "out")]


def test_generator_writes_a_loadable_spec_and_checks_it_reproduces(tmp_path, capsys):
    args = _inputs(tmp_path)
    assert gen.main(args) == 0
    (path,) = (tmp_path / "out").glob("*.yaml")
    assert path.name == "blis-05-llama-3.1-8b-h100-tp1-general.yaml"
    spec = load_specs([path])[0]
    assert spec.measured["vllm"]["e2e_mean_s"] == 2.0  # the records' value kept to 0.01 ms
    assert spec.client_output_mean == round((2000.004 - 30.0) / 8.0 + 1, 2)
    assert spec.load["stages"] == [{"rate": 8, "duration": 600}, {"rate": 20, "duration": 600}]
    assert spec.cluster["kv_tokens"] is None and spec.source["blis_error_pct"]["itl_mean_s"] == 3.1
    assert gen.main([*args, "--check"]) == 0
    path.write_text(path.read_text().replace("seed: 0", "seed: 1"))
    assert gen.main([*args, "--check"]) == 1
    assert "would change" in capsys.readouterr().err


def test_generator_refuses_a_run_list_that_disagrees_with_the_records(tmp_path, capsys):
    assert gen.main(_inputs(tmp_path, gpu_mem="0.95")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run 5: gpu_mem 0.9 but the records say 0.95" in err
    assert not (tmp_path / "out").exists()
