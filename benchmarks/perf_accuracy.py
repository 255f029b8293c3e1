"""Accuracy of the calibrated performance model against every measured profile (prints tables).

Usage: ``python benchmarks/perf_accuracy.py [--refit] [--markdown]``. ``--refit`` reruns
``smetric.hardware.calibration.fit_all()`` first (rewrites ``data/perf/efficiency.json``);
``--markdown`` prints the README table instead of the full report.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from smetric.hardware import calibration
from smetric.hardware.efficiency import TRANSFERRED_FROM, load_efficiencies


def markdown_table(linear: pd.DataFrame, attention: pd.DataFrame) -> str:
    """README table: MAPE per (dataset, GPU, model) with the TP range and the target."""
    rows = ["| dataset | GPU | model | TP | MAPE | worst | target |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for (dataset, gpu, model), sub in linear.groupby(["dataset", "gpu", "model"]):
        tps = ",".join(str(t) for t in sorted(sub["tp"]))
        lo, hi = sub["mape_pct"].min(), sub["mape_pct"].max()
        mape = f"{lo:.1f} %" if len(sub) == 1 else f"{lo:.1f}–{hi:.1f} %"
        rows.append(f"| {dataset} (>= {calibration.MIN_TOKENS} tok) | {gpu} | {model} | {tps} | {mape} | "
                    f"{sub['max_ape_pct'].max():.0f} % | <= 10 % |")
    for _, r in attention[attention["kind"] == "all"].iterrows():
        rows.append(f"| {r['dataset']} | {r['gpu']} | {r['model']} | {r['tp']} | {r['mape_pct']:.1f} % | "
                    f"{r['max_ape_pct']:.0f} % | <= 15 % |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refit", action="store_true", help="refit and rewrite data/perf/efficiency.json first")
    parser.add_argument("--markdown", action="store_true", help="print only the README markdown table")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 200)
    if args.refit:
        start = time.perf_counter()
        calibration.fit_all()
        print(f"refit in {time.perf_counter() - start:.1f} s")
    linear, attention = calibration.linear_mape_table(), calibration.attention_mape_table()
    if args.markdown:
        print(markdown_table(linear, attention))
        return
    for gpu, eff in load_efficiencies().items():
        print(f"{gpu}: {eff}")
    print("transferred:", ", ".join(f"{g} <- {d}" for g, d in TRANSFERRED_FROM.items()))
    print(f"\n== linear layers, n_tokens >= {calibration.MIN_TOKENS} (target MAPE <= 10 %)")
    print(linear.to_string(index=False))
    print("\n== attention grids (target MAPE <= 15 %)")
    print(attention.to_string(index=False))
    print("\n== leave one model out (fit on the other models of the same GPU)")
    print(calibration.leave_one_model_out().to_string(index=False))
    table, overheads = calibration.distserve_table()
    print("\n== DistServe A100 OPT iteration models; fitted CPU overhead per engine:",
          {k: f"{1e3 * v:.2f} ms" for k, v in overheads.items()})
    print(table.to_string(index=False))
    print("\n== roofline sanity (TP 1; ratio = predicted / 100 %-of-peak floor)")
    print(calibration.roofline_sanity().to_string(index=False))


if __name__ == "__main__":
    main()
