"""Plugin discovery: broken plugins are set aside with one warning; strict mode makes it an error."""

from __future__ import annotations

import json

from conftest import garden_cli, make_distribution

GOOD = '''
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl
GARDEN_API_VERSION = "1.0"

@hookimpl
def garden_models():
    return [ModelEntry(name="{name}", family="toy", domain="vision", description="a toy model",
                       tasks=("classify",), builder="nowhere:Toy", variants=(Variant("tiny", params=10),))]
'''


def names(result) -> list[str]:
    return [m["name"] for m in json.loads(result.stdout)]


def test_a_plugin_that_fails_to_import_is_reported_once_and_the_rest_still_list(plugin_site):
    site, env = plugin_site
    make_distribution(site, "garden-broken", "garden_broken", "import not_a_module_anywhere\n")
    result = garden_cli("list", "--json", env=env)
    assert result.returncode == 0
    assert "vit" in names(result)
    warnings = [ln for ln in result.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1
    assert "garden-broken" in warnings[0] and "ModuleNotFoundError" in warnings[0]


def test_a_plugin_whose_hook_raises_does_not_break_the_others(plugin_site):
    site, env = plugin_site
    make_distribution(site, "garden-raises", "garden_raises", '''
        from garden.hookspecs import hookimpl
        GARDEN_API_VERSION = "1.0"
        @hookimpl
        def garden_models():
            raise RuntimeError("database of models is down")
    ''')
    make_distribution(site, "garden-toy", "garden_toy", GOOD.format(name="toy"))
    result = garden_cli("list", "--json", env=env)
    assert {"vit", "toy"} <= set(names(result))
    assert "garden-raises" in result.stderr and "database of models is down" in result.stderr


def test_strict_mode_turns_a_broken_plugin_into_an_error(plugin_site):
    site, env = plugin_site
    make_distribution(site, "garden-broken", "garden_broken", "raise ImportError('no poplar here')\n")
    result = garden_cli("list", env={**env, "GARDEN_STRICT_PLUGINS": "1"})
    assert result.returncode == 2
    assert "garden-broken" in result.stderr and "no poplar here" in result.stderr


def test_two_plugins_claiming_one_model_name_are_named_together(plugin_site):
    site, env = plugin_site
    make_distribution(site, "garden-imposter", "garden_imposter", GOOD.format(name="vit"))
    result = garden_cli("list", "--json", env=env)
    assert result.returncode == 0 and "vit" in names(result)
    assert "'vit' is registered by both 'garden-imposter' and 'garden-vit'" in result.stderr or \
        "'vit' is registered by both 'garden-vit' and 'garden-imposter'" in result.stderr
    strict = garden_cli("list", env={**env, "GARDEN_STRICT_PLUGINS": "1"})
    assert strict.returncode == 2 and "registered by both" in strict.stderr


def test_a_plugin_for_another_api_version_is_refused_naming_both_versions(plugin_site):
    site, env = plugin_site
    make_distribution(site, "garden-future", "garden_future",
                      GOOD.format(name="future").replace('"1.0"', '"2.0"'))
    result = garden_cli("list", "--json", env=env)
    assert "future" not in names(result)
    assert "garden-future" in result.stderr and "2.0" in result.stderr and "1.0" in result.stderr


def test_disabled_plugins_vanish_and_only_lists_restrict(plugin_site):
    site, env = plugin_site
    make_distribution(site, "garden-toy", "garden_toy", GOOD.format(name="toy"))
    assert "toy" not in names(garden_cli("list", "--json", env={**env, "GARDEN_DISABLE_PLUGINS": "garden-toy"}))
    assert names(garden_cli("list", "--json", env={**env, "GARDEN_PLUGINS": "garden-toy"})) == ["toy"]
