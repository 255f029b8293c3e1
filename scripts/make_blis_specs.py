"""Write BLIS's real vLLM runs as validation specs: its test split into ``data/validation/``, its training split into
``data/calibration/`` (the same schema; calibration data only, never a test).

Every input is a published file, read from a path given on the command line (nothing here is read at run time by
the package):

* the run list: ``blis_eval_runs.csv`` (the test split, 33 runs) or, with ``--train``, ``blis_trainval_runs.csv``
  (the training split, 13 runs); only runs listed there become specs;
* ``--records``: the measured numbers, inference-sim/sim-to-real-accuracy-validation @ :data:`RECORDS_COMMIT`,
  ``results_iter36/error_records.csv`` (test) or ``results_trainval/error_records.csv`` (training): column
  ``actual`` at ``stage_index`` -1 (the summary over every stage), ms, kept to 0.01 ms;
* ``--physics``: inference-sim/inference-sim @ :data:`PHYSICS_COMMIT`, ``testdata/trained_physics_iter29.json``:
  the workload presets (the runs of :data:`PRESET_RUNS`) and each training run's shape, stages and KV blocks.

Reproduce (``git show`` from clones of the two repositories)::

    git -C sim-to-real-accuracy-validation show 7f3b2702:results_iter36/error_records.csv > test_records.csv
    git -C sim-to-real-accuracy-validation show 7f3b2702:results_trainval/error_records.csv > train_records.csv
    git -C inference-sim show f90a1e3a:testdata/trained_physics_iter29.json > physics.json
    python scripts/make_blis_specs.py blis_eval_runs.csv \\
        --records test_records.csv --physics physics.json
    python scripts/make_blis_specs.py --train blis_trainval_runs.csv \\
        --records train_records.csv --physics physics.json

``--check`` writes nothing and exits 1 when a spec would change or a ``blis-*.yaml`` of the folder is not produced.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import yaml

RECORDS_REPO = "inference-sim/sim-to-real-accuracy-validation"
RECORDS_COMMIT = "7f3b27022dcd575958a2f0c7b2373afece64c655"
PHYSICS_COMMIT = "f90a1e3a6787da17c2cd463dab6fb2660b1b1760"
RECORDS_PATH = {False: "results_iter36/error_records.csv", True: "results_trainval/error_records.csv"}
ROOT = Path(__file__).resolve().parent.parent
OUT = {False: ROOT / "data" / "validation", True: ROOT / "data" / "calibration"}

#: Hugging Face id of a run's model (the records' ``model`` column) -> this package's model name. Instruct and base
#: checkpoints share the architecture (Mixtral-8x22B-Instruct-v0.1 up to a 32,768- vs 32,000-token vocabulary).
MODELS = {
    "codellama/CodeLlama-34b-Instruct-hf": "codellama-34b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "mistralai/Mixtral-8x22B-v0.1": "mixtral-8x22b",
    "mistralai/Mixtral-8x22B-Instruct-v0.1": "mixtral-8x22b",
    "mistralai/Mistral-Nemo-Instruct-2407": "mistral-nemo-12b",
    "Qwen/Qwen3-14B": "qwen3-14b",
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "01-ai/Yi-34B": "yi-34b",
    "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": "llama-4-scout-17b-16e",
}
GPUS = {"H100": "h100", "A100-80GB": "a100", "L40S": "l40s"}
#: Preset -> the trained_physics_iter29.json experiment that ran it (names from inference-sim/inference-sim branch
#: training, training/trainval_data/README.md: 20260217-231439 is llama-2-7b "general", 17 "general-lite", ...).
PRESET_RUNS = {"general": "20260217-231439", "general-lite": "17", "codegen": "20", "roleplay": "21",
               "reasoning-lite": "48"}
#: GPU KV tokens read from vllm.log for the runs of the first 16-run matrix (H100, TP as here, max_num_batched_tokens
#: 2048, gpu_memory_utilization 0.9, CPU offload): sim-to-real-accuracy-validation
#: docs/plans/2026-03-04-sim-to-real-accuracy-validation-design.md, sections 1 and 4.2.
MATRIX_KV = {"llama-2-70b": (4, 501_712), "mixtral-8x7b": (2, 440_176), "codellama-34b": (2, 425_648)}
MATRIX_DOC = "docs/plans/2026-03-04-sim-to-real-accuracy-validation-design.md"
OFFLOAD_GIB_PER_RANK = 8  # OffloadingConnector CPU tier (the design document, section 1)
BLOCK = 16
METRICS = ("e2e_mean", "e2e_p90", "e2e_p99", "ttft_mean", "ttft_p90", "ttft_p99", "itl_mean")
#: The run lists' columns of :data:`METRICS` and the half-width of their rounding (ms).
TEST_COLUMNS = (dict(zip(METRICS, ("e2e_mean_ms", "e2e_p90", "e2e_p99", "ttft_mean_ms", "ttft_p90", "ttft_p99",
                                   "tpot_ms"))), 0.05)
TRAIN_COLUMNS = ({k: f"{k}_ms" for k in METRICS}, 0.005)
PRESET_RE = re.compile(r"-(general-lite|general|codegen|roleplay|reasoning-lite)(?:-\d+)*$")
RUN_ID_RE = re.compile(r"^(\d{8}-\d{6}|\d+)-")
HARNESS_NOTE = ("as run by the older inference-perf: 10 groups x 10 prompts, single turn (results/config.yaml). ITL as "
                "BLIS defines it: (E2E mean - TTFT mean) / (output mean - 1) with the client's re-tokenised output "
                "mean; client_output_mean = (E2E mean - TTFT mean) / ITL + 1 from the published values at full "
                "precision (the engine generated the nominal output_len).")
ENGINE_NOTE = ("vLLM 0.15.1, max_model_len 4096, max_num_seqs 128, prefix caching, chunked prefill, block 16, "
               "{weights}")


class InputError(ValueError):
    """An input file that does not hold what the generator needs (the message names the file and the reason)."""


def _number(x: float):
    """``x`` as an int when it is whole (YAML ``5``, not ``5.0``)."""
    return int(x) if float(x).is_integer() else float(x)


def read_records(path: Path) -> dict[str, dict]:
    """``{experiment folder: {metric: actual ms, 'row': first row}}`` of the summaries (``stage_index`` -1)."""
    out: dict[str, dict] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["stage_index"] != "-1" or row["metric_name"] not in METRICS:
                continue
            run = out.setdefault(Path(row["experiment_folder"]).name, {"row": row})
            value = float(row["actual"])
            if run.setdefault(row["metric_name"], value) != value:
                raise InputError(f"{path}: {row['experiment_folder']}: two values of {row['metric_name']}")
    return out


def read_physics(path: Path) -> dict[str, dict]:
    """The experiments of trained_physics_iter29.json by id."""
    return {str(e["id"]): e for e in json.loads(Path(path).read_text())["experiments"]}


def _shape(experiment: dict) -> tuple[dict, list[dict]]:
    """Workload params and stages of a trained_physics experiment, as the older inference-perf ran them."""
    sp = experiment["workload"]["inference_perf"]["shared_prefix"]
    params = {"num_groups": 10, "num_prompts_per_group": 10, "system_prompt_len": sp["system_prompt_len"],
              "question_len": sp["question_len"], "output_len": sp["output_len"], "enable_multi_turn_chat": False}
    stages = [{"rate": _number(s["rate"]), "duration": _number(s["duration"])}
              for s in experiment["workload"]["inference_perf"]["stages"]]
    return params, stages


def _client_output_mean(m: dict) -> float:
    """The client-counted output mean behind BLIS's ITL: (E2E mean - TTFT mean) / ITL + 1."""
    return round((m["e2e_mean"] - m["ttft_mean"]) / m["itl_mean"] + 1, 2)


