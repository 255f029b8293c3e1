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
# # Figure 1: agent workloads reuse more, closer in time, and are skewed (SMetric §3)
#
# Findings 1-6 of the paper, on the synthetic agent workload (`synth_agent_workload`, calibrated to them), the chat preset and the public Mooncake traces (sessions inferred from the hashes). Panels: prefix reuse of all requests, first turns and follow-ups (infinite cache); intra- vs cross-session share of the reuse; time since the matched prefix was last used; share of tokens carried by the largest sessions.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
n_sessions: int = None  # synthetic agent sessions
chat_sessions: int = None  # synthetic chat sessions
seed: int = None  # generator seed

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig01_workload as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, n_sessions=n_sessions, chat_sessions=chat_sessions, seed=seed)
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
