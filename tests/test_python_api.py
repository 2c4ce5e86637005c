"""garden's Python API as a notebook uses it: ``garden.run`` returns the run's folder,
``garden.history`` its metrics per step, ``garden.predictor`` predicts raw images, audio and text
as ``mode=infer`` predicts files, and ``garden.plan`` the stage plan; ``import garden`` and reading
a history import no torch."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import garden

SMOKE = ["model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=4",
         "data.limit=24", "data.eval_limit=8", "data.batch_size=4"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    where = tmp_path_factory.mktemp("api") / "run"
    return garden.run(SMOKE, output_dir=where)


def test_importing_garden_and_reading_a_history_import_no_torch(trained):
    code = ("import sys, garden; garden.list_models(); records = garden.history(sys.argv[1]); "
            "print(len(records), 'torch' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, trained["output_dir"]], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [str(len(garden.history(trained["output_dir"]))), "False", "False"]


def test_run_returns_its_folder_and_history_its_steps(trained):
    records = garden.history(trained["output_dir"])
    assert [r["step"] for r in records if "loss" in r] == [1, 2, 3, 4]
    assert records[-1]["eval_accuracy"] == pytest.approx(trained["eval"]["accuracy"])
    on_disk = json.loads((__import__("pathlib").Path(trained["output_dir"]) / "metrics.json").read_text())
    assert "output_dir" not in on_disk and on_disk["eval"] == trained["eval"]


def test_the_predictor_takes_images_as_files_pil_and_arrays_and_agrees_with_mode_infer(trained, tmp_path):
    from PIL import Image

    model = trained["output_dir"] + "/model"
    picture = (np.arange(8 * 8 * 3).reshape(8, 8, 3) * 5 % 256).astype("uint8")
    Image.fromarray(picture).save(tmp_path / "digit.png")
    infer = garden.run(["model=vit", "task=classify", "mode=infer", "model.variant=tiny", f"weights={model}",
                        f"infer.inputs={tmp_path / 'digit.png'}"], output_dir=tmp_path / "infer")
    expected = json.loads((tmp_path / "infer" / "predictions.jsonl").read_text().splitlines()[0])
    predict = garden.predictor("vit", task="classify", variant="tiny", weights=model)
    rows = predict([str(tmp_path / "digit.png"), Image.open(tmp_path / "digit.png"), picture])
    assert infer["predictions"] == 1 and len(rows) == 3
    assert rows[0]["input"] == str(tmp_path / "digit.png") and rows[1]["input"] == "input 1"
    for row in rows:
        assert row["prediction"] == expected["predictions"][0]["label"] and row["prediction"] in predict.labels
        assert [p["score"] for p in row["predictions"]] == pytest.approx(
            [p["score"] for p in expected["predictions"]], abs=1e-5)  # fp32 softmax, same pixels


def test_the_predictor_without_inputs_predicts_the_held_out_split(trained):
    predict = garden.predictor("vit", task="classify", variant="tiny", weights=trained["output_dir"] + "/model",
                               overrides=["data.eval_limit=8"])
    rows = predict()
    assert len(rows) == 8 and all("label" in r and r["prediction"] in predict.labels for r in rows)


def test_the_predictor_transcribes_a_waveform_as_it_transcribes_its_file(tmp_path):
    import soundfile

    wave = (0.1 * np.sin(np.linspace(0, 2000, 16000))).astype("float32")
    soundfile.write(tmp_path / "tone.wav", wave, 16000)
    predict = garden.predictor("wav2vec2", task="asr", variant="tiny", weights="random",
                               overrides=["data.limit=8", "data.eval_limit=4"])
    from_array, from_pair, from_file = predict([wave, (wave, 16000), str(tmp_path / "tone.wav")])
    assert isinstance(from_file["prediction"], str) and from_file["prediction"] == from_file["transcript"]
    assert from_array["prediction"] == from_pair["prediction"] == from_file["prediction"]
    assert from_array["predictions"][0]["score"] == pytest.approx(from_file["predictions"][0]["score"], abs=1e-5)


def test_the_predictor_labels_text(tmp_path):
    predict = garden.predictor("bert", task="classify", variant="tiny", weights="random",
                               overrides=["data.limit=16", "data.eval_limit=4"])
    rows = predict(["A lovely film.", "Dull and far too long."])
    assert [r["input"] for r in rows] == ["A lovely film.", "Dull and far too long."]
    assert all(r["prediction"] in predict.labels for r in rows)


def test_an_input_the_predictor_cannot_read_is_one_line(trained):
    predict = garden.predictor("vit", task="classify", variant="tiny", weights=trained["output_dir"] + "/model")
    with pytest.raises(garden.GardenError, match="cannot predict from a set; give a path or text"):
        predict([{1, 2}])


def test_plan_returns_what_plan_json_prints():
    summary = garden.plan(["model=vit", "ipu.ipus_per_replica=2", "ipu.cost=params"])
    assert summary["model"] == "vit" and len(summary["stages"]) == 2
    assert sum(s["layers"] for s in summary["stages"]) == sum(summary["layers_per_ipu"])
