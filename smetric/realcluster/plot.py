"""Figure 16's panels: predicted against measured per metric, router ratios, and BLIS's error beside the model's."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..plotting import set_style
from .scoring import blis_table, ratio_table

__all__ = ["plot_real_clusters"]

_FAMILIES = {"throughput (tok/s, req/s)": ("output_tps", "total_tps", "request_tps"),
             "TTFT (s)": ("ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s"),
             "E2E (s)": ("e2e_mean_s", "e2e_p90_s", "e2e_p99_s"),
             "ITL / TPOT (s)": ("itl_mean_s", "tpot_mean_s")}


def _diagonal(ax, lo: float, hi: float) -> None:
    x = np.array([lo, hi])
    ax.plot(x, x, color="black", lw=0.8)
    ax.fill_between(x, x / 1.2, x * 1.2, color="grey", alpha=0.2, lw=0)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")


def plot_real_clusters(df: pd.DataFrame):
    """Four metric families (predicted vs measured, log-log, y = x with a +-20 % band), the router-ratio panel and
    the BLIS comparison."""
    set_style()
    fig, axes = plt.subplots(2, 3, figsize=(15, 9.5))
    pub = df[df["measured"].notna()]
    groups = pub["experiment"].str.split("-").str[0]
    palette = dict(zip(sorted(groups.unique()), plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, (title, metrics) in zip(axes.flat[:4], _FAMILIES.items()):
        g = pub[pub["metric"].isin(metrics)]
        if g.empty:
            ax.set_title(f"{title}: nothing published")
            continue
        vals = np.concatenate([g["measured"], g["predicted"]])
        vals = vals[vals > 0]
        _diagonal(ax, vals.min() / 2, vals.max() * 2)
        for family, h in g.groupby(groups[g.index]):
            ax.scatter(h["measured"], h["predicted"].clip(lower=vals.min() / 2), s=22, color=palette[family],
                       label=family, alpha=0.8)
        ax.set_xlabel("measured")
        ax.set_ylabel("predicted")
        ax.set_title(title)
    handles = {}
    for ax in axes.flat[:4]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    axes.flat[0].legend(handles.values(), handles.keys(), fontsize=8, loc="upper left", title="experiments")
    ax = axes.flat[4]
    ratios = ratio_table(df)
    if len(ratios):
        vals = np.concatenate([ratios["measured_ratio"], ratios["predicted_ratio"]])
        _diagonal(ax, vals.min() / 2, vals.max() * 2)
        for metric, h in ratios.groupby("metric"):
            ax.scatter(h["measured_ratio"], h["predicted_ratio"], s=26, label=metric, alpha=0.85)
        ax.legend(fontsize=8, loc="upper left")
    ax.set_xlabel("measured ratio to the baseline router")
    ax.set_ylabel("predicted ratio")
    ax.set_title("router comparisons (each router / its experiment's baseline)")
    ax = axes.flat[5]
    bt = blis_table(df)
    if len(bt):
        labels = [f"{e.split('-')[1]} {m.split('_')[0]}" for e, m in zip(bt["experiment"], bt["metric"])]
        y = np.arange(len(bt))
        ax.barh(y - 0.2, 100 * bt["rel_error"], height=0.4, label="smetric")
        ax.barh(y + 0.2, 100 * bt["blis_error"], height=0.4, label="BLIS (published)")
        ax.set_yticks(y, labels, fontsize=7)
        ax.axvline(0, color="black", lw=0.8)
        ax.legend(fontsize=8)
    ax.set_xlabel("signed error (%)")
    ax.set_title("BLIS sim-to-real runs: error of each simulator")
    fig.suptitle("Figure 16: the model against published real-cluster measurements")
    fig.tight_layout()
    return fig
