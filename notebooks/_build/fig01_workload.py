"""Write notebooks/fig01_workload.ipynb (run from the repository root: python notebooks/_build/fig01_workload.py)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        "# Figure 1: agent workloads reuse more, closer in time, and are skewed (SMetric §3)\n\n"
        "Findings 1-6 of the paper, on the synthetic agent workload (`synth_agent_workload`, calibrated to "
        "them), the chat preset and the public Mooncake traces (sessions inferred from the hashes). Panels: "
        "prefix reuse of all requests, first turns and follow-ups (infinite cache); intra- vs cross-session "
        "share of the reuse; time since the matched prefix was last used; share of tokens carried by the "
        "largest sessions."),
    new_code_cell(
        "import os\n\n"
        "from smetric.experiments.workload_figs import (plot_workload_characterization, workload_characterization,\n"
        "                                               workload_claim_rows, workload_claims)\n"
        "from smetric.experiments.claims import record_claims\n"
        "from smetric.plotting import save_figure"),
    new_code_cell(
        "QUICK = os.environ.get(\"SMETRIC_QUICK\") == \"1\"\n"
        "n_sessions = 1_000 if QUICK else 30_000     # synthetic agent sessions\n"
        "chat_sessions = 1_000 if QUICK else 20_000  # synthetic chat sessions\n"
        "seed = 0",
        metadata={"tags": ["parameters"]}),
    new_code_cell(
        "data = workload_characterization(n_sessions=n_sessions, chat_sessions=chat_sessions, seed=seed)\n"
        "data.head()"),
    new_code_cell(
        "fig = plot_workload_characterization(data)\n"
        "save_figure(fig, data, \"fig01_workload\")"),
    new_code_cell(
        "claims = workload_claims(data)\n"
        "print(claims.to_string(index=False, float_format=lambda x: f\"{x:,.0f}\" if abs(x) >= 100 else f\"{x:.3f}\"))\n"
        "record_claims(\"fig01\", workload_claim_rows(data))[[\"claim_id\", \"verdict\", \"reproduced\"]]"),
]


def main() -> None:
    """Write the notebook next to this script's parent directory."""
    nb = new_notebook(cells=CELLS, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}})
    out = Path(__file__).resolve().parents[1] / "fig01_workload.ipynb"
    nbformat.write(nb, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
