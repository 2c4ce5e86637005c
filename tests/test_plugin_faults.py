"""Faulty plugins, installed for real (a ``.dist-info`` on the path), side by side with good ones:
each fault is one line naming its distribution, the rest keep working, ``plugins --json`` shows
what happened to each, strict mode makes each an error, and ``plugin check`` names the fault.

(tests/test_plugins.py covers each load fault on its own; this module puts them together and
adds the unknown hook, the ``plugins`` and ``plugin check`` commands, and the contract's checks
on plugins that load but break it.)
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import garden_cli, make_distribution

GOOD = '''
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl
GARDEN_API_VERSION = "{api}"

@hookimpl
def garden_models():
    return [ModelEntry(name="{name}", family="toy", domain="vision", description="a toy model",
                       tasks=("classify",), builder="nowhere:Toy", variants=(Variant("tiny", params=10),))]
'''

#: distribution -> (module source, what its one warning line must say)
FAULTS = {
    "garden-broken": ("import not_a_module_anywhere\n", "ModuleNotFoundError"),
    "garden-raises": ('''
        from garden.hookspecs import hookimpl
        GARDEN_API_VERSION = "1.0"
        @hookimpl
        def garden_models():
            raise RuntimeError("database of models is down")
    ''', "database of models is down"),
    "garden-future": (GOOD.format(api="2.0", name="future"), "written for garden plugin API 2.0, this garden speaks 1.0"),
    "garden-toy-copy": (GOOD.format(api="1.0", name="toy"), "'toy' is registered by both 'garden-toy' and 'garden-toy-copy'"),
    "garden-typo": ('''
        from garden.hookspecs import hookimpl
        GARDEN_API_VERSION = "1.0"
        @hookimpl
        def garden_modles():
            return []
    ''', "unknown hook 'garden_modles'"),
}

#: two ViT-based models whose stage layouts break the contract in different ways
FLAWED = '''
from pathlib import Path

from garden.entries import ModelEntry, Variant
from garden.hookspecs import Block, hookimpl
from garden_vit.family import ViT
from garden_vit.plugin import DECLARED

GARDEN_API_VERSION = "1.0"
TINY = DECLARED.models()[0].variant("tiny").config


def entry(name, builder, about):
    return ModelEntry(name=name, family="vit", domain="vision", description=about, tasks=("classify",),
                      builder=f"garden_flawed:{builder}", variants=(Variant("tiny", config=TINY, params=1),))


@hookimpl
def garden_models():
    return [entry("leaky", "Leaky", "ViT whose stage layout forgets the final norm"),
            entry("skippy", "Skippy", "ViT whose head block skips the final norm it owns")]


@hookimpl
def garden_config_dir():
    return "file://" + str(Path(__file__).parent / "flawed_conf")


class Leaky(ViT):
    def stage_blocks(self, model, task):
        *blocks, head = super().stage_blocks(model, task)
        return [*blocks, Block("head", "head", ("classifier",), head.run)]


class Skippy(ViT):
    def stage_blocks(self, model, task):
        *blocks, head = super().stage_blocks(model, task)
        return [*blocks, Block("head", "head", head.modules, lambda m, h: (m.classifier(h[:, 0, :]),))]
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """One site holding every faulty distribution, a good one, and the flawed-contract one."""
    site = tmp_path_factory.mktemp("faults")
    for dist, (source, _) in FAULTS.items():
        make_distribution(site, dist, dist.replace("-", "_"), source)
    make_distribution(site, "garden-toy", "garden_toy", GOOD.format(api="1.0", name="toy"))
    make_distribution(site, "garden-flawed", "garden_flawed", FLAWED)
    for model in ("leaky", "skippy"):
        (site / "flawed_conf" / "model").mkdir(parents=True, exist_ok=True)
        (site / "flawed_conf" / "model" / f"{model}.yaml").write_text(f"name: {model}\nvariant: tiny\n")
    return site


@pytest.fixture
def env(site):
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_each_faulty_plugin_is_one_warning_line_naming_it_and_the_others_keep_working(env):
    result = garden_cli("list", "--json", env=env)
    assert result.returncode == 0, result.output
    assert {"vit", "toy", "leaky", "skippy"} <= {m["name"] for m in json.loads(result.stdout)}
    warnings = [ln for ln in result.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == len(FAULTS), warnings
    for dist, (_, says) in FAULTS.items():
        (line,) = [w for w in warnings if f"'{dist}'" in w]
        assert says in line, line


def test_plugins_json_shows_each_plugin_with_its_status_and_error(env):
    result = garden_cli("plugins", "--json", env={**env, "GARDEN_DISABLE_PLUGINS": "garden-flawed"})
    assert result.returncode == 0, result.output
    plugins = {p["distribution"]: p for p in json.loads(result.stdout)}
    for dist, (_, says) in FAULTS.items():
        assert plugins[dist]["status"] == "failed" and says in plugins[dist]["error"], plugins[dist]
        assert plugins[dist]["models"] == [] and plugins[dist]["hooks"] == []
    assert plugins["garden-future"]["api_version"] == "2.0"
    toy = plugins["garden-toy"]
    assert (toy["status"], toy["version"], toy["api_version"], toy["models"], toy["hooks"], toy["error"]) == \
        ("loaded", "1.0", "1.0", ["toy"], ["garden_models"], None)
    assert plugins["garden-flawed"]["status"] == "blocked"
    assert plugins["garden-vit"]["status"] == "loaded" and plugins["garden-vit"]["models"] == ["vit"]


def test_the_plugins_table_names_each_status(env):
    result = garden_cli("plugins", env=env)
    assert result.returncode == 0, result.output
    assert "garden-typo" in result.stdout and "failed" in result.stdout and "loaded" in result.stdout


@pytest.mark.parametrize("dist", ["garden-raises", "garden-future", "garden-typo"])
def test_strict_mode_turns_each_fault_into_an_error_naming_the_distribution(env, dist):
    result = garden_cli("list", env={**env, "GARDEN_PLUGINS": dist, "GARDEN_STRICT_PLUGINS": "1"})
    assert result.returncode == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert f"'{dist}'" in line and FAULTS[dist][1] in line and "GARDEN_STRICT_PLUGINS=1" in line


@pytest.mark.parametrize("dist", ["garden-broken", "garden-typo"])
def test_plugin_check_of_a_plugin_that_failed_to_load_exits_non_zero_naming_why(env, dist):
    result = garden_cli("plugin", "check", dist, env=env)
    assert result.returncode == 1
    assert result.stdout.startswith(f"✗ {dist} 1.0 loads: ") and FAULTS[dist][1] in result.stdout
    assert f"error: plugin check {dist}: {dist} 1.0 loads: " in result.stderr


def test_plugin_check_of_a_blocked_plugin_says_what_blocks_it(env):
    result = garden_cli("plugin", "check", "garden-toy", env={**env, "GARDEN_DISABLE_PLUGINS": "garden-toy"})
    assert result.returncode == 1 and "blocked by GARDEN_PLUGINS / GARDEN_DISABLE_PLUGINS" in result.stdout


def test_plugin_check_of_an_unknown_name_lists_what_is_installed(env):
    result = garden_cli("plugin", "check", "garden-nowhere", env=env)
    assert result.returncode == 2
    assert "no installed plugin or model is called 'garden-nowhere'" in result.stderr and "garden-vit" in result.stderr


def test_plugin_check_names_the_broken_points_of_a_plugin_that_loads(env):
    result = garden_cli("plugin", "check", "garden-flawed", env={**env, "GARDEN_PLUGINS": "garden-flawed"})
    assert result.returncode == 1, result.output
    lines = result.stdout.splitlines()

    def line(prefix: str) -> str:
        (found,) = [ln for ln in lines if ln[2:].startswith(prefix)]
        return found

    assert line("leaky/classify: stage blocks hold every parameter").startswith("✗")
    assert "vit.layernorm.weight" in line("leaky/classify: stage blocks hold every parameter")
    for skipped in ("stage blocks in order compute", "a 2-stage plan"):  # both need the coverage
        assert line(f"leaky/classify: {skipped}").startswith("- ")
    assert line("leaky/classify: a batch goes forward and backward").startswith("✓")
    assert line("skippy/classify: stage blocks hold every parameter").startswith("✓")
    assert "outputs differ" in line("skippy/classify: stage blocks in order compute the model's forward")
    assert line("skippy/classify: a 2-stage plan").startswith("✗")
    assert lines[-1] == "12 passed, 3 failed, 2 skipped"
    assert "error: plugin check garden-flawed: leaky/classify: stage blocks hold" in result.stderr


def test_plugin_check_names_a_hub_variant_not_pinned_to_a_full_commit(plugin_site):
    """What registry build would refuse, the author hears from plugin check first."""
    site, env = plugin_site
    make_distribution(site, "garden-toy", "garden_toy", GOOD.format(api="1.0", name="toy").replace(
        'Variant("tiny", params=10),', 'Variant("tiny", params=10), Variant("base", hub_id="org/toy", revision="main"),'))
    result = garden_cli("plugin", "check", "garden-toy", env={**env, "GARDEN_PLUGINS": "garden-toy"})
    assert result.returncode == 1
    assert "✗ toy: entry follows the registry schema: PluginError: model 'toy' variant 'base' pins org/toy to 'main', not a " \
           "full 40-character commit hash; write the full commit hash" in result.stdout