def _check_run_list(runs: Path, label: str, m: dict, row: dict, columns: tuple[dict, float]) -> None:
    """The run list's numbers are the records' numbers at the run list's rounding."""
    names, half = columns
    for metric, column in names.items():
        if abs(m[metric] - float(row[column])) > half + 1e-9:
            raise InputError(f"{runs}: {label}: {column} {row[column]} but the records say {m[metric]}")


def _measured(m: dict) -> dict:
    return {f"{k}_s": round(m[k], 2) / 1000 for k in METRICS}


def _offload_gb(tp: int) -> float:
    return round(OFFLOAD_GIB_PER_RANK * 2**30 * tp / 1e9, 2)


def _doc(name: str, source: dict, cluster: dict, params: dict, stages: list[dict], measured: dict) -> dict:
    return {"name": name, "source": source, "cluster": cluster,
            "workload": {"kind": "shared-prefix", "params": params, "seed": 0},
            "load": {"arrival": "constant", "stages": stages, "measured_stages": "all", "drain": True,
                     "interval_s": 1.0},
            "routers": {"vllm": {"policy": "round-robin", "params": {}}},
            "measured": {"vllm": measured}}


def _cluster(model: str, gpu: str, tp: int, kv_tokens, mbt: int, offload: float, util: float, note: str,
             weight_dtype: str = "bf16") -> dict:
    return {"model": model, "gpu": gpu, "tp": tp, "instances": 1, "kv_tokens": kv_tokens,
            "max_num_batched_tokens": mbt, "max_num_seqs": 128, "block_size": BLOCK, "weight_dtype": weight_dtype,
            "kv_dtype": "bf16", "cpu_offload": offload, "gpu_memory_utilization": util, "engine": "vllm-0.15.1",
            "note": note}


