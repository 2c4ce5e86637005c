"""Every installed speech and multimodal family (such as Wav2Vec2, HuBERT or LXMERT) end to end:
smoke runs through `python -m garden` for every model x task, training that learns on each task,
stage blocks that compute the model, published layouts that fit, and the audio tasks' own clear
handling of bad input.

The rows come from the installed registry (:mod:`installed`); what one model does of its own (CTC
transcripts, region features, its layer count, Hub-format folders) is tested in its plugin's ``tests/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garden.pytest_plugin import run_dir

from installed import rows, specialist, vehicle

DOMAINS = ("speech", "multimodal")
ROWS = rows(lambda entry: entry.domain in DOMAINS)
MODELS = list(dict.fromkeys(m for m, _ in ROWS))
#: each task trained once, on the model most specialised in it
TRAINED = [(specialist(ROWS, task), task) for task in dict.fromkeys(t for _, t in ROWS)]
FAST = ("trainer.max_steps=4", "data.limit=16", "data.eval_limit=8")


def prepared(*overrides: str):
    from garden.config import compose
    from garden.runs import prepare

    return prepare(compose(list(overrides)))


@pytest.mark.parametrize("model, task", ROWS)
def test_every_row_passes_a_smoke_run(cli, tmp_path, model, task):
    result = cli(f"model={model}", f"task={task}", "preset=smoke", "weights=random", *FAST)
    assert result.returncode == 0, result.output
    metrics = json.loads((run_dir(tmp_path) / "metrics.json").read_text())
    assert metrics["steps"] == 4 and metrics["eval"]


@pytest.mark.parametrize("model, task", TRAINED)
def test_training_lowers_the_loss_on_the_default_data(tmp_path, model, task):
    import garden

    metrics = garden.run([f"model={model}", f"task={task}", "model.variant=tiny", "weights=random", "data.limit=32",
                          "data.batch_size=8", "trainer.max_steps=20", "trainer.lr=3e-3", "trainer.warmup_steps=2",
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


@pytest.mark.parametrize("model", MODELS)
def test_published_layouts_fit_the_default_variant_block_list(model):
    import torch

    from garden import registry
    from garden.runs import family_of

    entry = registry.get(model)
    config = dict(entry.default_variant.config)
    family = family_of(entry)
    head = family.heads[entry.tasks[0]]
    import transformers

    with torch.device("meta"):
        net = getattr(transformers, head)(getattr(transformers, family.config_class)(**config))
    layers = sum(b.kind == "layer" for b in family.stage_blocks(net, entry.tasks[0]))
    assert entry.layouts and all(sum(layout) == layers for layout in entry.layouts.values())


def write_speech(folder: Path, rate: int, files: dict[str, str]) -> None:
    import numpy as np
    import soundfile

    folder.mkdir(parents=True, exist_ok=True)
    tone = np.sin(np.linspace(0, 440 * 2 * np.pi, rate // 2)).astype(np.float32) * 0.3
    for name in files:
        soundfile.write(folder / name, tone, rate, subtype="PCM_16")
    (folder / "transcripts.csv").write_text("file,transcript\n" + "".join(f"{n},{t}\n" for n, t in files.items()))


def test_audio_at_another_sample_rate_is_resampled_with_a_note(tmp_path, capsys):
    model = vehicle(ROWS, "asr")
    write_speech(tmp_path, 8000, {f"a{i}.wav": "yes no" for i in range(4)})
    p = prepared(f"model={model}", "task=asr", "model.variant=tiny", "weights=random", f"data.path={tmp_path}")
    assert "4 audio file(s) at 8000 Hz were resampled to 16000 Hz" in capsys.readouterr().err
    assert len(p.data.train[0]["input_values"]) == 8000  # half a second at 16 kHz


def test_a_corrupt_audio_file_is_skipped_with_a_warning_when_asked(tmp_path):
    model = vehicle(ROWS, "audio-classify")
    write_speech(tmp_path, 16000, {"good0.wav": "go", "good1.wav": "stop", "good2.wav": "up", "broken.wav": "no"})
    (tmp_path / "broken.wav").write_bytes(b"RIFF not really a wave file")
    p = prepared(f"model={model}", "task=audio-classify", "model.variant=tiny", "weights=random",
                 f"data.path={tmp_path}", "+data.options.label_column=transcript", "data.skip_unreadable=true")
    [warning] = [n for n in p.notes if n.startswith("skipped 1 audio file that could not be read")]
    assert "data.skip_unreadable=true" in warning and "broken.wav" in warning
    assert len(p.data.train) + len(p.data.eval) == 3 and p.data.labels == ("go", "stop", "up")


def test_a_corrupt_audio_file_stops_the_run_with_one_line_naming_it(tmp_path, cli):
    model = vehicle(ROWS, "asr")
    data = tmp_path / "speech"
    write_speech(data, 16000, {"good0.wav": "go", "good1.wav": "stop", "broken.wav": "no"})
    (data / "broken.wav").write_bytes(b"RIFF not really a wave file")
    result = cli(f"model={model}", "task=asr", "model.variant=tiny", "weights=random", f"data.path={data}")
    assert result.returncode == 2, result.output
    assert f"cannot decode audio file {data / 'broken.wav'}" in result.stderr
    assert "set data.skip_unreadable=true to skip unreadable audio files" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_word_and_character_error_rates_count_edits_over_the_reference():
    from garden.tasks.audio import error_rates

    rates = error_rates(["go left", "stop"], ["go right", "stop"])
    assert rates["wer"] == pytest.approx(1 / 3)
    assert rates["cer"] == pytest.approx(4 / 12)
