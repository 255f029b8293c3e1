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
# # Figure 7: prefill TPS vs load under PD disaggregation, over PD splits
#
# The 30B testbed (32 H20, provisioned global store, testbed defaults: closed replay, `lmcache-mooncake` connector, reply KV cached) split into prefill and decode pools: policies route to the prefill instances, prefilled requests go to the decode instance with the fewest in flight. Prefill TPS = prompt tokens per second of requests whose first token met the TTFT SLO (`summary()['prefill_tps']`). SMETRIC against the baselines the paper's notes name (LMetric, BAILIAN, Dynamo, session-sticky, load-balance only) plus Mooncake's scheduler, on `workload` (default `bailian-coder`) or a timestamped `trace`. Paper: prefill TPS +2-34 % (v1 abstract), peak +9 % (v2 abstract; judged).
#
# **Splits swept, not picked.** The result depends on the split, so every split of `splits` (20P+12D, 24P+8D, 28P+4D) is run with all seeds and the gain reported per split (`fig07_pd_disaggregation_splits.csv`). The split of the claim is chosen by a rule stated before looking at SMETRIC (`robustness.choose_setup`, SMETRIC's rows dropped): **the split whose best baseline has the highest seed-mean peak goodput**. Goodput, not prefill TPS, because prefill TPS ignores TPOT: a split that starves the decode pool can still show a high prefill TPS (the findings print which split the prefill-TPS rule picks; on the earlier model it was 28P+4D). **The split and the comparator are fixed before the comparison**: on two screening seeds (100, 101; disjoint from the comparison seeds) only the baselines run, every split and load; the split rule and, per split, the comparator (the baseline with the highest peak of its screening-seed mean prefill TPS) are read there (`smetric.experiments.screening`). C14 = each seed's own peak prefill TPS over the loads, paired per seed against that comparator on the comparison seeds, 95 % t-interval; `fig07_pd_disaggregation_each.csv` has SMETRIC against every baseline in every split. Budget: 4-minute windows and five loads (the `make figures` budget; seeds kept).
#
# **Second row: the real agent trace.** The same sweep (same splits, policies and seeds) on the 710 real Claude Code sessions of kv-cache-tester (`claude-code`; conversations start at the offered rate, each call's think time from the trace) at 2, 4 and 6 requests/min/instance, counting every instance of the split: its prompts average ~122k tokens, so it saturates near 2-3 (28P+4D, a starved decode pool), 4-5 (24P+8D) and 5-6 (20P+12D) requests/min/instance, not near 30 (SLO attainment of a 4-seed sweep). Its windows are 6 minutes (~270 measured requests per seed at 2; shortened from 10, and three loads, so that the row adds ~30 % to the figure's time). The trace row applies **the same split rule to its own sweep** (the split whose best baseline has the highest seed-mean peak goodput on the trace) rather than reusing the main row's split: the rule, not its outcome, is what is fixed in advance, and a split that suits short prompts need not suit 122k-token ones. The claims are judged on the main row; `figures/fig07_pd_disaggregation_second_row_claims.csv` applies the same rules to the trace, and `fig07_pd_disaggregation_splits.csv` has both rows (parameter `second_row`, `{}` for none).

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
policies: list = None  # routers compared (smetric and the paper's named baselines)
workload: str = None  # workload (a preset or trace name)
trace: str = None  # a timestamped trace file or catalog name replacing workload (offered_point trace)
splits: list = None  # prefill, decode instances per split
loads: list = None  # offered loads in requests/min/instance
minutes: float = None  # window of the workload (shortened to fit the budget)
seeds: list = None  # workload seeds (paired statistics)
screen_seeds: list = None  # seeds on which the baselines alone fix the split and each split's comparator (disjoint from seeds)
warmup_frac: float = None  # share of the arrival span simulated but not measured
second_row: dict = None  # parameters of the row beside the main one: the real claude-code trace at loads around its knees on the PD splits, its split chosen by the same rule on its own sweep ({} for none)

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig07_pd_disaggregation as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, policies=policies, workload=workload, trace=trace, splits=splits,
                              loads=loads, minutes=minutes, seeds=seeds, screen_seeds=screen_seeds,
                              warmup_frac=warmup_frac,
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
