"""Data-parallel replicas and gradient accumulation train exactly like one process over the same
global batch: torchrun with 2 replicas of the whole model (backend=local, DDP) and 2 replicas x 2
pipeline stages (backend=pipeline, a replica x stage DeviceMesh), checked against a single
process after two SGD steps (each weight's update, relative to its size: tests/equivalence.py).
The DDP replicas run under torchrun itself; the replica x stage mesh and the check that catches a
share divided twice fork their ranks (tests/test_pipeline.py's ``ranks``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import garden_cli
from equivalence import SGD_STEPS, Run, assert_same_steps, initial, mutation_env, read_run, step_mismatches
from test_pipeline import ranks, torchrun

#: real torchrun ranks (deselect with -m 'not distributed')
pytestmark = pytest.mark.distributed

TWO_STEPS = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=2", *SGD_STEPS,
             "trainer.lr=0.1", "trainer.eval=false", "data.batch_size=8")


@pytest.fixture(scope="module")
def before(tmp_path_factory):
    return initial(TWO_STEPS, tmp_path_factory.mktemp("initial"))


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    where = tmp_path_factory.mktemp("one")
    result = garden_cli(*TWO_STEPS, "backend=local", "hydra.run.dir=run", cwd=where)
    assert result.returncode == 0, result.output
    return read_run(where / "run")


def replicated(where: Path, env: dict | None = None, launch=ranks) -> tuple[Run, str]:
    """Two replicas of the whole model (DDP) take the two steps: the run and its stderr."""
    result = launch(2, *TWO_STEPS, "backend=local", "ipu.replication_factor=2", "hydra.run.dir=run", cwd=where, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return read_run(where / "run"), result.stderr


def accumulated(where: Path, env: dict | None = None) -> tuple[Run, str]:
    """One process takes each step's batch in two micro-steps: the run and its stderr."""
    result = garden_cli(*TWO_STEPS, "backend=local", "ipu.gradient_accumulation_steps=2", "hydra.run.dir=run",
                        cwd=where, env=env)
    assert result.returncode == 0, result.output
    return read_run(where / "run"), result.stderr


def test_two_replicas_train_like_one_process_on_the_whole_batch(before, one_process, tmp_path):
    run, stderr = replicated(tmp_path, launch=torchrun)
    assert_same_steps(before, one_process, run)
    assert run.metrics["batch"] == {"micro_batch_size": 4, "replicas": 2, "gradient_accumulation_steps": 1,
                                    "device_iterations": 1, "effective_batch_size": 8}
    assert "batch 8 = 4 micro-batch x 2 replicas" in stderr
    assert [p.name for p in tmp_path.iterdir()] == ["run"], "only rank 0 writes"


def test_two_replicas_of_two_pipeline_stages_train_like_one_process(before, one_process, tmp_path):
    result = ranks(4, *TWO_STEPS, "backend=pipeline", "ipu.replication_factor=2", "ipu.ipus_per_replica=2",
                   "ipu.micro_batches=2", "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    run = read_run(tmp_path / "run")
    assert_same_steps(before, one_process, run)
    assert run.metrics["backend"] == "pipeline"
    assert run.metrics["batch"]["replicas"] == 2 and run.metrics["batch"]["effective_batch_size"] == 8


def test_gradient_accumulation_takes_the_whole_batch_in_micro_steps(before, one_process, tmp_path):
    run, _ = accumulated(tmp_path)
    assert_same_steps(before, one_process, run)
    assert run.metrics["batch"]["micro_batch_size"] == 4 and run.metrics["batch"]["gradient_accumulation_steps"] == 2


#: the bugs: each micro-batch's share weighed once more by 1/replicas (DDP's average without the
#: ``x replicas`` that undoes it) or by 1/accumulation (an accumulated loss divided twice)
SHARE_DIVIDED_BY = """
    import sys
    from garden.backends import local

    train_step = local.LocalBackend.train_step

    def divided(self, batch, scale=1.0, sync=True):
        print("MUTATION: share divided by {by}", file=sys.stderr, flush=True)
        return train_step(self, batch, scale / self.{by}, sync)

    local.LocalBackend.train_step = divided
"""


@pytest.mark.parametrize("by", ["replicas", "accumulation"])
def test_the_step_comparison_catches_a_share_divided_twice(before, one_process, tmp_path, by):
    env = mutation_env(tmp_path / "site", SHARE_DIVIDED_BY.format(by=by))
    (tmp_path / "run").mkdir()
    run, stderr = (replicated if by == "replicas" else accumulated)(tmp_path / "run", env)
    assert f"MUTATION: share divided by {by}" in stderr
    problems = step_mismatches(before, one_process, run)
    assert len(problems) > len(before.weights) / 2, problems  # half the gradient: (nearly) every update is off
    with pytest.raises(AssertionError, match="the steps differ"):
        assert_same_steps(before, one_process, run)


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
