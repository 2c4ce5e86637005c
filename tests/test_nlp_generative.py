"""Every installed text family that is not encoder-only (decoder-only and encoder-decoder, such as
GPT-2, BART or T5) through the generative tasks: smoke runs for every model x task, training that
learns, stage layouts that equal the model and tie the LM head, and the text tasks' own behaviour
(teacher-forced accuracy, generated-text scores, one-line errors for bad data), and Hub-format
folders written by transformers' own head classes.

The rows come from the installed registry (:mod:`installed`); what one model does of its own
(generation in mode=infer, its prompt prefix) is tested in its plugin's ``tests/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garden.pytest_plugin import run_dir

from installed import family_class, rows, vehicle


def generative(entry) -> bool:
    from garden.families.encoders import EncoderFamily

    return entry.domain == "nlp" and not issubclass(family_class(entry), EncoderFamily)


ROWS = rows(generative)
# one torch thread: on a shared CPU box more threads only wait for each other
QUICK = ("preset=smoke", "weights=random", "trainer.threads=1")


def first_tied_rows() -> list[tuple[str, str]]:
    """One row per model: its first task whose head shares the token embeddings (``tied_head``)."""
    from garden.registry import get, tied_head_tasks

    models = dict.fromkeys(m for m, _ in ROWS)
    return [(m, tied[0]) for m in models if (tied := tied_head_tasks(get(m)))]


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


def prepared(model: str, task: str, *overrides: str):
    from garden.config import compose
    from garden.runs import prepare

    return prepare(compose([f"model={model}", f"task={task}", *QUICK, "data.limit=8", "data.eval_limit=8",
                            *overrides]))


def transformer_layers(config) -> int:
    """The Transformer layers a transformers config describes: ``num_hidden_layers``, plus the
    decoder's for an encoder-decoder (``decoder_layers`` or ``num_decoder_layers``, as configs name it)."""
    if not config.is_encoder_decoder:
        return config.num_hidden_layers
    decoder = getattr(config, "decoder_layers", None) or config.num_decoder_layers
    return config.num_hidden_layers + decoder


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
    assert [b.kind for b in blocks].count("layer") == transformer_layers(net.config)
    carry = p.task.inputs(next(iter(loader(p.data.eval, p.data.collate, 2, shuffle=False, seed=0))))
    with torch.no_grad():
        for block in blocks:
            carry = block.run(net, *carry)
            assert all(isinstance(t, torch.Tensor) for t in carry), block.name


@pytest.mark.parametrize("model, task", first_tied_rows())
def test_the_lm_head_is_tied_to_the_embeddings_block_it_shares_a_weight_with(model, task):
    p = prepared(model, task)
    net = p.family.build(p.spec)
    blocks = p.family.stage_blocks(net, task)
    head, first = blocks[-1], blocks[0]
    assert head.tied_to == first.name == "embeddings"
    assert net.get_output_embeddings().weight is net.get_input_embeddings().weight
    if net.config.is_encoder_decoder:  # encoder and decoder planned as one sequence, encoder layers first
        names = [b.name for b in blocks if b.kind == "layer"]
        assert names.index("decoder.layer.0") == len([n for n in names if n.startswith("encoder.")])


def one_row_per_head() -> list[tuple[str, str]]:
    """A row for each distinct head class (a causal LM's generate task shares its causal-lm head)."""
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for model, task in ROWS:
        seen.setdefault((model, head_of(model, task)), (model, task))
    return list(seen.values())


def head_of(model: str, task: str) -> str:
    from garden.registry import entries

    return family_class(entries()[model])().heads[task]


@pytest.mark.parametrize("model, task", one_row_per_head())
def test_a_local_hub_format_folder_loads_to_the_same_outputs_as_transformers(tmp_path, model, task):
    """The folder is read by the family's head class for the task (``family.heads``)."""
    import torch
    import transformers

    import garden
    from garden.runs.data import loader

    p = prepared(model, task)
    original = p.family.build(p.spec)
    original.save_pretrained(tmp_path, safe_serialization=True)
    p.preprocessor.save_pretrained(tmp_path)
    ours = garden.load_model(model, task=task, variant="tiny", weights=str(tmp_path)).eval()
    theirs = getattr(transformers, head_of(model, task)).from_pretrained(tmp_path).eval()
    batch = next(iter(loader(p.data.eval, p.data.collate, 4, shuffle=False, seed=0)))
    with torch.no_grad():
        assert torch.equal(p.task.forward(ours, batch), p.task.forward(theirs, batch))


def test_teacher_forced_accuracy_does_not_reward_repeating_the_previous_token():
    import torch

    p = prepared(vehicle(ROWS, "text2text"), "text2text")
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


def test_a_data_file_missing_the_target_field_names_the_file_row_and_field(tmp_path):
    import garden
    from garden.errors import DataError

    data = tmp_path / "docs.jsonl"
    data.write_text('{"document": "One.", "summary": "1"}\n{"document": "Two."}\n')
    with pytest.raises(DataError, match=r"docs.jsonl: row 2 has no field 'summary'"):
        garden.run([f"model={vehicle(ROWS, 'summarize')}", "task=summarize", *QUICK, f"data.path={data}"],
                   output_dir=tmp_path / "out")


def test_a_nested_field_that_is_missing_is_named_with_its_path(tmp_path):
    import garden
    from garden.errors import DataError

    data = tmp_path / "pairs.jsonl"
    data.write_text('{"t": {"en": "Hello.", "fr": "Bonjour."}}\n{"t": {"en": "Bye."}}\n')
    with pytest.raises(DataError, match=r"row 2 has no field 't.fr'"):
        garden.run([f"model={vehicle(ROWS, 'text2text')}", "task=text2text", *QUICK, f"data.path={data}",
                    "+data.options.source=t.en", "+data.options.target=t.fr"], output_dir=tmp_path / "out")


def test_an_unknown_shipped_dataset_lists_the_ones_there_are(tmp_path):
    import garden
    from garden.errors import DataError

    with pytest.raises(DataError, match=r"data.options.dataset=news.jsonl .* summaries.jsonl, translation_en_fr.jsonl"):
        garden.run([f"model={vehicle(ROWS, 'text2text')}", "task=text2text", *QUICK, "data.options.dataset=news.jsonl"],
                   output_dir=tmp_path / "out")


def test_causal_lm_reads_a_text_file_one_example_per_line(tmp_path):
    import garden

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"Line number {i} of the story.\n\n" for i in range(10)))
    metrics = garden.run([f"model={vehicle(ROWS, 'causal-lm')}", "task=causal-lm", *QUICK, f"data.path={corpus}",
                          "trainer.max_steps=2"], output_dir=tmp_path / "out")
    assert metrics["train_examples"] + metrics["eval_examples"] == 10
