"""infer.precision=auto: the plan each kind of machine gets, and the agreement check that makes a
quantised plan fall back to fp32 when it changes the answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garden.backends import plans
from garden.backends.plans import Machine, choose
from garden.errors import ConfigError

BASE = 86_000_000  # ViT-base's and BERT-base's size
AVX2, AVX512_BF16, AMX = Machine("cpu", bf16=False), Machine("cpu", bf16=True), Machine("cpu", bf16=True, amx=True)


def test_an_avx2_or_avx512_bf16_cpu_gets_dynamic_int8_and_an_amx_cpu_bf16():
    """int8 on AVX512-VNNI ran 1.04-2.3x bf16 on an AVX-512 EPYC (docs/benchmarks.md); AMX's tiles win."""
    assert choose("auto", AVX2, params=BASE, batches=10).label == "int8-dynamic"
    assert choose("auto", AVX512_BF16, params=BASE, batches=10).label == "int8-dynamic"
    assert choose("auto", AVX512_BF16, params=BASE, batches=10, allow_int8=False).label == "bf16"
    assert choose("auto", AVX2, params=BASE, batches=10, allow_int8=False).label == "fp32"
    assert choose("auto", AMX, params=BASE, batches=10).label == "bf16"
    assert choose("auto", Machine("cuda", bf16=True), params=BASE, batches=10).label == "bf16"
    assert choose("auto", Machine("cuda", bf16=False), params=BASE, batches=10).label == "fp32"


def test_only_long_runs_on_a_gpu_compile_and_a_cpu_never_does_unless_told():
    gpu = Machine("cuda", bf16=True)
    assert choose("auto", gpu, params=BASE, batches=99, compile_min_batches=100).label == "bf16"
    long = choose("auto", gpu, params=BASE, batches=100, compile_min_batches=100)
    assert long.label == "bf16+compile" and "+compile" in long.reason
    assert choose("auto", gpu, params=BASE, batches=1000, can_compile=False).label == "bf16"
    for cpu in (AVX2, AMX):  # compiling made every CPU plan slower in garden's loop (plans' module doc)
        assert not choose("auto", cpu, params=BASE, batches=10_000, compile_min_batches=100).compile
    assert choose("int8-dynamic+compile", AVX2, params=BASE, batches=1).compile


def test_small_models_and_tasks_that_keep_full_precision_get_fp32():
    assert choose("auto", AMX, params=100_000, batches=10).label == "fp32"
    assert choose("auto", AVX2, params=BASE, batches=10, allow_int8=False).label == "fp32"
    assert choose("auto", AMX, params=BASE, batches=10, allow_bf16=False).label == "int8-dynamic"
    assert choose("auto", AVX2, params=BASE, batches=10, offered=("fp32", "bf16")).label == "fp32"


def test_a_named_plan_is_taken_as_written_and_a_wrong_one_names_the_choices():
    assert choose("int8-dynamic+compile", AMX, params=1, batches=1) == plans.Plan("int8-dynamic", True)
    with pytest.raises(ConfigError, match="infer.precision=int4 is not auto or one of fp32, bf16"):
        plans.parse("int4")
    with pytest.raises(ConfigError, match=r"\+compile"):
        plans.parse("fp32+jit")


def test_agreement_counts_top1_per_position_and_the_largest_logit_error():
    import torch

    check = plans.Agreement(threshold=0.75)
    ref = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    check.add(ref, ref + torch.tensor([[0.0, 0.5], [0.0, 0.0], [0.0, 2.0], [0.0, 0.0]]))  # one flips
    assert check.top1 == 0.75 and check.max_logit_error == 2.0 and check.accepted
    check.add(ref, -ref)  # four more flip
    assert check.top1 == 3 / 8 and not check.accepted
    ids = plans.Agreement(threshold=0.5)
    ids.add(torch.tensor([[1, 2, 3]]), torch.tensor([[1, 2, 4]]))  # generated tokens: 2 of 3 the same
    assert ids.top1 == 2 / 3 and ids.accepted
    ids.add(torch.tensor([[1, 2]]), torch.tensor([[1, 2, 3]]))  # generated tokens of another length
    assert not ids.comparable and not ids.accepted


