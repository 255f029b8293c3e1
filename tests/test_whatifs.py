"""Declared what-ifs (data/whatifs/whatifs.yaml): the declarations are checked with one-line errors, a change reaches
only the spec value it names, the committed record covers exactly the declared what-ifs and re-runs to the same
numbers, and ``smetric whatif`` fails cleanly on bad input."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest

from smetric.cli import main
from smetric.context import run_context
from smetric.realcluster.spec import SpecError, load_spec, spec_paths
from smetric.realcluster.whatifs import (
    ERROR_COLUMNS,
    WhatIf,
    changed_spec,
    load_whatifs,
    run_whatifs,
    whatif_cases,
    whatif_lines,
)

RECORD = run_context().root / "figures"
ENTRY = """\
whatifs:
  - name: ok
    question: q
    specs: [sglang-v04-cache-aware]
    show: [hit_ratio]
"""


def _spec(name: str):
    return load_spec(next(p for p in spec_paths() if p.stem == name))


def _write(tmp_path, text: str):
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_declared_whatifs_load_and_match_specs():
    whatifs = load_whatifs()
    assert len(whatifs) >= 10 and len({w.name for w in whatifs}) == len(whatifs)
    cases = whatif_cases(whatifs)
    assert {w.name for w, _ in cases} == {w.name for w in whatifs}


@pytest.mark.parametrize("text, message", [
    (ENTRY.replace("show: [hit_ratio]", "show: [hit_ratio]\n    colour: red"), "whatifs[0].colour: unknown key"),
    (ENTRY.replace("    show: [hit_ratio]\n", ""), "whatifs[0].show: is missing"),
    (ENTRY.replace("name: ok", "name: Not_OK"), "whatifs[0].name: must be lower-case"),
    (ENTRY.replace("[hit_ratio]", "[hit_rate]"), "whatifs.ok.show: unknown metric 'hit_rate'"),
    (ENTRY.replace("[hit_ratio]", "[]"), "whatifs.ok.show: must not be empty"),
    (ENTRY.replace("specs: [sglang-v04-cache-aware]", "specs: sglang-v04-cache-aware"),
     "whatifs.ok.specs: must be a list of strings"),
    (ENTRY + "    engine: vllm-v9\n", "whatifs.ok.engine: unknown engine 'vllm-v9'"),
    (ENTRY + "    set: [1, 2]\n", "whatifs.ok.set: must map dotted spec paths"),
    (ENTRY + ENTRY.split("\n", 1)[1], "whatifs.ok: the name is used twice"),
    ("whatifs: {}\n", "must be a mapping with the one key 'whatifs'"),
    ("whatifs: [\n", "not valid YAML"),
])
def test_bad_declarations_name_file_and_key(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(SpecError) as err:
        load_whatifs(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("extra, message", [
    ("    set: {workload.params.bogus: 1}\n", "workload.params.bogus: unknown parameter"),
    ("    set: {cluster.tp.x: 1}\n", "set.cluster.tp.x: cluster.tp is not a mapping of the spec"),
    ("    set: {cluster.max_num_batched_tokens: lots}\n", "cluster.max_num_batched_tokens: must be an integer"),
    ("    routers: [nobody]\n", "routers: 'nobody' is not a router of this spec"),
    ("    set: {cluster.efficiency: {eta_speed: 0.5}}\n", "cluster.efficiency: unknown field 'eta_speed'"),
    ("    set: {cluster.efficiency: {moe_gemm_eff: 2}}\n", "cluster.efficiency: Efficiency.moe_gemm_eff must be in"),
    ("    set: {cluster.efficiency: 0.5}\n", "cluster.efficiency: must map efficiency fields to numbers"),
])
def test_a_change_that_breaks_the_spec_fails_before_anything_runs(tmp_path, extra, message):
    with pytest.raises(SpecError) as err:
        whatif_cases(load_whatifs(_write(tmp_path, ENTRY + extra)))
    assert "[what-if ok]" in str(err.value) and message in str(err.value), str(err.value)


def test_a_pattern_must_match_a_spec(tmp_path):
    path = _write(tmp_path, ENTRY.replace("[sglang-v04-cache-aware]", "[sglang-v04-*, no-such-spec*]"))
    with pytest.raises(SpecError, match=r"whatifs\.ok\.specs: 'no-such-spec\*' matches no validation spec"):
        whatif_cases(load_whatifs(path))


def test_a_change_reaches_only_the_named_router():
    """The llm-d specs share one router_info mapping between routers (a YAML anchor): setting one router's
    staleness must leave the others' and the loaded spec's alone."""
    spec = _spec("llmd-73-capacity-qps10")
    assert spec.routers["load-scheduling"]["router_info"] is spec.routers["precise-scheduling"]["router_info"]
    whatif = WhatIf(name="t", question="q", specs=(spec.name,), show=("ttft_mean_s",),
                    set={"routers.load-scheduling.router_info.refresh_s": 2.0})
    changed = changed_spec(spec, whatif)
    assert changed.routers["load-scheduling"]["router_info"]["refresh_s"] == 2.0
    assert changed.routers["precise-scheduling"]["router_info"]["refresh_s"] == 0.05
    assert spec.routers["load-scheduling"]["router_info"]["refresh_s"] == 0.05


def test_routers_keep_the_baseline():
    spec = _spec("llmd-73-capacity-qps10")
    changed = changed_spec(spec, WhatIf(name="t", question="q", specs=(spec.name,), show=("ttft_mean_s",),
                                        routers=("load-scheduling",)))
    assert list(changed.routers) == ["load-scheduling", "random-scheduling"] == list(changed.measured)
    assert changed.baseline == spec.baseline == "random-scheduling"


def test_the_record_covers_the_declared_whatifs():
    errors = pd.read_csv(RECORD / "whatifs.csv")
    targets = pd.read_csv(RECORD / "whatifs_targets.csv")
    declared = [w.name for w in load_whatifs()]
    assert list(errors.columns) == list(ERROR_COLUMNS)
    assert list(dict.fromkeys(errors["whatif"])) == declared
    assert set(targets["whatif"]) <= set(declared) and (targets["verdict"] != "n/a").all()
    for w in load_whatifs():  # every shown metric is in the record
        assert set(w.show) <= set(errors.loc[errors["whatif"] == w.name, "metric"]), w.name


def test_a_full_size_rerun_reproduces_the_record():
    """Same declarations, same seeds: the same numbers as the committed record (which is therefore current)."""
    chosen = [w for w in load_whatifs() if w.name in ("sglang-v04-as-specified", "sglang-v04-budget-400000",
                                                      "kubeai-replication-20")]
    errors, targets = run_whatifs(chosen)
    record = pd.read_csv(RECORD / "whatifs.csv")
    record = record[record["whatif"].isin([w.name for w in chosen])].reset_index(drop=True)
    assert len(errors) == len(record) > 0
    np.testing.assert_allclose(errors["predicted"].to_numpy(float), record["predicted"].to_numpy(float), rtol=1e-9)
    # the change moves what it says it moves: a larger prefill budget lowers round robin's hit ratio
    hit = errors[(errors["router"] == "round-robin") & (errors["metric"] == "hit_ratio")].set_index("whatif")
    assert hit.loc["sglang-v04-budget-400000", "predicted"] < hit.loc["sglang-v04-as-specified", "predicted"]
    text = whatif_lines(chosen, errors, targets)
    assert "**`kubeai-replication-20`**" in text and "`routers.PrefixHash.params.replication` = `20`" in text


def test_cli_lists_and_runs_one_quick(capsys):
    assert main(["whatif", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(f"{w.name}: " in listed for w in load_whatifs())
    assert main(["whatif", "sglang-v04-budget-2048", "--quick"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("**`sglang-v04-budget-2048`**") and "| sglang-v04-cache-aware | round-robin |" in out


@pytest.mark.parametrize("argv, message", [
    (["whatif", "no-such-whatif"], "unknown what-if 'no-such-whatif'"),
    (["whatif", "--write", "--quick"], "--write keeps the full record"),
    (["whatif", "--jobs", "0"], "--jobs must be >= 1"),
    (["whatif", "--file", "/no/such/file.yaml"], "/no/such/file.yaml: no such what-if file"),
])
def test_cli_errors_are_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("smetric whatif: ") and message in err and err.count("\n") == 1, err
