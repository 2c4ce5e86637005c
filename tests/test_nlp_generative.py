"""GPT-2, BART and T5 through the generative tasks: smoke runs for every model x task, training
that learns, stage layouts that equal the model, generation in mode=infer, Hub-format folders,
and one-line errors for bad data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROWS = [("gpt2", "causal-lm"), ("gpt2", "generate"), ("gpt2", "classify"), ("bart", "summarize"),
        ("bart", "classify"), ("t5", "text2text")]
# one torch thread: on a shared CPU box more threads only wait for each other
QUICK = ("preset=smoke", "weights=random", "trainer.threads=1")


@pytest.fixture(autouse=True)
def restore_torch_threads():
    """In-process runs set torch's thread count (trainer.threads); put it back for other tests."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """``smoke(model, task)``: one ``python -m garden`` smoke run per row, shared by the tests."""
    from conftest import garden_cli

    runs: dict[tuple[str, str], tuple[Path, object]] = {}

    def run(model: str, task: str):
        if (model, task) not in runs:
            where = tmp_path_factory.mktemp(f"{model}-{task}")
            runs[model, task] = where, garden_cli(f"model={model}", f"task={task}", *QUICK, cwd=where)
        return runs[model, task]

    return run


def run_dir(where: Path) -> Path:
    [metrics] = list(where.glob("outputs/*/*/metrics.json"))
    return metrics.parent


def prepared(model: str, task: str, *overrides: str):
    from garden.config import compose
    from garden.runs import prepare

    return prepare(compose([f"model={model}", f"task={task}", *QUICK, "data.limit=8", "data.eval_limit=8",
                            *overrides]))


@pytest.mark.parametrize("model, task", ROWS)
def test_every_model_and_task_passes_a_smoke_run_and_saves_a_hub_folder(smoke, model, task):
    where, result = smoke(model, task)
    assert result.returncode == 0, result.output
    out = run_dir(where)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 20 and metrics["variant"] == "tiny" and metrics["weights"] == "random"
    expected = {"causal-lm": "perplexity", "generate": "perplexity", "classify": "accuracy",
                "summarize": "token_accuracy", "text2text": "token_accuracy"}[task]
    assert expected in metrics["eval"] and metrics["eval"]["loss"] > 0
    assert (out / "model" / "model.safetensors").exists() and (out / "model" / "tokenizer.json").exists()


@pytest.mark.parametrize("model, task", ROWS)
def test_training_lowers_the_loss_on_the_default_data(tmp_path, model, task):
    import garden

    metrics = garden.run([f"model={model}", f"task={task}", *QUICK, "data.limit=64", "data.eval_limit=16",
                          "trainer.max_steps=40", "trainer.lr=3e-3", "trainer.warmup_steps=0"],
                         output_dir=tmp_path)
    history = metrics["history"]
    assert len(history) == 5  # 8 steps an epoch
    assert history[-1]["eval_loss"] < history[0]["eval_loss"] - 0.05, history
    assert history[-1]["train_loss"] < history[0]["train_loss"], history


@pytest.mark.parametrize("model, task", ROWS)
def test_running_the_stage_blocks_in_order_equals_the_models_forward(model, task):
    import torch

    from garden.partition.stages import run_blocks
    from garden.runs.data import loader

    p = prepared(model, task)
    net = p.family.build(p.spec).eval()
    batch = next(iter(loader(p.data.eval, p.data.collate, 4, shuffle=False, seed=0)))
    assert (batch["attention_mask"] == 0).any(), "the batch should hold padding"
    blocks = p.family.stage_blocks(net, task)
    with torch.no_grad():
        assert torch.equal(run_blocks(net, blocks, *p.task.inputs(batch)), p.task.forward(net, batch))


@pytest.mark.parametrize("model, task", ROWS)
def test_the_stage_blocks_own_every_parameter_once_and_only_carry_tensors(model, task):
    import torch

    from garden.partition.stages import check_coverage
    from garden.runs.data import loader

    p = prepared(model, task)
    net = p.family.build(p.spec).eval()
    blocks = p.family.stage_blocks(net, task)
    check_coverage(net, blocks)
    layers = {"gpt2": ("n_layer",), "bart": ("encoder_layers", "decoder_layers"),
              "t5": ("num_layers", "num_decoder_layers")}[model]
    assert [b.kind for b in blocks].count("layer") == sum(getattr(net.config, k) for k in layers)
    carry = p.task.inputs(next(iter(loader(p.data.eval, p.data.collate, 2, shuffle=False, seed=0))))
    with torch.no_grad():
        for block in blocks:
            carry = block.run(net, *carry)
            assert all(isinstance(t, torch.Tensor) for t in carry), block.name


