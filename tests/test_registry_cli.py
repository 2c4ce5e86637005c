"""Browsing the registry: list, show, search and registry.json, without torch (how fast: bench/startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, garden_cli


def test_list_and_show_never_import_torch():
    code = (
        "import sys, garden.cli as c; c.main(['list']); c.main(['show', 'vit']); c.main(['search', 'image']);"
        "bad = [m for m in ('torch', 'transformers', 'hydra') if m in sys.modules]; print('IMPORTED', bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "IMPORTED []" in out


def test_list_json_carries_vit_with_its_variants():
    models = json.loads(garden_cli("list", "--json").stdout)
    vit = next(m for m in models if m["name"] == "vit")
    assert vit["domain"] == "vision" and "classify" in vit["tasks"]
    assert {"tiny", "base"} <= {v["name"] for v in vit["variants"]}
    base = next(v for v in vit["variants"] if v["name"] == "base")
    assert base["hub_id"] == "google/vit-base-patch16-224" and base["revision"]
    assert vit["plugin"] == "garden-vit"


def test_list_filters_by_domain_and_task():
    assert "vit" in garden_cli("list", "--domain", "vision").stdout
    names = [m["name"] for m in json.loads(garden_cli("list", "--task", "classify", "--json").stdout)]
    assert "vit" in names
    assert json.loads(garden_cli("list", "--task", "no-such-task", "--json").stdout) == []


def test_show_prints_variants_layout_and_the_command_to_run():
    out = garden_cli("show", "vit").stdout
    assert "google/vit-base-patch16-224" in out
    assert "layers_per_ipu=[3, 3, 3, 3]" in out
    assert "python -m garden model=vit task=classify" in out


def test_show_of_an_unknown_model_suggests_close_names():
    result = garden_cli("show", "vti")
    assert result.returncode != 0
    assert "unknown model 'vti'" in result.stderr and "vit" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_registry_json_is_in_sync_with_the_plugins():
    result = garden_cli("registry", "check", "--path", str(ROOT / "registry.json"))
    assert result.returncode == 0, result.output


def test_registry_check_fails_on_a_stale_file(tmp_path):
    stale = tmp_path / "registry.json"
    stale.write_text(json.dumps({"schema_version": 1, "models": []}))
    result = garden_cli("registry", "check", "--path", str(stale))
    assert result.returncode == 1
    assert "stale" in result.stderr and "vit" in result.stderr


def test_registry_build_stops_at_a_plugin_that_fails_to_load(plugin_site, tmp_path):
    """Listing goes on without a broken plugin, but a registry.json written without it would drop
    its models silently: the build names it and writes nothing."""
    from conftest import make_distribution

    site, env = plugin_site
    make_distribution(site, "garden-broken", "garden_broken", "def garden_models(:\n")
    target = tmp_path / "registry.json"
    result = garden_cli("registry", "build", "--path", str(target), env=env)
    assert result.returncode != 0 and not target.exists()
    assert "error: registry build: plugin 'garden-broken' failed to load: SyntaxError" in result.stderr
    assert "GARDEN_DISABLE_PLUGINS=garden-broken" in result.stderr
    blocked = garden_cli("registry", "build", "--path", str(target), env={**env, "GARDEN_DISABLE_PLUGINS": "garden-broken"})
    assert blocked.returncode == 0 and target.exists(), blocked.output


TOY_ON_THE_HUB = '''
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl
GARDEN_API_VERSION = "1.0"

@hookimpl
def garden_models():
    return [ModelEntry(name="toy", family="toy", domain="vision", description="a toy model",
                       tasks=("classify",), builder="nowhere:Toy",
                       variants=(Variant("tiny", params=10), Variant("base", hub_id="org/toy", {pin})))]
'''


@pytest.mark.parametrize("pin, problem", [
    ('revision="3f49326"', "pins org/toy to '3f49326', not a full 40-character commit hash"),
    ("", "names org/toy without a pinned revision"),
], ids=["short", "missing"])
def test_registry_build_and_check_refuse_a_variant_not_pinned_to_a_full_commit(plugin_site, tmp_path, pin, problem):
    """A Hub variant without a full commit would read other files next month, or none: its
    command would not run. build writes nothing and check fails, each in one line naming the
    model, the variant, the pin and the plugin to fix."""
    from conftest import make_distribution

    site, env = plugin_site
    make_distribution(site, "garden-toy", "garden_toy", TOY_ON_THE_HUB.format(pin=pin))
    target = tmp_path / "registry.json"
    built = garden_cli("registry", "build", "--path", str(target), env=env)
    assert built.returncode != 0 and not target.exists()
    assert built.stderr.strip().splitlines() == [
        f"error: registry build: model 'toy' variant 'base' {problem}; write the full commit hash (the repo's "
        "History page on the Hub) as its Variant(revision=...) in plugin garden-toy"
    ]
    checked = garden_cli("registry", "check", "--path", str(ROOT / "registry.json"), env=env)
    assert checked.returncode == 1
    assert [line for line in checked.stderr.splitlines() if line.startswith("error:")] == [
        f"error: model 'toy' variant 'base' {problem}; write the full commit hash (the repo's "
        "History page on the Hub) as its Variant(revision=...) in plugin garden-toy"
    ]


def test_the_schema_wants_a_full_commit_beside_every_hub_id_and_names_the_variant():
    """registry.json itself, hand-edited or written by an older garden, is held to the same rule."""
    from garden.schema import validate_registry

    document = json.loads((ROOT / "registry.json").read_text())
    vit = next(i for i, m in enumerate(document["models"]) if m["name"] == "vit")
    base = next(j for j, v in enumerate(document["models"][vit]["variants"]) if v["name"] == "base")
    where = f"models[{vit}].variants[{base}].revision (vit, variant base)"
    document["models"][vit]["variants"][base]["revision"] = "3f49326"
    assert validate_registry(document) == [f"{where}: '3f49326' does not match '^[0-9a-f]{{40}}$'"]
    document["models"][vit]["variants"][base]["revision"] = None
    assert validate_registry(document) == [f"{where}: None is not of type 'string'"]


def test_the_readmes_models_table_is_generated_from_the_registry():
    import importlib.util

    script = ROOT / "tools" / "models_table.py"
    checked = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    spec = importlib.util.spec_from_file_location("models_table", script)
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    document = json.loads((ROOT / "registry.json").read_text())
    document["models"].append({"name": "convnext", "domain": "vision", "plugin": "garden-convnext", "tasks": ["classify"]})
    assert "convnext (`garden-convnext`)" in table.render(document)  # a new plugin's model reaches the README