# -- the check in a real run ------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained_vit(tmp_path_factory):
    """A tiny ViT trained for a few steps (fixed seed), saved as a run's model/ folder."""
    from garden.runs import run

    out = tmp_path_factory.mktemp("vit") / "run"
    run(["model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=30"], out)
    return out / "model"


def infer_run(folder: Path, out: Path, *extra: str) -> tuple[dict, list[dict]]:
    from garden.runs import run

    run(["model=vit", "task=classify", "mode=infer", "preset=smoke", f"weights={folder}", *extra], out)
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return json.loads((out / "metrics.json").read_text()), rows


def test_a_quantised_plan_that_agrees_with_fp32_is_kept_and_recorded(trained_vit, tmp_path):
    metrics, _ = infer_run(trained_vit, tmp_path / "int8", "infer.precision=int8-dynamic", "infer.min_agreement=0.5")
    plan = metrics["plan"]
    assert metrics["precision"] == "int8-dynamic" and not plan["fell_back"]
    assert plan["agreement"]["accepted"] and plan["agreement"]["top1"] >= 0.5
    assert plan["agreement"]["batches"] == 2 and plan["agreement"]["compared"] == 2 * 8
    assert 0 < plan["agreement"]["max_logit_error"] < 1


def test_a_quantised_plan_that_changes_the_answers_falls_back_to_fp32(trained_vit, tmp_path, monkeypatch, capsys):
    import torch

    class Disagreeing(torch.nn.Module):
        """A 'quantised' model whose logits are the real ones reversed: top-1 changes everywhere."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, **kwargs):
            out = self.model(**kwargs)
            out.logits = -out.logits
            return out

    _, fp32 = infer_run(trained_vit, tmp_path / "fp32", "infer.precision=fp32")
    monkeypatch.setattr(plans, "quantize_dynamic", Disagreeing)
    metrics, rows = infer_run(trained_vit, tmp_path / "bad", "infer.precision=int8-dynamic")
    plan = metrics["plan"]
    assert plan["fell_back"] and metrics["precision"] == "fp32"
    assert not plan["agreement"]["accepted"] and plan["agreement"]["top1"] < 0.99
    assert "fell back from int8-dynamic" in capsys.readouterr().err
    assert [r["predictions"] for r in rows] == [r["predictions"] for r in fp32]  # the checked batches too


@pytest.mark.slow
def test_a_compiled_plan_predicts_what_its_eager_plan_predicts(trained_vit, tmp_path):
    """``+compile`` (what auto runs for long runs) through the whole infer loop, last short batch too."""
    eager, eager_rows = infer_run(trained_vit, tmp_path / "eager", "infer.precision=fp32", "data.eval_limit=20")
    compiled, rows = infer_run(trained_vit, tmp_path / "compiled", "infer.precision=fp32+compile", "data.eval_limit=20")
    assert (eager["precision"], compiled["precision"]) == ("fp32", "fp32+compile")
    assert len(rows) == len(eager_rows) == 20  # batches of 8, 8 and 4: a second shape recompiles
    assert [r["predictions"][0]["label"] for r in rows] == [r["predictions"][0]["label"] for r in eager_rows]


def test_auto_on_a_tiny_model_runs_fp32_and_says_why(trained_vit, tmp_path, capsys):
    metrics, _ = infer_run(trained_vit, tmp_path / "auto")
    assert metrics["plan"]["requested"] == "auto" and metrics["precision"] == "fp32"
    assert "under 10M" in metrics["plan"]["reason"]
    assert "precision plan: fp32 (auto:" in capsys.readouterr().err
