"""Fit the per-GPU :class:`~smetric.hardware.efficiency.Efficiency` parameters to measured timings.

``fit_all()`` refits everything from ``data/perf/profiles`` and writes ``data/perf/efficiency.json``:

* A100: linear layers from Vidur's ``mlp.csv`` (Llama-2-7B, Llama-3-8B, Llama-3-70B, TP 1-8),
  attention from Vidur's A100 FlashAttention grid;
* H100: linear layers from Vidur (Llama-2-7B, TP 1-8); prefill attention (``HOPPER_FIELDS``) from
  published FlashAttention-3 benchmarks (``data/perf/hopper_attention.csv``); decode attention still
  borrowed from the A100 fit (no usable Hopper decode-kernel grid; the CSV's decode rows are a check);
* H20: everything from the H100 fit except ``eta_attn``, fitted to its own FlashAttention-3 points;
* RTX PRO 6000: linear layers and attention from LLMServingSim (vLLM 0.19, Llama-3.1-8B, Qwen3-32B).

Fits minimise the squared log-ratio of predicted to measured time with every (model, TP) group
weighted equally. The CPU ``iteration_overhead_s`` is not in any operator profile and keeps its
nominal value; DistServe's end-to-end A100 models are used to check the whole iteration, with one
fitted overhead per serving engine (:func:`distserve_table`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from . import profiles
from .efficiency import FA3_FIELDS, NOMINAL, Efficiency, efficiency_path, load_efficiencies
from .gpus import get_gpu
from .kernel import prefill_attn_work
from .models import get_model
from .perfmodel import PerfModel

__all__ = ["LINEAR_FIELDS", "ATTENTION_FIELDS", "HOPPER_FIELDS", "predict", "fit_fields", "fit_all", "mape_table",
           "linear_mape_table", "attention_mape_table", "leave_one_model_out", "distserve_efficiencies",
           "distserve_table",
           "roofline_sanity", "MIN_TOKENS"]

# linear-layer MAPE is reported for batches of at least this many tokens (the target)
MIN_TOKENS = 16

LINEAR_FIELDS = ("eta_weights", "eta_compute", "ramp_tokens", "roof_sharpness", "layer_floor_s",
                 "elem_bytes_hidden", "elem_bytes_ffn")
MOE_FIELDS = ("moe_gemm_eff",)
ATTENTION_FIELDS = ("eta_attn", "attn_token_s", "eta_kv", "decode_mixed_factor", "attn_floor_s", "decode_seq_s")

# (lower, upper, scale): bounds of each fitted field, and its typical size (the optimiser works on value/scale)
_BOUNDS = {
    "eta_weights": (0.05, 1.0, 1.0), "eta_compute": (0.05, 1.0, 1.0), "ramp_tokens": (0.0, 2048.0, 100.0),
    "roof_sharpness": (1.0, 16.0, 1.0), "layer_floor_s": (0.0, 200e-6, 1e-5),
    "elem_bytes_hidden": (0.0, 200.0, 10.0), "elem_bytes_ffn": (0.0, 200.0, 10.0),
    "eta_attn": (0.01, 1.0, 1.0), "attn_token_s": (0.0, 1e-6, 1e-8), "eta_kv": (0.05, 1.0, 1.0),
    "decode_mixed_factor": (1.0, 20.0, 1.0), "attn_floor_s": (0.0, 200e-6, 1e-5), "decode_seq_s": (0.0, 20e-6, 1e-7),
    "iteration_overhead_s": (0.0, 0.1, 1e-3), "moe_gemm_eff": (0.05, 1.0, 1.0),
}

# which data fit which fields of which GPU: gpu -> [(fields, loader)]
_PLAN = {
    # Vidur's grid has no mixed prefill+decode batches (Sarathi runs separate kernels): mixed factor stays 1
    "a100": [(LINEAR_FIELDS, profiles.vidur_linear),
             (tuple(f for f in ATTENTION_FIELDS if f != "decode_mixed_factor"), profiles.vidur_attention)],
    "h100": [(LINEAR_FIELDS, profiles.vidur_linear)],
    # the MoE block profile fits only the expert GEMMs' rate, on top of the dense fit
    "rtx-pro-6000": [(LINEAR_FIELDS, profiles.lss_linear), (ATTENTION_FIELDS, profiles.lss_attention),
                     (MOE_FIELDS, profiles.lss_moe)],
    "rtx-4090": [(LINEAR_FIELDS, profiles.lss_linear), (ATTENTION_FIELDS, profiles.lss_attention)],
}
_ATTENTION_FROM = {"h100": "a100"}  # GPUs whose attention fields come from another GPU's fit (same stack)

# Hopper prefill attention from the FlashAttention-3 benchmarks: gpu -> (fields fitted, GPU whose fit it starts
# from). The H20 has two points at one sequence length, so only its efficiency is fitted.
HOPPER_FIELDS = FA3_FIELDS
_HOPPER_PLAN = {"h100": (HOPPER_FIELDS, "h100"), "h20": (("eta_attn",), "h100")}

_GROUP = ["gpu", "model", "tp"]


def _part(frame: pd.DataFrame) -> str:
    """Which quantity a profile frame measures: per-layer ``linear``, ``attention`` or ``moe`` (routed experts), or
    a full ``iteration``."""
    name = frame["dataset"].iloc[0]
    if name.endswith("-linear"):
        return "linear"
    if name.endswith("-moe"):
        return "moe"
    if name.endswith("-attention"):
        return "attention"
    return "iteration"


def predict(frame: pd.DataFrame, efficiencies: dict[str, Efficiency]) -> np.ndarray:
    """Model prediction (s) for every row of one profile frame, in the frame's own units.

    Operator profiles are per layer and per GPU shard (the ``linear`` or ``attention`` part of
    :meth:`PerfModel.breakdown` divided by the layer count); DistServe rows are whole iterations.
    """
    part = _part(frame)
    out = np.empty(len(frame))
    for (gpu, model, tp), idx in frame.groupby(_GROUP, sort=False).indices.items():
        pm = PerfModel(profiles.model_spec(model), gpu, int(tp), efficiency=efficiencies[gpu])
        rows = frame.iloc[idx]
        if part == "linear":
            out[idx] = pm.breakdown(rows["n_tokens"].to_numpy(float))["linear"] / pm.model.layers
            continue
        if part == "moe":
            out[idx] = pm.moe_block_time(rows["n_tokens"].to_numpy(float), rows["activated"].to_numpy(float))
            continue
        chunk, cached = rows["chunk"].to_numpy(float), rows["cached"].to_numpy(float)
        n_decode = rows["n_decode"].to_numpy(float)
        n_prefill = np.where(chunk > 0, 1.0, 0.0)  # prompts per row: one unless the row says (kernel benchmarks)
        if "n_prefill" in rows:
            n_prefill = np.where(rows["n_prefill"].isna(), n_prefill, rows["n_prefill"].to_numpy(float))
        parts = pm.breakdown(n_prefill * chunk + n_decode, n_prefill * prefill_attn_work(chunk, cached),
                             rows["decode_ctx"].to_numpy(float), n_decode)
        out[idx] = parts["attention"] / pm.model.layers if part == "attention" else sum(parts.values())
    return out


def _group_weights(frame: pd.DataFrame) -> np.ndarray:
    """Equal total weight per (GPU, model, TP) group, and per batch kind within an attention grid."""
    keys = [frame[k] for k in _GROUP]
    if _part(frame) not in ("linear", "moe"):
        keys.append(_attention_kind(frame))
    sizes = frame.groupby(keys, sort=False)["measured_s"].transform("size").to_numpy(float)
    return 1.0 / np.sqrt(sizes)


def fit_fields(frame: pd.DataFrame, gpu: str, fields, start: Efficiency, loss: str = "soft_l1") -> Efficiency:
    """Fit ``fields`` of GPU ``gpu``'s efficiency to ``frame``: robust least squares on log(predicted/measured)."""
    fields = tuple(fields)
    lo = np.array([_BOUNDS[f][0] / _BOUNDS[f][2] for f in fields])
    hi = np.array([_BOUNDS[f][1] / _BOUNDS[f][2] for f in fields])
    scale = np.array([_BOUNDS[f][2] for f in fields])
    x0 = np.clip(np.array([getattr(start, f) for f in fields]) / scale, lo, hi)
    measured = frame["measured_s"].to_numpy(float)
    weights = _group_weights(frame)

    def efficiency(x):
        return replace(start, **{f: float(v) for f, v in zip(fields, x * scale)})

    def residuals(x):
        return weights * np.log(predict(frame, {gpu: efficiency(x)}) / measured)

    result = least_squares(residuals, x0, bounds=(lo, hi), x_scale="jac", loss=loss, f_scale=0.05)
    return efficiency(result.x)


