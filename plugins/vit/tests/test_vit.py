"""The ViT plugin's own tests (``pytest plugins/vit/tests``; ``make test`` runs them too): ViT end to end through the plugin: a real `python -m garden` train run, infer on the user's
own images, the Python API, and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garden.pytest_plugin import garden_cli, run_dir

SMOKE = ("model=vit", "task=classify", "preset=smoke", "weights=random")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One smoke training run shared by the tests that read its outputs."""
    where = tmp_path_factory.mktemp("trained")
    result = garden_cli(*SMOKE, "trainer.max_steps=30", cwd=where)
    assert result.returncode == 0, result.output
    return where, result


def test_a_smoke_run_trains_evaluates_and_saves_a_hub_format_model(trained):
    where, result = trained
    out = run_dir(where)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 30 and metrics["variant"] == "tiny"
    assert metrics["eval"]["accuracy"] == metrics["history"][-1]["eval_accuracy"]  # the same weights, evaluated twice
    assert (out / "model" / "config.json").exists() and (out / "model" / "model.safetensors").exists()
    assert (out / "model" / "preprocessor_config.json").exists()
    assert (out / ".hydra" / "config.yaml").exists()
    assert "eval accuracy" in result.stdout


def test_the_saved_model_loads_back_through_the_python_api(trained):
    import torch

    import garden

    folder = run_dir(trained[0]) / "model"
    model = garden.load_model("vit", task="classify", variant="tiny", weights=str(folder))
    from transformers import ViTForImageClassification

    reference = ViTForImageClassification.from_pretrained(folder)
    x = torch.randn(2, 3, 32, 32)
    model.eval(), reference.eval()
    with torch.no_grad():
        assert torch.equal(model(pixel_values=x).logits, reference(pixel_values=x).logits)
    assert model.config.id2label[3] == "3"


def test_infer_predicts_the_users_own_images(trained, tmp_path, cli):
    from PIL import Image

    images = tmp_path / "imgs"
    images.mkdir()
    for i in range(3):
        Image.new("RGB", (20, 20), color=(i * 80, 0, 0)).save(images / f"img{i}.png")
    folder = run_dir(trained[0]) / "model"
    result = cli("model=vit", "task=classify", "mode=infer", "model.variant=tiny", f"weights={folder}",
                 f"infer.inputs={images}/*.png")
    assert result.returncode == 0, result.output
    rows = [json.loads(line) for line in next(tmp_path.glob("outputs/*/*/predictions.jsonl")).read_text().splitlines()]
    assert [Path(r["input"]).name for r in rows] == ["img0.png", "img1.png", "img2.png"]
    assert all(len(r["predictions"]) == 3 and r["predictions"][0]["label"] in "0123456789" for r in rows)


def test_infer_without_weights_stops_with_a_clear_line(cli):
    result = cli("model=vit", "task=classify", "mode=infer", "model.variant=tiny")
    assert result.returncode == 2
    assert "weights=random" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_folder_of_class_directories_is_read_as_the_dataset(cli, tmp_path):
    from PIL import Image

    for label, colour in (("red", (255, 0, 0)), ("blue", (0, 0, 255))):
        (tmp_path / "data" / label).mkdir(parents=True)
        for i in range(6):
            Image.new("RGB", (16, 16), color=colour).save(tmp_path / "data" / label / f"{i}.png")
    result = cli(*SMOKE, f"data.path={tmp_path / 'data'}", "trainer.max_steps=5")
    assert result.returncode == 0, result.output
    metrics = json.loads(next(tmp_path.glob("outputs/*/*/metrics.json")).read_text())
    assert metrics["data"].startswith("folder") and metrics["train_examples"] + metrics["eval_examples"] == 12


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (("model=vti", "task=classify"), "unknown model 'vti' (model=vti); did you mean vit"),
        (("model=vit", "task=translate"), "model 'vit' has no task 'translate' (task=translate); its tasks are: classify"),
        (("model=vit", "task=classify", "trainer.lr=fast"), "bad value trainer.lr=fast"),
        (("model=vit", "task=classify", "trainer.lrr=1"), "unknown key 'trainer.lrr'"),
        (("model=vit", "task=classify", "data.path=/no/such/dir"), "data.path=/no/such/dir is not a directory"),
        (("model=vit", "task=classify", "model.variant=huge"), "model 'vit' has no variant 'huge'"),
        (("model=vit",), "no task chosen for model 'vit'"),
    ],
)
def test_bad_input_gets_one_clear_line_and_a_nonzero_exit(cli, overrides, expected):
    result = cli(*overrides, "weights=random")
    assert result.returncode == 2, result.output
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_run_from_python_returns_the_metrics(tmp_path):
    import garden

    metrics = garden.run([*SMOKE, "trainer.max_steps=3"], output_dir=tmp_path / "run")
    assert metrics["steps"] == 3 and (tmp_path / "run" / "metrics.json").exists()
