"""Write notebooks/fig12_queue_discipline.ipynb (python notebooks/_build/fig12_queue_discipline.py)."""

from nbformat.v4 import new_code_cell, new_markdown_cell
from write import write_notebooks  # the generators' shared writer, next to this script

PARAMETERS = (
    "import os\n\n"
    "QUICK = os.environ.get(\"SMETRIC_QUICK\") == \"1\"\n"
    "testbed = \"30b\"  # 32x Qwen3-30B-A3B, TP1, H20, provisioned global store\n"
    "n_instances = 4 if QUICK else 32\n"
    "minutes = 4 if QUICK else 10  # measured window of the agent workload (sessions start up to 30 min earlier)\n"
    "loads = [12.0, 36.0] if QUICK else [12.0, 24.0, 36.0]  # offered load, requests/min/instance\n"
    "routers = [\"smetric\", \"least-load\"]\n"
    "disciplines = [\"fcfs\", \"smetric-score\", \"mlfq\"]\n"
    "seeds = [0] if QUICK else [0, 1, 2]\n"
    "warmup_frac = 0.25\n"
    "# weight sweep (one instance, short turns past capacity + a long turn every long_every s)\n"
    "alphas = [0.0, 1.0, 100.0] if QUICK else [0.0, 1.0, 10.0, 100.0]\n"
    "gammas = [0.0, 10.0] if QUICK else [0.0, 1.0, 10.0]\n"
    "short_rate = 16.0  # short turns per second (capacity is ~13/s)\n"
    "duration = 60.0 if QUICK else 120.0\n"
    "long_every = 4.0\n"
    "jobs = 1 if QUICK else None  # sweep workers (None: SMETRIC_JOBS or one per core)")

CELLS = [
    new_markdown_cell(
        "# Figure 12: queue disciplines inside an instance (fcfs vs S-Metric score vs MLFQ)\n\n"
        "The router decides *where* a turn runs; the queue discipline decides *when* it is admitted from its "
        "instance's waiting queue (`../shared/reference/session-scheduler.md`; `smetric.cluster.queueing`).\n\n"
        "* **fcfs**: routing order, head-of-line blocking on KV (vLLM's default).\n"
        "* **smetric-score**: S = α/E[T] + β·P + γ·L/L_max − δ·R (defaults α=1, β=0, γ=1, δ=0.5, L_max=10 s), "
        "E[T] the turn's estimated *GPU* time (prefill of its uncached tokens + decode), never its tool/think gap; "
        "a request whose KV does not fit is skipped.\n"
        "* **mlfq**: high (first turns, E[T] < 100 ms, priority sessions; oldest first) > medium (by S) > low "
        "(E[T] > 2 s); promotion after 5 s (low → medium) and 10 s (→ high).\n\n"
        "Row 1: the 30B testbed in **closed replay** (a turn that waits delays the rest of its session), the SMETRIC "
        "and least-load routers, three offered loads (below, near and past saturation). Row 2: the score's weights "
        "on a single instance fed short turns past its capacity plus a long turn every few seconds — the "
        "starvation mechanism in isolation. There is no paper claim for this figure (the scheduler blueprint is a "
        "design note); the last cell prints what we measured."),
    new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}),
    new_code_cell(
        "from smetric.experiments import queueing_figs as qf\n"
        "from smetric.plotting import figures_dir, save_figure, set_style\n\n"
        "df = qf.discipline_comparison(loads, routers, disciplines, seeds, testbed=testbed, n_instances=n_instances,\n"
        "                              minutes=minutes, warmup_frac=warmup_frac, jobs=jobs)\n"
        "weights = qf.weight_sweep(alphas, gammas, seeds, short_rate=short_rate, duration=duration,\n"
        "                          long_every=long_every, jobs=jobs)\n"
        "qf.comparison_table(df).round(3)"),
    new_code_cell(
        "set_style()\n"
        "fig = qf.plot_queue_discipline(df, weights)\n"
        "save_figure(fig, df, 'fig12_queue_discipline')\n"
        "weights.to_csv(figures_dir() / 'fig12_queue_weights.csv', index=False)"),
    new_code_cell(
        "print('Findings (no paper claim for fig12; seed means):')\n"
        "for line in qf.queue_findings(df, weights):\n"
        "    print(' -', line)"),
]

if __name__ == "__main__":
    write_notebooks({"fig12_queue_discipline": CELLS})
