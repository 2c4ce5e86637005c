"""Declared results mean something and reproduce.

Each plugin's ``results.json`` (``python bench/results.py --write``) declares its recipe's
held-out metrics, the command that produced them, where they were measured and a baseline: what
a predictor that ignores the inputs scores on the same split. Here every declared result must
beat its baseline by its declared margin; every declared baseline must be what the task computes
today; and a rerun of a recipe's command must give its declared metrics to 4 decimals.

The reruns are each plugin's to choose (``garden.testing.rerun_declared_result`` in its own
tests: garden's plugins rerun the recipes that train in under half a minute of CPU on one thread);
``python bench/results.py`` reruns all of them (the speech ones take several CPU minutes each).
"""

from __future__ import annotations

import json
import shlex

import pytest


def declared() -> list[tuple[str, dict]]:
    from garden import registry

    return [(e.name, r) for e in registry.list_models() for r in e.results]


def ids(pairs: list[tuple[str, dict]]) -> list[str]:
    return [f"{model}-{result['task']}" for model, result in pairs]


DECLARED = declared()


def gap_closed(result: dict) -> float:
    against = result["baseline"]
    return (result["metrics"][against["metric"]] - against["value"]) / (against["perfect"] - against["value"])


#: models whose recipe (changed so that it learns) was not yet rerun by ``bench/results.py --write``;
#: each must leave this set with its results.json
AWAITING_RESULTS: set[str] = set()


def test_every_registered_model_declares_a_result_with_a_baseline_and_its_command():
    from garden import registry

    by_model = {model: result for model, result in DECLARED}
    assert sorted(by_model) == sorted(e.name for e in registry.list_models() if e.name not in AWAITING_RESULTS)
    assert not AWAITING_RESULTS & set(by_model), "declared now: remove it from AWAITING_RESULTS"
    for model, result in DECLARED:
        assert result["command"].startswith(f"python -m garden model={model} task={result['task']} ")
        assert "trainer.threads=1" in result["command"] and result["baseline"]["metric"] in result["metrics"]
        assert {"cpu", "isa", "torch", "transformers", "garden", "commit"} <= set(result["measured_with"])


def test_a_declared_result_names_the_vector_instructions_it_was_measured_with(monkeypatch, tmp_path):
    """Two CPUs both called "AMD EPYC" (an AVX2-only one and one with AVX-512) train the same recipe
    to losses 0.013 apart: a rerun on the other instruction set skips, naming it, and never fails."""
    from garden import declared
    from garden.testing import rerun_declared_result

    for flags, isa in (("fpu sse2 avx2 fma", "avx2"), ("avx2 avx512f avx512_bf16", "avx512"),
                       ("avx512f amx_tile amx_bf16", "amx"), ("sse2", "other")):
        assert declared.vector_isa(frozenset(flags.split())) == isa
    monkeypatch.setattr(declared, "vector_isa", lambda: "avx512")
    model, result = next((m, r) for m, r in DECLARED if r["measured_with"]["isa"] == "avx2")
    with pytest.raises(pytest.skip.Exception, match=r"isa 'avx512' here, 'avx2' declared"):
        rerun_declared_result(model, result["task"], tmp_path)


@pytest.mark.parametrize("model, result", DECLARED, ids=ids(DECLARED))
def test_a_declared_result_beats_its_baseline_by_its_margin(model, result):
    against = result["baseline"]
    assert gap_closed(result) >= against["margin"] > 0, (
        f"{model}/{result['task']}: {against['metric']} {result['metrics'][against['metric']]} against "
        f"{against['name']} {against['value']} closes {gap_closed(result):.0%} of the gap to {against['perfect']}, "
        f"less than the margin {against['margin']:.0%}")


def test_the_margin_check_fails_a_result_at_its_baseline():
    """The check above is a real one: a result no better than its baseline, in either direction, fails it."""
    accuracy = {"metric": "accuracy", "value": 0.5, "perfect": 1.0, "margin": 0.25}
    wer = {"metric": "wer", "value": 0.95, "perfect": 0.0, "margin": 0.25}
    assert gap_closed({"metrics": {"accuracy": 0.51}, "baseline": accuracy}) < 0.25
    assert gap_closed({"metrics": {"wer": 1.0}, "baseline": wer}) < 0
    assert gap_closed({"metrics": {"wer": 0.5}, "baseline": wer}) >= 0.25