def fit_all(write: bool = True, path: str | Path | None = None) -> dict[str, Efficiency]:
    """Refit every measured GPU from the profiles; write ``efficiency.json`` (unless ``write=False``)."""
    fitted: dict[str, Efficiency] = {}
    for gpu, steps in _PLAN.items():
        eff, sources = NOMINAL, []
        for fields, loader in steps:
            frame = loader()
            frame = frame[frame["gpu"] == gpu]
            eff = fit_fields(frame, gpu, fields, eff)
            sources.append(f"{frame['dataset'].iloc[0]} ({', '.join(sorted(frame['model'].unique()))})")
        fitted[gpu] = replace(eff, source="fit: " + "; ".join(sources))
    for gpu, donor in _ATTENTION_FROM.items():
        borrowed = {f: getattr(fitted[donor], f) for f in ATTENTION_FIELDS}
        fitted[gpu] = replace(fitted[gpu], **borrowed, source=fitted[gpu].source + f"; attention from {donor}")
    hopper = hopper_fit_rows()
    for gpu, (fields, base) in _HOPPER_PLAN.items():
        frame = hopper[hopper["gpu"] == gpu]
        eff = fit_fields(frame, gpu, fields, fitted[base])
        note = f"{', '.join(fields)}: hopper-attention ({len(frame)} FlashAttention-3 points)"
        fitted[gpu] = replace(eff, source=(f"{fitted[base].source}; {note}" if base == gpu else
                                           f"fit: {note}; everything else from {base} ({fitted[base].source})"))
    if write:
        out = Path(path) if path is not None else efficiency_path()
        # what `smetric calibrate` may fit is declared by hand, not by this fit: kept as it is
        fittable = json.loads(out.read_text()).get("fittable") if out.is_file() else None
        payload = {
            "note": "fitted by smetric.hardware.calibration.fit_all() from data/perf/profiles; "
                    "GPUs missing here borrow from smetric.hardware.efficiency.TRANSFERRED_FROM",
            **({"fittable": fittable} if fittable is not None else {}),
            "gpus": {gpu: eff.to_dict() for gpu, eff in fitted.items()},
        }
        out.write_text(json.dumps(payload, indent=1) + "\n")
    return fitted


