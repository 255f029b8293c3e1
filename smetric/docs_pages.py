"""The generated parts of the README and of the pages under ``docs/``: every table of measured numbers is
rendered from the file that holds it, between a begin and an end marker comment.

A page is written by hand around its blocks; each block is ``<!-- NAME:begin (generated from SOURCE) -->`` ...
``<!-- NAME:end -->`` and is rewritten by :func:`write` (``python -m smetric.docs_pages``, part of ``make docs``
and of a plain ``smetric reproduce``). :func:`stale` renders every block in memory and names those that differ
from the committed text; ``tests/test_docs_pages.py`` fails on any. The sources are the committed record:
``figures/*.csv`` (claims, each figure's findings, the real-cluster validation, notebook run times),
``benchmarks/results.csv`` (``make bench``), ``data/perf/kv_path.json``, the workload presets' calibration
bands, the testbeds, ``smetric policies --json`` and ``smetric COMMAND --help``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .context import run_context
from .experiments.readme_blocks import read_block, rewrite_block

__all__ = ["Block", "BLOCKS", "PAGES", "INVARIANTS", "render", "stale", "write", "main"]

#: The documentation pages (``docs/NAME``) with their one-line subject, in reading order (the README's table).
PAGES = {
    "results.md": "every claim and figure: verdicts, numbers and each figure's findings",
    "validation.md": "the model against published real-cluster runs: errors, rankings, targets, misses",
    "model.md": "what the figures run on: testbeds, defaults, the KV path, workload presets, offered load",
    "verdicts.md": "how a claim is judged: screening, paired intervals, the rules, multiplicity",
    "engine.md": "the engine's semantics, a reading guide, and its invariants with their tests",
    "performance.md": "engine benchmarks and notebook run times, with machine and date",
    "cli.md": "every `smetric` subcommand and its options",
    "policies.md": "every routing policy, its parameters, source and signals",
    "extending.md": "adding a policy, a figure, a validation spec",
}

#: The engine's invariants, each with the test that checks it (``tests/FILE::TEST``), in the engine page's order.
INVARIANTS = (
    ("The numba engine and the independent pure-Python reference produce equal results, field by field and "
     "request by request, on random small cases (every policy, both modes, both replays)",
     "test_engine_equivalence.py::test_engine_matches_reference"),
    ("They stay equal on a busy cluster, under KV pressure and with the deployed routers' options",
     "test_engine_equivalence.py::test_engine_matches_reference_on_a_busy_cluster"),
    ("Every request completes, or is reported with its reason; only requests that can never fit are rejected",
     "test_engine_invariants.py::test_invariants"),
    ("Clocks are monotone: arrival <= admission < first token <= finish <= end of the run",
     "test_engine_invariants.py::test_invariants"),
    ("An instance's HBM KV in use never exceeds its capacity", "test_engine_invariants.py::test_invariants"),
    ("Tokens are conserved: computed prefill = prompt - hits, and each generated token is decoded once",
     "test_engine_invariants.py::test_invariants"),
    ("In closed replay a follow-up arrives no earlier than its parent's finish plus its gap",
     "test_engine_invariants.py::test_invariants"),
    ("Same seed, same numbers; the seed matters only to random policies",
     "test_engine_invariants.py::test_same_seed_same_numbers_and_seed_matters_for_random_policies"),
    ("The routing index decides exactly as the full router view, on random cases and on busy clusters",
     "test_engine_index.py::test_index_decides_as_the_full_view_on_random_cases"),
    ("A run resumed in pieces equals one call", "test_engine_cli.py::test_resumed_engine_equals_one_call"),
    ("Closed forms hold: a lone request's TTFT is its prefill, its TPOT its decode steps; Poisson arrivals "
     "on one server match M/D/1 (Pollaczek-Khinchine)",
     "test_engine_closed_forms.py::test_single_server_poisson_matches_md1_pollaczek_khinchine"),
    ("A turn joining fan-out children arrives its gap after the last child ends (a rejected child releases "
     "the join at its rejection)",
     "test_engine_fanout.py::test_next_turn_arrives_gap_after_the_last_parallel_call_ends"),
    ("Under incremental KV allocation the most recently admitted request is preempted and recomputes, and the "
     "two engines agree", "test_engine_preemption.py::test_the_later_admitted_request_is_preempted_and_recomputes"),
    ("Every queue discipline gives the same results in both engines; FCFS results are pinned by a fixture",
     "test_queue_engine.py::test_fcfs_results_equal_those_before_the_queue_disciplines"),
    ("Every KV-connector parameter has a public source or is labelled an assumption",
     "test_engine_kvpath.py::test_every_preset_parameter_has_a_source_or_is_an_assumption"),
    ("The engine's hash tables and LRU lists behave like a dict and an ordered list",
     "test_engine_kvcache.py::test_hash_row_matches_a_dict"),
)


# ------------------------------------------------------------------------------------------------ helpers
def _root() -> Path:
    return run_context().root


def _record() -> Path:
    """The committed figures folder (never the quick-mode one: the pages describe the record)."""
    return _root() / "figures"


def _table(frame: pd.DataFrame) -> str:
    """A DataFrame as a markdown table (cells' ``|`` escaped, NaN as empty)."""
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        cells = ["" if (isinstance(v, float) and v != v) else str(v).replace("|", "\\|").replace("\n", " ")
                 for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _fenced(text: str) -> str:
    return "```text\n" + text.rstrip() + "\n```\n"


def _number(value) -> str:
    """A measured value for a table: thousands separated above 1,000, four significant digits below, ``—`` for
    none (a skipped measurement)."""
    if value in ("", "nan") or value != value:
        return "—"
    x = float(value)
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _duration(seconds: float) -> str:
    minutes, sec = divmod(round(seconds), 60)
    return f"{minutes} min {sec:02d} s" if minutes else f"{seconds:.1f} s"


# ------------------------------------------------------------------------------------------------ claims
def claims_summary() -> str:
    """One row per claim (the README's verdict table), from ``figures/claims.csv``."""
    from .experiments.claims import summary_table

    return summary_table(pd.read_csv(_record() / "claims.csv"))


def claims_points() -> str:
    """Every claim point with its interval, p, MDE and verdict, and the second-row table."""
    from .experiments.claims import readme_tables

    second = _record() / "claims_second_row.csv"
    return readme_tables(pd.read_csv(_record() / "claims.csv"), pd.read_csv(second) if second.exists() else None)


def figure_findings() -> str:
    """Per figure: its subject (the module docstring's first line), notebook, data file, claims and the findings
    its module computes from the committed CSV."""
    from .experiments.figures import figure_modules

    claims = pd.read_csv(_record() / "claims.csv")
    out = []
    for name, module in figure_modules().items():
        fig = name.split("_", 1)[0]
        title = (module.__doc__ or name).strip().splitlines()[0].rstrip(".").replace("``", "`")
        out += [f"### {fig}: {title.split(': ', 1)[-1]}", "",
                f"Notebook [`{name}.ipynb`](../notebooks/{name}.ipynb), data `figures/{name}.csv`."]
        rows = claims[claims["figure"] == fig].drop_duplicates("claim_id")
        if len(rows):
            out.append("Claims: " + "; ".join(f"{r.claim_id} **{r.claim_verdict}**" for r in rows.itertuples()) + ".")
        csv = _record() / f"{name}.csv"
        if hasattr(module, "findings") and csv.exists():
            out += ["", _fenced(module.findings(pd.read_csv(csv)))]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


# ------------------------------------------------------------------------------------------------ validation
def validation_tables() -> str:
    """The real-cluster error, ranking and target tables from ``figures/fig16_real_clusters.csv``."""
    from .realcluster.scoring import readme_tables

    return readme_tables(pd.read_csv(_record() / "fig16_real_clusters.csv"))


def recorded() -> str:
    """Each recorded run's per-request medians beside LLMServingSim's own errors on it
    (``figures/fig16_real_clusters_recorded.csv``)."""
    frame = pd.read_csv(_record() / "fig16_real_clusters_recorded.csv")
    return _table(pd.DataFrame({
        "recorded run": frame["experiment"], "median": frame["metric"],
        "recorded": frame["measured"].map(lambda v: f"{v:.4g}"), "model": frame["predicted"].map(lambda v: f"{v:.4g}"),
        "model error": frame["rel_error"].map(lambda v: f"{v:+.1%}"),
        "LLMServingSim's error": frame["lss_error"].map(lambda v: f"{v:+.1%}"),
        "within": frame["within"].map({True: "yes", False: "no"})}))


def misses() -> str:
    """Every router-level miss and model miss with its measured numbers and likely cause
    (``data/validation/misses.csv``)."""
    frame = pd.read_csv(run_context().data_dir / "validation" / "misses.csv", keep_default_na=False)
    return "\n".join(
        f"* **{r.experiment}** ({r.router}; {r.metric}): measured {r.measured}, predicted {r.predicted}"
        + (f", error {r.error}" if r.error else "") + f". {r.mechanism}. Evidence: {r.evidence}. "
        f"Modelled: {r.modelled}." for r in frame.itertuples()) + "\n"


def whatifs() -> str:
    """Each declared what-if with its targets and shown metrics (``figures/whatifs.csv``,
    ``figures/whatifs_targets.csv``; the questions from ``data/whatifs/whatifs.yaml``)."""
    from .realcluster.whatifs import load_whatifs, whatif_lines

    return whatif_lines(load_whatifs(), pd.read_csv(_record() / "whatifs.csv"),
                        pd.read_csv(_record() / "whatifs_targets.csv"))


# ------------------------------------------------------------------------------------------------ model
def serving_stack() -> str:
    """The serving-stack rows with every parameter's value and source (``data/perf/serving_stack.json``)."""
    data = json.loads((run_context().data_dir / "perf" / "serving_stack.json").read_text())
    rows = data["rows"]
    params = list(dict.fromkeys(p for row in rows.values() for p in row["params"]))
    frame = pd.DataFrame([{"parameter": f"`{p}`", **{f"`{name}`": row["params"][p]["value"]
                                                     for name, row in rows.items()}} for p in params])
    aliases = ", ".join(f"`{a}` = `{v['row']}`" for a, v in data["aliases"].items())
    sources = "\n".join(f"* `{key}`: {text}" for key, text in data["sources"].items())
    return _table(frame) + f"\nAliases: {aliases}.\n\nSources:\n\n{sources}\n"


def testbeds() -> str:
    """The paper testbeds and the defaults every figure runs with (``smetric.testbeds``)."""
    from . import testbeds

    frame = pd.DataFrame([{"testbed": k, "model": m, "GPU": g, "TP": tp, "instances": n}
                          for k, (m, g, tp, n) in testbeds.TESTBEDS.items()])
    defaults = ", ".join(f"`{k}={v!r}`" for k, v in testbeds.TESTBED_DEFAULTS.items())
    return (_table(frame) + f"\nDefaults on every testbed (`TESTBED_DEFAULTS`): {defaults}; the global store "
            f"`{testbeds.PROVISIONED}`; the workload `{testbeds.DEFAULT_WORKLOAD}` (also: "
            + ", ".join(f"`{w}`" for w in testbeds.WORKLOADS if w != testbeds.DEFAULT_WORKLOAD)
            + f"); synthetic sessions start {testbeds.WARMUP_MINUTES / 60:g} h before the measured window.\n")


def kv_path() -> str:
    """The KV-connector presets with every parameter's value and source (``data/perf/kv_path.json``)."""
    data = json.loads((run_context().data_dir / "perf" / "kv_path.json").read_text())
    presets = data["presets"]
    names = list(presets)
    params = list(dict.fromkeys(p for preset in presets.values() for p in preset["params"]))
    rows = []
    for param in params:
        row = {"parameter": f"`{param}`"}
        for name in names:
            entry = presets[name]["params"].get(param)
            value = "" if entry is None else "unlimited" if entry["value"] is None else entry["value"]
            row[f"`{name}`"] = value
        first = next(presets[n]["params"][param] for n in names if param in presets[n]["params"])
        row["source (default preset)"] = first["source"] or "assumption"
        rows.append(row)
    sources = "\n".join(f"* `{key}`: {text}" for key, text in data["sources"].items())
    return _table(pd.DataFrame(rows)) + "\nSources:\n\n" + sources + "\n"


def presets() -> str:
    """The calibration band of every workload preset statistic, with its source (``smetric.workload.synthetic``)."""
    from .workload.synthetic import PRESETS

    def number(x: float) -> str:
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"

    rows = [{"preset": f"`{name}`", "statistic": stat, "band": f"[{number(lo)}, {number(hi)}]", "source": source}
            for name, preset in PRESETS.items() for stat, (lo, hi, source) in preset.targets.items()]
    return _table(pd.DataFrame(rows))


# ------------------------------------------------------------------------------------------------ engine
def invariants() -> str:
    """:data:`INVARIANTS` as a numbered list, each with its test."""
    return "".join(f"{n}. {text}. Checked by `tests/{test}`.\n" for n, (text, test) in enumerate(INVARIANTS, 1))


# ------------------------------------------------------------------------------------------------ performance
def benchmarks() -> str:
    """The last ``make bench`` record (``benchmarks/results.csv``): one table per group, with targets."""
    path = _root() / "benchmarks" / "results.csv"
    frame = pd.read_csv(path, keep_default_na=False)
    head = frame.iloc[0]
    out = [f"Measured {head['date']} on {head['machine']} (`python -m benchmarks"
           f"{' --quick' if head['mode'] == 'quick' else ''}`).", ""]
    for group, rows in frame.groupby("group", sort=False):
        table = rows.assign(value=rows["value"].map(_number))
        out += [f"**{group}**", "", _table(table[["metric", "value", "unit", "target", "verdict"]])]
    return "\n".join(out)


def runtimes_frame() -> pd.DataFrame:
    """``figures/runtimes.csv``: the notebooks' run times of the last recorded full run per machine."""
    return pd.read_csv(_record() / "runtimes.csv")


def runtime_lines() -> str:
    """The README's run-time line per machine: the whole ``make figures`` run."""
    frame = runtimes_frame()
    lines = []
    for r in frame[frame["notebook"] == "(all)"].itertuples():
        n = int((frame["machine"] == r.machine).sum()) - 1
        lines.append(f"* `make figures`: {_duration(r.seconds)} on {r.machine} ({r.date}, {n} notebook"
                     f"{'' if n == 1 else 's'})\n")
    return "".join(lines)


def runtimes() -> str:
    """Each notebook's run time in the last recorded full run, one column per machine."""
    frame = runtimes_frame()
    frame = frame.assign(run=frame["machine"] + ", " + frame["date"].astype(str),
                         seconds=frame["seconds"].map(lambda s: f"{s:,.1f}"))
    wide = frame.pivot(index="notebook", columns="run", values="seconds").reset_index()
    return _table(wide.rename(columns={"run": ""}).fillna(""))


# ------------------------------------------------------------------------------------------------ cli, policies
def _command_output(argv: list[str]) -> str:
    """What ``smetric ARGV`` prints on stdout, at a fixed width (argparse wraps help to ``COLUMNS``)."""
    from .cli import main

    buf, saved = io.StringIO(), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        with contextlib.redirect_stdout(buf):
            try:
                main(argv)
            except SystemExit:  # --help exits 0 after printing
                pass
    finally:
        if saved is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = saved
    return buf.getvalue()


def cli() -> str:
    """``smetric --help`` and every subcommand's ``--help``."""
    from .cli import _COMMANDS

    out = ["### `smetric`", "", _fenced(_command_output(["--help"]))]
    for name in _COMMANDS:
        out += [f"### `smetric {name}`", "", _fenced(_command_output([name, "--help"]))]
    return "\n".join(out)


def policies() -> str:
    """Every routing policy from ``smetric policies --json``: summary, source, signals, then its parameters."""
    records = json.loads(_command_output(["policies", "--json"]))
    out = []
    for name, group in pd.DataFrame(records).groupby("policy", sort=False):
        first = group.iloc[0]
        out += [f"### `{name}`", "", f"{first['summary']}.", "", f"* source: {first['source']}",
                f"* signals: {first['signals']}", ""]
        params = group[group["param"] != ""]
        if len(params):
            out.append(_table(params[["param", "default", "choices", "range"]]))
    return "\n".join(out)


def pages() -> str:
    """The README's table of the documentation pages (:data:`PAGES`)."""
    return "".join(["| page | what it holds |\n", "|---|---|\n"] +
                   [f"| [{name[:-3]}](docs/{name}) | {what} |\n" for name, what in PAGES.items()] +
                   ["| [changelog](CHANGELOG.md) | what changed in the model, and how it moved the results |\n"])


# ------------------------------------------------------------------------------------------------ the blocks
@dataclass(frozen=True)
class Block:
    """One generated block: the file it lives in (relative to the root), its name, its source and renderer."""

    path: str
    name: str
    source: str
    render: Callable[[], str]

    @property
    def begin(self) -> str:
        return f"<!-- {self.name}:begin (generated from {self.source}) -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}:end -->"


#: Every generated block of the README and the pages.
BLOCKS = (
    Block("README.md", "claims", "figures/claims.csv", claims_summary),
    Block("README.md", "runtimes", "figures/runtimes.csv", runtime_lines),
    Block("README.md", "pages", "smetric.docs_pages.PAGES", pages),
    Block("docs/results.md", "claim-points", "figures/claims.csv", claims_points),
    Block("docs/results.md", "findings", "figures/figNN_*.csv", figure_findings),
    Block("docs/validation.md", "validation", "figures/fig16_real_clusters.csv", validation_tables),
    Block("docs/validation.md", "recorded", "figures/fig16_real_clusters_recorded.csv", recorded),
    Block("docs/validation.md", "misses", "data/validation/misses.csv", misses),
    Block("docs/validation.md", "whatifs", "figures/whatifs.csv", whatifs),
    Block("docs/model.md", "serving-stack", "data/perf/serving_stack.json", serving_stack),
    Block("docs/model.md", "testbeds", "smetric.testbeds", testbeds),
    Block("docs/model.md", "kv-path", "data/perf/kv_path.json", kv_path),
    Block("docs/model.md", "presets", "smetric.workload.synthetic.PRESETS", presets),
    Block("docs/engine.md", "invariants", "smetric.docs_pages.INVARIANTS", invariants),
    Block("docs/performance.md", "benchmarks", "benchmarks/results.csv", benchmarks),
    Block("docs/performance.md", "runtimes", "figures/runtimes.csv", runtimes),
    Block("docs/cli.md", "cli", "smetric --help", cli),
    Block("docs/policies.md", "policies", "smetric policies --json", policies),
)


def render(block: Block) -> str:
    """The block's text as :func:`write` puts it between its markers."""
    return block.render()


def stale(root: str | Path | None = None) -> list[str]:
    """``path: name`` of every block whose committed text differs from a fresh rendering (or is missing)."""
    root = Path(root) if root is not None else _root()
    out = []
    for block in BLOCKS:
        try:
            current = read_block(root / block.path, block.begin, block.end)
        except (ValueError, FileNotFoundError):
            out.append(f"{block.path}: {block.name} (no block)")
            continue
        if current != "\n" + render(block):
            out.append(f"{block.path}: {block.name}")
    return out


def write(root: str | Path | None = None) -> list[str]:
    """Rewrite every block; returns ``path: name`` of those that changed."""
    root = Path(root) if root is not None else _root()
    return [f"{b.path}: {b.name}" for b in BLOCKS if rewrite_block(root / b.path, b.begin, b.end, render(b))]


def main(argv: list[str] | None = None) -> int:
    """``python -m smetric.docs_pages [--check]``: rewrite the generated blocks, or list the stale ones (exit 1)."""
    ap = argparse.ArgumentParser(prog="python -m smetric.docs_pages", description=main.__doc__)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a block is stale")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        print("\n".join(bad) if bad else "every generated block is current")
        return 1 if bad else 0
    changed = write()
    print("rewritten: " + ", ".join(changed) if changed else "every generated block was current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
