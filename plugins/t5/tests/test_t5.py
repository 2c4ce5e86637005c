"""The T5 plugin's own tests (``pytest plugins/t5/tests``; ``make test`` runs them too): T5's
text2text puts its own prefix (``translate English to French:``) before each source and starts the
decoder from ``<pad>``; a tiny T5 trained by a ``python -m garden`` smoke run translates the held-out
split in mode=infer next to the references; given the ``summarize:`` prefix and garden's summaries
it summarizes. What every generative family does alike (smoke runs, training, stage layouts, tied
heads, Hub-format folders) is in garden's tests/test_nlp_generative.py."""

from __future__ import annotations

import json

import pytest

from garden.pytest_plugin import garden_cli, run_dir

#: one torch thread: on a shared CPU box more threads only wait for each other
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
    """One ``python -m garden`` smoke run of text2text: its folder and its result."""
    where = tmp_path_factory.mktemp("t5-text2text")
    return where, garden_cli("model=t5", "task=text2text", *QUICK, cwd=where)


def prepared(model: str, task: str, *overrides: str):
    from garden.config import compose
    from garden.runs import prepare

    return prepare(compose([f"model={model}", f"task={task}", *QUICK, "data.limit=8", "data.eval_limit=8",
                            *overrides]))


def test_infer_on_the_held_out_split_translates_and_shows_the_reference(smoke, cli, tmp_path):
    where, trained = smoke
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


def test_text2text_summarizes_when_given_the_prefix_and_the_summaries(tmp_path):
    import garden

    metrics = garden.run(["model=t5", "task=text2text", *QUICK, 'task.prefix="summarize: "',
                          "data.options.dataset=summaries.jsonl", "trainer.max_steps=2"], output_dir=tmp_path)
    assert metrics["data"] == "garden's summaries.jsonl" and "token_accuracy" in metrics["eval"]


def test_on_two_ipus_the_tied_lm_head_brings_the_pipeline_back_to_the_first_ipu():
    """T5's LM head is tied to its shared embedding on IPU 0 (and transformers 4.x's decoder embeds
    with that same module after the encoder), so a forward placed on IPUs 0 and 1 returns to IPU 0:
    at least 3 forward stages, 5 in training, where the plan's own order shows 2 IPUs in a row
    (3 in training). garden counts them as poptorch will, along the calls."""
    from garden.backends.ipu import ipus_in_call_order, pipeline_stages, step_module
    from garden.partition.plan import plan_for, sample_batch

    p = prepared("t5", "text2text", "ipu.layers_per_ipu=[-1,-1]")
    model = p.family.build(p.spec)
    sample = sample_batch(p.data)
    plan = plan_for(p, model, sample, training=True)
    step = step_module(model, plan.blocks, p.task, poptorch=None)
    order = ipus_in_call_order(model, plan, lambda: step.run(*p.task.inputs(sample)))
    visits = [ipu for i, ipu in enumerate(order) if i == 0 or ipu != order[i - 1]]
    assert visits[:2] == [0, 1] and visits[-1] == 0, order
    assert pipeline_stages(order, training=True) == 2 * len(visits) - 1 >= 5
    assert pipeline_stages([stage.index for stage in plan.plan.stages for _ in stage.blocks], training=True) == 3
