"""The figure layer: each figure module's declaration, its notebook, and the notebook's text twin agree."""

import logging
from dataclasses import fields

import jupytext
import nbformat
import papermill as pm
import pytest

from smetric.context import run_context
from smetric.experiments.figure import FigureParams, check_module, param
from smetric.experiments.figures import figure_module, figure_modules
from smetric.experiments.parameters_cell import parameters_source, stale_notebooks

NOTEBOOKS = run_context().notebooks_dir
NAMES = sorted(figure_modules())


def test_one_notebook_per_figure_module_and_no_generators():
    assert sorted(p.stem for p in NOTEBOOKS.glob("fig*.ipynb")) == NAMES
    assert not (NOTEBOOKS / "_build").exists()


@pytest.mark.parametrize("name", NAMES)
def test_module_declares_the_figure(name):
    module = figure_modules()[name]
    check_module(module)
    quick, full = module.Params.quick(), module.Params.full()
    assert quick != full, "the quick preset must shrink the full run"
    assert module.Params.preset(True) == quick and module.Params.preset(False) == full
    assert all(module.Params.docs().values())


@pytest.mark.parametrize("name", NAMES)
def test_text_twin_matches_the_notebook(name):
    """The py:percent twin is the reviewable source: its cells are the notebook's cells."""
    text = jupytext.read(NOTEBOOKS / f"{name}.py")
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert book.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent"
    assert [(c.cell_type, c.source) for c in text.cells] == [(c.cell_type, c.source) for c in book.cells]


@pytest.mark.parametrize("name", NAMES)
def test_papermill_reads_every_parameter(name, caplog):
    """Literal-only parameters cell: papermill infers every Params field plus quick, without a parse warning."""
    with caplog.at_level(logging.WARNING, logger="papermill"):
        declared = pm.inspect_notebook(str(NOTEBOOKS / f"{name}.ipynb"))
    assert not [r for r in caplog.records if "Unable to parse" in r.getMessage()]
    assert set(declared) == {f.name for f in fields(figure_modules()[name].Params)} | {"quick"}
    assert declared["quick"]["default"] == "False"
    assert all(declared[f]["default"] == "None" for f in declared if f != "quick")


def test_parameters_cells_are_generated_from_params():
    """Every notebook's parameters cell is the one ``python -m smetric.experiments.parameters_cell`` writes."""
    assert stale_notebooks() == [], "run python -m smetric.experiments.parameters_cell"
    source = parameters_source(figure_module("fig06"))
    assert "screen_seeds: list = None  # seeds of the baseline screening (disjoint from seeds)" in source.splitlines()


def test_preset_overrides_keep_none_and_freeze_lists():
    module = figure_module("fig02")
    p = module.Params.preset(True, rpm_per_instance=[3, 5], seeds=None)
    assert p.rpm_per_instance == (3, 5) and p.seeds == module.Params.quick().seeds
    from_cli = figure_module("fig06").Params.preset(True, seeds="[0, 1]", model="qwen3-235b-a22b", n_keep="3")
    assert from_cli.seeds == (0, 1) and from_cli.model == "qwen3-235b-a22b" and from_cli.n_keep == 3
    with pytest.raises(ValueError, match="needs a literal"):
        module.Params.preset(False, seeds="zero")
    with pytest.raises(ValueError, match="unknown parameter"):
        module.Params.preset(False, loads=[1])
    with pytest.raises(ValueError, match="matches 0 figures"):
        figure_module("fig99")


def test_param_help_must_be_parseable_by_papermill():
    with pytest.raises(ValueError, match="papermill"):
        param(1, "x = 1")
    with pytest.raises(TypeError, match="tuple"):
        param([1], "a list")
    assert issubclass(figure_module("fig05").Params, FigureParams)


def test_papermill_from_the_notebooks_folder_writes_only_the_quick_build_folder(tmp_path, monkeypatch):
    """`cd notebooks && papermill fig05_load_metric.ipynb out.ipynb -p quick True` (JupyterLab's working
    directory): nothing lands next to the notebook; the figure goes to build/figures-quick."""
    monkeypatch.delenv("SMETRIC_FIGURES", raising=False)
    monkeypatch.delenv("SMETRIC_QUICK", raising=False)
    before = sorted(p.name for p in NOTEBOOKS.iterdir())
    csv = run_context(quick=True).figures_dir / "fig05_load_metric.csv"
    csv.unlink(missing_ok=True)
    pm.execute_notebook(str(NOTEBOOKS / "fig05_load_metric.ipynb"), str(tmp_path / "out.ipynb"),
                        parameters={"quick": True}, cwd=str(NOTEBOOKS), progress_bar=False, kernel_name="python3")
    assert sorted(p.name for p in NOTEBOOKS.iterdir()) == before
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert any("quick = True" in c.source for c in out.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert csv.exists()
