"""Data-parallel replicas and gradient accumulation train exactly like one process over the same
global batch: torchrun with 2 replicas of the whole model (backend=local, DDP) and 2 replicas x 2
pipeline stages (backend=pipeline, a replica x stage DeviceMesh), checked against a single
process after two optimizer steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import garden_cli
from test_pipeline import torchrun

# lr=1e-3 and no warmup as in test_pipeline.py: AdamW's first steps are sign-like, so rounding
# differences (a batch summed in pieces) stay ~lr x 1e-3 and 1e-5 remains a meaningful bound.
TWO_STEPS = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=2",
             "trainer.lr=0.001", "trainer.warmup_steps=0", "trainer.eval=false", "data.batch_size=8")


def saved(run: Path) -> tuple[dict, dict]:
    from safetensors.torch import load_file

    return load_file(run / "model" / "model.safetensors"), json.loads((run / "metrics.json").read_text())


def assert_same_training(run: Path, reference: tuple[dict, dict]) -> dict:
    weights, metrics = saved(run)
    ref_weights, ref_metrics = reference
    assert weights.keys() == ref_weights.keys()
    worst = max((weights[k] - ref_weights[k]).abs().max().item() for k in ref_weights)
    assert worst < 1e-5, worst
    assert abs(metrics["eval"]["loss"] - ref_metrics["eval"]["loss"]) < 1e-5
    assert metrics["eval"]["accuracy"] == ref_metrics["eval"]["accuracy"]
    return metrics


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    where = tmp_path_factory.mktemp("one")
    result = garden_cli(*TWO_STEPS, "backend=local", "hydra.run.dir=run", cwd=where)
    assert result.returncode == 0, result.output
    return saved(where / "run")


def test_two_replicas_train_like_one_process_on_the_whole_batch(one_process, tmp_path):
    result = torchrun(2, *TWO_STEPS, "backend=local", "ipu.replication_factor=2", "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    metrics = assert_same_training(tmp_path / "run", one_process)
    assert metrics["batch"] == {"micro_batch_size": 4, "replicas": 2, "gradient_accumulation_steps": 1,
                                "device_iterations": 1, "effective_batch_size": 8}
    assert "batch 8 = 4 micro-batch x 2 replicas" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["run"], "only rank 0 writes"


def test_two_replicas_of_two_pipeline_stages_train_like_one_process(one_process, tmp_path):
    # two pipeline micro-batches per replica: with four 1-example micro-batches one weight whose
    # second AdamW step nearly cancels moves 1.8e-5 (pure rounding; 7e-6 here, as a 1 x 2 pipeline)
    result = torchrun(4, *TWO_STEPS, "backend=pipeline", "ipu.replication_factor=2", "ipu.ipus_per_replica=2",
                      "ipu.micro_batches=2", "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    metrics = assert_same_training(tmp_path / "run", one_process)
    assert metrics["backend"] == "pipeline"
    assert metrics["batch"]["replicas"] == 2 and metrics["batch"]["effective_batch_size"] == 8


def test_gradient_accumulation_takes_the_whole_batch_in_micro_steps(one_process, tmp_path):
    result = garden_cli(*TWO_STEPS, "backend=local", "ipu.gradient_accumulation_steps=2", "hydra.run.dir=run",
                        cwd=tmp_path)
    assert result.returncode == 0, result.output
    metrics = assert_same_training(tmp_path / "run", one_process)
    assert metrics["batch"]["micro_batch_size"] == 4 and metrics["batch"]["gradient_accumulation_steps"] == 2


def test_replicas_share_every_batch_without_duplicates_or_gaps():
    from torch.utils.data import BatchSampler, RandomSampler
    import torch

    from garden.runs.data import ShardedBatches, shard_sizes

    assert shard_sizes(8, 2, 2) == [[2, 2], [2, 2]]
    assert shard_sizes(5, 2) == [[3], [2]]  # the short last batch: one example fewer on replica 1
    assert shard_sizes(1, 2) == [[1], [0]]  # none at all: a stand-in weighed zero

    def shares(replica: int) -> list[list[int]]:
        base = BatchSampler(RandomSampler(range(21), generator=torch.Generator().manual_seed(3)), 6, False)
        return list(ShardedBatches(base, replica=replica, replicas=2, accumulation=2))

    whole = list(BatchSampler(RandomSampler(range(21), generator=torch.Generator().manual_seed(3)), 6, False))
    a, b = shares(0), shares(1)
    assert len(a) == len(b) == 2 * len(whole)  # accumulation=2 micro-batches per global batch, on each
    for j, batch in enumerate(whole):
        sizes = shard_sizes(len(batch), 2, 2)
        pieces = [p[:n] for p, n in zip(a[2 * j:2 * j + 2] + b[2 * j:2 * j + 2], sizes[0] + sizes[1])]
        assert [i for p in pieces for i in p] == batch, j  # each example once, in order
    assert shard_sizes(len(whole[-1]), 2, 2) == [[1, 1], [1, 0]]  # the last batch of 3
    assert b[-1] == whole[-1][:1]  # the empty piece's stand-in (weighed zero by the trainer)


def test_replicas_times_stages_that_do_not_match_the_processes_name_both_numbers():
    from garden.backends.base import replica_layout
    from garden.errors import BackendError

    with pytest.raises(BackendError, match=r"ipu.replication_factor=2 x ipu.ipus_per_replica=2 = 4 processes "
                                           r"but torchrun started 3"):
        replica_layout(2, 2, 3, "pipeline")
    with pytest.raises(BackendError, match=r"ipu.replication_factor=2 replicas but 3 processes were started"):
        replica_layout(2, 1, 3, "local")
    with pytest.raises(BackendError, match="torchrun --nproc-per-node 2"):
        replica_layout(2, 1, 1, "local")
    assert replica_layout(2, None, 4, "pipeline") == (2, 2)
