"""The run context: one place resolving paths and run settings (argument, then environment, then default)."""

from pathlib import Path

import pytest

import smetric
from smetric.context import ENV, run_context

CHECKOUT = Path(smetric.__file__).resolve().parents[1]


@pytest.fixture
def clean_env(monkeypatch):
    for var in ENV.values():
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_defaults_come_from_the_checkout(clean_env, tmp_path):
    clean_env.chdir(tmp_path)  # never the working directory
    ctx = run_context()
    assert ctx.root == CHECKOUT
    assert ctx.data_dir == CHECKOUT / "data" and ctx.figures_dir == CHECKOUT / "figures"
    assert not ctx.quick and ctx.jobs is None and ctx.scheduler is None
    assert ctx.notebooks_dir == CHECKOUT / "notebooks"


def test_quick_sends_figures_to_the_build_folder_and_runs_serially(clean_env):
    explicit = run_context(quick=True)
    clean_env.setenv(ENV["quick"], "1")  # make test: notebooks whose quick parameter is False run quick
    from_env = run_context(quick=False)
    for ctx in (explicit, from_env):
        assert ctx.quick and ctx.jobs == 1
        assert ctx.figures_dir == CHECKOUT / "build" / "figures-quick"


def test_environment_then_arguments_override(clean_env, tmp_path):
    clean_env.setenv(ENV["root"], str(tmp_path))
    clean_env.setenv(ENV["data_dir"], str(tmp_path / "elsewhere"))
    clean_env.setenv(ENV["jobs"], "3")
    ctx = run_context()
    assert ctx.root == tmp_path.resolve() and ctx.data_dir == tmp_path / "elsewhere"
    assert ctx.figures_dir == tmp_path.resolve() / "figures" and ctx.jobs == 3
    assert run_context(jobs=2).jobs == 2
    assert run_context(figures_dir=tmp_path / "f").figures_dir == (tmp_path / "f").resolve()
    clean_env.setenv(ENV["scheduler"], "tcp://h:8786")
    assert run_context().scheduler == "tcp://h:8786" and run_context().jobs is None
    assert run_context(jobs=1).scheduler is None


def test_bad_jobs_fail_loudly(clean_env):
    clean_env.setenv(ENV["jobs"], "many")
    with pytest.raises(ValueError, match="SMETRIC_JOBS must be a positive integer"):
        run_context()
    with pytest.raises(ValueError, match="positive integer"):
        run_context(jobs=0)


def test_data_readers_use_the_context(clean_env, tmp_path):
    from smetric.hardware.efficiency import perf_data_dir
    from smetric.plotting import figures_dir
    from smetric.workload import data_dir

    assert data_dir() == CHECKOUT / "data" and perf_data_dir() == CHECKOUT / "data" / "perf"
    clean_env.setenv(ENV["data_dir"], str(tmp_path))
    clean_env.setenv(ENV["figures_dir"], str(tmp_path / "figs"))
    assert data_dir() == tmp_path and perf_data_dir() == tmp_path / "perf"
    assert figures_dir() == (tmp_path / "figs").resolve() and (tmp_path / "figs").is_dir()
