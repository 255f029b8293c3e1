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
# # Figure 6: goodput TPS vs offered load (PD colocated, provisioned global store)
#
# SMETRIC against the screened baselines on the two testbeds (32x Qwen3-30B-A3B TP1, 8x Qwen3-235B-A22B TP8, H20), on the testbed defaults: closed replay (a follow-up turn arrives only after its parent finished), the `lmcache-mooncake` KV connector, reply KV cached. First row: `workload` (default `bailian-coder`, the preset closest to the paper's BAILIAN coding-agent traffic; or `trace`, a timestamped trace file or catalog name replayed at the offered rate). Second row: the real Claude Code sessions of kv-cache-tester (`claude-code`, ~122k-token requests, so its goodput peaks near 5-6 requests/min/instance; its own load grid brackets the peak). Goodput = tokens per second of requests meeting TTFT <= 1 s + 62.5 ms/1K prompt tokens and TPOT <= 20 ms, measured after the first quarter of the window. Paper (S1 p10): gains vs the best baseline grow with load, +1 %/+4 %/+13 %/+26 % at 6x/8x/9x/past saturation; peak +9 % (30B) and +15 % (235B).
#
# **Load axis and the paper's levels.** Offered load is requests per minute per instance (the session arrival rate; in closed replay the rate of the schedule sessions were generated with). The paper's multipliers are anchored in this run, not hard-coded: **8x = the load at which the best baseline's seed-mean goodput peaks on this grid**; level x is read at the grid load nearest x/8 of it, past saturation = 10x (dotted lines).
#
# **Statistics, fixed before looking at SMETRIC.** Screening: every baseline on `screen_seeds`, per testbed and workload the `n_keep` with the highest peak (over loads) of their goodput averaged over those seeds are kept (SMETRIC is not run in the screening; the table is saved as `fig06_tps_vs_load_screening.csv`). Then SMETRIC and the kept baselines on all `seeds`. Gains are paired per seed, the best baseline chosen once per load (C12) or per peak (C13) by its mean; C13 uses each seed's own peak over the grid; 95 % paired t-interval; verdicts by the rules of `smetric.verdicts`. Sensitivity (C13, 30B, one change each, loads near each variant's peak): the earlier `long-context` workload, open replay, the `ideal` KV connector; the claim's verdict comes from the default setup. Budget: the windows are 4 minutes (30B) and 7 minutes (235B), shortened before cutting seeds.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
testbeds: list = None  # paper testbeds to run
model: str = None  # a model name or testbed key (e.g. qwen3-235b-a22b) selects one testbed
workload: str = None  # workload of the first row and of the claims (a preset or trace name)
trace: str = None  # a timestamped trace file or catalog name replacing workload (offered_point trace)
loads: dict = None  # offered loads per testbed in requests/min/instance (bracketing the knee)
second_workload: str = None  # workload of the second row (None: no second row)
second_loads: dict = None  # offered loads of the second row per testbed
policies: list = None  # routers: smetric and the baselines screened
screen_seeds: list = None  # seeds of the baseline screening (disjoint from seeds)
n_keep: int = None  # baselines kept per testbed and workload (top screening peak goodput)
seeds: list = None  # workload seeds of the comparison (paired statistics)
minutes: dict = None  # window of the workload per testbed (both shortened to fit the budget)
n_instances: dict = None  # instances per testbed (the paper's 32 and 8)
sensitivity: dict = None  # C13 sensitivity rows on 30B (one change from the defaults) and their loads near the peak
warmup_frac: float = None  # share of the arrival span simulated but not measured

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig06_tps_vs_load as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, testbeds=testbeds, model=model, workload=workload, trace=trace,
                              loads=loads, second_workload=second_workload, second_loads=second_loads,
                              policies=policies, screen_seeds=screen_seeds, n_keep=n_keep, seeds=seeds,
                              minutes=minutes, n_instances=n_instances, sensitivity=sensitivity,
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
