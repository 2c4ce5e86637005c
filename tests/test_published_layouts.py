"""Graphcore's published ``layers_per_ipu`` read unchanged and plan to exactly their counts.

Each family counts layers the way optimum-graphcore's pipelined model for it does: BERT, RoBERTa,
GPT-2 and ViT their Transformer layers, LXMERT its language, vision and cross-modality layers,
HuBERT its Transformer layers only (``PipelinedHubertForSequenceClassification`` keeps the feature
encoder on IPU 0), wav2vec2 its conv layers, positional embedding, Transformer layers and CTC
head (``PipelinedWav2Vec2ForCTC``). A published ``ipu_config.json`` is written as published and
read through ``ipu.config_file``; the plan is made on the meta device (``ipu.cost=params``).
DeBERTa, BART and T5 have no published layout recorded here (see docs/ipu.md).
"""

from __future__ import annotations

import json

import pytest

#: (model, variant, task, layers_per_ipu, where it is published)
PUBLISHED = [
    ("bert", "base", None, [0, 4, 4, 4], "Graphcore/bert-base-ipu"),
    ("bert", "large", None, [3, 7, 7, 7], "Graphcore/bert-large-ipu"),
    ("roberta", "base", None, [0, 4, 4, 4], "Graphcore/roberta-base-ipu"),
    ("roberta", "large", None, [3, 7, 7, 7], "Graphcore/roberta-large-ipu"),
    ("gpt2", "default", None, [0, 4, 4, 4], "Graphcore/gpt2-small-ipu"),
    ("vit", "default", None, [3, 3, 3, 3], "garden_vit's Graphcore layout"),
    ("lxmert", "default", None, [0, 9, 5, 5], "optimum's PipelinedLxmertForQuestionAnswering placement"),
    ("hubert", "base", "asr", [0, 4, 4, 4], "Graphcore/hubert-base-ipu"),
    ("wav2vec2", "base", "asr", [9, 4, 4, 4], "Graphcore/wav2vec2-ctc-base-ipu"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "variant", "task", "layout", "source"), PUBLISHED,
                         ids=[f"{m}-{v}" for m, v, *_ in PUBLISHED])
def test_a_published_layout_reads_unchanged_and_plans_exactly(tmp_path, model, variant, task, layout, source):
    from garden.cli.plan import plan_run

    published = {"layers_per_ipu": layout, "ipus_per_replica": len(layout), "matmul_proportion": 0.2}
    (tmp_path / "ipu_config.json").write_text(json.dumps(published))
    overrides = [f"model={model}", f"ipu.config_file={tmp_path}", "ipu.cost=params", "data.limit=8",
                 "data.eval_limit=4"]
    if variant != "default":
        overrides.append(f"model.variant={variant}")
    if task:
        overrides.append(f"task={task}")
    _, plan = plan_run(overrides)
    assert list(plan.plan.layers_per_ipu) == layout, source
