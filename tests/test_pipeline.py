"""The same stage plan runs for real under torchrun (gloo, one stage per process) and gives the
local run's numbers: forward outputs, and the update a training step makes (compared relative to
its size by tests/equivalence.py, which says why SGD and why that tolerance).

The 2-stage step and the refused process count run under torchrun itself; the 3-stage step, the
check that catches a doubled loss and the inference fork their ranks with torchrun's variables
(:func:`garden.pytest_plugin.garden_ranks`), without the launcher's imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from garden.pytest_plugin import Result, garden_ranks

from conftest import garden_cli
from equivalence import SGD_STEPS, assert_same_steps, initial, mutation_env, read_run, step_mismatches

#: real torchrun ranks (deselect with -m 'not distributed')
pytestmark = pytest.mark.distributed

ONE_STEP = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=1", *SGD_STEPS,
            "trainer.lr=0.1", "trainer.eval=false", "data.batch_size=8")


def torchrun(nproc: int, *args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
         "-m", "garden", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300)


def ranks(nproc: int, *args: str, cwd: Path, env: dict | None = None) -> Result:
    """:func:`torchrun`'s ranks forked from the test's server (torchrun itself where they cannot be)."""
    return garden_ranks(nproc, *args, cwd=cwd, env={"OMP_NUM_THREADS": "1", **(env or {})})


@pytest.fixture(scope="module")
def before(tmp_path_factory):
    return initial(ONE_STEP, tmp_path_factory.mktemp("initial"))


@pytest.fixture(scope="module")
def local_step(tmp_path_factory):
    where = tmp_path_factory.mktemp("local")
    result = garden_cli(*ONE_STEP, "backend=local", cwd=where)
    assert result.returncode == 0, result.output
    return read_run(where)


@pytest.mark.parametrize("stages, launch", [(2, torchrun), (3, ranks)], ids=["2-torchrun", "3-ranks"])
def test_a_pipelined_training_step_equals_the_local_one(before, local_step, tmp_path, stages, launch):
    result = launch(stages, *ONE_STEP, "backend=pipeline", f"ipu.ipus_per_replica={stages}", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    piped = read_run(tmp_path)
    assert piped.metrics["backend"] == "pipeline"
    assert_same_steps(before, local_step, piped)
    assert len(list(tmp_path.glob("outputs/*/*"))) == 1, "only rank 0 writes"


#: the bug: the last stage's micro-batch loss doubled (as a sum over 2 micro-batches would be)
PIPELINE_LOSS_X2 = """
    import sys
    from garden.backends import pipeline

    weighted = pipeline.PipelineBackend._micro_batch_loss

    def doubled(self, output, target):
        print("MUTATION: pipeline loss x2", file=sys.stderr, flush=True)
        return 2 * weighted(self, output, target)

    pipeline.PipelineBackend._micro_batch_loss = doubled
"""


def test_the_step_comparison_catches_a_pipeline_whose_loss_is_doubled(before, local_step, tmp_path):
    (tmp_path / "run").mkdir()
    result = ranks(2, *ONE_STEP, "backend=pipeline", cwd=tmp_path / "run",
                   env=mutation_env(tmp_path / "site", PIPELINE_LOSS_X2))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "MUTATION: pipeline loss x2" in result.stderr
    problems = step_mismatches(before, local_step, read_run(tmp_path / "run"))
    assert len(problems) > len(before.weights) / 2, problems  # twice the gradient: (nearly) every update is off
    with pytest.raises(AssertionError, match="the steps differ"):
        assert_same_steps(before, local_step, read_run(tmp_path / "run"))


def test_pipelined_inference_predicts_what_the_local_model_predicts(tmp_path):
    infer = ("model=vit", "task=classify", "mode=infer", "model.variant=tiny", "weights=random",
             "data.limit=16", "data.eval_limit=16", "infer.precision=fp32")
    (tmp_path / "local").mkdir(), (tmp_path / "piped").mkdir()
    local = garden_cli(*infer, cwd=tmp_path / "local")
    assert local.returncode == 0, local.output
    piped = ranks(2, *infer, "backend=pipeline", "ipu.micro_batches=2", cwd=tmp_path / "piped")
    assert piped.returncode == 0, piped.stdout + piped.stderr

    def predictions(where: Path) -> list[dict]:
        return [json.loads(x) for x in next(where.glob("outputs/*/*/predictions.jsonl")).read_text().splitlines()]

    a, b = predictions(tmp_path / "local"), predictions(tmp_path / "piped")
    assert len(a) == len(b) == 16
    for x, y in zip(a, b):
        assert [p["label"] for p in x["predictions"]] == [p["label"] for p in y["predictions"]]
        # scores are softmax probabilities in [0, 1]: an absolute bound is the meaningful one (rtol 0)
        torch.testing.assert_close(torch.tensor([p["score"] for p in x["predictions"]], dtype=torch.float64),
                                   torch.tensor([q["score"] for q in y["predictions"]], dtype=torch.float64),
                                   rtol=0, atol=1e-5)


def test_backend_pipeline_without_torchrun_says_how_to_start_it(cli):
    result = cli(*ONE_STEP, "backend=pipeline")
    assert result.returncode == 2
    assert "needs torchrun" in result.stderr and "--nproc-per-node" in result.stderr


def test_stages_that_do_not_match_the_process_count_name_both_numbers(tmp_path):
    result = torchrun(2, *ONE_STEP, "backend=pipeline", "ipu.ipus_per_replica=3", cwd=tmp_path)
    assert result.returncode != 0
    assert "ipu.ipus_per_replica=3 stages but torchrun started 2 processes" in result.stderr
