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
# # Figure 8: TTFT and TPOT distributions at a high load
#
# CDFs of time to first token and time per output token per policy on the 30B testbed (colocated, provisioned global store) at the load where the best baseline peaks (paper 8x, see Figure 6's load axis), after the warm-up cut. Requests that never produced a first token are left out of the TTFT CDF and counted as `n_unfinished`. Paper: "also with a better per-token latency" (v1), "also with lower latency" (v2) -- qualitative.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
policies: list = None  # routers compared
testbed: str = None  # paper testbed
multiplier: float = None  # load in paper multipliers (8x is the best baseline's peak)
minutes: float = None  # measured window of the agent workload
n_instances: int = None  # instances (None: the paper's size)
seeds: list = None  # workload seeds; quantile functions are averaged over seeds
warmup_frac: float = None  # share of the arrival span simulated but not measured

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig08_latency as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, policies=policies, testbed=testbed, multiplier=multiplier, minutes=minutes,
                              n_instances=n_instances, seeds=seeds,
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
