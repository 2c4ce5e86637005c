"""The Wav2Vec2 plugin's own tests (``pytest plugins/wav2vec2/tests``; ``make test`` runs them too): a
``python -m garden`` smoke run of wav2vec2 CTC reports WER and CER and saves the model with the
character vocabulary it learned, infer prints greedy CTC transcripts of the user's audio, the stage
layout counts layers as optimum-graphcore does (7 conv, the projection with the positional
embedding, 2 Transformer layers and the CTC head), and a Hub-format folder written by transformers'
Wav2Vec2ForCTC loads to identical logits. What every speech family does alike (smoke runs, training,
stage blocks, bad audio) is in garden's tests/test_speech_multimodal.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garden.pytest_plugin import garden_cli, run_dir

FAST = ("trainer.max_steps=4", "data.limit=16", "data.eval_limit=8")


def prepared(*overrides: str):
    from garden.config import compose
    from garden.runs import prepare

    return prepare(compose(list(overrides)))


def layer_blocks(model: str, task: str) -> int:
    """How many of the tiny variant's stage blocks are layers (what ``layers_per_ipu`` counts)."""
    p = prepared(f"model={model}", f"task={task}", "model.variant=tiny", "weights=random", "data.limit=8")
    net = p.family.build(p.spec).eval()
    return sum(b.kind == "layer" for b in p.family.stage_blocks(net, task))


@pytest.fixture(scope="module")
def wav2vec2_run(tmp_path_factory):
    """One smoke training run of wav2vec2 CTC, shared by the tests that read its outputs."""
    where = tmp_path_factory.mktemp("asr")
    result = garden_cli("model=wav2vec2", "task=asr", "preset=smoke", "weights=random", *FAST, cwd=where)
    assert result.returncode == 0, result.output
    return where, result


def test_a_wav2vec2_smoke_run_reports_wer_and_saves_model_and_vocabulary(wav2vec2_run):
    where, result = wav2vec2_run
    out = run_dir(where)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["variant"] == "tiny" and metrics["steps"] == 4
    assert {"wer", "cer", "loss"} <= set(metrics["eval"])
    vocab = json.loads((out / "model" / "vocab.json").read_text())
    assert vocab["<pad>"] == 0 and "|" in vocab and {"z", "e", "r", "o"} <= set(vocab)
    assert "learned" in result.stderr and "CTC tokens" in result.stderr


def test_infer_prints_greedy_ctc_transcripts_of_the_users_audio(wav2vec2_run, cli, tmp_path):
    import shutil

    from garden.tasks.audio import default_speech

    for name in ("digit_seven_us_f_175.wav", "command_stop_gb_m.wav"):
        shutil.copy(default_speech() / name, tmp_path / name)
    folder = run_dir(wav2vec2_run[0]) / "model"
    result = cli("model=wav2vec2", "task=asr", "mode=infer", "model.variant=tiny", f"weights={folder}",
                 f"infer.inputs={tmp_path}/*.wav")
    assert result.returncode == 0, result.output
    rows = [json.loads(line) for line in next(tmp_path.glob("outputs/*/*/predictions.jsonl")).read_text().splitlines()]
    assert [Path(r["input"]).name for r in rows] == ["command_stop_gb_m.wav", "digit_seven_us_f_175.wav"]
    assert all(isinstance(r["transcript"], str) and 0 < r["predictions"][0]["score"] <= 1 for r in rows)


def test_the_stage_layout_counts_the_feature_encoder_and_the_head_as_layers():
    # as optimum counts them: 7 conv + positional embedding + 2 Transformer + CTC head
    assert layer_blocks("wav2vec2", "asr") == 11


def hub_folder(model: str, task: str, folder: Path) -> tuple[str, object]:
    """A tiny checkpoint written by transformers itself (model and processor)."""
    import transformers

    from garden import registry
    from garden.runs import family_of

    entry = registry.get(model)
    head = "Wav2Vec2ForCTC"
    config = transformers.Wav2Vec2Config(**dict(entry.variant("tiny").config))
    getattr(transformers, head)(config).save_pretrained(folder)
    extractor = transformers.Wav2Vec2FeatureExtractor(return_attention_mask=True)
    tokenizer = family_of(entry).character_tokenizer(["zero one two"])
    processor = transformers.Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer)
    processor.save_pretrained(folder)
    return head, config


@pytest.mark.parametrize("model, task", [("wav2vec2", "asr")])
def test_a_hub_format_folder_loads_with_outputs_identical_to_transformers(tmp_path, model, task):
    import torch
    import transformers

    import garden

    head, config = hub_folder(model, task, tmp_path)
    ours = garden.load_model(model, task=task, weights=str(tmp_path)).eval()
    theirs = getattr(transformers, head).from_pretrained(tmp_path).eval()
    inputs = {"input_values": torch.randn(2, 8000), "attention_mask": torch.ones(2, 8000, dtype=torch.long)}
    with torch.no_grad():
        assert torch.equal(ours(**inputs).logits, theirs(**inputs).logits)