def _with_predictions(frame: pd.DataFrame, efficiencies: dict[str, Efficiency]) -> pd.DataFrame:
    frame = frame.copy()
    frame["predicted_s"] = predict(frame, efficiencies)
    frame["ape"] = (frame["predicted_s"] / frame["measured_s"] - 1.0).abs()
    return frame


def hopper_fit_rows() -> pd.DataFrame:
    """The rows of ``data/perf/hopper_attention.csv`` that the Hopper prefill-attention fit uses."""
    frame = profiles.hopper_attention()
    return frame[frame["use"] == "fit"].reset_index(drop=True)


def mape_table(frame: pd.DataFrame, by=("dataset", "gpu", "model", "tp")) -> pd.DataFrame:
    """MAPE (%), worst error (%) and row count per group of a frame with ``ape`` (absolute relative error)."""
    grouped = frame.groupby(list(by))["ape"]
    table = pd.DataFrame({"rows": grouped.size(), "mape_pct": 100 * grouped.mean(), "max_ape_pct": 100 * grouped.max()})
    return table.reset_index().round({"mape_pct": 2, "max_ape_pct": 1})


def linear_mape_table(efficiencies: dict[str, Efficiency] | None = None) -> pd.DataFrame:
    """Linear-layer MAPE per (dataset, GPU, model, TP) for batches of ``MIN_TOKENS`` tokens or more."""
    efficiencies = efficiencies or load_efficiencies()
    frame = _with_predictions(profiles.all_linear(), efficiencies)
    return mape_table(frame[frame["n_tokens"] >= MIN_TOKENS])


def _attention_kind(frame: pd.DataFrame) -> pd.Series:
    kind = np.where(frame["chunk"] > 0, np.where(frame["n_decode"] > 0, "mixed", "prefill"), "decode")
    return pd.Series(kind, index=frame.index)