@pytest.mark.parametrize("model, task, encoder_decoder", [("gpt2", "causal-lm", False), ("bart", "summarize", True),
                                                          ("t5", "text2text", True)])
def test_the_lm_head_is_tied_to_the_embeddings_block_it_shares_a_weight_with(model, task, encoder_decoder):
    p = prepared(model, task)
    net = p.family.build(p.spec)
    blocks = p.family.stage_blocks(net, task)
    head, first = blocks[-1], blocks[0]
    assert head.tied_to == first.name == "embeddings"
    assert net.get_output_embeddings().weight is net.get_input_embeddings().weight
    if encoder_decoder:  # encoder and decoder planned as one sequence, encoder layers first
        names = [b.name for b in blocks if b.kind == "layer"]
        assert names.index("decoder.layer.0") == len([n for n in names if n.startswith("encoder.")])


def test_infer_continues_a_prompt_greedily_for_max_new_tokens(smoke, cli, tmp_path):
    import torch
    from transformers import AutoTokenizer, GPT2LMHeadModel

    where, trained = smoke("gpt2", "generate")
    assert trained.returncode == 0, trained.output
    folder = run_dir(where) / "model"
    result = cli("model=gpt2", "task=generate", "mode=infer", "model.variant=tiny", f"weights={folder}",
                 "infer.inputs=The doctor said", "infer.max_new_tokens=6")
    assert result.returncode == 0, result.output
    [row] = [json.loads(ln) for ln in next(tmp_path.glob("outputs/*/*/predictions.jsonl")).read_text().splitlines()]
    assert row["input"] == row["prompt"] == "The doctor said" and json.dumps(row["output"]) in result.stdout

    tokenizer, reference = AutoTokenizer.from_pretrained(folder), GPT2LMHeadModel.from_pretrained(folder).eval()
    ids = tokenizer("The doctor said", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        new = reference.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id)[0, ids.shape[1]:]
    assert 0 < len(new) <= 6
    assert row["output"] == tokenizer.decode(new, skip_special_tokens=True).strip()


def test_infer_on_the_held_out_split_translates_and_shows_the_reference(smoke, cli, tmp_path):
    where, trained = smoke("t5", "text2text")
    assert trained.returncode == 0, trained.output
    result = cli("model=t5", "task=text2text", "mode=infer", "model.variant=tiny",
                 f"weights={run_dir(where) / 'model'}", "data.eval_limit=3", "infer.max_new_tokens=4")
    assert result.returncode == 0, result.output
    rows = [json.loads(ln) for ln in next(tmp_path.glob("outputs/*/*/predictions.jsonl")).read_text().splitlines()]
    assert len(rows) == 3 and all(r["reference"] and isinstance(r["output"], str) for r in rows)
    assert all(0 <= r["rougeL"] <= 1 and 0 <= r["bleu"] <= 100 for r in rows)
    assert all(not r["prompt"].startswith("translate") for r in rows)  # the prefix is the model's, not the user's


def test_a_seq2seq_batch_puts_the_prefix_before_each_source_and_starts_the_decoder_right():
    p = prepared("t5", "text2text", "data.batch_size=2")
    tokenizer = p.preprocessor
    example = p.data.train[0]
    assert tokenizer.decode(example["input_ids"]).startswith("translate English to French:")
    batch = p.data.collate([p.data.train[0], p.data.train[1]])
    assert batch["decoder_input_ids"][0, 0] == tokenizer.pad_token_id == 0  # T5 starts from <pad>
    assert batch["decoder_input_ids"][0, 1:].tolist()[: len(example["labels"]) - 1] == example["labels"][:-1]
    assert example["labels"][-1] == tokenizer.eos_token_id