@pytest.mark.parametrize("model, result", DECLARED, ids=ids(DECLARED))
def test_a_declared_baseline_is_what_the_task_computes_on_its_data(model, result):
    import garden
    from garden.runs import prepare

    overrides = shlex.split(result["command"])[3:]
    prepared = prepare(garden.compose(overrides))
    found = prepared.task.baseline(prepared.data)
    assert {k: found[k] for k in ("name", "metric", "perfect")} == {k: result["baseline"][k] for k in
                                                                     ("name", "metric", "perfect")}
    assert found["value"] == pytest.approx(result["baseline"]["value"], abs=1e-4)


def test_a_plugin_folder_without_declared_files_declares_nothing(tmp_path):
    from garden.declared import Declared

    declared = Declared.beside(tmp_path / "plugin.py")
    assert declared.results("bert") == () and declared.sizes("bert", "tiny") == {}


def test_writing_one_models_declarations_keeps_the_other_models(tmp_path):
    from garden.declared import Declared, write_results, write_sizes

    write_results(tmp_path, "tgn", [{"task": "link-predict", "metrics": {"loss": 0.5}}])
    write_results(tmp_path, "schnet", [{"task": "graph-regress", "metrics": {"mae": 1.0}}])
    write_sizes(tmp_path, "tgn", {"tiny": {"params": 5, "flops": 7, "flops_input": "src 1", "file_size": 64}})
    declared = Declared.beside(tmp_path / "plugin.py")
    assert [r["task"] for r in declared.results("tgn") + declared.results("schnet")] == ["link-predict", "graph-regress"]
    assert declared.sizes("tgn", "tiny") == {"params": 5, "flops": 7, "flops_input": "src 1", "file_size": 64}
    assert declared.sizes("tgn", "base") == {} and declared.sizes("schnet", "tiny") == {}


def test_a_broken_declared_file_names_itself_and_the_command_that_rewrites_it(tmp_path):
    from garden.declared import Declared
    from garden.errors import PluginError

    (tmp_path / "measurements.json").write_text("{")
    with pytest.raises(PluginError) as err:
        Declared.beside(tmp_path / "plugin.py")
    assert str(err.value) == (f"{tmp_path / 'measurements.json'} is not JSON (Expecting property name enclosed in "
                              "double quotes, line 1); regenerate it with python -m garden registry measure --write")


def test_models_yaml_declares_entries_with_their_measured_sizes_and_results(tmp_path):
    from garden.declared import Declared

    (tmp_path / "models.yaml").write_text(
        "models:\n- name: toy\n  family: toy\n  domain: tabular\n  description: a toy\n  tasks: [classify]\n"
        "  builder: toy:Toy\n  layouts:\n    2: [1, 1]\n  variants:\n  - name: tiny\n    config: {width: 4}\n")
    (tmp_path / "measurements.json").write_text(json.dumps(
        {"models": {"toy": {"variants": {"tiny": {"params": 9, "flops": 18, "flops_input": "1 row", "file_size": 36}}}}}))
    (tmp_path / "results.json").write_text(json.dumps({"models": {"toy": [{"task": "classify", "metrics": {"a": 1}}]}}))
    [entry] = Declared.beside(tmp_path / "plugin.py").models()
    assert (entry.name, entry.tasks, entry.layouts, entry.results[0]["metrics"]) == ("toy", ("classify",), {2: (1, 1)}, {"a": 1})
    assert (entry.variant("tiny").params, dict(entry.variant("tiny").config)) == (9, {"width": 4})


@pytest.mark.parametrize("text, says", [
    ("models:\n- name: toy\n  colour: red\n", "models.yaml: model 'toy': "),
    ("models:\n- name: [toy\n", "models.yaml is not valid YAML"),
    ("name: toy\n", "holds no \"models:\" list"),
])
def test_a_wrong_models_yaml_names_the_file_and_the_problem(tmp_path, text, says):
    from garden.declared import Declared
    from garden.errors import PluginError

    (tmp_path / "models.yaml").write_text(text)
    with pytest.raises(PluginError, match="models.yaml") as refused:
        Declared.beside(tmp_path / "plugin.py").models()
    assert says in str(refused.value) and "\n" not in str(refused.value)
