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
# # Figure 11 (beyond the paper): where SMETRIC wins and where it loses
#
# The paper evaluates one global-store provisioning, one agent workload and a few loads. Here the 30B model on 16 instances (5 min windows, eight workload seeds, `bailian-coder` in closed replay) with a global KV store of unlimited capacity and a per-instance read bandwidth of 1.5-24 GB/s (the paper testbeds' provisioned store is ~24 GB/s), agent sessions whose median number of turns is 1-16 (log-normal, the calibration's σ; mean in brackets), and two offered loads (40 and 52 requests / min / instance, set by the session arrival rate, so longer sessions arrive less often; `offered_rpm_per_instance` is the rate measured in the window). Top: SMETRIC's goodput over the best of LMetric, Dynamo and least-load in each cell (inconclusive: the paired t-interval of the gain over the 8 seeds contains 0; grey: overloaded, no policy meets the SLO for half of its requests — past saturation, where open-loop queues grow and ratios of small goodputs are noise). Bottom: the fraction of the ideal goodput each reaches — the ideal (`smetric.policies.bounds.ideal_bound`) balances perfectly and hits every reusable token, capped by the offered token rate. No paper claim: the last cell states the regimes found.
#
# **Second row: the real agent trace.** The same diagram on the 710 real Claude Code sessions of kv-cache-tester (`claude-code`; conversations start at the offered rate, each call's think time from the trace) at 3 and 6 requests/min/instance (below and at its peak): its prompts average ~122k tokens, so its 30B goodput peaks near 5-6 requests/min/instance (235B: near 6), not near 50; about 13 % of its calls on 30B (prompts beyond an instance's ~250k-token KV capacity) are rejected at any load, so its SLO attainment stays below 0.9. A real trace has no session-length knob: its turns axis collapses to one row, the trace's own sessions (median 45.5 calls, mean 69, sub-agent calls included), labelled as such; binning the conversations by length into a real length axis was not done: it needs the trace's conversation generator to draw from a subset of its conversations, which it does not offer yet. The windows are 20 minutes, the seeds those of the main row; the bandwidths are the same. The last cell states the regimes of both rows (parameter `second_row`, `{}` for none; `trace` runs the diagram on a timestamped trace file, its sessions as the one turns value).
#
# **KV connector.** The store is reached through the `ideal` connector here, a per-instance link of the swept bandwidth: the testbeds' default `lmcache-mooncake` connector ignores the store's per-instance bandwidth (its NIC pool, client throughput and PCIe set the read rate), so a bandwidth axis needs the ideal link (parameter `kv_connector`).

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
bandwidths: list = None  # global-store GB/s per instance (capacity unlimited)
turns_medians: list = None  # median turns per session
rpm_per_instance: list = None  # offered loads (requests / min / instance)
policies: list = None  # routers compared
testbed: str = None  # paper testbed
n_instances: int = None  # instances
minutes: float = None  # measured window
warmup_minutes: float = None  # sessions start this long before the window
seeds: list = None  # workload seeds (the seed count of fig06; gains paired per seed)
workload: str = None  # a synthetic preset (the turns axis is a generator knob) or the real claude-code trace (its own sessions: one turns value)
trace: str = None  # a timestamped trace file or catalog name replayed at the offered rate, its own sessions as the one turns value (None: workload)
warmup_frac: float = None  # share of the arrival span not measured
kv_connector: str = None  # KV connector: ideal (a per-instance store link of the swept bandwidth)
second_row: dict = None  # parameters of the row beside the main one: the real claude-code trace (its own sessions) at loads around its knee ({} for none)

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig11_phase_diagram as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, bandwidths=bandwidths, turns_medians=turns_medians,
                              rpm_per_instance=rpm_per_instance, policies=policies, testbed=testbed,
                              n_instances=n_instances, minutes=minutes, warmup_minutes=warmup_minutes, seeds=seeds,
                              workload=workload, trace=trace, warmup_frac=warmup_frac, kv_connector=kv_connector,
                              second_row=second_row)
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
