"""The HuBERT plugin's own tests (``pytest plugins/hubert/tests``; ``make test`` runs them too): the
stage layout counts only HuBERT's Transformer layers, as optimum-graphcore's HuBERT does, for both
its tasks, and Hub-format folders written by transformers' HubertForCTC and
HubertForSequenceClassification load to identical logits. What every speech family does alike
(smoke runs, training, stage blocks, bad audio) is in garden's tests/test_speech_multimodal.py."""

from __future__ import annotations

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


@pytest.mark.parametrize("task", ["asr", "audio-classify"])
def test_the_stage_layout_counts_only_the_transformer_layers(task):
    assert layer_blocks("hubert", task) == 2  # as optimum counts them: HuBERT its Transformer layers only


def hub_folder(model: str, task: str, folder: Path) -> tuple[str, object]:
    """A tiny checkpoint written by transformers itself (model and processor)."""
    import transformers

    from garden import registry
    from garden.runs import family_of

    entry = registry.get(model)
    head = {"asr": "HubertForCTC", "audio-classify": "HubertForSequenceClassification"}[task]
    config = transformers.HubertConfig(**dict(entry.variant("tiny").config))
    if task == "audio-classify":
        config.num_labels = 3
    getattr(transformers, head)(config).save_pretrained(folder)
    extractor = transformers.Wav2Vec2FeatureExtractor(return_attention_mask=True)
    tokenizer = family_of(entry).character_tokenizer(["zero one two"])
    processor = transformers.Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer)
    (processor if task == "asr" else extractor).save_pretrained(folder)
    return head, config


@pytest.mark.parametrize("model, task", [("hubert", "asr"), ("hubert", "audio-classify")])
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
