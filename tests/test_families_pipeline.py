"""Every family's stage layout runs for real as a 2-stage pipeline under torchrun and gives the
local run's numbers: the same weights after a training step, the same eval loss.

Dropout is switched off (``+model.options.dropout=0``) so both runs draw no random masks, and
the step is plain SGD: AdamW's first step moves each weight by about lr * sign(gradient), which
turns float rounding in a near-zero gradient into a difference of up to 2 * lr.
"""

from __future__ import annotations

import pytest
import torch

from conftest import garden_cli
from test_pipeline import saved, torchrun

FAMILIES = [
    ("bert", "classify"),
    ("roberta", "mlm"),
    ("camembert", "classify"),
    ("deberta", "qa"),
    ("gpt2", "causal-lm"),
    ("bart", "summarize"),
    ("t5", "text2text"),
    ("wav2vec2", "asr"),
    ("hubert", "audio-classify"),
    ("lxmert", "vqa"),
    ("cluster_gcn", "node-classify"),
    ("schnet", "graph-regress"),  # SchNet has no dropout: its option is refused
]
NO_DROPOUT_OPTION = {"schnet"}


def installed(model: str) -> bool:
    from garden.registry import entries

    return model in entries()


@pytest.mark.parametrize("model, task", FAMILIES)
def test_a_two_stage_pipeline_step_equals_the_local_step(model, task, tmp_path):
    if not installed(model):
        pytest.skip(f"{model} is not installed")
    step = (f"model={model}", f"task={task}", "preset=smoke", "weights=random", "trainer.max_steps=1",
            "trainer.optimizer=sgd", "trainer.lr=0.1", "trainer.warmup_steps=0", "trainer.eval=false", "data.batch_size=4",
            "data.eval_limit=8", "trainer.threads=1",
            *(() if model in NO_DROPOUT_OPTION else ("+model.options.dropout=0",)))
    (tmp_path / "local").mkdir(), (tmp_path / "piped").mkdir()
    local = garden_cli(*step, cwd=tmp_path / "local")
    assert local.returncode == 0, local.output
    piped = torchrun(2, *step, "backend=pipeline", "ipu.micro_batches=2", cwd=tmp_path / "piped")
    assert piped.returncode == 0, piped.stdout[-3000:] + piped.stderr[-3000:]
    (weights, metrics), (local_weights, local_metrics) = saved(tmp_path / "piped"), saved(tmp_path / "local")
    assert metrics["backend"] == "pipeline" and weights.keys() == local_weights.keys()
    worst = max((weights[k] - v).abs().max().item() for k, v in local_weights.items() if v.numel())
    assert worst < 1e-5, f"largest weight difference {worst:.2e}"
    assert abs(metrics["eval"]["loss"] - local_metrics["eval"]["loss"]) < 1e-5


def test_tgn_pipelines_with_its_memory_on_one_stage_and_matches_local_steps(tmp_path):
    """Three steps, so later steps read the memory and neighbours the earlier ones wrote: the
    state lives on the first stage and the padded neighbourhood crosses to the second."""
    if not installed("tgn"):
        pytest.skip("tgn is not installed")
    steps = ("model=tgn", "task=link-predict", "preset=smoke", "weights=random", "trainer.max_steps=3",
             "trainer.optimizer=sgd", "trainer.lr=0.01", "trainer.warmup_steps=0", "trainer.eval=false",
             "data.batch_size=16", "data.limit=48", "data.eval_limit=32", "trainer.threads=1",
             "+model.options.dropout=0", "+model.options.layers=2")
    (tmp_path / "local").mkdir(), (tmp_path / "piped").mkdir()
    local = garden_cli(*steps, cwd=tmp_path / "local")
    assert local.returncode == 0, local.output
    piped = torchrun(2, *steps, "backend=pipeline", cwd=tmp_path / "piped")
    assert piped.returncode == 0, piped.stdout[-3000:] + piped.stderr[-3000:]
    (weights, metrics), (local_weights, local_metrics) = saved(tmp_path / "piped"), saved(tmp_path / "local")
    assert metrics["backend"] == "pipeline" and weights.keys() == local_weights.keys()
    assert local_weights["neighbours.neighbours"].ge(0).sum() > 0, "the steps wrote events into the state"
    for name, tensor in local_weights.items():  # the neighbour table's empty slots hold -inf times
        torch.testing.assert_close(weights[name], tensor, atol=1e-5, rtol=0, msg=name)
    assert abs(metrics["eval"]["loss"] - local_metrics["eval"]["loss"]) < 1e-5
    assert metrics["eval"]["average_precision"] == pytest.approx(local_metrics["eval"]["average_precision"], abs=1e-6)
