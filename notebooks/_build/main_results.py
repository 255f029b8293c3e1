"""Write notebooks/fig06_tps_vs_load.ipynb, fig07_pd_disaggregation.ipynb and fig08_latency.ipynb
(run from anywhere: python notebooks/_build/main_results.py)."""

from nbformat.v4 import new_code_cell, new_markdown_cell
from write import write_notebooks  # the generators' shared writer, next to this script

LOAD_AXIS = (
    "**Load axis.** The paper's loads are multipliers (6x, 8x, 9x, past saturation) of its internal traces; "
    "its 8x is ~360 requests per minute per instance, far past what one instance serves in our performance "
    "model (~12-20). We plot absolute offered load (requests per minute per instance, bottom axis; set by the "
    "session arrival rate of the generated workload, so tool/think gaps stay as calibrated) and map the "
    "paper's multipliers onto it (top axis) with one anchor per testbed: load = x / 8 x the offered load at "
    "which the best baseline peaks in our model (`main_results.ANCHOR_RPM`: 12 on 30B, 22.5 on 235B). 8x is "
    "the anchor because the paper's own "
    "numbers put the best baseline's peak there: SMETRIC gains +13 % at 9x but only +9 % at the peak, so the "
    "best baseline already declines at 9x. Past saturation is read at 10x. `load_max` is the highest "
    "multiplier swept (`smetric reproduce --only fig06 -p load_max=16` sweeps to 2x the anchor).")

IMPORTS = "import os\n\nfrom smetric.experiments import main_results as mr\nfrom smetric.experiments.claims import paper_claims, record_claims\nfrom smetric.plotting import figures_dir, save_figure"

CLAIMS_PRINT = (
    "side = record_claims({fig!r}, rows).join(paper_claims()[['paper_value', 'wording']], on='claim_id')\n"
    "for _, r in side.iterrows():\n"
    "    print(f\"{{r['claim_id']}}  [{{r['verdict']}}]\\n  paper:      {{r['paper_value']}}  ({{r['wording']}})\\n\"\n"
    "          f\"  reproduced: {{r['reproduced']}}\\n  why:        {{r['reason']}}\\n\")")

