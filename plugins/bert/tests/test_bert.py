"""The BERT plugin's own tests (``pytest plugins/bert/tests``; ``make test`` runs them too): a tiny
BERT trained on garden's shipped data answers infer for each of its tasks (labels with scores for
sentences, tags and character spans for entities, an answer span of the context), and the
recipe behind its declared result reproduces it to 4 decimals. What every
encoder family does alike (training, stage blocks, smoke runs, Hub-format folders) is in garden's
tests/test_nlp_encoders.py."""

from __future__ import annotations

import json

import pytest

TASKS = ("classify", "token-classify", "qa")
SMALL = ("preset=smoke", "weights=random", "data.limit=32", "data.eval_limit=8", "data.batch_size=8",
         "trainer.max_steps=24", "trainer.eval=false", "trainer.threads=1", "data.max_length=128")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """BERT trained for 24 steps (6 epochs of 4 batches) on each task infer is tested on, in this process."""
    import garden

    where = tmp_path_factory.mktemp("trained")
    return {("bert", t): (garden.run(["model=bert", f"task={t}", *SMALL], output_dir=where / f"bert-{t}"),
                          where / f"bert-{t}")
            for t in TASKS}


def infer(trained, model, task, inputs, tmp_path):
    import garden

    garden.run([f"model={model}", f"task={task}", "mode=infer", "model.variant=tiny",
                f"weights={trained[(model, task)][1] / 'model'}", f"infer.inputs={inputs}"], output_dir=tmp_path)
    return [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]


def test_classify_infer_gives_each_sentence_its_labels_with_scores(trained, tmp_path):
    lines = tmp_path / "reviews.txt"
    lines.write_text("A warm and funny film.\nThe plot is a mess.\n")
    rows = infer(trained, "bert", "classify", lines, tmp_path / "out")
    assert [r["input"] for r in rows] == ["A warm and funny film.", "The plot is a mess."]
    assert all(sorted(p["label"] for p in r["predictions"]) == ["0", "1"] for r in rows)
    assert all(abs(sum(p["score"] for p in r["predictions"]) - 1) < 1e-4 for r in rows)


def test_token_classify_infer_tags_every_word_and_spans_entities_by_character(trained, tmp_path):
    text = "Viktor Farrell visited Kingsbridge University in India."
    [row] = infer(trained, "bert", "token-classify", f"'{text}'", tmp_path / "out")
    assert row["input"] == text and len(row["tags"]) == 8
    for entity in row["predictions"]:
        assert text[entity["start"]:entity["end"]] == entity["text"] and 0 <= entity["score"] <= 1


def test_qa_infer_answers_with_a_span_of_the_context(trained, tmp_path):
    questions = tmp_path / "q.jsonl"
    context = "Tarnmoor was founded in 1672 by a band of farmers."
    questions.write_text(json.dumps({"question": "Who founded Tarnmoor?", "context": context}) + "\n")
    [row] = infer(trained, "bert", "qa", questions, tmp_path / "out")
    [answer] = row["predictions"]
    assert context[answer["start"]:answer["end"]] == answer["label"] and 0 <= answer["score"] <= 1


def test_graphcores_published_layout_of_the_large_variant_plans_exactly(tmp_path):
    """Graphcore/bert-large-ipu's ipu_config.json (the base variant's is the registry entry's ``layouts``)."""
    from garden.testing import plan_of_a_published_layout

    layout = [3, 7, 7, 7]
    assert plan_of_a_published_layout(layout, ["model=bert", "model.variant=large"], tmp_path) == layout


@pytest.mark.slow
def test_the_declared_result_reproduces_to_4_decimals(tmp_path):
    """The recipe behind the registry's result (results.json) gives the same metrics here."""
    from garden.testing import rerun_declared_result

    rerun_declared_result("bert", "classify", tmp_path)
