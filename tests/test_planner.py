"""The pipeline-stage planner: Optimum Graphcore's placement rules, an exact bottleneck, clear errors."""

import itertools
import json
import random
import subprocess
import sys

import pytest

from garden.errors import ConfigError
from garden.partition.planner import BlockCost, check_layers_per_ipu, plan_stages, uniform_layers

GiB = 2**30


def layers(costs, memory=None):
    memory = memory or [0.0] * len(costs)
    return [BlockCost(f"layer.{i}", "layer", cost, memory_bytes=m) for i, (cost, m) in enumerate(zip(costs, memory))]


def bert_base(tied=True):
    """Embeddings and a tied MLM head as heavy as two layers each, twelve equal layers."""
    head = BlockCost("mlm_head", "head", 2.0, tied_to="embeddings" if tied else None)
    return [BlockCost("embeddings", "embedding", 2.0), *layers([1.0] * 12), head]


def sorted_costs(plan):
    return sorted((stage.cost for stage in plan.stages), reverse=True)


def test_automatic_entries_minimise_the_bottleneck():
    blocks = layers([1, 2, 3, 4, 5, 6])
    plan = plan_stages(blocks, [-1, -1, -1], model="toy")
    assert plan.layers_per_ipu == (3, 2, 1)
    assert [stage.cost for stage in plan.stages] == [6, 9, 6]
    assert plan_stages(blocks, uniform_layers(6, 3), model="toy").bottleneck == 11


def test_bert_base_gets_optimum_graphcores_layout_from_all_automatic_entries():
    plan = plan_stages(bert_base(), [-1], n_stages=4, model="bert")
    assert plan.layers_per_ipu == (0, 4, 4, 4)
    assert plan.stages[0].blocks == ("embeddings", "mlm_head")
    assert plan.bottleneck_ratio == 1.0


def test_a_single_minus_one_spreads_over_n_stages():
    assert plan_stages(layers([1.0] * 9), [-1], n_stages=3, model="toy").layers_per_ipu == (3, 3, 3)


def test_fixed_entries_are_honoured():
    plan = plan_stages(bert_base(), [3, -1, -1, -1], model="bert")
    assert plan.layers_per_ipu[0] == 3
    assert plan.layers_per_ipu == (3, 3, 3, 3)
    assert plan_stages(bert_base(), [6, 2, 2, 2], model="bert").layers_per_ipu == (6, 2, 2, 2)


def test_tied_head_stays_on_the_embedding_stage():
    plan = plan_stages(bert_base(tied=True), [0, 4, 4, 4], model="bert")
    assert "mlm_head" in plan.stages[0].blocks
    assert plan.stages[0].cost == 4.0


def test_untied_head_goes_on_the_last_stage():
    plan = plan_stages(bert_base(tied=False), [0, 4, 4, 4], model="bert")
    assert plan.stages[0].blocks == ("embeddings",)
    assert plan.stages[-1].blocks[-1] == "mlm_head"


def test_blocks_between_layers_travel_with_the_layer_before_them():
    blocks = [
        BlockCost("encoder.embeddings", "embedding", 1.0),
        *layers([1.0] * 2),
        BlockCost("encoder.final_norm", "head", 0.5),
        BlockCost("decoder.embeddings", "embedding", 0.5),
        BlockCost("decoder.layer.0", "layer", 1.0),
        BlockCost("decoder.layer.1", "layer", 1.0),
        BlockCost("lm_head", "head", 1.0),
    ]
    plan = plan_stages(blocks, [1, 1, 1, 1], model="t5")
    assert plan.stages[1].blocks == ("layer.1", "encoder.final_norm", "decoder.embeddings")
    assert plan.stages[1].cost == 2.0


def test_a_block_tied_to_the_embeddings_follows_them_from_the_middle():
    blocks = [
        BlockCost("shared", "embedding", 3.0),
        *layers([1.0] * 2),
        BlockCost("decoder.embed_tokens", "embedding", 0.0, tied_to="shared"),
        BlockCost("decoder.layer.0", "layer", 1.0),
        BlockCost("decoder.layer.1", "layer", 1.0),
    ]
    plan = plan_stages(blocks, [0, 2, 2], model="t5")
    assert plan.stages[0].blocks == ("shared", "decoder.embed_tokens")


def test_zero_layer_stages_are_allowed():
    plan = plan_stages(layers([1.0] * 8), [4, 0, 4], model="toy")
    assert plan.stages[1].layers == 0
    assert plan.stages[1].blocks == ()
    assert plan.stages[1].cost == 0