NOTEBOOKS = {
    "fig06_tps_vs_load": [
        new_markdown_cell(
            "# Figure 6: goodput TPS vs load (PD colocated, provisioned global store)\n\n"
            "SMETRIC against every baseline on the two testbeds (32x Qwen3-30B-A3B TP1, 8x Qwen3-235B-A22B "
            "TP8, H20, Mooncake-style global store that holds everything), on the synthetic agent workload. "
            "Goodput = tokens per second of requests meeting TTFT <= 1 s + 62.5 ms/1K prompt tokens and "
            "TPOT <= 20 ms, measured after the first quarter of the arrival span (cold caches). "
            "Paper (S1 p10): gains vs the best baseline grow with load, +1 %/+4 %/+13 %/+26 % at "
            "6x/8x/9x/past saturation; peak +9 % (30B) and +15 % (235B).\n\n" + LOAD_AXIS),
        new_code_cell(IMPORTS),
        new_code_cell(
            "QUICK = os.environ.get(\"SMETRIC_QUICK\") == \"1\"\n"
            "testbeds = [\"30b\", \"235b\"]  # paper testbeds to run\n"
            "model = None  # a model name or testbed key (e.g. \"qwen3-235b-a22b\") selects one testbed\n"
            "load_max = 12  # highest load, in paper multipliers (8x = the best baseline's peak)\n"
            "policies = [\"smetric\", \"lmetric\", \"least-load\", \"dynamo\"] if QUICK else None  # None: smetric + every baseline\n"
            "minutes = {\"30b\": 1.5, \"235b\": 3} if QUICK else {\"30b\": 10, \"235b\": 20}  # agent workload per testbed\n"
            "n_instances = {\"30b\": 8, \"235b\": 4} if QUICK else None  # None: the paper's 32 and 8\n"
            "multipliers = [6, 8, 9, 10] if QUICK else None  # None: mr.paper_multipliers(load_max)\n"
            "seeds = [0] if QUICK else [0, 1, 2, 3]  # workload seeds (figures and tables use their mean)\n"
            "warmup_frac = 0.25  # share of the arrival span simulated but not measured\n"
            "jobs = 1 if QUICK else None  # sweep workers (None: SMETRIC_JOBS or one per core)",
            metadata={"tags": ["parameters"]}),
        new_code_cell(
            "df = mr.tps_vs_load(testbeds=mr.select_testbeds(testbeds, model),\n"
            "                    policies=policies or (\"smetric\", *mr.BASELINES), multipliers=multipliers,\n"
            "                    load_max=load_max, minutes=minutes, n_instances=n_instances, seeds=seeds,\n"
            "                    warmup_frac=warmup_frac, jobs=jobs)\n"
            "df[['testbed', 'policy', 'multiplier', 'rpm_per_instance', 'goodput_tps', 'slo_attainment',\n"
            "    'hit_ratio', 'hit_ratio_hbm']].head()"),
        new_code_cell(
            "fig = mr.plot_vs_load(df, title='Goodput vs load, PD colocated with a provisioned global store')\n"
            "save_figure(fig, df, 'fig06_tps_vs_load')"),
        new_code_cell(
            "peaks = mr.peak_table(df)\n"
            "peaks.to_csv(figures_dir() / 'fig06_tps_vs_load_peaks.csv', index=False)\n"
            "gains = mr.gains_at_paper_loads(df)\n"
            "print(peaks.to_string(index=False, float_format=lambda x: f'{x:,.3f}' if abs(x) < 10 else f'{x:,.0f}'))\n"
            "print()\n"
            "print(gains.to_string(index=False, float_format=lambda x: f'{x:,.3f}' if abs(x) < 10 else f'{x:,.0f}'))"),
        new_code_cell("rows = mr.main_result_claims(df)\n" + CLAIMS_PRINT.format(fig="fig06")),
    ],
    "fig07_pd_disaggregation": [
        new_markdown_cell(
            "# Figure 7: prefill TPS vs load under PD disaggregation\n\n"
            "The 30B testbed split into 24 prefill and 8 decode instances (H20, provisioned global store): "
            "policies route to the prefill instances, prefilled requests go to the decode instance with the "
            "fewest in flight. Prefill TPS = prompt tokens per second of requests whose first token met the "
            "TTFT SLO (`summary()['prefill_tps']`). The split: at the 30B anchor load 20P+12D starves the "
            "prefill pool (TTFT p50 ~10 s) and 28P+4D the decode pool (~12 agent contexts of KV per decode "
            "instance, TPOT p50 ~8 s); 24P+8D keeps both just below saturation. SMETRIC against the baselines "
            "the paper's notes name (LMetric, BAILIAN, Dynamo, session-sticky, load-balance only) plus "
            "Mooncake's scheduler. Paper: prefill TPS +2-34 % (v1 abstract), peak +9 % (v2 abstract).\n\n"
            "Loads use the colocated 30B anchor, so the axes match Figure 6 (requests per minute per instance, "
            "counting prefill and decode instances)."),
        new_code_cell(IMPORTS),
        new_code_cell(
            "QUICK = os.environ.get(\"SMETRIC_QUICK\") == \"1\"\n"
            "policies = [\"smetric\", \"lmetric\", \"least-load\"] if QUICK else None  # None: smetric + mr.MAIN_BASELINES\n"
            "multipliers = [4, 6] if QUICK else [2, 3, 4, 5, 6, 7, 8, 9, 10]  # loads in paper multipliers\n"
            "split = [24, 8]  # prefill, decode instances\n"
            "minutes = 1.5 if QUICK else 10  # agent workload\n"
            "seeds = [0] if QUICK else [0, 1, 2, 3]\n"
            "warmup_frac = 0.25\n"
            "jobs = 1 if QUICK else None",
            metadata={"tags": ["parameters"]}),
        new_code_cell(
            "df = mr.pd_prefill_vs_load(policies=policies or (\"smetric\", *mr.MAIN_BASELINES), multipliers=multipliers,\n"
            "                           split=tuple(split), minutes=minutes, seeds=seeds, warmup_frac=warmup_frac,\n"
            "                           jobs=jobs)\n"
            "df[['policy', 'multiplier', 'rpm_per_instance', 'prefill_tps', 'goodput_tps', 'ttft_p50', 'hit_ratio_hbm']].head()"),
        new_code_cell(
            "fig = mr.plot_vs_load(df, metric='prefill_tps', ylabel='prefill TPS (k prompt tokens/s within TTFT SLO)',\n"
            "                      title=f'Prefill TPS vs load, PD disaggregated {split[0]}P+{split[1]}D')\n"
            "save_figure(fig, df, 'fig07_pd_disaggregation')"),
        new_code_cell(
            "peaks = mr.peak_table(df, 'prefill_tps')\n"
            "print(peaks.to_string(index=False, float_format=lambda x: f'{x:,.3f}' if abs(x) < 10 else f'{x:,.0f}'))"),
        new_code_cell("rows = mr.pd_claims(df)\n" + CLAIMS_PRINT.format(fig="fig07")),
    ],
    "fig08_latency": [
        new_markdown_cell(
            "# Figure 8: TTFT and TPOT distributions at a high load\n\n"
            "CDFs of time to first token and time per output token per policy on the 30B testbed (colocated, "
            "provisioned global store) at the load where the best baseline peaks (paper 8x, see Figure 6's "
            "load axis), after the warm-up cut. Requests that never produced a first token are left out of "
            "the TTFT CDF and counted as `n_unfinished`. Paper: \"also with a better per-token latency\" (v1), "
            "\"also with lower latency\" (v2) -- qualitative."),
        new_code_cell(IMPORTS),
        new_code_cell(
            "QUICK = os.environ.get(\"SMETRIC_QUICK\") == \"1\"\n"
            "policies = [\"smetric\", \"lmetric\", \"least-load\"] if QUICK else None  # None: smetric + mr.MAIN_BASELINES\n"
            "testbed = \"30b\"\n"
            "multiplier = 8  # load in paper multipliers (8x = the best baseline's peak)\n"
            "minutes = 1.5 if QUICK else 10  # agent workload\n"
            "n_instances = 8 if QUICK else None  # None: the paper's size\n"
            "seeds = [0] if QUICK else [0, 1]  # quantile functions are averaged over seeds\n"
            "warmup_frac = 0.25\n"
            "jobs = 1 if QUICK else None",
            metadata={"tags": ["parameters"]}),
        new_code_cell(
            "df = mr.latency_distributions(policies=policies or (\"smetric\", *mr.MAIN_BASELINES), testbed=testbed,\n"
            "                              multiplier=multiplier, minutes=minutes, n_instances=n_instances, seeds=seeds,\n"
            "                              warmup_frac=warmup_frac, jobs=jobs)\n"
            "df.head()"),
        new_code_cell("fig = mr.plot_latency(df)\nsave_figure(fig, df, 'fig08_latency')"),
        new_code_cell(
            "table = mr.latency_table(df)\n"
            "table.to_csv(figures_dir() / 'fig08_latency_percentiles.csv', index=False)\n"
            "print(table.to_string(index=False, float_format=lambda x: f'{x:,.3f}' if abs(x) < 10 else f'{x:,.0f}'))"),
        new_code_cell("rows = mr.latency_claims(df)\n" + CLAIMS_PRINT.format(fig="fig08")),
    ],
}


if __name__ == "__main__":
    write_notebooks(NOTEBOOKS)
