"""Browsing in the terminal: every ``list`` filter, ``search``, ``show``, a broken plugin, the schema
that ``registry check`` enforces, and ``registry serve``.

The models come from hand-made plugin distributions (``GARDEN_PLUGINS`` keeps the real ones out),
so the expectations stay put while real plugins come and go.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
import urllib.request

import pytest

from conftest import ROOT, garden_cli, make_distribution
from garden.schema import validate_registry
from garden.serve import make_server

TOYS = '''
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl
GARDEN_API_VERSION = "1.0"

def toy(name, domain, tasks, params, description, pretrained=True, layouts=None):
    weights = dict(hub_id=f"org/{name}", revision="0123abcdef" * 4) if pretrained else {}
    return ModelEntry(name=name, family=name.split("-")[0], domain=domain, description=description,
                      tasks=tasks, builder="nowhere:Toy", layouts=layouts or {}, license="mit",
                      variants=(Variant("tiny", params=1000), Variant("base", params=params, **weights)),
                      default="base")

@hookimpl
def garden_models():
    return [
        toy("bert", "nlp", ("mlm", "qa"), 110_000_000, "Bidirectional encoder", layouts={4: (0, 4, 4, 4)}),
        toy("bert-large", "nlp", ("qa",), 335_000_000, "Bidirectional encoder, 24 layers"),
        toy("roberta", "nlp", ("mlm", "qa"), 125_000_000, "A robustly optimised pretraining recipe"),
        toy("hubert", "speech", ("asr",), 95_000_000, "Speech units by masked prediction", pretrained=False),
    ]
'''

GRAPHS = '''
from garden.entries import ModelEntry, TaskEntry, Variant
from garden.hookspecs import hookimpl
GARDEN_API_VERSION = "1.0"

@hookimpl
def garden_models():
    return [ModelEntry(name="cluster_gcn", family="gcn", domain="gnn", description="Graph convolutions on clusters",
                       tasks=("node-classify",), builder="nowhere:Gcn", variants=(Variant("base", params=400_000),))]

@hookimpl
def garden_tasks():
    return [TaskEntry("node-classify", "gnn", "nowhere:NodeClassification", "one class per node")]
'''

ALL = ["bert", "bert-large", "cluster_gcn", "hubert", "roberta"]


@pytest.fixture
def toys(plugin_site):
    """The env of a garden whose only plugins are garden-toys and garden-graphs."""
    site, env = plugin_site
    make_distribution(site, "garden-toys", "garden_toys", TOYS)
    make_distribution(site, "garden-graphs", "garden_graphs", GRAPHS, version="2.0")
    return {**env, "GARDEN_PLUGINS": "garden-toys,garden-graphs"}


def listed(*args: str, env: dict) -> list[str]:
    result = garden_cli("list", *args, "--json", env=env)
    assert result.returncode == 0, result.output
    return [m["name"] for m in json.loads(result.stdout)]


@pytest.mark.parametrize("args, expected", [
    ([], ALL),
    (["bert*"], ["bert", "bert-large"]),                              # a wildcard
    (["bert", "hub*"], ["bert", "hubert"]),                           # any of several patterns
    (["bert*", "--exclude", "*-large"], ["bert"]),                    # an exclusion
    (["--exclude", "bert*", "--exclude", "*gcn"], ["hubert", "roberta"]),
    (["--task", "qa"], ["bert", "bert-large", "roberta"]),
    (["--domain", "speech"], ["hubert"]),
    (["--plugin", "garden-graphs"], ["cluster_gcn"]),                 # by distribution
    (["--plugin", "roberta"], ["roberta"]),                           # or by family
    (["--max-params", "120M"], ["bert", "cluster_gcn", "hubert"]),
    (["--min-params", "0.2B"], ["bert-large"]),
    (["--pretrained"], ["bert", "bert-large", "roberta"]),
    (["--sort", "params"], ["cluster_gcn", "hubert", "bert", "roberta", "bert-large"]),
    (["--sort=-params"], ["bert-large", "roberta", "bert", "hubert", "cluster_gcn"]),
    (["--sort", "domain"], ["cluster_gcn", "bert", "bert-large", "roberta", "hubert"]),
    (["bert*", "--task", "qa", "--domain", "nlp", "--max-params", "400M", "--sort", "params"],
     ["bert", "bert-large"]),                                         # the README's example, all at once
])
def test_list_keeps_exactly_the_models_each_filter_asks_for(toys, args, expected):
    assert listed(*args, env=toys) == expected


def test_list_prints_a_table_of_names_domains_tasks_and_sizes(toys):
    out = garden_cli("list", "--domain", "nlp", env=toys).stdout
    assert "3 models" in out
    assert "bert-large" in out and "335.0M" in out and "garden-toys" in out
    assert "hubert" not in out


def test_list_json_records_are_the_registry_records(toys):
    bert = json.loads(garden_cli("list", "bert", "--json", env=toys).stdout)[0]
    assert bert["plugin"] == "garden-toys" and bert["plugin_version"] == "1.0"
    assert bert["commands"] == {"mlm": "python -m garden model=bert task=mlm", "qa": "python -m garden model=bert task=qa"}
    assert validate_registry({"schema_version": 1, "models": [bert]}) == []


@pytest.mark.parametrize("args, message", [
    (["--sort", "size"], "cannot sort by 'size'; use one of name, params, domain, family"),
    (["--max-params", "lots"], "cannot read 'lots' as a count; write e.g. 400M or 1.2B"),
])
def test_list_refuses_a_bad_option_in_one_line(toys, args, message):
    result = garden_cli("list", *args, env=toys)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {message}"


@pytest.mark.parametrize("text, expected", [
    ("hubert", ["hubert"]),                    # a name
    ("robustly", ["roberta"]),                 # a description
    ("asr", ["hubert"]),                       # a task
    ("encoder 24", ["bert-large"]),            # every word, anywhere
    ("ENCODER", ["bert", "bert-large"]),       # in any case
    ("transformer", []),
])
def test_search_matches_names_descriptions_and_tasks(toys, text, expected):
    result = garden_cli("search", *text.split(), "--json", env=toys)
    assert [m["name"] for m in json.loads(result.stdout)] == expected


def test_search_prints_a_table_titled_with_the_query(toys):
    out = garden_cli("search", "masked", env=toys).stdout
    assert "1 models match 'masked'" in out and "hubert" in out


def test_show_prints_variants_stage_plan_and_a_command_per_task(toys):
    out = garden_cli("show", "bert", env=toys).stdout
    assert "bert · nlp · family bert · plugin garden-toys 1.0" in out
    assert "org/bert" in out and "0123abc" in out and "base (default)" in out and "110.0M" in out
    assert "license: mit" in out
    assert "published layout on 4 IPUs: layers_per_ipu=[0, 4, 4, 4]" in out
    assert ("IPU 0: embeddings + tied head (mlm) | IPU 1: layers 0-3 | IPU 2: layers 4-7 | "
            "IPU 3: layers 8-11 + head (qa)") in out  # the mlm head is tied: planned beside the embeddings
    assert "mlm: python -m garden model=bert task=mlm" in out
    assert "qa: python -m garden model=bert task=qa" in out


def test_show_says_when_a_model_has_no_published_layout(toys):
    out = garden_cli("show", "hubert", env=toys).stdout
    assert "no published layout: ipu.layers_per_ipu=[-1] plans one at run time" in out


def test_show_json_is_the_registry_record(toys):
    record = json.loads(garden_cli("show", "cluster_gcn", "--json", env=toys).stdout)
    assert record["plugin"] == "garden-graphs" and record["plugin_version"] == "2.0"
    assert record["commands"] == {"node-classify": "python -m garden model=cluster_gcn task=node-classify"}


def test_a_broken_plugin_is_reported_and_browsing_goes_on(toys, plugin_site):
    site, _ = plugin_site
    make_distribution(site, "garden-broken", "garden_broken", "raise RuntimeError('weights server down')\n")
    env = {**toys, "GARDEN_PLUGINS": toys["GARDEN_PLUGINS"] + ",garden-broken"}
    for args in (["list", "--json"], ["search", "encoder", "--json"], ["show", "bert"]):
        result = garden_cli(*args, env=env)
        assert result.returncode == 0, result.output
        assert result.stderr.count("warning:") == 1
        assert "garden-broken" in result.stderr and "weights server down" in result.stderr
    assert listed(env=env) == ALL


def test_the_registry_json_in_the_repository_follows_the_schema():
    assert validate_registry(json.loads((ROOT / "registry.json").read_text())) == []


def test_a_freshly_built_registry_passes_check(toys, tmp_path):
    path = tmp_path / "registry.json"
    assert garden_cli("registry", "build", "--path", str(path), env=toys).returncode == 0
    assert validate_registry(json.loads(path.read_text())) == []
    result = garden_cli("registry", "check", "--path", str(path), env=toys)
    assert result.returncode == 0, result.output


def broken_copy(document: dict, change) -> dict:
    broken = copy.deepcopy(document)
    change(broken["models"][0])
    return broken


@pytest.mark.parametrize("change, field, complaint", [
    (lambda m: m["variants"][1].update(params="many"), "models[0].variants[1].params (bert, variant base)",
     "'many' is not of type 'integer', 'null'"),
    (lambda m: m.pop("license"), "models[0] (bert)", "'license' is a required property"),
    (lambda m: m.update(licence="mit"), "models[0] (bert)", "'licence' was unexpected"),
    (lambda m: m.update(domain="Audio!"), "models[0].domain (bert)", "'Audio!' does not match"),
    # domains are open, but a model's tasks must be registered for its domain
    (lambda m: m.update(domain="audio"), "models[0].tasks[0] (bert)", "'mlm' is no registered task of domain 'audio'"),
    (lambda m: m["variants"][1].update(revision="main"), "models[0].variants[1].revision (bert, variant base)",
     "'main' does not match"),
    (lambda m: m["layouts"].update({"4": [4, 4, 4]}), 'models[0].layouts["4"] (bert)',
     "[4, 4, 4] has 3 entries for 4 IPUs; give one per IPU"),
    (lambda m: m.update(default="huge"), "models[0].default (bert)", "'huge' is not a variant; variants are tiny, base"),
    (lambda m: m["commands"].pop("qa"), "models[0].commands (bert)", "differ from tasks"),
    (lambda m: m["results"].append({"task": "qa", "dataset": "SQuAD", "metrics": {}}),
     "models[0].results[0].metrics (bert)", "should be non-empty"),
    (lambda m: m["results"].append({"task": "qa", "dataset": "SQuAD", "metrics": {"f1": 0.9}, "baseline": {
        "name": "majority", "metric": "accuracy", "value": 0.5, "perfect": 1.0, "margin": 0.25}}),
     "models[0].results[0].baseline.metric (bert)", "'accuracy' is not one of the result's metrics (f1)"),
])
def test_registry_check_names_the_field_that_breaks_the_schema(toys, tmp_path, change, field, complaint):
    built = tmp_path / "built.json"
    garden_cli("registry", "build", "--path", str(built), env=toys)
    path = tmp_path / "registry.json"
    path.write_text(json.dumps(broken_copy(json.loads(built.read_text()), change)))
    result = garden_cli("registry", "check", "--path", str(path), env=toys)
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: {path}: {field}: ") and complaint in first, result.stderr
    assert "does not follow garden/registry.schema.json" in result.stderr


def test_the_server_answers_with_the_registry_file_as_it_is_now(tmp_path):
    path = tmp_path / "registry.json"
    path.write_text('{"schema_version": 1, "models": []}')
    server = make_server(path, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert json.load(urllib.request.urlopen(url + "registry.json"))["models"] == []
        path.write_text('{"schema_version": 1, "models": [{"name": "new"}]}')
        assert json.load(urllib.request.urlopen(url + "registry.json"))["models"] == [{"name": "new"}]
        assert b"<title>garden" in urllib.request.urlopen(url).read()
    finally:
        server.shutdown()
        server.server_close()


def test_registry_serve_prints_its_address_and_serves_the_page(tmp_path):
    path = tmp_path / "registry.json"
    path.write_text('{"schema_version": 1, "models": []}')
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "garden", "registry", "serve", "--port", "0", "--path", str(path)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"serving the registry page for {path} at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        assert b"app.js" in urllib.request.urlopen(url, timeout=10).read()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_registry_serve_without_a_registry_file_says_how_to_make_one(tmp_path):
    result = garden_cli("registry", "serve", "--path", str(tmp_path / "missing.json"))
    assert result.returncode == 2
    assert "missing.json does not exist; run: python -m garden registry build" in result.stderr
