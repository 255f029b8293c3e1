"""Figure 0: the calibrated performance model against every measured profile (operator profiles and DistServe's
end-to-end models): the tidy rows (:func:`perf_validation`), their MAPE (:func:`perf_mape`) and the plot."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..hardware import calibration, profiles
from ..hardware.efficiency import load_efficiencies
from ..plotting import set_style

__all__ = ["perf_validation", "perf_mape", "plot_perf_validation"]

_DATASET_ORDER = ["vidur-linear", "lss-linear", "lss-moe", "vidur-attention", "lss-attention", "distserve",
                  "distserve-vllm"]


def _scored(frame: pd.DataFrame, efficiencies) -> pd.DataFrame:
    frame = frame.copy()
    frame["predicted_s"] = calibration.predict(frame, efficiencies)
    return frame


def perf_validation(max_rows_per_group: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Measured vs predicted seconds for every profile row.

    Columns: ``dataset, gpu, model, tp, kind`` (linear / moe / prefill / decode / mixed), ``size`` (tokens
    in the batch for linear, MoE-block and DistServe rows, ``c*(p+c/2) + context tokens`` for attention rows),
    ``measured_s, predicted_s, rel_err`` (predicted / measured - 1). Linear rows below
    ``calibration.MIN_TOKENS`` tokens are dropped (outside the accuracy target). DistServe rows use
    the CPU overhead fitted per engine. ``max_rows_per_group`` keeps a seeded uniform random sample
    of each (dataset, GPU, model, TP) group (only the attention grids are that large), which keeps the
    mix of batch kinds, so MAPEs computed on it estimate the full-grid ones.
    """
    eff = load_efficiencies()
    linear = _scored(profiles.all_linear(), eff)
    linear = linear[linear["n_tokens"] >= calibration.MIN_TOKENS].assign(kind="linear", size=lambda d: d["n_tokens"])
    moe = _scored(profiles.lss_moe(), eff).assign(kind="moe", size=lambda d: d["n_tokens"])
    attention = _scored(profiles.all_attention(), eff)
    per_engine = calibration.distserve_efficiencies(eff)
    distserve = pd.concat([_scored(sub, {"a100": per_engine[name]})
                           for name, sub in profiles.distserve_iterations().groupby("dataset")])
    for frame in (attention, distserve):
        frame["kind"] = np.where(frame["chunk"] > 0, np.where(frame["n_decode"] > 0, "mixed", "prefill"), "decode")
    attention["size"] = attention["chunk"] * (attention["cached"] + attention["chunk"] / 2) + attention["decode_ctx"]
    distserve["size"] = distserve["chunk"] + distserve["decode_ctx"]
    cols = ["dataset", "gpu", "model", "tp", "kind", "size", "measured_s", "predicted_s"]
    out = pd.concat([linear[cols], moe[cols], attention[cols], distserve[cols]], ignore_index=True)
    if max_rows_per_group is not None:
        rng = np.random.default_rng(seed)
        keep = out.groupby(["dataset", "gpu", "model", "tp"], sort=False).indices.values()
        picked = [idx if len(idx) <= max_rows_per_group else rng.choice(idx, max_rows_per_group, replace=False)
                  for idx in keep]
        out = out.iloc[np.sort(np.concatenate(picked))].reset_index(drop=True)
    out["rel_err"] = out["predicted_s"] / out["measured_s"] - 1.0
    out["dataset"] = pd.Categorical(out["dataset"], categories=_DATASET_ORDER, ordered=True)
    return out


def perf_mape(validation: pd.DataFrame) -> pd.DataFrame:
    """MAPE (%) and worst error (%) per (dataset, GPU, model, TP) of a :func:`perf_validation` frame."""
    frame = validation.assign(ape=validation["rel_err"].abs())
    return calibration.mape_table(frame, by=("dataset", "gpu", "model", "tp"))


def plot_perf_validation(validation: pd.DataFrame):
    """Two rows of panels per dataset: predicted vs measured (log-log, y = x dashed) and relative error vs size."""
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.ticker import NullFormatter

    set_style()
    datasets = [d for d in _DATASET_ORDER if d in set(validation["dataset"].astype(str))]
    fig, axes = plt.subplots(2, len(datasets), figsize=(3.2 * len(datasets), 6.4), squeeze=False)
    for col, name in enumerate(datasets):
        sub = validation[validation["dataset"] == name]
        hue = sub["model"] + " tp" + sub["tp"].astype(str)
        ax = axes[0, col]
        sns.scatterplot(x=sub["measured_s"] * 1e3, y=sub["predicted_s"] * 1e3, hue=hue, s=6, linewidth=0,
                        alpha=0.5, ax=ax, legend=col == 0 or name.startswith("distserve"))
        lo, hi = sub["measured_s"].min() * 1e3, sub["measured_s"].max() * 1e3
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel="measured (ms)", ylabel="predicted (ms)" if col == 0 else "",
               title=f"{name}\nMAPE {100 * sub['rel_err'].abs().mean():.1f}%")
        if ax.get_legend() is not None:
            ax.legend(fontsize=5, markerscale=2, loc="upper left")
        ax = axes[1, col]
        sns.scatterplot(x=sub["size"], y=100 * sub["rel_err"], hue=sub["kind"], s=6, linewidth=0, alpha=0.5, ax=ax)
        ax.axhline(0, color="k", lw=0.8)
        ax.set(xscale="log", xlabel="tokens (linear) / attention work", ylabel="error (%)" if col == 0 else "")
        ax.legend(fontsize=6, markerscale=2)
    for ax in axes.ravel():
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
    fig.tight_layout()
    return fig
