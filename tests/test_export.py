"""python -m garden export, and backend=onnxruntime / backend=openvino running the export: the same
predictions and metrics as torch, within the tolerance the export prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garden.errors import BackendError, ConfigError, WeightsError

pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")

# The tolerance export checks and prints (garden.export.RTOL/ATOL): an exported fp32 graph differs
# from eager torch only in the order of its sums. Softmax scores move less than the logits.
RTOL, ATOL = 1e-3, 1e-4


def train(tmp_path_factory, *overrides: str) -> Path:
    from garden.runs import run

    out = tmp_path_factory.mktemp("trained") / "run"
    run([*overrides, "preset=smoke", "weights=random", "trainer.max_steps=20"], out)
    return out / "model"


@pytest.fixture(scope="module")
def vit(tmp_path_factory):
    return train(tmp_path_factory, "model=vit", "task=classify")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return train(tmp_path_factory, "model=bert", "task=classify")


def predictions(out: Path, *overrides: str) -> tuple[dict, list[dict]]:
    from garden.runs import run

    metrics = run([*overrides, "preset=smoke"], out)
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()] \
        if (out / "predictions.jsonl").exists() else []
    return metrics, rows


def assert_same_predictions(expected: list[dict], got: list[dict]) -> None:
    import torch

    assert [r["input"] for r in got] == [r["input"] for r in expected]
    assert [[p["label"] for p in r["predictions"]] for r in got] == \
        [[p["label"] for p in r["predictions"]] for r in expected]
    scores = lambda rows: torch.tensor([[p["score"] for p in r["predictions"]] for r in rows])  # noqa: E731
    torch.testing.assert_close(scores(got), scores(expected), rtol=RTOL, atol=ATOL)


@pytest.mark.slow
@pytest.mark.parametrize("fmt,backend", [("onnx", "onnxruntime"), ("openvino", "openvino")])
def test_an_export_predicts_what_torch_predicts(vit, tmp_path, cli, fmt, backend):
    out = tmp_path / f"vit-{fmt}"
    result = cli("export", "model=vit", "model.variant=tiny", f"weights={vit}", f"format={fmt}", f"out={out}")
    assert result.returncode == 0, result.output
    assert "checked against torch on 3 held-out examples: max abs difference" in result.output
    assert "tolerance: atol 0.0001 + rtol 0.001" in result.output
    manifest = json.loads((out / "garden_export.json").read_text())
    assert manifest["inputs"] == ["pixel_values"] and manifest["outputs"] == ["logits"]
    assert manifest["check"]["max_abs_diff"] <= ATOL and (out / "preprocessor_config.json").exists()
    common = ("model=vit", "task=classify", "mode=infer", "infer.precision=fp32")
    _, torch_rows = predictions(tmp_path / "torch", *common, f"weights={vit}")
    metrics, rows = predictions(tmp_path / backend, *common, f"backend={backend}", f"weights={out}")
    assert metrics["backend"] == backend and metrics["predictions"] == len(torch_rows) > 0
    assert_same_predictions(torch_rows, rows)


@pytest.mark.slow
def test_a_text_model_exports_with_free_batch_and_sequence_lengths(bert, tmp_path):
    from garden.config import compose
    from garden.export import export

    cfg = compose(["model=bert", "task=classify", "mode=infer", f"weights={bert}", "preset=smoke"])
    done = export(cfg, "onnx", tmp_path / "bert-onnx", say=lambda _: None)
    assert done.inputs == ["input_ids", "attention_mask", "token_type_ids"] and done.max_abs_diff <= ATOL
    assert (tmp_path / "bert-onnx" / "tokenizer.json").exists()
    common = ("model=bert", "task=classify", "mode=eval")  # evaluation batches of several padded lengths
    expected, _ = predictions(tmp_path / "torch", *common, f"weights={bert}")
    got, _ = predictions(tmp_path / "ort", *common, "backend=onnxruntime", f"weights={tmp_path / 'bert-onnx'}")
    assert got["eval"]["accuracy"] == expected["eval"]["accuracy"]
    assert got["eval"]["loss"] == pytest.approx(expected["eval"]["loss"], rel=RTOL, abs=ATOL)


def test_a_graph_that_differs_from_torch_is_refused_and_not_kept(vit, tmp_path, monkeypatch):
    import garden.export as export_module
    from garden.config import compose

    real = export_module._runner

    def off_by_a_little(fmt, path, threads):
        run = real(fmt, path, threads)
        return lambda arrays: [r + 0.01 for r in run(arrays)]  # e.g. a wrongly folded constant

    monkeypatch.setattr(export_module, "_runner", off_by_a_little)
    cfg = compose(["model=vit", "task=classify", "mode=infer", f"weights={vit}", "preset=smoke"])
    with pytest.raises(BackendError, match=r"differs from torch by up to 0\.01.*not kept"):
        export_module.export(cfg, "onnx", tmp_path / "out", say=lambda _: None)
    assert list(tmp_path.iterdir()) == []  # neither the folder nor its staging copy


def test_a_task_that_generates_is_refused_before_anything_is_written(tmp_path):
    from garden.config import compose
    from garden.export import export

    cfg = compose(["model=gpt2", "task=generate", "mode=infer", "weights=random", "preset=smoke"])
    with pytest.raises(ConfigError, match=r"task generate cannot be exported: the task calls model\.generate"):
        export(cfg, "onnx", tmp_path / "out", say=lambda _: None)
    assert list(tmp_path.iterdir()) == []


def test_exported_backends_name_what_they_need(vit, tmp_path):
    from garden.runs import run

    with pytest.raises(WeightsError, match="holds no exported model.*python -m garden export"):
        run(["model=vit", "task=classify", "mode=infer", "backend=onnxruntime", f"weights={vit}"], tmp_path / "a")
    with pytest.raises(ConfigError, match="backend=openvino runs an exported model for mode=infer or mode=eval"):
        run(["model=vit", "task=classify", "backend=openvino", f"weights={vit}"], tmp_path / "b")
    with pytest.raises(ConfigError, match=r"export needs format=onnx\|openvino \(format=tflite is not one of them\)"):
        from garden.cli.export import cmd_export

        cmd_export(["model=vit", "format=tflite"])
