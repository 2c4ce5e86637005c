"""The RoBERTa plugin's own tests (``pytest plugins/roberta/tests``; ``make test`` runs them too): a
tiny RoBERTa trained on garden's shipped data fills a masked word in infer, writing the user's
``[MASK]`` as its own ``<mask>`` token; its recipe reproduces its declared result. What every
encoder family does alike (training, stage blocks, smoke runs, Hub-format folders) is in garden's
tests/test_nlp_encoders.py."""

from __future__ import annotations

import json

import pytest

SMALL = ("preset=smoke", "weights=random", "data.limit=32", "data.eval_limit=8", "data.batch_size=8",
         "trainer.max_steps=24", "trainer.eval=false", "trainer.threads=1", "data.max_length=128")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """RoBERTa's masked LM trained for 24 steps (6 epochs of 4 batches) in this process."""
    import garden

    where = tmp_path_factory.mktemp("trained")
    return {("roberta", "mlm"): (garden.run(["model=roberta", "task=mlm", *SMALL], output_dir=where / "roberta-mlm"),
                                 where / "roberta-mlm")}


def infer(trained, model, task, inputs, tmp_path):
    import garden

    garden.run([f"model={model}", f"task={task}", "mode=infer", "model.variant=tiny",
                f"weights={trained[(model, task)][1] / 'model'}", f"infer.inputs={inputs}"], output_dir=tmp_path)
    return [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]


def test_mlm_infer_fills_the_mask_with_the_top_k_tokens(trained, tmp_path):
    [row] = infer(trained, "roberta", "mlm", "'The film is [MASK] clever.'", tmp_path / "out")
    assert row["input"] == "The film is <mask> clever."
    assert len(row["predictions"]) == 3 and len({p["position"] for p in row["predictions"]}) == 1
    assert row["predictions"][0]["score"] >= row["predictions"][-1]["score"]


def test_graphcores_published_layout_of_the_large_variant_plans_exactly(tmp_path):
    """Graphcore/roberta-large-ipu's ipu_config.json (the base variant's is the registry entry's ``layouts``)."""
    from garden.testing import plan_of_a_published_layout

    layout = [3, 7, 7, 7]
    assert plan_of_a_published_layout(layout, ["model=roberta", "model.variant=large"], tmp_path) == layout


@pytest.mark.slow
def test_the_declared_result_reproduces_to_4_decimals(tmp_path):
    """The recipe behind the registry's result (results.json) gives the same metrics here."""
    from garden.testing import rerun_declared_result

    rerun_declared_result("roberta", "classify", tmp_path)
