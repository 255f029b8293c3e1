"""A new user's first hour: one test (or more) per pitfall a first reading of the README and a first run met."""

import json
import re
import shlex
import shutil
import types
from pathlib import Path

import nbformat
import pytest

from smetric.cli import _build_parser, main
from smetric.experiments import reproduce as rp

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("fig*.ipynb"))


def _notebook(path, body, params="scale = 1\nquick = False"):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(params)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout with one tiny figure notebook that writes its `scale` into the figures directory."""
    monkeypatch.delenv("SMETRIC_QUICK", raising=False)
    monkeypatch.delenv("SMETRIC_FIGURES", raising=False)
    monkeypatch.setenv("SMETRIC_DASK_SCHEDULER", "")  # "" = unset; restored after `smetric reproduce` sets it
    monkeypatch.setenv("SMETRIC_JOBS", "1")
    monkeypatch.setenv("SMETRIC_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks" / "fig90_tiny.ipynb",
              "from smetric.context import run_context\nout = run_context().figures() / 'fig90.txt'\n"
              "out.write_text(str(scale))\nprint('scale', scale)")
    return tmp_path


def _no_papermill_run(monkeypatch):
    import papermill

    def refuse(*args, **kwargs):
        raise AssertionError("a notebook was executed")

    monkeypatch.setattr(papermill, "execute_notebook", refuse)


# ---- -p names are checked before anything runs
def test_unknown_parameter_exits_2_with_the_list_and_a_suggestion(checkout, monkeypatch, capsys):
    _no_papermill_run(monkeypatch)
    assert main(["reproduce", "-p", "scal=3"]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter 'scal'" in err and "did you mean 'scale'" in err
    assert "fig90_tiny declares scale, quick" in err


def test_the_readme_example_parameter_would_be_rejected_on_fig06():
    fig06 = [b for b in NOTEBOOKS if b.stem.startswith("fig06")]
    with pytest.raises(ValueError, match=r"unknown parameter 'load_max' \(did you mean 'loads'"):
        rp.check_parameters(fig06, {"load_max": 16})


def _readme_commands() -> list[list[str]]:
    """Every complete `smetric ...` / `papermill NB.ipynb ...` command line quoted in the README: with a flag,
    without placeholders (``[...]``, ``NAME``, ``a|b``) or ``--help``."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for line in re.findall(r"`((?:smetric|papermill) [^`]+)`", text):
        argv = shlex.split(line.replace("\\|", "|"))
        placeholder = any(a.startswith(("[-", "...")) or a.isupper() or "|" in a or a == "--help" for a in argv)
        if placeholder or not any(a.startswith("-") for a in argv):
            continue
        if argv[0] == "papermill" and not argv[1].endswith(".ipynb"):
            continue
        commands.append(argv)
    return commands


def test_readme_commands_parse_and_name_real_parameters():
    commands = _readme_commands()
    assert any(c[:2] == ["smetric", "reproduce"] and "-p" in c for c in commands)
    books = {b.stem: b for b in NOTEBOOKS}
    for argv in commands:
        if argv[0] == "papermill":
            names = [argv[i + 1] for i, a in enumerate(argv) if a == "-p"]
            rp.check_parameters([ROOT / argv[1]], dict.fromkeys(names))
            continue
        args = _build_parser(argv[1:]).parse_args(argv[1:])  # exits on a flag that does not exist
        if args.command == "reproduce":
            chosen = [b for s, b in books.items() if not args.only or any(s.startswith(o) for o in args.only)]
            rp.check_parameters(chosen, dict(rp.parse_parameter(p) for p in args.param))


def test_readme_perf_and_policies_commands_run(capsys):
    for argv in _readme_commands():
        if argv[:2] in (["smetric", "perf"], ["smetric", "policies"]):
            assert main(argv[1:]) == 0, argv


# ---- overrides never overwrite the record
def test_override_runs_write_build_and_leave_the_record(checkout, capfd):
    committed = (checkout / "notebooks" / "fig90_tiny.ipynb").read_bytes()
    table = rp.reproduce(params={"scale": 3}, progress=False)
    assert table["ok"].all(), table["error"].tolist()
    assert (checkout / "build" / "figures" / "fig90.txt").read_text() == "3"
    assert not (checkout / "figures" / "fig90.txt").exists()
    assert (checkout / "notebooks" / "fig90_tiny.ipynb").read_bytes() == committed
    assert "scale 3" in (checkout / "build" / "notebooks" / "fig90_tiny.ipynb").read_text()


# ---- no ZMQ warning
def test_kernels_print_no_tcp_encryption_warning(checkout, capfd):
    table = rp.reproduce(quick=True, progress=False)
    assert table["ok"].all(), table["error"].tolist()
    assert "without encryption" not in capfd.readouterr().err  # kernels on IPC sockets: no TCP, no warning


def test_a_plain_full_run_or_update_record_refreshes_the_record(checkout):
    rp.reproduce(progress=False)
    assert (checkout / "figures" / "fig90.txt").read_text() == "1"
    rp.reproduce(params={"scale": 5}, progress=False, update_record=True)
    assert (checkout / "figures" / "fig90.txt").read_text() == "5"
    assert "scale 5" in (checkout / "notebooks" / "fig90_tiny.ipynb").read_text()
    with pytest.raises(ValueError, match="quick runs never do"):
        rp.reproduce(quick=True, update_record=True, progress=False)


# ---- progress
def test_sweeps_show_a_bar_unless_quick(monkeypatch, capsys):
    from smetric.experiments.sweep import sweep

    monkeypatch.delenv("SMETRIC_QUICK", raising=False)
    sweep({"x": [1, 2, 3]}, lambda x: {"y": x}, jobs=1)
    assert "3/3" in capsys.readouterr().err
    monkeypatch.setenv("SMETRIC_QUICK", "1")
    sweep({"x": [1, 2, 3]}, lambda x: {"y": x}, jobs=1)
    assert capsys.readouterr().err == ""


def test_no_figure_switches_its_sweep_bar_off():
    sources = (ROOT / "smetric" / "experiments").rglob("*.py")
    offenders = [p.name for p in sources if re.search(r"sweep\([^)]*progress=False", p.read_text(), re.S)]
    assert offenders == []


def test_progress_bars_are_stripped_from_the_record():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "m"}, "text/plain": "sweep: 100% 3/3 [00:01<00:00]"}),
        nbformat.v4.new_output("stream", name="stdout", text="result\n")]
    nb.cells = [cell]
    rp.strip_volatile(nb)
    assert [o.output_type for o in nb.cells[0].outputs] == ["stream"]


def test_a_first_time_compile_is_announced(monkeypatch, capsys):
    from smetric.cluster.engine import driver

    monkeypatch.setattr(driver, "_run", types.SimpleNamespace(signatures=[]))
    monkeypatch.setattr(driver, "compile_engine", lambda: None)
    monkeypatch.setattr(driver, "engine_cached", lambda: False)
    driver.ensure_compiled()
    assert "compiling the simulation engine" in capsys.readouterr().err
    monkeypatch.setattr(driver, "engine_cached", lambda: True)
    driver.ensure_compiled()
    assert capsys.readouterr().err == ""


def test_engine_cached_reads_numbas_index(monkeypatch):
    from smetric.cluster.engine import driver

    def dispatcher(index):
        return types.SimpleNamespace(_cache=types.SimpleNamespace(
            _cache_file=types.SimpleNamespace(_load_index=lambda: index)))

    monkeypatch.setattr(driver, "_run", dispatcher({}))  # missing or stale
    assert not driver.engine_cached()
    monkeypatch.setattr(driver, "_run", dispatcher({("sig",): "file"}))
    assert driver.engine_cached()


# ---- simulate: the figures' model in one flag, every default stated, rejections reported
def _simulate_args(*extra):
    argv = ["simulate", "--trace", "azure-conv", "--policy", "smetric", *extra]
    return _build_parser(argv).parse_args(argv)


def test_testbed_defaults_are_exactly_paper_cluster():
    from smetric.cli.simulate import cluster_from_args
    from smetric.testbeds import paper_cluster

    assert cluster_from_args(_simulate_args("--testbed-defaults", "30b")) == paper_cluster("30b")
    assert cluster_from_args(_simulate_args("--testbed-defaults", "235b")) == paper_cluster("235b")
    over = cluster_from_args(_simulate_args("--testbed-defaults", "30b", "--replay", "open", "--instances", "4"))
    assert over.replay == "open" and over.n_instances == 4 and over.kv_connector.name == "lmcache-mooncake"
    bare = cluster_from_args(_simulate_args("--model", "qwen3-30b-a3b", "--gpu", "h20"))
    assert bare.global_store is None and bare.replay == "open" and bare.kv_connector.ideal and bare.n_instances == 1


def test_simulate_needs_a_model_without_testbed_defaults(capsys):
    assert main(["simulate", "--trace", "azure-conv", "--policy", "smetric", "--gpu", "h20"]) == 2
    assert "--model is required (or --testbed-defaults" in capsys.readouterr().err


def test_every_simulate_flag_has_help_and_its_default():
    parser = _build_parser(["simulate"])
    sub = next(a for a in parser._actions if a.dest == "command").choices["simulate"]
    for action in sub._actions:
        if action.dest in ("help",):
            continue
        assert action.help, action.option_strings
        flag_only = action.nargs == 0 and action.default in (False, None)  # a switch: off unless given
        if not (action.required or flag_only or action.dest in ("json",)):
            assert "default" in action.help or "required" in action.help, action.option_strings


def _huge_request_trace(path):
    rows = [{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]},
            {"timestamp": 1000, "input_length": 4_000_000, "output_length": 4, "hash_ids": list(range(10, 7823))}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rejections_are_counted_and_warned(tmp_path, capsys):
    trace = _huge_request_trace(tmp_path / "huge.jsonl")
    code = main(["simulate", "--trace", str(trace), "--format", "mooncake", "--policy", "round-robin",
                 "--model", "qwen3-30b-a3b", "--gpu", "h20"])
    assert code == 0
    out, err = capsys.readouterr()
    assert re.search(r"n_rejected  1$", out, re.M)
    assert "1 of 2 requests rejected" in err and "largest request 4,000,004 tokens" in err
    lines = [line for line in out.splitlines() if not line.startswith("#")]
    assert len({line.index("  ", len(line) - len(line.lstrip())) for line in lines}) == 1  # one value column


# ---- synth makes the rate asked for
def test_synth_defaults_give_the_requested_rate(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main(["synth", "--out", str(out), "--format", "bailian", "--duration", "600",
                 "--requests-per-minute", "1440"]) == 0
    message = capsys.readouterr().out
    assert "(bailian-coder," in message
    n = int(re.search(r"wrote (\d+) requests", message).group(1))
    assert n >= 0.9 * 14_400, message


# ---- dask: bokeh locked, the scheduler checked once with the flag named
def test_bokeh_is_locked_and_declared():
    lock = (ROOT / "requirements.lock").read_text()
    version = re.search(r"^bokeh==(\d+)\.(\d+)", lock, re.M)
    assert version and (int(version[1]), int(version[2])) >= (3, 1)
    assert '"bokeh>=3.1"' in (ROOT / "pyproject.toml").read_text()
    assert "-r requirements.lock" in (ROOT / "environment.yml").read_text()


def test_a_malformed_scheduler_fails_before_any_notebook(checkout, monkeypatch, capsys):
    _no_papermill_run(monkeypatch)
    assert main(["reproduce", "--scheduler", "tcp://host:notaport"]) == 2
    err = capsys.readouterr().err
    assert "--scheduler" in err and "tcp://host:notaport" in err and "not an address" in err


def test_an_unreachable_scheduler_is_named():
    with pytest.raises(ValueError, match=r"--scheduler .*no scheduler answered within 1 s"):
        rp.check_scheduler("tcp://127.0.0.1:9", timeout=1)


def test_sweep_jobs_and_scheduler_clash_names_the_flags(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--sweep-jobs", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert exc.value.code == 2
    assert "--scheduler: not allowed with argument --sweep-jobs" in capsys.readouterr().err


def test_sweep_jobs_below_one_names_the_flag(capsys):
    assert main(["reproduce", "--sweep-jobs", "0"]) == 2
    assert "--sweep-jobs must be a positive integer" in capsys.readouterr().err


# ---- opening and saving a notebook in JupyterLab (jupytext's contents manager) changes nothing
@pytest.mark.parametrize("book", NOTEBOOKS, ids=lambda p: p.stem)
def test_open_and_save_through_jupytext_leaves_both_twins(book, tmp_path):
    from jupyter_client.kernelspec import get_kernel_spec
    from jupyter_server.services.contents.largefilemanager import LargeFileManager
    from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class

    for twin in (book, book.with_suffix(".py")):
        shutil.copy(twin, tmp_path / twin.name)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    manager = build_sync_jupytext_contents_manager_class(LargeFileManager)(root_dir=str(tmp_path))
    model = manager.get(book.name)
    spec = get_kernel_spec("python3")  # what JupyterLab writes: the running kernel's spec
    model["content"].metadata["kernelspec"] = {"display_name": spec.display_name, "language": spec.language,
                                               "name": "python3"}
    manager.save(model, book.name)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before


# ---- small items
def test_a_misspelled_policy_gets_a_suggestion():
    from smetric.policies.registry import get

    with pytest.raises(ValueError, match=r"did you mean 'smetric'"):
        get("smetirc")


def test_top_level_help_has_no_rst_markup(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in capsys.readouterr().out


def test_agent_workload_names_n_instances():
    from smetric.testbeds import agent_workload

    with pytest.raises(ValueError, match="n_instances must be a positive integer, got 0"):
        agent_workload(n_instances=0, minutes=1)


def test_model_page_states_both_claude_code_session_counts():
    text = (ROOT / "docs" / "model.md").read_text()
    para = next(p for p in text.split("\n\n") if p.startswith("**The real agent trace**"))
    assert "710" in para and "773" in para and "63 sub-agents" in para
