"""The papermill runner behind `smetric reproduce` / `make figures`."""

import json

import nbformat
import pytest

from smetric.experiments.reproduce import discover, parse_parameter, reproduce


def _notebook(path, body):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("scale = 1\nquick = False")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_parse_parameter_reads_literals():
    assert parse_parameter("load_max=12") == ("load_max", 12)
    assert parse_parameter("model=qwen3-235b-a22b") == ("model", "qwen3-235b-a22b")
    assert parse_parameter("loads=[1, 2.5]") == ("loads", [1, 2.5])
    with pytest.raises(ValueError):
        parse_parameter("novalue")


def test_reproduce_runs_reports_failures_and_passes_parameters(tmp_path):
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    _notebook(nbdir / "fig90_ok.ipynb",
              "import json\njson.dump({'scale': scale, 'quick': quick}, open('out.json', 'w'))")
    _notebook(nbdir / "fig91_bad.ipynb", "raise RuntimeError('broken on purpose')")
    assert [p.stem for p in discover(tmp_path, ["fig90"])] == ["fig90_ok"]
    table = reproduce(params={"scale": 3}, quick=True, root=tmp_path, progress=False)
    by = table.set_index("figure")
    assert bool(by.loc["fig90_ok", "ok"]) and not bool(by.loc["fig91_bad", "ok"])
    assert "RuntimeError: broken on purpose" in by.loc["fig91_bad", "error"]
    assert json.load(open(nbdir / "out.json")) == {"scale": 3, "quick": True}
    assert (tmp_path / "build" / "notebooks" / "fig90_ok.ipynb").exists()
    assert (tmp_path / "build" / "runtimes.csv").exists()
    with pytest.raises(ValueError, match="no notebook matches"):
        reproduce(only=["fig42"], root=tmp_path, progress=False)


def test_reproduce_leaves_the_environment_as_it_was(tmp_path, monkeypatch):
    monkeypatch.delenv("SMETRIC_ROOT", raising=False)
    monkeypatch.delenv("SMETRIC_QUICK", raising=False)  # make test sets it
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    _notebook(nbdir / "fig90_ok.ipynb", "pass")
    reproduce(quick=True, root=tmp_path, progress=False)
    import os
    assert "SMETRIC_ROOT" not in os.environ and "SMETRIC_QUICK" not in os.environ


def test_full_run_writes_back_without_volatile_metadata(tmp_path, monkeypatch):
    monkeypatch.delenv("SMETRIC_QUICK", raising=False)  # a full run: make test sets quick mode
    monkeypatch.setenv("SMETRIC_JOBS", "1")  # no sweep here: no cluster either
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    _notebook(nbdir / "fig90_ok.ipynb", "import sys, warnings\nprint('result', scale)\nwarnings.warn('at /some/path')")
    table = reproduce(root=tmp_path, progress=False)
    assert table["ok"].all()
    nb = nbformat.read(nbdir / "fig90_ok.ipynb", as_version=4)
    assert "papermill" not in nb.metadata
    assert all("papermill" not in c.metadata and "execution" not in c.metadata for c in nb.cells)
    outputs = nb.cells[1].outputs
    assert [o.text for o in outputs] == ["result 1\n"]  # stdout kept, the warning's stderr dropped
    first = (nbdir / "fig90_ok.ipynb").read_bytes()
    reproduce(root=tmp_path, progress=False)
    assert (nbdir / "fig90_ok.ipynb").read_bytes() == first  # a re-run leaves no churn


def test_the_notebooks_sweeps_share_one_cluster(tmp_path, monkeypatch):
    """A full run starts one dask cluster: every notebook's sweep runs on the same workers; it is gone after."""
    import os

    monkeypatch.delenv("SMETRIC_QUICK", raising=False)
    monkeypatch.setenv("SMETRIC_JOBS", "2")
    monkeypatch.delenv("SMETRIC_DASK_SCHEDULER", raising=False)
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    body = ("import json, os\nfrom smetric.experiments.sweep import sweep\n"
            "df = sweep([{'x': i} for i in range(6)], lambda x: {'pid': os.getpid()}, progress=False)\n"
            "json.dump({'scheduler': os.environ['SMETRIC_DASK_SCHEDULER'], 'jobs': os.environ['SMETRIC_JOBS'],\n"
            "           'pids': sorted(set(df['pid'].tolist())), 'kernel': os.getpid()}, open(f'{NAME}.json', 'w'))")
    for name in ("fig90_a", "fig91_b"):
        _notebook(nbdir / f"{name}.ipynb", f"NAME = {name!r}\n" + body)
    table = reproduce(root=tmp_path, progress=False, write_back=False)
    assert table["ok"].all(), table["error"].tolist()
    a, b = (json.load(open(nbdir / f"{n}.json")) for n in ("fig90_a", "fig91_b"))
    assert a["scheduler"].startswith("tcp://") and a["scheduler"] == b["scheduler"] and a["jobs"] == ""
    workers = set(a["pids"]) | set(b["pids"])  # one cluster's two processes (a cluster per sweep: three or four)
    assert len(workers) <= 2 and a["kernel"] not in workers and b["kernel"] not in workers
    assert os.environ["SMETRIC_JOBS"] == "2" and "SMETRIC_DASK_SCHEDULER" not in os.environ
