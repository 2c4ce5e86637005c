"""Resumable runs: a run killed mid-way (SIGKILL, or SIGTERM's clean stop) and resumed ends with
the uninterrupted run's exact weights and metrics; checkpoints are never half-written; a damaged
one is skipped for the one before it; resume= refuses another model's run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import Result, garden_cli
from garden.pytest_plugin import garden_process, garden_ranks

# 3 epochs of 8 batches (preset=smoke: 64 examples, batch 8): a kill lands mid-epoch, and the
# resumed run crosses epoch ends (an eval, a new data order) before it finishes.
RUN = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=24",
       "trainer.checkpoint_every=1", "trainer.log_every=1")
PIPELINE = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=12",
            "trainer.checkpoint_every=1", "backend=pipeline", "ipu.ipus_per_replica=2")
ENV = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TRANSFORMERS_VERBOSITY": "error"}


def run(args: tuple, cwd: Path, nproc: int | None = None) -> Result:
    """A run that must succeed: forked from the test's server (``nproc`` ranks, as torchrun's)."""
    result = garden_ranks(nproc, *args, cwd=cwd, env=ENV) if nproc else garden_cli(*args, cwd=cwd, env=ENV)
    assert result.returncode == 0, result.output
    return result


def steps_saved(run_dir: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in (run_dir / "checkpoints").glob("step-*"))


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (torchrun starts its workers in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def interrupt(args: tuple, cwd: Path, run_dir: str, after_step: int, sig: int, nproc: int | None = None):
    """Start a run, wait until it has checkpointed past ``after_step``, then send ``sig`` (SIGKILL
    to every process of it, as a crashed node; SIGTERM to the launcher, as Slurm does)."""
    log_file = cwd / f"{run_dir.replace('/', '-')}.log"
    if nproc:  # torchrun itself: its workers and its own handling of a signal are the point
        with open(log_file, "w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone",
                                     f"--nproc-per-node={nproc}", "-m", "garden", *args, f"hydra.run.dir={run_dir}"],
                                    cwd=cwd, env={**os.environ, **ENV}, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
    else:
        proc = garden_process(*args, f"hydra.run.dir={run_dir}", cwd=cwd, log=log_file, env=ENV)
    deadline = time.monotonic() + 240
    while not any(s > after_step for s in steps_saved(cwd / run_dir)):
        assert proc.poll() is None, log_file.read_text()
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.005)
    if sig == signal.SIGKILL:
        for pid in [*descendants(proc.pid), proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    else:
        os.kill(proc.pid, sig)
    code = proc.wait(timeout=120)
    assert not (cwd / run_dir / "metrics.json").exists(), "the run finished before it was interrupted"
    return code, log_file.read_text()


def assert_identical(run_dir: Path, reference: Path) -> None:
    from safetensors.torch import load_file

    assert (run_dir / "model" / "model.safetensors").read_bytes() == \
        (reference / "model" / "model.safetensors").read_bytes()
    a, b = load_file(run_dir / "model" / "model.safetensors"), load_file(reference / "model" / "model.safetensors")
    assert all(a[k].equal(b[k]) for k in b)
    ours, theirs = (json.loads((d / "metrics.json").read_text()) for d in (run_dir, reference))
    assert ours["eval"] == theirs["eval"]
    assert ours["history"] == theirs["history"]
    assert ours["steps"] == theirs["steps"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("reference")
    run(RUN + ("hydra.run.dir=run",), where)
    return where / "run"


def test_a_killed_run_resumes_to_the_uninterrupted_weights_and_metrics(uninterrupted, tmp_path):
    code, _ = interrupt(RUN, tmp_path, "run", after_step=5, sig=signal.SIGKILL)
    assert code == -signal.SIGKILL
    killed_at = max(steps_saved(tmp_path / "run"))
    assert len(steps_saved(tmp_path / "run")) <= 3  # the last 2 kept (+1 if killed between write and prune)
    resumed = run(RUN + (f"resume={tmp_path / 'run'}",), tmp_path)
    assert f"resuming from step-{killed_at:06d}" in resumed.stderr
    assert_identical(tmp_path / "run", uninterrupted)
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["run"], "resumed in the same folder"
    from garden.runs.history import read_history

    steps = [[r["step"] for r in read_history(d) if "loss" in r] for d in (tmp_path / "run", uninterrupted)]
    assert steps[0] == steps[1] == list(range(1, len(steps[1]) + 1)), "each step once: none lost, none twice"


def test_sigterm_stops_cleanly_after_a_checkpoint_and_resume_true_finds_the_run(uninterrupted, tmp_path):
    code, log = interrupt(RUN, tmp_path, "outputs/day/time", after_step=3, sig=signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, log
    stopped_at = max(steps_saved(tmp_path / "outputs/day/time"))
    assert f"stopped by SIGTERM at step {stopped_at} of 24" in " ".join(log.split()), log
    resumed = run(RUN + ("resume=true",), tmp_path)  # the latest vit/classify run under outputs/
    assert f"resuming from step-{stopped_at:06d}" in resumed.stderr
    assert_identical(tmp_path / "outputs/day/time", uninterrupted)


@pytest.mark.distributed
def test_a_killed_two_stage_pipeline_resumes_to_the_uninterrupted_weights(tmp_path):
    run(PIPELINE + ("hydra.run.dir=reference",), tmp_path, nproc=2)
    code, _ = interrupt(PIPELINE, tmp_path, "run", after_step=3, sig=signal.SIGKILL, nproc=2)
    assert code == -signal.SIGKILL
    names = {p.name for p in (tmp_path / "run" / "checkpoints").glob("step-*/*")}
    assert {"stage-0.safetensors", "stage-1.safetensors", "rng-rank-001.pt"} <= names  # each stage's own
    resumed = run(PIPELINE + (f"resume={tmp_path / 'run'}",), tmp_path, nproc=2)
    assert "resuming from step-" in resumed.stderr
    assert_identical(tmp_path / "run", tmp_path / "reference")


def test_a_damaged_checkpoint_falls_back_to_the_previous_one_saying_so(uninterrupted, tmp_path):
    import shutil

    shutil.copytree(uninterrupted, tmp_path / "run")
    shutil.rmtree(tmp_path / "run" / "model")
    (tmp_path / "run" / "metrics.json").unlink()
    newest = tmp_path / "run" / "checkpoints" / "step-000024" / "model.safetensors"
    data = bytearray(newest.read_bytes())
    data[-100:] = b"\0" * 100
    newest.write_bytes(bytes(data))
    resumed = run(RUN + (f"resume={tmp_path / 'run'}",), tmp_path)
    text = " ".join(resumed.stderr.split())
    assert "checkpoint step-000024 is damaged (model.safetensors does not match its sha256); " \
           "falling back to step-000023" in text
    assert "resuming from step-000023" in text
    assert (tmp_path / "run" / "checkpoints" / "damaged-step-000024").is_dir()
    assert_identical(tmp_path / "run", uninterrupted)


def test_resume_of_another_models_run_names_both_models(cli, tmp_path):
    other = tmp_path / "bert-run" / "checkpoints" / "step-000010"
    other.mkdir(parents=True)
    (other / "checkpoint.json").write_text(json.dumps({"model": "bert", "task": "qa", "files": {}}))
    result = cli("model=vit", "task=classify", "preset=smoke", f"resume={tmp_path / 'bert-run'}")
    assert result.returncode == 2
    line = result.stderr.strip().splitlines()[-1]
    assert "is a run of model 'bert' (task qa), not of model 'vit' (task classify)" in line


def test_a_failed_write_leaves_the_previous_checkpoint_intact_with_a_one_line_error(tmp_path, monkeypatch):
    import torch

    from garden.runs import checkpoint

    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    identity = {"model": "m", "task": "t"}
    save = dict(part=("model", model, True), optimizer=optimizer, scheduler=scheduler, data_state=None,
                identity=identity)
    checkpoint.save(tmp_path, checkpoint.Position(step=1), **save)
    written = []

    def full_disk(path: Path, data: bytes) -> None:
        if written:  # the second file: half of it, then the disk is full
            path.write_bytes(data[: len(data) // 2])
            raise OSError(28, "No space left on device")
        written.append(path)
        path.write_bytes(data)

    monkeypatch.setattr(checkpoint, "write_bytes", full_disk)
    with pytest.raises(checkpoint.CheckpointError) as err:
        checkpoint.save(tmp_path, checkpoint.Position(step=2), **save)
    message = str(err.value)
    assert "\n" not in message
    assert "could not write checkpoint step-000002" in message and "No space left on device" in message
    assert "the previous checkpoint step-000001 is intact" in message
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-000001"]
    assert checkpoint.verify(tmp_path / "checkpoints" / "step-000001")["position"]["step"] == 1
