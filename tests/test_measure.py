"""Each variant's declared params, FLOPs and file size are what the model measures, and
``registry measure`` names a declared number that is not."""

from __future__ import annotations

import json

import pytest

from conftest import garden_cli, make_distribution


def test_every_tiny_variant_declares_what_it_measures():
    """The tiny variants build in seconds; the full sizes are measured by `registry measure`
    (docs/registry.md) and checked the same way."""
    from garden import registry
    from garden.measure import measure

    problems, measured = [], 0
    for entry in registry.list_models():
        for variant in entry.variants:
            if variant.name == "tiny":
                m = measure(entry, variant)
                assert m.params > 0 and m.flops > 0 and m.file_size > 4 * m.params  # fp32 plus a header
                problems += m.disagreements(variant)
                measured += 1
    assert measured >= 10
    assert problems == []


def test_vit_base_counts_the_flops_of_a_224_pixel_image():
    """About 17.6 GMACs for ViT-B/16 at 224 (the paper's table); the counter counts a MAC as two."""
    from garden import registry
    from garden.measure import measure

    entry = registry.get("vit")
    m = measure(entry, entry.variant("base"))
    assert m.input == "pixel_values 1x3x224x224"
    assert 33e9 < m.flops < 36e9
    assert m.params == entry.variant("base").params and m.file_size == entry.variant("base").file_size


STALE = '''
import dataclasses

from garden_vit import plugin as vit
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"
[VIT] = vit.DECLARED.models()
TINY = dataclasses.replace(VIT.variant("tiny"), flops=1)


@hookimpl
def garden_models():
    return [dataclasses.replace(VIT, variants=(TINY,), default="tiny")]


@hookimpl
def garden_config_dir():
    return "pkg://garden_vit.conf"
'''


def test_a_stale_declaration_is_named_with_both_numbers(plugin_site):
    site, env = plugin_site
    make_distribution(site, "garden-vit-stale", "garden_vit_stale", STALE)
    env = {**env, "GARDEN_DISABLE_PLUGINS": "garden-vit"}
    result = garden_cli("registry", "measure", "vit", "--json", env=env)
    assert result.returncode == 1, result.output
    [row] = json.loads(result.stdout)
    assert (row["model"], row["variant"], row["task"]) == ("vit", "tiny", "classify")
    assert (f"error: vit/tiny flops: declared 1, measured {row['flops']}; rerun with --write and commit the "
            "plugin's measurements.json") in result.stderr
    assert "params" not in result.stderr  # the other numbers agree


UNMEASURED = '''
import dataclasses

from garden_vit import plugin as vit
from garden.declared import Declared
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"
DECLARED = Declared.beside(__file__)
UNKNOWN = {"params": None, "flops": None, "flops_input": None, "file_size": None}
[VIT] = vit.DECLARED.models()
TINY = dataclasses.replace(VIT.variant("tiny"), **{**UNKNOWN, **DECLARED.sizes("vit", "tiny")})


@hookimpl
def garden_models():
    return [dataclasses.replace(VIT, variants=(TINY,), default="tiny", results=())]


@hookimpl
def garden_config_dir():
    return "pkg://garden_vit.conf"
'''


def test_measure_write_stores_the_sizes_beside_the_plugin_which_then_declares_them(plugin_site):
    site, env = plugin_site
    make_distribution(site, "garden-vit-new", "garden_vit_new", UNMEASURED)
    env = {**env, "GARDEN_DISABLE_PLUGINS": "garden-vit"}
    before = garden_cli("registry", "measure", "vit", env=env)
    assert before.returncode == 1 and "vit/tiny params: declared None" in before.stderr, before.output
    written = garden_cli("registry", "measure", "vit", "--write", env=env)
    assert written.returncode == 0, written.output
    assert f"wrote {site / 'measurements.json'} (vit)" in written.stderr
    document = json.loads((site / "measurements.json").read_text())
    sizes = document["models"]["vit"]["variants"]["tiny"]
    assert sizes["params"] > 0 and sizes["flops_input"] == "pixel_values 1x3x32x32"
    assert {"torch", "transformers", "cpu", "commit"} <= set(document["models"]["vit"]["measured_with"])
    after = garden_cli("registry", "measure", "vit", "--json", env=env)
    assert after.returncode == 0, after.output
    assert json.loads(after.stdout)[0]["params"] == sizes["params"]


@pytest.mark.parametrize("action", ["build", "check"])
def test_only_measure_takes_model_names(action):
    result = garden_cli("registry", action, "vit")
    assert result.returncode != 0 and "registry measure" in result.stderr
