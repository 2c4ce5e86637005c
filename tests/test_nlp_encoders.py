"""BERT, RoBERTa, CamemBERT and DeBERTa end to end: every model x task trains (and lowers its loss)
on garden's shipped data, its stage blocks compute exactly its forward, infer reads the user's
sentences, Hub-format folders load, and bad input gets one clear line.

Runs read each plugin's shipped tokenizer and stay small: tiny variants, 32 examples.
"""

from __future__ import annotations

import json
import pytest

ROWS = [("bert", "classify"), ("bert", "token-classify"), ("bert", "qa"), ("bert", "mlm"),
        ("roberta", "classify"), ("roberta", "mlm"), ("roberta", "qa"),
        ("camembert", "classify"), ("camembert", "mlm"),
        ("deberta", "classify"), ("deberta", "qa")]
SMALL = ("preset=smoke", "weights=random", "data.limit=32", "data.eval_limit=8", "data.batch_size=8",
         "trainer.max_steps=24", "trainer.eval=false", "trainer.threads=1", "data.max_length=128")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Every model x task trained for 24 steps (6 epochs of 4 batches) in this process; metrics by row."""
    import garden

    where = tmp_path_factory.mktemp("trained")
    return {(m, t): (garden.run([f"model={m}", f"task={t}", *SMALL], output_dir=where / f"{m}-{t}"), where / f"{m}-{t}")
            for m, t in ROWS}


@pytest.mark.parametrize("model, task", ROWS)
def test_training_on_the_default_data_lowers_the_loss(trained, model, task):
    metrics, out = trained[(model, task)]
    losses = [h["train_loss"] for h in metrics["history"]]
    assert metrics["steps"] == 24 and metrics["variant"] == "tiny" and len(losses) == 6
    assert sum(losses[-2:]) < sum(losses[:2]), losses
    assert metrics["eval"]["loss"] > 0 and (out / "model" / "config.json").exists()
    assert (out / "model" / "tokenizer.json").exists()


@pytest.mark.parametrize("model, task", ROWS)
def test_stage_blocks_compute_the_forward_exactly_and_own_every_parameter(model, task):
    import torch

    import garden
    from garden.partition.stages import run_blocks, check_coverage
    from garden.runs import prepare

    prepared = prepare(garden.compose([f"model={model}", f"task={task}", "preset=smoke", "weights=random",
                                       "data.limit=8", "data.eval_limit=4"]))
    net = prepared.family.build(prepared.spec).eval()
    batch = prepared.data.collate([prepared.data.train[i] for i in range(4)])
    assert (batch["attention_mask"] == 0).any(), "the batch should hold padding"
    blocks = prepared.family.stage_blocks(net, task)
    check_coverage(net, blocks)
    assert [b.kind for b in blocks] == ["embedding", "layer", "layer", "head"]
    assert blocks[-1].tied_to == ("embeddings" if task == "mlm" else None)
    with torch.no_grad():
        expected = prepared.task.forward(net, batch)
        got = run_blocks(net, blocks, *prepared.task.inputs(batch))
    expected, got = (expected, got) if isinstance(expected, tuple) else ((expected,), (got,))
    assert len(got) == len(expected) and all(torch.equal(a, b) for a, b in zip(expected, got))


def test_the_model_is_sized_to_the_trained_tokenizer(trained):
    from transformers import AutoConfig, AutoTokenizer

    folder = trained[("camembert", "classify")][1] / "model"
    assert AutoConfig.from_pretrained(folder).vocab_size == len(AutoTokenizer.from_pretrained(folder)) < 1000


@pytest.mark.parametrize("model, task", ROWS)
def test_a_smoke_run_from_the_command_line_passes(cli, model, task):
    result = cli(f"model={model}", f"task={task}", "preset=smoke", "weights=random", "trainer.max_steps=2",
                 "data.limit=16", "data.eval_limit=8", "trainer.threads=1")
    assert result.returncode == 0, result.output
    assert f"{model} · {task} · train" in result.stdout


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


def test_mlm_infer_fills_the_mask_with_the_top_k_tokens(trained, tmp_path):
    [row] = infer(trained, "roberta", "mlm", "'The film is [MASK] clever.'", tmp_path / "out")
    assert row["input"] == "The film is <mask> clever."
    assert len(row["predictions"]) == 3 and len({p["position"] for p in row["predictions"]}) == 1
    assert row["predictions"][0]["score"] >= row["predictions"][-1]["score"]


@pytest.mark.parametrize("model, task, head", [("bert", "classify", "BertForSequenceClassification"),
                                               ("roberta", "mlm", "RobertaForMaskedLM"),
                                               ("deberta", "qa", "DebertaV2ForQuestionAnswering")])
def test_a_local_hub_format_folder_loads_as_transformers_loads_it(tmp_path, model, task, head):
    import torch
    import transformers

    import garden
    from garden.runs import family_of

    entry = garden.get_entry(model)
    variant = entry.variant("tiny")
    family = family_of(entry)
    config = getattr(transformers, family.config_class)(**dict(variant.config))
    torch.manual_seed(0)
    getattr(transformers, head)(config).save_pretrained(tmp_path)
    from garden.hookspecs import BuildSpec

    family.preprocessor(BuildSpec(entry=entry, variant=variant, task=task)).save_pretrained(tmp_path)
    ours = garden.load_model(model, task=task, weights=str(tmp_path)).eval()
    theirs = getattr(transformers, head).from_pretrained(tmp_path).eval()
    tokens = transformers.AutoTokenizer.from_pretrained(tmp_path)(["a short one", "and a longer sentence"],
                                                                   padding=True, return_tensors="pt")
    with torch.no_grad():
        a = ours(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"])
        b = theirs(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"])
    for key in ("logits", "start_logits", "end_logits"):
        if key in a:
            assert torch.equal(a[key], b[key])


def test_a_task_the_model_lacks_lists_its_tasks(cli):
    result = cli("model=deberta", "task=mlm", "weights=random")
    assert result.returncode == 2
    assert "model 'deberta' has no task 'mlm' (task=mlm); its tasks are: classify, qa" in result.stderr


def test_a_data_file_missing_a_field_names_the_file_row_and_field(cli, tmp_path):
    data = tmp_path / "reviews.jsonl"
    data.write_text('{"sentence": "good", "label": 1}\n{"text": "bad", "label": 0}\n')
    result = cli("model=bert", "task=classify", "preset=smoke", "weights=random", f"data.path={data}")
    assert result.returncode == 2, result.output
    assert f"data.path={data}: row 2 has no field 'sentence' (task 'classify' needs sentence, label)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_too_long_sequences_are_truncated_with_a_note_or_refused(tmp_path, capsys):
    import garden
    from garden.errors import DataError

    base = ["model=camembert", "task=classify", *SMALL, "trainer.max_steps=1", "data.max_length=8"]
    metrics = garden.run(base, output_dir=tmp_path / "run")
    assert metrics["steps"] == 1
    note = [line for line in capsys.readouterr().err.splitlines() if "were truncated" in line]
    assert len(note) == 1 and "data.max_length=8" in note[0]
    with pytest.raises(DataError, match=r"row \d+ is \d+ tokens, longer than 8 \(data.max_length\)"):
        garden.run([*base, "data.truncation=false"], output_dir=tmp_path / "refused")
