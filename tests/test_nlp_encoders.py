"""Every installed encoder-only text family (a :class:`garden.families.encoders.EncoderFamily`: BERT
and its kin) end to end, model x task: each trains (and lowers its loss) on garden's shipped data,
its stage blocks compute exactly its forward, a smoke run passes from the command line, a
Hub-format folder written by transformers' own head class loads to the same outputs, and the
text tasks' own errors (a missing field, a too long row) get one clear line.

The rows come from the installed registry (:mod:`installed`); what one model does of its own
(infer, its task list) is tested in its plugin's ``tests/``. Runs read each
plugin's shipped tokenizer and stay small: tiny variants, 32 examples.
"""

from __future__ import annotations

import pytest

from installed import family_class, rows, vehicle


def encoder_only(entry) -> bool:
    from garden.families.encoders import EncoderFamily

    return entry.domain == "nlp" and issubclass(family_class(entry), EncoderFamily)


ROWS = rows(encoder_only)
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
    from garden.registry import task_entry
    from garden.runs import prepare

    prepared = prepare(garden.compose([f"model={model}", f"task={task}", "preset=smoke", "weights=random",
                                       "data.limit=8", "data.eval_limit=4"]))
    net = prepared.family.build(prepared.spec).eval()
    batch = prepared.data.collate([prepared.data.train[i] for i in range(4)])
    assert (batch["attention_mask"] == 0).any(), "the batch should hold padding"
    blocks = prepared.family.stage_blocks(net, task)
    check_coverage(net, blocks)
    assert [b.kind for b in blocks] == ["embedding", *["layer"] * net.config.num_hidden_layers, "head"]
    tied = task_entry(garden.get_entry(model), task).tied_head  # the masked-LM head shares the token embeddings
    assert blocks[-1].tied_to == ("embeddings" if tied else None)
    with torch.no_grad():
        expected = prepared.task.forward(net, batch)
        got = run_blocks(net, blocks, *prepared.task.inputs(batch))
    expected, got = (expected, got) if isinstance(expected, tuple) else ((expected,), (got,))
    assert len(got) == len(expected) and all(torch.equal(a, b) for a, b in zip(expected, got))


@pytest.mark.parametrize("model, task", ROWS)
def test_a_smoke_run_from_the_command_line_passes(cli, model, task):
    result = cli(f"model={model}", f"task={task}", "preset=smoke", "weights=random", "trainer.max_steps=2",
                 "data.limit=16", "data.eval_limit=8", "trainer.threads=1")
    assert result.returncode == 0, result.output
    assert f"{model} · {task} · train" in result.stdout


@pytest.mark.parametrize("model, task", ROWS)
def test_a_local_hub_format_folder_loads_as_transformers_loads_it(tmp_path, model, task):
    """The folder holds what the family's head class for the task (``family.heads``) writes."""
    import torch
    import transformers

    import garden
    from garden.hookspecs import BuildSpec
    from garden.runs import family_of

    entry = garden.get_entry(model)
    variant = entry.variant("tiny")
    family = family_of(entry)
    head = getattr(transformers, family.heads[task])
    torch.manual_seed(0)
    head(getattr(transformers, family.config_class)(**dict(variant.config))).save_pretrained(tmp_path)
    family.preprocessor(BuildSpec(entry=entry, variant=variant, task=task)).save_pretrained(tmp_path)
    ours = garden.load_model(model, task=task, weights=str(tmp_path)).eval()
    theirs = head.from_pretrained(tmp_path).eval()
    tokens = transformers.AutoTokenizer.from_pretrained(tmp_path)(["a short one", "and a longer sentence"],
                                                                   padding=True, return_tensors="pt")
    with torch.no_grad():
        a = ours(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"])
        b = theirs(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"])
    compared = [key for key in ("logits", "start_logits", "end_logits") if key in a]
    assert compared, list(a.keys())
    for key in compared:
        assert torch.equal(a[key], b[key])


def test_a_data_file_missing_a_field_names_the_file_row_and_field(cli, tmp_path):
    model = vehicle(ROWS, "classify")
    data = tmp_path / "reviews.jsonl"
    data.write_text('{"sentence": "good", "label": 1}\n{"text": "bad", "label": 0}\n')
    result = cli(f"model={model}", "task=classify", "preset=smoke", "weights=random", f"data.path={data}")
    assert result.returncode == 2, result.output
    assert f"data.path={data}: row 2 has no field 'sentence' (task 'classify' needs sentence, label)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_too_long_sequences_are_truncated_with_a_note_or_refused(tmp_path, capsys):
    import garden
    from garden.errors import DataError

    base = [f"model={vehicle(ROWS, 'classify')}", "task=classify", *SMALL, "trainer.max_steps=1", "data.max_length=8"]
    metrics = garden.run(base, output_dir=tmp_path / "run")
    assert metrics["steps"] == 1
    note = [line for line in capsys.readouterr().err.splitlines() if "were truncated" in line]
    assert len(note) == 1 and "data.max_length=8" in note[0]
    with pytest.raises(DataError, match=r"row \d+ is \d+ tokens, longer than 8 \(data.max_length\)"):
        garden.run([*base, "data.truncation=false"], output_dir=tmp_path / "refused")
