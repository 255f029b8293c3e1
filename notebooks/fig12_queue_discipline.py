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
# # Figure 12: queue disciplines where queues form (fcfs vs S-Metric score vs MLFQ, oracle vs estimated E[T])
#
# The router decides *where* a turn runs; the queue discipline decides *when* it is admitted from its instance's waiting queue (`smetric.cluster.queueing` documents the three disciplines).
#
# * **fcfs**: routing order, head-of-line blocking on KV (vLLM's default).
# * **smetric-score**: S = α/E[T] + β·P + γ·L/L_max − δ·R (α=1, β=10 here, γ=1, δ=0.5, L_max=10 s), E[T] the turn's estimated *GPU* time (prefill of its uncached tokens + a decode estimate); a request whose KV does not fit is skipped.
# * **mlfq**: high (first turns, E[T] < 100 ms, priority sessions; oldest first) > medium (by S) > low (E[T] > 2 s); promotion after 5 s (low → medium) and 10 s (→ high).
#
# Each ranked discipline runs with the **oracle** decode estimate (the true output length, an upper bound) and the **linear** estimator (a·input + b·E[output] + c fitted online on finished requests, E[output] from the session's or everybody's past outputs). Every configuration runs at two shares of high-priority sessions (0 and 0.2; priority 2, β = 10: assumptions), on 8 paired workload seeds.
#
# A discipline can only matter where requests wait, so both experiments run where queues form: **stream** — one 30B instance, open replay, Poisson short turns near (16/s) and past (22/s) its ~18/s capacity plus a 12k-token turn every 4 s (outputs log-normal around their medians, so an estimate from past outputs can be wrong); **cluster** — the 30B testbed (4 instances) in open replay with `bailian-coder` near (64) and past (80 rpm/instance) its knee, and the real Claude Code trace (`claude-code`, ~122k-token prompts) at 3 and 5 rpm/instance (second row).
#
# There is no paper claim for this figure. The blueprint's promises are judged by the package's verdict rules in `fig12_claims.csv`: session completion time lower than FCFS; no starvation — **the bound, stated before running: the p99 queue wait of long turns (top decile of GPU time) at most 1.5× FCFS's**; the high-priority tier's latency lowered (its latency over the normal tier's, against FCFS's ratio). The last cells print the findings and the verdicts.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
n_instances: int = None  # instances of the cluster part (30B testbed, open replay)
minutes: float = None  # measured window of the cluster part's agent workload
loads: list = None  # cluster part: offered loads (requests / min / instance), near and past the knee
workload: str = None  # agent workload of the cluster part (testbeds.WORKLOADS)
router: str = None  # router of the cluster part
shares: list = None  # shares of high-priority sessions
seeds: list = None  # workload seeds (paired across configurations)
warmup_frac: float = None  # share of the arrival span not measured
short_rates: list = None  # stream part: short turns per second on one instance (capacity is ~18/s): near and past it
duration: float = None  # stream part: seconds of stream
long_every: float = None  # stream part: a long turn every this many seconds
output_sigma: float = None  # stream part: log-normal sigma of the output lengths around their medians
second_row: dict = None  # parameters of the cluster row beside the main one: the real claude-code trace near and past its knee ({} for none)

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig12_queue_discipline as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, n_instances=n_instances, minutes=minutes, loads=loads, workload=workload,
                              router=router, shares=shares, seeds=seeds, warmup_frac=warmup_frac,
                              short_rates=short_rates, duration=duration, long_every=long_every,
                              output_sigma=output_sigma, second_row=second_row)
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
promises = figure.tables(df)["fig12_claims"]
promises[["claim_id", "point", "gain_mean", "ci_low", "ci_high", "n_seeds", "p_adjusted", "verdict"]].round(4)

# %%
# NBVAL_CHECK_OUTPUT
claims = report(figure, df, context)
