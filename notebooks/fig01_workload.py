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
# # Figure 1: agent workloads reuse more, closer in time, and are skewed (SMetric §3)
#
# Findings 1-6 of the paper, on every synthetic workload preset (`bailian-coder`, the figures' default, is calibrated to the findings; `toolagent`, `tracelab`, `long-context`, `chat` to their own public targets), on the **real agent trace** `claude-code` (710 Claude Code sessions of kv-cache-tester, 49,334 calls with 64-token prefix hashes, shipped coarsened to 512-token blocks; as recorded, and with the tool/system prefix shared across sessions, a documented modelling option) and on the public Mooncake chat traces (sessions inferred from the hashes). Panels: prefix reuse of all requests, first turns and follow-ups (infinite cache); intra- vs cross-session share of the reuse; time since the matched prefix was last used; share of tokens carried by the largest sessions.
#
# **Verdicts (C1-C5, descriptive, band rule).** The real agent trace decides: a finding is reproduced when the Claude Code trace lies in the band and not reproduced when it does not. The calibrated preset meets each finding by construction (an input, not a test) and the Mooncake traces are chat traces, so neither decides. The shared-prefix variant is reported, not judged.
#
# **Cost.** Reading the full original trace (`weka_claude_code_traces.tar.gz`, ~3 GB of JSON unpacked) takes ~20 s; the shipped compact form (512-token blocks, regenerated from the original by `make_claude_code_512.py`) loads and characterizes in ~5 s.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
n_sessions: dict = None  # synthetic sessions per workload preset (tracelab sessions run ~45 turns)
agent_trace: str = None  # real agent-session trace (catalog name; None for none)
shared_prefix: bool = None  # also characterize the agent trace with its tool/system prefix shared
traces: list = None  # public chat traces
seed: int = None  # generator seed

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig01_workload as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, n_sessions=n_sessions, agent_trace=agent_trace,
                              shared_prefix=shared_prefix, traces=traces, seed=seed)
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
