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
# # Figure 6: goodput TPS vs load (PD colocated, provisioned global store)
#
# SMETRIC against every baseline on the two testbeds (32x Qwen3-30B-A3B TP1, 8x Qwen3-235B-A22B TP8, H20, Mooncake-style global store that holds everything), on the synthetic agent workload. Goodput = tokens per second of requests meeting TTFT <= 1 s + 62.5 ms/1K prompt tokens and TPOT <= 20 ms, measured after the first quarter of the arrival span (cold caches). Paper (S1 p10): gains vs the best baseline grow with load, +1 %/+4 %/+13 %/+26 % at 6x/8x/9x/past saturation; peak +9 % (30B) and +15 % (235B).
#
# **Load axis.** The paper's loads are multipliers (6x, 8x, 9x, past saturation) of its internal traces; its 8x is ~360 requests per minute per instance, far past what one instance serves in our performance model (~12-20). We plot absolute offered load (requests per minute per instance, bottom axis; set by the session arrival rate of the generated workload, so tool/think gaps stay as calibrated) and map the paper's multipliers onto it (top axis) with one anchor per testbed: load = x / 8 x the offered load at which the best baseline peaks in our model (`main_results.ANCHOR_RPM`: 12 on 30B, 22.5 on 235B). 8x is the anchor because the paper's own numbers put the best baseline's peak there: SMETRIC gains +13 % at 9x but only +9 % at the peak, so the best baseline already declines at 9x. Past saturation is read at 10x. `load_max` is the highest multiplier swept (`smetric reproduce --only fig06 -p load_max=16` sweeps to 2x the anchor).

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
testbeds: list = None  # paper testbeds to run
model: str = None  # a model name or testbed key (e.g. qwen3-235b-a22b) selects one testbed
load_max: float = None  # highest load, in paper multipliers (8x is the best baseline's peak)
policies: list = None  # routers compared (smetric and every baseline)
minutes: dict = None  # measured window of the agent workload per testbed
n_instances: dict = None  # instances per testbed (the paper's 32 and 8)
multipliers: list = None  # loads in paper multipliers (None: every even one from 2 and 6-11, up to load_max)
seeds: list = None  # workload seeds (figures and tables use their mean)
warmup_frac: float = None  # share of the arrival span simulated but not measured

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig06_tps_vs_load as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, testbeds=testbeds, model=model, load_max=load_max, policies=policies,
                              minutes=minutes, n_instances=n_instances,
                              multipliers=multipliers, seeds=seeds,
                              warmup_frac=warmup_frac)
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
