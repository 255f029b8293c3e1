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
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Figure 7: prefill TPS vs load under PD disaggregation
#
# The 30B testbed split into 24 prefill and 8 decode instances (H20, provisioned global store): policies route to the prefill instances, prefilled requests go to the decode instance with the fewest in flight. Prefill TPS = prompt tokens per second of requests whose first token met the TTFT SLO (`summary()['prefill_tps']`). The split: at the 30B anchor load 20P+12D starves the prefill pool (TTFT p50 ~10 s) and 28P+4D the decode pool (~12 agent contexts of KV per decode instance, TPOT p50 ~8 s); 24P+8D keeps both just below saturation. SMETRIC against the baselines the paper's notes name (LMetric, BAILIAN, Dynamo, session-sticky, load-balance only) plus Mooncake's scheduler. Paper: prefill TPS +2-34 % (v1 abstract), peak +9 % (v2 abstract).
#
# Loads use the colocated 30B anchor, so the axes match Figure 6 (requests per minute per instance, counting prefill and decode instances).

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
policies: list = None  # routers compared (smetric and the paper's named baselines)
multipliers: list = None  # loads in paper multipliers
split: list = None  # prefill, decode instances
minutes: float = None  # measured window of the agent workload
seeds: list = None  # workload seeds
warmup_frac: float = None  # share of the arrival span simulated but not measured

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig07_pd_disaggregation as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, policies=policies, multipliers=multipliers, split=split, minutes=minutes,
                              seeds=seeds, warmup_frac=warmup_frac)
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
