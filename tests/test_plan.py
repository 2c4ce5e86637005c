"""`python -m garden plan`: every registered model plans, and every published Graphcore layout
validates against the model's real block list."""

from __future__ import annotations

import json

import pytest

from conftest import garden_cli


def entries():
    from garden.registry import entries as registered

    return sorted(registered().values(), key=lambda e: e.name)


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.name)
def test_every_model_plans_and_its_published_layouts_validate(entry):
    from garden.cli.plan import plan_run

    base = [f"model={entry.name}", "ipu.cost=params"]
    _, automatic = plan_run([*base, "ipu.ipus_per_replica=2"])
    layers = sum(automatic.plan.layers_per_ipu)
    _, uniform = plan_run([*base, f"ipu.layers_per_ipu=[{layers // 2},{layers - layers // 2}]"])  # optimum's split
    assert len(automatic.plan.stages) == 2 and automatic.plan.bottleneck <= uniform.plan.bottleneck
    for ipus, layout in entry.layouts.items():
        _, published = plan_run([*base, f"ipu.layers_per_ipu=[{','.join(map(str, layout))}]"])
        assert list(published.plan.layers_per_ipu) == list(layout), (entry.name, ipus)


def test_plan_json_has_stages_with_blocks_params_and_cost_and_the_bottleneck_ratio():
    result = garden_cli("plan", "model=vit", "model.variant=tiny", "ipu.ipus_per_replica=2", "--json")
    assert result.returncode == 0, result.output
    plan = json.loads(result.stdout)
    costs = [stage["cost"] for stage in plan["stages"]]
    assert len(costs) == 2 and plan["bottleneck_ratio"] == pytest.approx(max(costs) / (sum(costs) / 2))
    assert plan["bottleneck_ratio"] <= plan["uniform_bottleneck_ratio"]
    assert all({"blocks", "params", "cost"} <= set(stage) for stage in plan["stages"])
    assert plan["stages"][0]["blocks"][0] == "embeddings" and plan["stages"][-1]["blocks"][-1] == "head"
    assert plan["bubble"] == pytest.approx(1 / (plan["micro_batches"] + 1))


@pytest.mark.parametrize("overrides, expected", [
    (("ipu.layers_per_ipu=[2,3]",), "ipu.layers_per_ipu=[2, 3] for model 'vit' sums to 5 but the model has 4 layers"),
    (("ipu.layers_per_ipu=[1,1,2]", "ipu.ipus_per_replica=2"), "ipu settings of model 'vit': layers_per_ipu=[1, 1, 2] has 3 entries but ipus_per_replica=2"),
    (("ipu.ipus_per_replica=2", "ipu.memory_budget=1KB"), "over the"),
])
def test_bad_stage_layouts_get_one_line_naming_the_model_and_the_fix(overrides, expected):
    result = garden_cli("plan", "model=vit", "model.variant=tiny", *overrides)
    assert result.returncode == 2
    assert expected in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