def test_ties_prefer_the_more_balanced_plan():
    plan = plan_stages(layers([5, 1, 1, 1, 1]), [-1, -1, -1], model="toy")
    assert plan.bottleneck == 5
    assert plan.layers_per_ipu == (1, 2, 2)


def test_planning_is_deterministic():
    blocks = layers([1.0] * 10)
    assert len({plan_stages(blocks, [-1] * 4, model="toy") for _ in range(5)}) == 1


def test_stages_sum_cost_params_and_memory_of_their_blocks():
    blocks = [
        BlockCost("emb", "embedding", 1.0, params=100, memory_bytes=10.0),
        BlockCost("layer.0", "layer", 2.0, params=20, memory_bytes=3.0),
        BlockCost("layer.1", "layer", 2.0, params=20, memory_bytes=3.0),
        BlockCost("head", "head", 0.5, params=5, memory_bytes=1.0),
    ]
    first, second = plan_stages(blocks, [1, 1], model="toy").stages
    assert (first.cost, first.params, first.memory_bytes, first.layers) == (3.0, 120, 13.0, 1)
    assert (second.cost, second.params, second.memory_bytes, second.layers) == (2.5, 25, 4.0, 1)


def test_memory_budget_steers_the_plan_away_from_a_stage_that_does_not_fit():
    blocks = layers([1.0] * 6, memory=[1.0, 1.0, 1.0, 1.0, 2.0, 2.0])
    assert plan_stages(blocks, [-1, -1], model="toy").layers_per_ipu == (3, 3)
    plan = plan_stages(blocks, [-1, -1], model="toy", memory_budget=4.0)
    assert plan.layers_per_ipu == (4, 2)
    assert max(stage.memory_bytes for stage in plan.stages) <= 4.0


def test_memory_budget_no_plan_fits_says_how_much_is_missing():
    blocks = layers([1.0] * 4, memory=[1.5 * GiB] * 4)
    with pytest.raises(ConfigError) as err:
        plan_stages(blocks, [-1, -1], model="vit", memory_budget=2.0 * GiB)
    message = str(err.value)
    assert "'vit'" in message and "\n" not in message
    assert "stage 0 needing 3.0 GiB, 1.0 GiB over the 2.0 GiB budget" in message
    assert "raise ipu.memory_budget or use more IPUs" in message


def test_fixed_entries_over_the_memory_budget_are_refused():
    blocks = layers([1.0] * 4, memory=[1.0 * GiB] * 4)
    with pytest.raises(ConfigError, match=r"stage 0 needing 3\.0 GiB, 1\.0 GiB over the 2\.0 GiB budget"):
        plan_stages(blocks, [3, 1], model="vit", memory_budget=2.0 * GiB)


def test_layers_that_do_not_sum_name_the_model_and_the_total():
    with pytest.raises(ConfigError) as err:
        plan_stages(layers([1.0] * 13), [4, 4, 4], model="vit")
    assert str(err.value).startswith(
        "ipu.layers_per_ipu=[4, 4, 4] for model 'vit' sums to 12 but the model has 13 layers"
    )


def test_fixed_entries_that_exceed_the_total_are_refused():
    with pytest.raises(ConfigError, match=r"\[8, 8, -1\] for model 'vit' fixes 16 layers but the model has 12 layers"):
        plan_stages(layers([1.0] * 12), [8, 8, -1], model="vit")


def test_entries_below_minus_one_are_refused():
    with pytest.raises(ConfigError, match=r"\[4, -2, 4\] for model 'vit' has entries .*the model has 8 layers"):
        plan_stages(layers([1.0] * 8), [4, -2, 4], model="vit")


def test_an_empty_list_is_refused():
    with pytest.raises(ConfigError, match=r"ipu.layers_per_ipu=\[\] for model 'vit' is empty"):
        plan_stages(layers([1.0] * 8), [], model="vit")


def test_list_length_must_match_ipus_per_replica():
    assert check_layers_per_ipu([-1], 3, 12, "vit") == [-1, -1, -1]
    with pytest.raises(ConfigError, match=r"\[6, 6\] for model 'vit' has 2 entries but ipu.ipus_per_replica=4"):
        check_layers_per_ipu([6, 6], 4, 12, "vit")


def test_errors_name_the_inference_setting_when_asked():
    with pytest.raises(ConfigError, match=r"^ipu.inference_layers_per_ipu=\[6\] .* ipu.inference_ipus_per_replica=2"):
        check_layers_per_ipu([6], 2, 12, "vit", setting="ipu.inference_layers_per_ipu")


