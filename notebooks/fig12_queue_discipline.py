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
# # Figure 12: queue disciplines inside an instance (fcfs vs S-Metric score vs MLFQ)
#
# The router decides *where* a turn runs; the queue discipline decides *when* it is admitted from its instance's waiting queue (`smetric.cluster.queueing` documents the three disciplines).
#
# * **fcfs**: routing order, head-of-line blocking on KV (vLLM's default).
# * **smetric-score**: S = α/E[T] + β·P + γ·L/L_max − δ·R (defaults α=1, β=0, γ=1, δ=0.5, L_max=10 s), E[T] the turn's estimated *GPU* time (prefill of its uncached tokens + decode), never its tool/think gap; a request whose KV does not fit is skipped.
# * **mlfq**: high (first turns, E[T] < 100 ms, priority sessions; oldest first) > medium (by S) > low (E[T] > 2 s); promotion after 5 s (low → medium) and 10 s (→ high).
#
# Row 1: the 30B testbed in **closed replay** (a turn that waits delays the rest of its session), the SMETRIC and least-load routers, three offered loads (36, 48, 56 rpm/instance: below, near and past the knee of `bailian-coder`; windows of 5 min to fit the budget). Row 2: the same on the real agent trace (below). Row 3: the score's weights on a single instance fed short turns past its capacity plus a long turn every few seconds — the starvation mechanism in isolation. There is no paper claim for this figure (the scheduler blueprint is a design note); the last cell prints what we measured.
#
# **Second row: the real agent trace.** The disciplines experiment again on the 710 real Claude Code sessions of kv-cache-tester (`claude-code`; conversations start at the offered rate, each call's think time from the trace) at 3, 5 and 8 requests/min/instance (below, at and past its peak): its prompts average ~122k tokens, so its 30B goodput peaks near 5-6 requests/min/instance (235B: near 6), not near 50; about 13 % of its calls on 30B (prompts beyond an instance's ~250k-token KV capacity) are rejected at any load, so its SLO attainment stays below 0.9. Its windows are 10 minutes, the seeds those of row 1. The findings print both workloads (parameter `second_row`, `{}` for none).

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
testbed: str = None  # paper testbed (provisioned global store)
n_instances: int = None  # instances
minutes: float = None  # measured window of the agent workload (sessions start 6 h earlier)
loads: list = None  # offered loads (requests / min / instance): below, at, past the knee
routers: list = None  # routers
disciplines: list = None  # queue disciplines
seeds: list = None  # workload seeds
warmup_frac: float = None  # share of the arrival span not measured
workload: str = None  # agent workload: a preset or the real claude-code trace (setups.WORKLOADS)
trace: str = None  # a timestamped trace file or catalog name replayed at the offered rate (None: workload)
alphas: list = None  # weight sweep: alpha (1 / estimated GPU time)
gammas: list = None  # weight sweep: gamma (waiting time)
short_rate: float = None  # weight sweep: short turns per second (capacity is ~18/s)
duration: float = None  # weight sweep: seconds of stream
long_every: float = None  # weight sweep: a long turn every this many seconds
second_row: dict = None  # parameters of the disciplines row beside the main one: the real claude-code trace below, at and past its knee ({} for none)

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig12_queue_discipline as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, testbed=testbed, n_instances=n_instances, minutes=minutes, loads=loads,
                              routers=routers, disciplines=disciplines, seeds=seeds, warmup_frac=warmup_frac,
                              workload=workload, trace=trace, alphas=alphas, gammas=gammas, short_rate=short_rate,
                              duration=duration, long_every=long_every, second_row=second_row)
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