def test_teacher_forced_accuracy_does_not_reward_repeating_the_previous_token():
    import torch

    p = prepared("t5", "text2text")
    batch = p.data.collate([p.data.eval[0], p.data.eval[1]])
    vocab = len(p.preprocessor)
    perfect = torch.nn.functional.one_hot(batch["labels"].clamp(min=0), vocab).float()
    repeating = torch.nn.functional.one_hot(batch["decoder_input_ids"], vocab).float()
    assert p.task.evaluate([perfect], [batch])["token_accuracy"] == 1.0
    assert p.task.evaluate([repeating], [batch])["token_accuracy"] < 0.2


def test_generated_text_is_scored_against_its_reference():
    from garden.tasks.generation import scores

    assert scores("Le chat dort.", "Le chat dort.") == {"rougeL": 1.0, "bleu": 100.0}
    worse = scores("Le chien mange.", "Le chat dort.")
    assert worse["rougeL"] < 0.5 and worse["bleu"] < 50


@pytest.mark.parametrize("model, task, head", [("gpt2", "causal-lm", "GPT2LMHeadModel"),
                                               ("gpt2", "classify", "GPT2ForSequenceClassification"),
                                               ("bart", "summarize", "BartForConditionalGeneration"),
                                               ("bart", "classify", "BartForSequenceClassification"),
                                               ("t5", "text2text", "T5ForConditionalGeneration")])
def test_a_local_hub_format_folder_loads_to_the_same_outputs_as_transformers(tmp_path, model, task, head):
    import torch
    import transformers

    import garden
    from garden.runs.data import loader

    p = prepared(model, task)
    original = p.family.build(p.spec)
    original.save_pretrained(tmp_path, safe_serialization=True)
    p.preprocessor.save_pretrained(tmp_path)
    ours = garden.load_model(model, task=task, variant="tiny", weights=str(tmp_path)).eval()
    theirs = getattr(transformers, head).from_pretrained(tmp_path).eval()
    batch = next(iter(loader(p.data.eval, p.data.collate, 4, shuffle=False, seed=0)))
    with torch.no_grad():
        assert torch.equal(p.task.forward(ours, batch), p.task.forward(theirs, batch))


def test_a_data_file_missing_the_target_field_names_the_file_row_and_field(tmp_path):
    import garden
    from garden.errors import DataError

    data = tmp_path / "docs.jsonl"
    data.write_text('{"document": "One.", "summary": "1"}\n{"document": "Two."}\n')
    with pytest.raises(DataError, match=r"docs.jsonl: row 2 has no field 'summary'"):
        garden.run(["model=bart", "task=summarize", *QUICK, f"data.path={data}"], output_dir=tmp_path / "out")


def test_a_nested_field_that_is_missing_is_named_with_its_path(tmp_path):
    import garden
    from garden.errors import DataError

    data = tmp_path / "pairs.jsonl"
    data.write_text('{"t": {"en": "Hello.", "fr": "Bonjour."}}\n{"t": {"en": "Bye."}}\n')
    with pytest.raises(DataError, match=r"row 2 has no field 't.fr'"):
        garden.run(["model=t5", "task=text2text", *QUICK, f"data.path={data}", "+data.options.source=t.en",
                    "+data.options.target=t.fr"], output_dir=tmp_path / "out")


def test_an_unknown_shipped_dataset_lists_the_ones_there_are(tmp_path):
    import garden
    from garden.errors import DataError

    with pytest.raises(DataError, match=r"data.options.dataset=news.jsonl .* summaries.jsonl, translation_en_fr.jsonl"):
        garden.run(["model=t5", "task=text2text", *QUICK, "data.options.dataset=news.jsonl"],
                   output_dir=tmp_path / "out")


def test_text2text_summarizes_when_given_the_prefix_and_the_summaries(tmp_path):
    import garden

    metrics = garden.run(["model=t5", "task=text2text", *QUICK, 'task.prefix="summarize: "',
                          "data.options.dataset=summaries.jsonl", "trainer.max_steps=2"], output_dir=tmp_path)
    assert metrics["data"] == "garden's summaries.jsonl" and "token_accuracy" in metrics["eval"]


def test_causal_lm_reads_a_text_file_one_example_per_line(tmp_path):
    import garden

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"Line number {i} of the story.\n\n" for i in range(10)))
    metrics = garden.run(["model=gpt2", "task=causal-lm", *QUICK, f"data.path={corpus}", "trainer.max_steps=2"],
                         output_dir=tmp_path / "out")
    assert metrics["train_examples"] + metrics["eval_examples"] == 10
