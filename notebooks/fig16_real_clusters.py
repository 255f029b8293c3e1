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
# # Figure 16: the model against real clusters
#
# Every published real-hardware experiment of `data/validation/` (one YAML spec each: cluster, workload generator of the harness, load stages, routers, the numbers as published) replayed on the model, each router on the same generated requests, the metrics computed the way the harness computes them (`smetric.realcluster.metrics`): llm-d's 73-capacity benchmark (precise / estimated / load / random scheduling) and its precise-prefix guide against a Kubernetes Service, KubeAI's PrefixHash / LeastLoad / Service on 8 x L4, SGLang v0.4's cache-aware router against round robin, and nine single-vLLM runs of the BLIS sim-to-real validation, with BLIS's own published error beside this package's.
#
# **Rules** (stated before any replay, `smetric.realcluster.scoring`): ranking by throughput right in every multi-router experiment (two routers measured less than 5 % apart are a tie: a single real run cannot order them, so either predicted order counts as right); median router-ratio error <= 15 %; median |error| <= 10 % for throughput, E2E and ITL means; TTFT p90 within 20 % below 1 s and on the right side of 1 s / 10 s when queueing-dominated; on BLIS's runs a median error at or below BLIS's. **No parameter of the model is chosen from these experiments**: they are a test, not a training set. The same replays: `smetric validate --all`.

# %% tags=["parameters"]
quick: bool = False  # True: the small `quick` preset (CI); figures then go to build/figures-quick
# Each setting below overrides the preset; None keeps the preset's value (see the next cell's output).
# seeds, loads, policies ... take literal values: lists, dicts, numbers, strings.
specs: list = None  # spec names of data/validation/ to replay (empty: every spec)
scaled: bool = None  # scale every stage to 10 % of its duration and requests (quick; not comparable)
mechanisms: bool = None  # also replay every spec with the legacy serving stack (before/after) and the single-engine runs with each serving-stack mechanism alone

# %%
from smetric.context import run_context
from smetric.experiments.figure import report, save
from smetric.experiments.figures import fig16_real_clusters as figure

context = run_context(quick=quick)
params = figure.Params.preset(context.quick, specs=specs, scaled=scaled, mechanisms=mechanisms)
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
