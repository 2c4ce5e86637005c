"""The GPT-2 plugin's own tests (``pytest plugins/gpt2/tests``; ``make test`` runs them too): a tiny
GPT-2 trained by a ``python -m garden`` smoke run continues a prompt in mode=infer exactly as
transformers' greedy ``generate`` does with the saved model. What every generative family does
alike (smoke runs, training, stage layouts, tied heads, Hub-format folders) is in garden's
tests/test_nlp_generative.py."""

from __future__ import annotations

import json

import pytest

from garden.pytest_plugin import garden_cli, run_dir

#: one torch thread: on a shared CPU box more threads only wait for each other
QUICK = ("preset=smoke", "weights=random", "trainer.threads=1")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One ``python -m garden`` smoke run of generate: its folder and its result."""
    where = tmp_path_factory.mktemp("gpt2-generate")
    return where, garden_cli("model=gpt2", "task=generate", *QUICK, cwd=where)


def test_infer_continues_a_prompt_greedily_for_max_new_tokens(smoke, cli, tmp_path):
    import torch
    from transformers import AutoTokenizer, GPT2LMHeadModel

    where, trained = smoke
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