def attention_mape_table(efficiencies: dict[str, Efficiency] | None = None) -> pd.DataFrame:
    """Attention MAPE per grid (``kind = all``) and per batch kind (prefill / decode / mixed).

    The ``hopper-attention`` decode rows are a check of the decode efficiency H100 borrows from the
    A100, not fitted."""
    efficiencies = efficiencies or load_efficiencies()
    frame = pd.concat([profiles.all_attention(), profiles.hopper_attention().drop(columns="use")], ignore_index=True)
    frame = _with_predictions(frame, efficiencies)
    overall = mape_table(frame).assign(kind="all")
    per_kind = mape_table(frame.assign(kind=_attention_kind(frame)), by=("dataset", "gpu", "model", "tp", "kind"))
    return pd.concat([overall, per_kind], ignore_index=True)


def leave_one_model_out(efficiencies: dict[str, Efficiency] | None = None) -> pd.DataFrame:
    """Fit on the other models of the same GPU and dataset, predict the held-out model.

    Linear layers: A100 (three Vidur models) and RTX PRO 6000 (two LLMServingSim models);
    attention: RTX PRO 6000 (the A100 grid has one model). MAPE on ``n_tokens >= MIN_TOKENS``
    for linear layers, over the whole grid for attention.
    """
    efficiencies = efficiencies or load_efficiencies()
    tables = []
    for fields, frame in ((LINEAR_FIELDS, profiles.all_linear()), (ATTENTION_FIELDS, profiles.all_attention())):
        for (_dataset, gpu), sub in frame.groupby(["dataset", "gpu"]):
            models = sorted(sub["model"].unique())
            for held_out in models if len(models) > 1 else []:
                train, test = sub[sub["model"] != held_out], sub[sub["model"] == held_out]
                eff = fit_fields(train, gpu, fields, efficiencies[gpu])
                scored = _with_predictions(test, {gpu: eff})
                if "n_tokens" in scored:
                    scored = scored[scored["n_tokens"] >= MIN_TOKENS]
                tables.append(mape_table(scored).assign(trained_on=", ".join(m for m in models if m != held_out)))
    return pd.concat(tables, ignore_index=True)


def distserve_efficiencies(efficiencies: dict[str, Efficiency] | None = None) -> dict[str, Efficiency]:
    """The A100 efficiency with ``iteration_overhead_s`` fitted to each DistServe engine's OPT models."""
    efficiencies = efficiencies or load_efficiencies()
    return {dataset: fit_fields(sub, "a100", ("iteration_overhead_s",), efficiencies["a100"])
            for dataset, sub in profiles.distserve_iterations().groupby("dataset")}


def distserve_table(efficiencies: dict[str, Efficiency] | None = None) -> tuple[pd.DataFrame, dict[str, float]]:
    """Whole-iteration check against DistServe's A100 OPT models, one fitted CPU overhead per engine.

    Returns the MAPE per (engine, model, TP, phase) and the fitted overhead (s) per engine.
    """
    per_engine = distserve_efficiencies(efficiencies)
    tables = []
    for dataset, sub in profiles.distserve_iterations().groupby("dataset"):
        scored = _with_predictions(sub, {"a100": per_engine[dataset]})
        scored["phase"] = np.where(scored["chunk"] > 0, "prefill", "decode")
        tables.append(mape_table(scored, by=("dataset", "gpu", "model", "tp", "phase")))
    return pd.concat(tables, ignore_index=True), {k: e.iteration_overhead_s for k, e in per_engine.items()}


def roofline_sanity(models=("llama-3-8b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b"),
                    gpus=("a100", "h100", "h20", "h200", "l20")) -> pd.DataFrame:
    """Predicted bs=1 decode and 2048-token prefill vs the 100 %-of-peak roofline floors (TP 1).

    The floors: weights / HBM bandwidth and ``2 * params * 2048`` FLOPs / bf16 peak (datasheet values, gpus.py).
    Models that do not fit one GPU's memory are still timed (the floor table ignores capacity too).
    """
    rows = []
    for model in models:
        spec = get_model(model)
        for gpu in gpus:
            g = get_gpu(gpu)
            pm = PerfModel(model, gpu, 1)
            rows.append({
                "model": model, "gpu": gpu,
                "decode_floor_ms": 1e3 * spec.weight_bytes / g.mem_bw,
                "decode_pred_ms": 1e3 * pm.decode_time([1]),
                "prefill_floor_ms": 1e3 * 2 * spec.active_params * 2048 / g.bf16_flops,
                "prefill_pred_ms": 1e3 * pm.prefill_time(2048),
            })
    table = pd.DataFrame(rows)
    table["decode_ratio"] = table["decode_pred_ms"] / table["decode_floor_ms"]
    table["prefill_ratio"] = table["prefill_pred_ms"] / table["prefill_floor_ms"]
    return table.round(2)
