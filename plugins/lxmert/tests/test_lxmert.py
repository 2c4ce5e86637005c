"""The LXMERT plugin's own tests (``pytest plugins/lxmert/tests``; ``make test`` runs them too): the
user's own region features and questions are read, features of the wrong size stop with one line
naming the file and both shapes, the stage layout counts the language, vision and cross-modality
layers, and a Hub-format folder written by transformers' LxmertForQuestionAnswering loads to
identical answer scores. What every multimodal family does alike (smoke runs, training, stage
blocks) is in garden's tests/test_speech_multimodal.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def prepared(*overrides: str):
    from garden.config import compose
    from garden.runs import prepare

    return prepare(compose(list(overrides)))


def layer_blocks(model: str, task: str) -> int:
    """How many of the tiny variant's stage blocks are layers (what ``layers_per_ipu`` counts)."""
    p = prepared(f"model={model}", f"task={task}", "model.variant=tiny", "weights=random", "data.limit=8")
    net = p.family.build(p.spec).eval()
    return sum(b.kind == "layer" for b in p.family.stage_blocks(net, task))


def test_the_stage_layout_counts_the_language_vision_and_cross_modality_layers():
    assert layer_blocks("lxmert", "vqa") == 4  # the tiny variant's 2 language, 1 vision and 1 cross-modality layers


def hub_folder(model: str, task: str, folder: Path) -> tuple[str, object]:
    """A tiny checkpoint written by transformers itself (model and tokenizer)."""
    import transformers

    from garden import registry

    entry = registry.get(model)
    head = "LxmertForQuestionAnswering"
    config = transformers.LxmertConfig(**dict(entry.variant("tiny").config))
    getattr(transformers, head)(config).save_pretrained(folder)
    from garden_lxmert.family import question_tokenizer

    question_tokenizer().save_pretrained(folder)
    return head, config


@pytest.mark.parametrize("model, task", [("lxmert", "vqa")])
def test_a_hub_format_folder_loads_with_outputs_identical_to_transformers(tmp_path, model, task):
    import torch
    import transformers

    import garden

    head, config = hub_folder(model, task, tmp_path)
    ours = garden.load_model(model, task=task, weights=str(tmp_path)).eval()
    theirs = getattr(transformers, head).from_pretrained(tmp_path).eval()
    inputs = {"input_ids": torch.tensor([[2, 5, 6, 3]]), "visual_feats": torch.randn(1, 36, config.visual_feat_dim),
              "visual_pos": torch.rand(1, 36, 4)}
    with torch.no_grad():
        assert torch.equal(ours(**inputs).question_answering_score, theirs(**inputs).question_answering_score)


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
