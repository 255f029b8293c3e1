"""The README and the pages under docs/: every generated block is current, the pages are those the site lists, the
engine's invariants name tests that exist, the engine page holds the rules the code cites, and a quick strict site
build passes (one notebook, every page)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import yaml

from smetric import docs_pages

ROOT = Path(__file__).resolve().parents[1]


def test_every_generated_block_is_current():
    assert docs_pages.stale() == [], "run `python -m smetric.docs_pages` (or `make docs`) and commit the pages"


def test_a_stale_block_is_named_and_rewritten(tmp_path):
    block = docs_pages.Block("page.md", "x", "somewhere", lambda: "| a |\n")
    page = tmp_path / "page.md"
    page.write_text(f"intro\n{block.begin}\n| old |\n{block.end}\nafter\n")
    saved = docs_pages.BLOCKS
    try:
        docs_pages.BLOCKS = (block,)
        assert docs_pages.stale(tmp_path) == ["page.md: x"]
        assert docs_pages.write(tmp_path) == ["page.md: x"]
        assert docs_pages.stale(tmp_path) == [] and docs_pages.write(tmp_path) == []
    finally:
        docs_pages.BLOCKS = saved
    assert page.read_text() == f"intro\n{block.begin}\n| a |\n{block.end}\nafter\n"


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    for name in docs_pages.PAGES:
        assert f"(docs/{name})" in text, name


def test_the_site_lists_every_page_and_nothing_else():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    nav = [next(iter(entry.values())) for entry in config["nav"]]
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages == set(docs_pages.PAGES)
    assert nav == ["index.md", *docs_pages.PAGES, "changelog.md"]


def _functions(path: Path) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}


def test_every_invariant_names_a_test_that_exists():
    for statement, test in docs_pages.INVARIANTS:
        file, name = test.split("::")
        assert name.startswith("test_") and name in _functions(ROOT / "tests" / file), (statement, test)


def test_every_claim_has_one_row_in_the_readme_table():
    claims = pd.read_csv(ROOT / "figures" / "claims.csv")
    rows = [line for line in docs_pages.claims_summary().splitlines()[2:]]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == list(claims["claim_id"].drop_duplicates())


def test_the_engine_page_holds_the_semantics_the_code_cites():
    """The engine's rules are the "Semantics" section of docs/engine.md; every ``docs/engine.md, "Title"`` the code
    cites opens a paragraph there."""
    import smetric.cluster.engine as engine

    semantics = (ROOT / "docs" / "engine.md").read_text().split("\n## Semantics\n", 1)[1]
    assert "\nInputs. " in semantics and ":mod:" not in semantics
    assert "docs/engine.md" in engine.__doc__
    cited = {m for path in (ROOT / "smetric").rglob("*.py")
             for m in re.findall(r'docs/engine\.md`{0,2},?\s+\(?"([^"]+)"', path.read_text())}
    assert {"Abandonment", "Incremental KV allocation"} <= cited
    for title in cited:
        assert re.search(rf"\n{re.escape(title)}[ .(]", semantics), title


def test_runtime_lines_one_per_machine(tmp_path, monkeypatch):
    rows = [("2026-01-02", "m1", "fig00_a", 5.0), ("2026-01-02", "m1", "(all)", 65.0),
            ("2026-01-03", "m2", "fig00_a", 2.0), ("2026-01-03", "m2", "(all)", 9.5)]
    (tmp_path / "runtimes.csv").write_text("date,machine,notebook,seconds\n" +
                                          "".join(",".join(map(str, r)) + "\n" for r in rows))
    monkeypatch.setattr(docs_pages, "_record", lambda: tmp_path)
    assert docs_pages.runtime_lines() == ("* `make figures`: 1 min 05 s on m1 (2026-01-02, 1 notebook)\n"
                                         "* `make figures`: 9.5 s on m2 (2026-01-03, 1 notebook)\n")


def test_quick_strict_site_build(tmp_path):
    from smetric.docs_site import build

    build(tmp_path / "site", notebooks="fig10_sensitivity")
    index = (tmp_path / "site" / "index.html").read_text()
    assert re.search(r'href="results/"', index)  # the README's link to docs/results.md, rewritten for the site
    assert (tmp_path / "site" / "notebooks" / "fig10_sensitivity" / "index.html").exists()
    assert (tmp_path / "site" / "engine" / "index.html").exists()


def test_record_runtimes_keeps_other_machines_and_replaces_this_ones(tmp_path, monkeypatch):
    from smetric.experiments import reproduce as rp

    monkeypatch.setattr("smetric.machine.describe_machine", lambda: "here")
    (tmp_path / "runtimes.csv").write_text("date,machine,notebook,seconds\n2026-01-01,there,fig00_a,7.0\n"
                                          "2026-01-01,here,fig00_a,9.0\n2026-01-01,here,fig01_b,3.0\n")
    runs = pd.DataFrame({"figure": ["fig00_a", "fig02_c"], "seconds": [4.04, 6.0], "ok": [True, False]})
    rp.record_runtimes(runs, None, tmp_path)
    table = pd.read_csv(tmp_path / "runtimes.csv").set_index(["machine", "notebook"])["seconds"]
    assert table.to_dict() == {("there", "fig00_a"): 7.0, ("here", "fig01_b"): 3.0, ("here", "fig00_a"): 4.0}
    rp.record_runtimes(runs.iloc[:1], 12.0, tmp_path)  # a run of every notebook also keeps its total
    table = pd.read_csv(tmp_path / "runtimes.csv").set_index(["machine", "notebook"])["seconds"]
    assert table[("here", "(all)")] == 12.0 and table[("there", "fig00_a")] == 7.0
