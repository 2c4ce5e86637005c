"""Wav2Vec2, HuBERT and LXMERT end to end: smoke runs through `python -m garden`, training that
learns, stage blocks that compute the model, Hub-format folders, and clear handling of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROWS = [("wav2vec2", "asr"), ("hubert", "asr"), ("hubert", "audio-classify"), ("lxmert", "vqa")]
FAST = ("trainer.max_steps=4", "data.limit=16", "data.eval_limit=8")


def run_dir(where: Path) -> Path:
    [metrics] = list((where / "outputs").glob("*/*/metrics.json"))
    return metrics.parent


def prepared(*overrides: str):
    from garden.config import compose
    from garden.runs import prepare

    return prepare(compose(list(overrides)))


@pytest.fixture(scope="module")
def wav2vec2_run(tmp_path_factory):
    """One smoke training run of wav2vec2 CTC, shared by the tests that read its outputs."""
    from conftest import garden_cli

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


@pytest.mark.parametrize("model, task", ROWS[1:])
def test_every_other_row_passes_a_smoke_run(cli, tmp_path, model, task):
    result = cli(f"model={model}", f"task={task}", "preset=smoke", "weights=random", *FAST)
    assert result.returncode == 0, result.output
    metrics = json.loads((run_dir(tmp_path) / "metrics.json").read_text())
    assert metrics["steps"] == 4 and metrics["eval"]


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


@pytest.mark.parametrize("model, task, lr", [("wav2vec2", "asr", 3e-3), ("hubert", "audio-classify", 3e-3),
                                             ("lxmert", "vqa", 3e-3)])
def test_training_lowers_the_loss_on_the_default_data(tmp_path, model, task, lr):
    import garden

    metrics = garden.run([f"model={model}", f"task={task}", "model.variant=tiny", "weights=random", "data.limit=32",
                          "data.batch_size=8", "trainer.max_steps=20", f"trainer.lr={lr}", "trainer.warmup_steps=2",
                          "trainer.eval=false", "data.eval_limit=8"], output_dir=tmp_path)
    losses = [h["train_loss"] for h in metrics["history"]]
    assert len(losses) == 5 and losses[-1] < 0.95 * losses[0], losses


def tiny_batch(p, n: int = 3):
    batch = p.data.collate([p.data.train[i] for i in range(n)])
    if "attention_mask" in batch and "input_values" in batch:  # a padded utterance must be handled too
        assert batch["attention_mask"].sum() < batch["attention_mask"].numel()
    return batch


@pytest.mark.parametrize("model, task", ROWS)
def test_stage_blocks_cover_the_model_and_compute_its_forward_exactly(model, task):
    import torch

    from garden.partition.stages import check_coverage, run_blocks

    p = prepared(f"model={model}", f"task={task}", "model.variant=tiny", "weights=random", "data.limit=8")
    net = p.family.build(p.spec).eval()
    blocks = p.family.stage_blocks(net, task)
    check_coverage(net, blocks)
    batch = tiny_batch(p)
    with torch.no_grad():
        expected, got = p.task.forward(net, batch), run_blocks(net, blocks, *p.task.inputs(batch))
    pairs = zip(expected, got, strict=True) if isinstance(expected, tuple) else [(expected, got)]  # CTC: (logits, frames)
    assert all(torch.equal(e, g) for e, g in pairs)
    layers = sum(b.kind == "layer" for b in blocks)
    # as optimum counts them: wav2vec2 7 conv + positional embedding + 2 Transformer + CTC head,
    # HuBERT its Transformer layers only
    assert layers == {"wav2vec2": 11, "hubert": 2, "lxmert": 4}[model]


@pytest.mark.parametrize("model", ["wav2vec2", "hubert", "lxmert"])
def test_published_layouts_fit_the_default_variant_block_list(model):
    import torch

    from garden import registry
    from garden.runs import family_of

    entry = registry.get(model)
    config = dict(entry.default_variant.config)
    family = family_of(entry)
    head = {"wav2vec2": "Wav2Vec2ForCTC", "hubert": "HubertForCTC", "lxmert": "LxmertForQuestionAnswering"}[model]
    import transformers

    with torch.device("meta"):
        net = getattr(transformers, head)(getattr(transformers, family.config_class)(**config))
    layers = sum(b.kind == "layer" for b in family.stage_blocks(net, entry.tasks[0]))
    assert entry.layouts and all(sum(layout) == layers for layout in entry.layouts.values())


def hub_folder(model: str, task: str, folder: Path) -> tuple[str, object]:
    """A tiny checkpoint written by transformers itself (model and processor)."""
    import transformers

    from garden import registry
    from garden.runs import family_of

    entry = registry.get(model)
    config_class = {"wav2vec2": "Wav2Vec2Config", "hubert": "HubertConfig", "lxmert": "LxmertConfig"}[model]
    head = {("wav2vec2", "asr"): "Wav2Vec2ForCTC", ("hubert", "asr"): "HubertForCTC",
            ("hubert", "audio-classify"): "HubertForSequenceClassification",
            ("lxmert", "vqa"): "LxmertForQuestionAnswering"}[model, task]
    config = getattr(transformers, config_class)(**dict(entry.variant("tiny").config))
    if task == "audio-classify":
        config.num_labels = 3
    getattr(transformers, head)(config).save_pretrained(folder)
    if model == "lxmert":
        from garden_lxmert.family import question_tokenizer

        question_tokenizer().save_pretrained(folder)
    else:
        extractor = transformers.Wav2Vec2FeatureExtractor(return_attention_mask=True)
        tokenizer = family_of(entry).character_tokenizer(["zero one two"])
        processor = transformers.Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer)
        (processor if task == "asr" else extractor).save_pretrained(folder)
    return head, config


@pytest.mark.parametrize("model, task", ROWS)
def test_a_hub_format_folder_loads_with_outputs_identical_to_transformers(tmp_path, model, task):
    import torch
    import transformers

    import garden

    head, config = hub_folder(model, task, tmp_path)
    ours = garden.load_model(model, task=task, weights=str(tmp_path)).eval()
    theirs = getattr(transformers, head).from_pretrained(tmp_path).eval()
    if model == "lxmert":
        inputs = {"input_ids": torch.tensor([[2, 5, 6, 3]]), "visual_feats": torch.randn(1, 36, config.visual_feat_dim),
                  "visual_pos": torch.rand(1, 36, 4)}
    else:
        inputs = {"input_values": torch.randn(2, 8000), "attention_mask": torch.ones(2, 8000, dtype=torch.long)}
    scores = "question_answering_score" if model == "lxmert" else "logits"
    with torch.no_grad():
        assert torch.equal(getattr(ours(**inputs), scores), getattr(theirs(**inputs), scores))


def write_speech(folder: Path, rate: int, files: dict[str, str]) -> None:
    import numpy as np
    import soundfile

    folder.mkdir(parents=True, exist_ok=True)
    tone = np.sin(np.linspace(0, 440 * 2 * np.pi, rate // 2)).astype(np.float32) * 0.3
    for name in files:
        soundfile.write(folder / name, tone, rate, subtype="PCM_16")
    (folder / "transcripts.csv").write_text("file,transcript\n" + "".join(f"{n},{t}\n" for n, t in files.items()))


def test_audio_at_another_sample_rate_is_resampled_with_a_note(tmp_path, capsys):
    write_speech(tmp_path, 8000, {f"a{i}.wav": "yes no" for i in range(4)})
    p = prepared("model=wav2vec2", "task=asr", "model.variant=tiny", "weights=random", f"data.path={tmp_path}")
    assert "4 audio file(s) at 8000 Hz were resampled to 16000 Hz" in capsys.readouterr().err
    assert len(p.data.train[0]["input_values"]) == 8000  # half a second at 16 kHz


def test_a_corrupt_audio_file_is_skipped_with_a_warning_when_asked(tmp_path):
    write_speech(tmp_path, 16000, {"good0.wav": "go", "good1.wav": "stop", "good2.wav": "up", "broken.wav": "no"})
    (tmp_path / "broken.wav").write_bytes(b"RIFF not really a wave file")
    p = prepared("model=hubert", "task=audio-classify", "model.variant=tiny", "weights=random", f"data.path={tmp_path}",
                 "+data.options.label_column=transcript", "data.skip_unreadable=true")
    [warning] = [n for n in p.notes if n.startswith("skipped 1 audio file that could not be read")]
    assert "data.skip_unreadable=true" in warning and "broken.wav" in warning
    assert len(p.data.train) + len(p.data.eval) == 3 and p.data.labels == ("go", "stop", "up")


def test_a_corrupt_audio_file_stops_the_run_with_one_line_naming_it(tmp_path, cli):
    data = tmp_path / "speech"
    write_speech(data, 16000, {"good0.wav": "go", "good1.wav": "stop", "broken.wav": "no"})
    (data / "broken.wav").write_bytes(b"RIFF not really a wave file")
    result = cli("model=wav2vec2", "task=asr", "model.variant=tiny", "weights=random", f"data.path={data}")
    assert result.returncode == 2, result.output
    assert f"cannot decode audio file {data / 'broken.wav'}" in result.stderr
    assert "set data.skip_unreadable=true to skip unreadable audio files" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def write_regions(folder: Path, dim: int, images: int = 4) -> None:
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    np.savez(folder / "features.npz", ids=np.array([f"img{i}" for i in range(images)]),
             features=rng.random((images, 36, dim), dtype=np.float32), boxes=rng.random((images, 36, 4)))
    questions = [{"image": f"img{i % images}", "question": f"is it number {i}?", "answer": "yes" if i % 2 else "no"}
                 for i in range(12)]
    (folder / "questions.json").write_text(json.dumps(questions))


def test_the_users_own_region_features_and_questions_are_read(tmp_path):
    write_regions(tmp_path, 64)
    p = prepared("model=lxmert", "task=vqa", "model.variant=tiny", "weights=random", f"data.path={tmp_path}")
    assert p.data.labels == ("no", "yes") and len(p.data.train) + len(p.data.eval) == 12
    assert p.data.train[0]["visual_feats"].shape == (36, 64)


def test_region_features_of_the_wrong_size_name_the_file_and_both_shapes(tmp_path):
    from garden.errors import DataError

    write_regions(tmp_path, 32)
    with pytest.raises(DataError) as err:
        prepared("model=lxmert", "task=vqa", "model.variant=tiny", "weights=random", f"data.path={tmp_path}")
    message = str(err.value)
    assert str(tmp_path / "features.npz") in message
    assert "(4, 36, 32)" in message and "(4, 36, 64)" in message and "\n" not in message


def test_word_and_character_error_rates_count_edits_over_the_reference():
    from garden.tasks.audio import error_rates

    rates = error_rates(["go left", "stop"], ["go right", "stop"])
    assert rates["wer"] == pytest.approx(1 / 3)
    assert rates["cer"] == pytest.approx(4 / 12)