def _source(path: str, run: str, note: str, client: float, blis: dict | None = None) -> dict:
    src = {"repo": RECORDS_REPO, "path": path, "commit": RECORDS_COMMIT,
           "url": f"https://github.com/{RECORDS_REPO}/blob/{RECORDS_COMMIT}/{path}", "note": note, "harness": "blis",
           "run": run, "client_output_mean": client}
    if blis is not None:
        src["blis_error_pct"] = blis
    return src


def _model_of(records_path: Path, folder: str, hf_id: str) -> str:
    if hf_id not in MODELS:
        raise InputError(f"{records_path}: {folder}: no model of this package for {hf_id!r}")
    return MODELS[hf_id]


def test_split(runs: Path, records_path: Path, physics: dict) -> dict[str, tuple[str, dict]]:
    """``{file name: (header comment, spec)}`` of every run of the test split's run list."""
    records = read_records(records_path)
    by_id = {RUN_ID_RE.match(f).group(1): f for f in records}
    out = {}
    with open(runs, newline="") as fh:
        for row in csv.DictReader(fh):
            rid = row["id"]
            if rid not in by_id:
                raise InputError(f"{records_path}: run {rid} of {runs} has no summary record")
            folder = by_id[rid]
            m, rec = records[folder], records[folder]["row"]
            model = _model_of(records_path, folder, rec["model"])
            preset = row["workload"]
            if rec["workload"] != preset or row["model"] not in rec["model"]:
                raise InputError(f"{runs}: run {rid}: {row['model']}/{preset} but the records say "
                                 f"{rec['model']}/{rec['workload']}")
            if preset not in PRESET_RUNS:
                raise InputError(f"{runs}: run {rid}: unknown preset {preset!r}; known: {', '.join(PRESET_RUNS)}")
            params, stages = _shape(physics[PRESET_RUNS[preset]])
            if len(stages) != int(row["stages"]):
                raise InputError(f"{runs}: run {rid}: {row['stages']} stages, preset {preset} has {len(stages)}")
            gpu, tp, mbt = GPUS[row["gpu"]], int(row["tp"]), int(row["mbt"])
            offload, util = row["cpu_offload"] == "True", float(row["gpu_mem"])
            for key, mine, theirs in (("tp", tp, int(rec["tp"])), ("mbt", mbt, int(rec["max_num_batched_tokens"])),
                                      ("cpu_offload", offload, rec["cpu_offload"] == "True"),
                                      ("gpu_mem", util, float(rec["gpu_mem_util"]))):
                if mine != theirs:
                    raise InputError(f"{runs}: run {rid}: {key} {mine} but the records say {theirs}")
            _check_run_list(runs, f"run {rid}", m, row, TEST_COLUMNS)
            matrix = MATRIX_KV.get(model)
            in_matrix = (matrix is not None and matrix[0] == tp and gpu == "h100" and mbt == 2048 and util == 0.9
                         and offload)
            weights = "FP16 read as bf16"
            if "Instruct" in rec["model"] and model == "mixtral-8x22b":
                weights += f", {rec['model'].split('/')[1]} as {model} (same shape, vocabulary 32,768 vs 32,000)"
            if offload:
                weights += f", OffloadingConnector with an {OFFLOAD_GIB_PER_RANK} GiB CPU tier per rank"
            kv = (f"KV {matrix[1] // BLOCK:,} blocks x {BLOCK} from vllm.log ({RECORDS_REPO} {MATRIX_DOC}, sec. "
                  f"4.2, read for its sec. 1 run matrix: H100, TP{tp}, max_num_batched_tokens 2048, "
                  f"gpu_memory_utilization 0.9, CPU offload, as this run)." if in_matrix
                  else "KV not published (the model's estimate).")
            note = ENGINE_NOTE.format(weights=weights) + "; " + kv
            cluster = _cluster(model, gpu, tp, matrix[1] if in_matrix else None, mbt,
                               _offload_gb(tp) if offload else 0, _number(util), note)
            src_note = (f"BLIS sim-to-real run ID {rid} (column actual, stage_index -1 = the summary over every "
                        f"stage). Preset {preset} (inference-sim/inference-sim testdata/trained_physics_iter29.json); "
                        f"{HARNESS_NOTE} blis_error_pct: BLIS trained-physics' own signed error (E2E/TTFT/ITL mean).")
            blis = {f"{k}_mean_s": float(row[f"blis_tp_mpe_{k}"]) for k in ("e2e", "ttft", "itl")}
            name = f"blis-{int(rid):02d}"
            header = (f"# BLIS sim-to-real validation, run ID {rid}: one vLLM instance, {model} on {tp} x {gpu}, "
                      f"preset {preset}.")
            spec = _doc(name, _source(RECORDS_PATH[False], folder, src_note, _client_output_mean(m), blis),
                        cluster, params, stages, _measured(m))
            out[f"{name}-{model}-{gpu}-tp{tp}-{preset}.yaml"] = (header, spec)
    return out


