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
# # Figure 18: does first-request balancing hold at production scale?
#
# BAILIAN serves agents on hundreds to thousands of GPUs, while every other figure runs 32 or 8 instances. SMETRIC balances only each session's **first** request and keeps follow-ups where their KV is; with more instances there are fewer sessions per instance and the hottest of N instances gets hotter, and in deployment several router replicas each see only their own dispatches. Here SMETRIC, LMetric, Dynamo and least-load run the 30B testbed (Qwen3-Coder-30B-A3B, TP 1 on H20, `bailian-coder`, closed replay, the `lmcache-mooncake` KV path) at **N = 32, 128, 512 and 1,024** instances with the **load per instance held fixed** at the knee (fig06's 8x anchor) and past it (fig06's 9x), with **1 and 8 router replicas** (uniform assignment, each replica with its own in-flight counters and policy state).
#
# **Comparator**: per (load, routers) cell the baselines alone run at 32 instances on the screening seeds 100 and 101; the one with the highest mean goodput is SMETRIC's comparator in that cell at every N, and SMETRIC is paired with it on seeds 0-7. **Budget** (today's engine costs ~130 µs per request at 1,024 instances): every policy runs at the knee with one router; past the knee and with 8 routers only SMETRIC and the cell's comparator.
#
# **Goodput** is SLO-meeting tokens per second of the measured *arrival* window, per instance: the package's `goodput_tps` divides by first arrival → last finish, and the slowest request's finish grows with the number of requests, so it would fall with N for no reason but the window.
#
# **The rules, stated before the full run** (largest N against the smallest, per seed, 95 % t-interval, Holm over a rule's three cells; a bound holds when the whole interval satisfies it, is contradicted when the whole interval violates it, else inconclusive):
#
# * `scale_retention`: SMETRIC's goodput per instance at 1,024 instances retains at least 95 % of its 32-instance value;
# * `scale_gain_held`: SMETRIC's gain over the comparator at 1,024 is not smaller than at 32 by more than 2 percentage points;
# * `scale_imbalance`: at 1,024 instances SMETRIC's max/mean queued prefill (time-averaged, `SimResult.diagnostics()`) is not above the comparator's.
#
# **Window**: 30 s of session arrivals per run at every N, the first 20 s simulated but not measured (sessions under way from 6 h of starts), so only N changes along the axis: ~9 measured requests per instance at the knee at every N (~270 per seed at 32 instances, ~8,700 at 1,024). The "as deployed" router models of these four policies (`data/routers/as_deployed.json`) are all the exact view, so they add no run. The rule verdicts are this package's, not the paper's: they are in `figures/fig18_claims.csv` (tidy, like `claims.csv`), not in `claims.csv`.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
n_instances: list = None  # cluster sizes (the rules compare the largest with the smallest)
loads: dict = None  # requests/min/instance held fixed as N grows: fig06's 8x (knee) and 9x (past it) on 30B
replicas: list = None  # router replicas (uniform assignment, each with its own counters)
replica_loads: list = None  # loads run with more than one replica (SMETRIC and the cell's comparator only)
every_policy_loads: list = None  # loads where every policy runs with one router (the other cells: SMETRIC and the comparator)
policies: list = None  # smetric and the baselines (fig06's best on bailian-coder and claude-code, and the load-only router)
seeds: list = None  # comparison seeds (paired)
screening_seeds: list = None  # seeds on which the baselines alone fix each cell's comparator (disjoint from seeds)
warmup_s: float = None  # seconds of arrivals simulated but not measured, at every N (module docstring)
measured_s: float = None  # seconds of arrivals measured after the warm-up, at every N
testbed: str = None  # paper testbed
workload: str = None  # workload preset (testbeds.WORKLOADS)

# %%
from smetric.context import run_context
from smetric.experiments.figure import save
from smetric.experiments.figures import fig18_scale as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, n_instances=n_instances, loads=loads, replicas=replicas,
                              replica_loads=replica_loads, every_policy_loads=every_policy_loads,
                              policies=policies, seeds=seeds,
                              screening_seeds=screening_seeds, warmup_s=warmup_s, measured_s=measured_s,
                              testbed=testbed, workload=workload)
params

# %%
df = figure.compute(params, jobs=context.jobs)
figure.overview(df)

# %%
fig = figure.plot(df)
paths = save(figure, fig, df, context)

# %% [markdown]
# Per cell: the comparator, SMETRIC's gain over it, and every policy's max/mean queued prefill and hottest-instance share (of the measured requests' prefill tokens; 1/N when even).

# %%
print(figure.findings(df))

# %% [markdown]
# The rules' verdicts (`figures/fig18_claims.csv`).

# %%
# NBVAL_CHECK_OUTPUT
print(figure.claims_text(figure.tables(df)["fig18_claims"]))
