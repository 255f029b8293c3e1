# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Figure 0 — the calibrated performance model vs measured GPU timings
#
# Every iteration time in the simulator comes from `smetric.hardware.PerfModel`: a smooth roofline of the linear layers, causal attention FLOPs, decode KV reads, TP all-reduce and a fixed overhead, with per-GPU efficiencies fitted to third-party profiles (`data/perf/`). Top row: predicted vs measured time per dataset; bottom row: relative error vs batch size. Operator profiles are per layer and GPU shard; DistServe rows are whole iterations of its A100 OPT latency models, with one CPU overhead fitted per engine. Targets: MAPE <= 10 % on linear layers (>= 16 tokens), <= 15 % on attention grids.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
max_rows_per_group: int = None  # rows kept per (dataset, GPU, model, TP) group; attention grids are subsampled (seeded)
seed: int = None  # seed of the subsampling

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig00_perf_model as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, max_rows_per_group=max_rows_per_group, seed=seed)
params

# %%
df = figure.compute(params, jobs=context.jobs)
figure.overview(df)

# %%
fig = figure.plot(df)
paths = save(figure, fig, df, context)

# %%
print(figure.findings(df))

# %%
# NBVAL_CHECK_OUTPUT
claims = report(figure, df, context)