def train_split(runs: Path, records_path: Path, physics: dict) -> dict[str, tuple[str, dict]]:
    """``{file name: (header comment, spec)}`` of every run of the training split's run list."""
    from smetric.hardware.models import get_model

    records = read_records(records_path)
    out = {}
    with open(runs, newline="") as fh:
        for row in csv.DictReader(fh):
            folder = row["experiment"]
            if folder not in records:
                raise InputError(f"{records_path}: run {folder} of {runs} has no summary record")
            m, rec = records[folder], records[folder]["row"]
            rid = RUN_ID_RE.match(folder).group(1)
            if rid not in physics:
                raise InputError(f"trained_physics_iter29.json: no experiment {rid} (run {folder})")
            exp = physics[rid]
            model = _model_of(records_path, folder, rec["model"])
            preset = PRESET_RE.search(folder).group(1)
            label_note = ("" if row["workload"] in preset else f" (the run list's workload {row['workload']!r} is "
                          f"BLIS's manifest label; the folder name and this shape say {preset})")
            params, stages = _shape(exp)
            if (params, stages) != _shape(physics[PRESET_RUNS[preset]]):
                raise InputError(f"trained_physics_iter29.json: experiment {rid} is not preset {preset}")
            gpu, tp, mbt = GPUS[row["gpu"]], int(row["tp"]), int(row["mbt"])
            if (tp, mbt, row["model"]) != (int(exp["tp"]), int(exp["max_num_batched_tokens"]), rec["model"]):
                raise InputError(f"{runs}: {folder}: tp/mbt/model differ from trained_physics_iter29.json or the "
                                 f"records")
            _check_run_list(runs, folder, m, row, TRAIN_COLUMNS)
            cpu_blocks = int(exp["cpu_kv_blocks"])
            per_block = BLOCK * get_model(model).kv_bytes_per_token
            if cpu_blocks and abs(cpu_blocks - OFFLOAD_GIB_PER_RANK * 2**30 * tp / per_block) > 2:
                raise InputError(f"trained_physics_iter29.json: experiment {rid}: {cpu_blocks} CPU blocks are not "
                                 f"{OFFLOAD_GIB_PER_RANK} GiB per rank")
            fp8 = row["precision"] == "FP8"
            weights = "FP8-dynamic weights, bf16 KV" if fp8 else "FP16 read as bf16"
            weights += (f", OffloadingConnector with an {OFFLOAD_GIB_PER_RANK} GiB CPU tier per rank "
                        f"({cpu_blocks:,} CPU blocks)" if cpu_blocks else
                        ", no CPU tier recorded (cpu_kv_blocks 0: this run has no KV events)")
            note = (ENGINE_NOTE.format(weights=weights) + f"; gpu_memory_utilization the vLLM default (exp-config.yaml "
                    f"sets none); KV {int(exp['total_kv_blocks']):,} blocks x {BLOCK} from vllm.log "
                    f"(trained_physics_iter29.json total_kv_blocks).")
            cluster = _cluster(model, gpu, tp, int(exp["total_kv_blocks"]) * BLOCK, mbt,
                               _offload_gb(tp) if cpu_blocks else 0, 0.9, note, "fp8" if fp8 else "bf16")
            src_note = (f"BLIS training run {folder} (column actual, stage_index -1 = the summary over every stage): "
                        f"one of the H100 runs BLIS fitted its trained-physics coefficients on (inference-sim/"
                        f"inference-sim branch training, training/trainval_data/README.md); calibration data, never "
                        f"a test. Preset {preset}; shape, stages and KV blocks of experiment {rid} of "
                        f"inference-sim/inference-sim testdata/trained_physics_iter29.json @ {PHYSICS_COMMIT[:8]}"
                        f"{label_note}; the same harness as the test split (inference-sim/training default_args/"
                        f"20260217-155451-llama-2-7b-tp1-codegen/results/config.yaml shows it), {HARNESS_NOTE}")
            name = f"blis-train-{rid}"
            header = (f"# BLIS training run {rid} (calibration data, never a test): one vLLM instance, {model} on "
                      f"{tp} x {gpu}, preset {preset}.")
            spec = _doc(name, _source(RECORDS_PATH[True], folder, src_note, _client_output_mean(m)),
                        cluster, params, stages, _measured(m))
            out[f"{name}-{model}-{gpu}-tp{tp}-{preset}.yaml"] = (header, spec)
    return out