@pytest.mark.parametrize(
    "blocks, message",
    [
        ([BlockCost("a", "layer", 1.0), BlockCost("a", "layer", 1.0)], "two blocks named 'a'"),
        ([BlockCost("a", "decoder", 1.0)], "kind 'decoder'"),
        ([BlockCost("a", "layer", 1.0), BlockCost("h", "head", 1.0, tied_to="emb")], "unknown block 'emb'"),
    ],
)
def test_malformed_blocks_are_config_errors(blocks, message):
    with pytest.raises(ConfigError, match=message):
        plan_stages(blocks, [-1], model="toy")


def test_plan_reports_bottleneck_ideal_ratio_and_bubble():
    plan = plan_stages(layers([1.0] * 6), [4, 2], model="toy")
    assert (plan.bottleneck, plan.ideal) == (4.0, 3.0)
    assert plan.bottleneck_ratio == pytest.approx(4 / 3)
    assert plan.bubble(7) == pytest.approx(1 / 8)
    with pytest.raises(ConfigError):
        plan.bubble(0)


def test_plan_to_dict_is_json_ready():
    summary = json.loads(json.dumps(plan_stages(bert_base(), [0, 4, 4, 4], model="bert").to_dict()))
    assert summary["layers_per_ipu"] == [0, 4, 4, 4]
    assert summary["stages"][0]["blocks"] == ["embeddings", "mlm_head"]
    assert {"blocks", "params", "cost", "layers", "memory_bytes"} <= set(summary["stages"][0])
    assert summary["bottleneck_ratio"] == 1.0


def test_uniform_layers_gives_the_remainder_to_the_last_stage_like_optimum():
    assert uniform_layers(12, 4) == [3, 3, 3, 3]
    assert uniform_layers(14, 4) == [3, 3, 3, 5]
    assert uniform_layers(5, 1) == [5]


def test_planner_never_loses_to_the_uniform_split():
    rng = random.Random(7)
    for _ in range(50):
        n_layers, n_stages = rng.randint(1, 12), rng.randint(1, 5)
        costs = [rng.uniform(0.5, 3) for _ in range(n_layers)]
        blocks = [BlockCost("emb", "embedding", rng.uniform(0, 5)), *layers(costs)]
        planned = plan_stages(blocks, [-1] * n_stages, model="toy")
        uniform = plan_stages(blocks, uniform_layers(n_layers, n_stages), model="toy")
        assert planned.bottleneck <= uniform.bottleneck


def every_filling(wanted, n_layers):
    """All ways to fill the -1 entries of ``wanted`` so that the list sums to ``n_layers``."""
    free = [i for i, n in enumerate(wanted) if n == -1]
    left = n_layers - sum(n for n in wanted if n != -1)
    for counts in itertools.product(range(left + 1), repeat=len(free)):
        if sum(counts) == left:
            filled = list(wanted)
            for i, n in zip(free, counts):
                filled[i] = n
            yield filled


def test_brute_force_agrees_on_small_random_instances():
    """Integer costs keep sums exact, so the optimum and its tie-break compare exactly."""
    rng = random.Random(2024)
    for _ in range(300):
        n_layers, n_stages = rng.randint(0, 7), rng.randint(1, 4)
        blocks = [
            BlockCost("emb", "embedding", rng.randint(0, 6), memory_bytes=rng.randint(0, 4)),
            *layers([rng.randint(0, 6) for _ in range(n_layers)], [rng.randint(0, 4) for _ in range(n_layers)]),
            BlockCost(
                "head", "head", rng.randint(0, 6), memory_bytes=rng.randint(0, 4), tied_to=rng.choice([None, "emb"])
            ),
        ]
        wanted = [rng.choice([-1, -1, 0, 1, 2]) for _ in range(n_stages)]
        if sum(n for n in wanted if n != -1) > n_layers or (-1 not in wanted and sum(wanted) != n_layers):
            continue
        budget = rng.choice([None, rng.randint(3, 12)])
        candidates = []
        for filled in every_filling(wanted, n_layers):
            plan = plan_stages(blocks, filled, model="toy")
            if budget is None or all(stage.memory_bytes <= budget for stage in plan.stages):
                candidates.append(sorted_costs(plan))
        if not candidates:
            with pytest.raises(ConfigError, match="over the"):
                plan_stages(blocks, wanted, model="toy", memory_budget=budget)
            continue
        plan = plan_stages(blocks, wanted, model="toy", memory_budget=budget)
        assert sorted_costs(plan) == min(candidates)
        assert all(n == w for n, w in zip(plan.layers_per_ipu, wanted) if w != -1)


def test_planner_imports_no_torch():
    code = "import sys, garden.partition; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
