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
# # Figure 5: how accurate is a load metric? (SMetric §4.2 p9)
#
# SMetric "criticizes Dynamo's token-count load as inaccurate" and uses an attention-aware cost `n + n (L - n/2) / L_eq` (n new of L prompt tokens; L_eq ~6.9k for Qwen3-30B-A3B). Here each request of the synthetic agent workload (preset `workload`, default `bailian-coder`) prefills what an unlimited cache would not serve (n = L - infinite-cache prefix hit), and the ground truth is the performance model's time for that prefill in 4096-token chunks on H20 (no engine). Metrics: request count (least-load), new tokens (Dynamo's and LMetric's load) and the attention-aware cost (SMETRIC). (a) each metric scaled by its median seconds per unit vs the true time, by prompt length; (b) share of random queue pairs a metric orders like their total prefill time; (c) when a router picks the least-loaded of 32 queues by the metric, the extra queued prefill of its pick over the truly least-loaded one. **Caveat:** the performance model has the same `c (p + c/2)` attention structure as the cost, so the cost's near-perfect fit here measures how much the fixed per-iteration and linear-layer terms disturb it, not its accuracy on real GPUs (the model's attention errors vs measured profiles are in Figure 0). No numeric claim of the paper belongs to this figure.
#
# **Second row: the real agent trace.** The same panels on 400 whole sessions (~24k calls) drawn with the seed from the 710 real Claude Code conversations of kv-cache-tester (`claude-code`, sub-agent chains are sessions of their own; ~122k-token prompts, most of each prefix served by the cache). Parameter `workload` takes a preset or `claude-code`, `trace` a timestamped trace file (any format `load_trace` reads) whose sessions replace it; `second_row` (`{}` for none) sets the second row. The findings print the fit of both rows.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
testbed: str = None  # paper testbed whose model and GPU time the prefills
n_sessions: int = None  # complete agent sessions (of a trace: at most this many, drawn with the seed)
workload: str = None  # workload of the sessions: a synthetic preset or the real claude-code trace
trace: str = None  # a timestamped trace file or catalog name whose sessions replace workload (None: workload)
queue_lengths: list = None  # mean requests per queue
n_pairs: int = None  # queue pairs per length
n_decisions: int = None  # least-loaded-of-N decisions per length
n_scatter: int = None  # requests drawn in panel (a)
seed: int = None  # workload and sampling seed
second_row: dict = None  # parameters of the row beside the main one: sessions of the real claude-code trace ({} for none)

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig05_load_metric as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, testbed=testbed, n_sessions=n_sessions, workload=workload, trace=trace,
                              queue_lengths=queue_lengths, n_pairs=n_pairs, n_decisions=n_decisions,
                              n_scatter=n_scatter, seed=seed, second_row=second_row)
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