def render(header: str, spec: dict) -> str:
    """The file text: the header comment, then the spec in the shipped specs' YAML layout."""
    return header + "\n" + yaml.safe_dump(spec, sort_keys=False, width=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, help="blis_eval_runs.csv, or blis_trainval_runs.csv with --train")
    ap.add_argument("--records", type=Path, required=True, help="the matching error_records.csv (see above)")
    ap.add_argument("--physics", type=Path, required=True, help="trained_physics_iter29.json")
    ap.add_argument("--train", action="store_true", help="the training split, into data/calibration/")
    ap.add_argument("--out", type=Path, help="folder to write (default data/validation or data/calibration)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 on any difference")
    args = ap.parse_args(argv)
    for flag, path in (("runs", args.runs), ("--records", args.records), ("--physics", args.physics)):
        if not path.is_file():
            print(f"make_blis_specs: {flag}: no such file {path}", file=sys.stderr)
            return 2
    try:
        physics = read_physics(args.physics)
        specs = (train_split if args.train else test_split)(args.runs, args.records, physics)
    except (InputError, KeyError) as exc:
        print(f"make_blis_specs: {exc}", file=sys.stderr)
        return 2
    out = args.out or OUT[args.train]
    prefix = "blis-train-" if args.train else "blis-"
    stale = sorted(p.name for p in out.glob(f"{prefix}*.yaml") if p.name not in specs
                   and (args.train or not p.name.startswith("blis-train-")))
    changed = [f for f, (h, s) in specs.items() if not (out / f).is_file() or (out / f).read_text() != render(h, s)]
    for name in stale:
        print(f"not produced: {out / name}", file=sys.stderr)
    if args.check:
        for name in changed:
            print(f"would change: {out / name}", file=sys.stderr)
        return 1 if changed or stale else 0
    out.mkdir(parents=True, exist_ok=True)
    for name in changed:
        (out / name).write_text(render(*specs[name]))
    print(f"{len(specs)} specs in {out}: {len(changed)} written, {len(stale)} not produced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
