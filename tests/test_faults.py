"""Runs that survive faults (issue 18, part 3): each test is one row of the matrix below, run as a
real ``python -m garden`` and checked for its exit code, its one line and what is on disk after.

| row | command | exit | the line | on disk afterwards |
|---|---|---|---|---|
| resume mid-epoch (step 2 of 8) | ``resume=true hydra.run.dir=run`` | 0 | resuming from step-000002 | the uninterrupted run's model and metrics, in ``run`` (not the newer run under outputs/) |
| resume at an epoch boundary (step 4) | ``resume=run`` | 0 | resuming from step-000004 | the uninterrupted run's model and metrics |
| resume after the final eval (step 8, no metrics.json) | ``resume=run`` | 0 | resuming from step-000008 | the uninterrupted run's model and metrics |
| SIGTERM during an evaluation (after the last step) | the run, then ``kill -TERM`` | 143 | stopped by SIGTERM at step 8 of 8, in ... evaluation; ... resume=run | checkpoint step-000008, no metrics.json; resuming it gives the uninterrupted run |
| resume a finished run with other settings | ``resume=run data.limit=16 ...`` | 2 | that run is finished (metrics.json, 8 steps) ... | every file as it was |
| a new run in a folder that holds a run | ``hydra.run.dir=run`` | 2 | already holds a run (metrics.json, model/, checkpoints/) | every file as it was |
| resume with settings that change the result | ``resume=run trainer.lr=0.01 data.batch_size=4`` | 2 | the checkpoint was made with data.batch_size=8 (now 4), trainer.lr=... resume.allow_changes=[...] | every file as it was |
| a sweep with one bad point | ``--multirun data.batch_size=0,8`` | 1 | error: sweep job 0 (data.batch_size=0) failed: ... | job 1 done, job 0's failed.json, summary.json with both statuses |
| umask 022 | a sweep, then ``mode=infer`` | 0 | | metrics.json, predictions.jsonl, model/*, summary.json 0644; model/ 0755 |
| a checkpoint larger than ``ulimit -f`` | ``trainer.checkpoint_every=1`` | 2 | could not write checkpoint step-000001 ...; no earlier checkpoint exists | no checkpoint, no .partial-*, no metrics.json |
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import garden_cli
from garden.pytest_plugin import garden_process
from test_resume import ENV, assert_identical, steps_saved

# 2 epochs of 4 steps (32 examples, batch 8), an evaluation after each, a checkpoint after every
# step, all kept: the reference run leaves a checkpoint at each position a resume can start from.
# The evaluation takes one example a batch over the whole eval split (~360 digits), so it lasts
# long enough for a signal sent after the last step's checkpoint to land inside it.
RUN = ("model=vit", "task=classify", "preset=smoke", "weights=random", "data.limit=32", "data.eval_limit=null",
       "data.eval_batch_size=1", "trainer.max_steps=8", "trainer.log_every=1", "trainer.checkpoint_every=1",
       "trainer.keep_checkpoints=10")
TINY = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=2",
        "trainer.eval=false", "data.limit=16", "data.eval_limit=8")


def garden(*args: str, cwd: Path, timeout: float = 300):
    return garden_cli(*args, cwd=cwd, env=ENV, timeout=timeout)


def last_line(result) -> str:
    return " ".join(result.stderr.strip().splitlines()[-1].split()) if result.stderr.strip() else ""


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``folder`` with its modification time and bytes (but the lock file, which
    records whoever held the folder last)."""
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".garden.lock"}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("reference")
    result = garden(*RUN, "hydra.run.dir=run", cwd=where)
    assert result.returncode == 0, result.output
    assert steps_saved(where / "run") == list(range(1, 9))
    return where / "run"


def stopped_copy(reference: Path, where: Path, step: int) -> Path:
    """``reference`` as if it had been killed right after checkpoint ``step``: later checkpoints
    and the finished run's outputs removed."""
    run = where / "run"
    shutil.copytree(reference, run)
    for later in steps_saved(run):
        if later > step:
            shutil.rmtree(run / "checkpoints" / f"step-{later:06d}")
    (run / "metrics.json").unlink()
    shutil.rmtree(run / "model")
    return run


@pytest.mark.parametrize("step, how", [(2, "mid-epoch"), (4, "at an epoch boundary"), (8, "after the final eval")])
def test_a_stopped_run_resumes_from_any_position_to_the_uninterrupted_result(uninterrupted, tmp_path, step, how):
    run = stopped_copy(uninterrupted, tmp_path, step)
    position = json.loads((run / "checkpoints" / f"step-{step:06d}" / "checkpoint.json").read_text())["position"]
    assert (position["batch"], position["epoch_open"]) == {2: (2, True), 4: (4, True), 8: (4, False)}[step], how
    if step == 2:  # resume=true with a run dir continues that run, not the newest one under outputs/
        newer = stopped_copy(uninterrupted, tmp_path / "outputs" / "newer", 6)
        for manifest in newer.glob("checkpoints/*/checkpoint.json"):
            os.utime(manifest)
        resumed = garden(*RUN, "resume=true", f"hydra.run.dir={run}", cwd=tmp_path)
        assert not (newer / "metrics.json").exists()
    else:
        resumed = garden(*RUN, f"resume={run}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.output
    assert f"resuming from step-{step:06d}" in resumed.stderr
    assert_identical(run, uninterrupted)


def test_sigterm_during_an_evaluation_stops_with_143_a_checkpoint_and_the_resume_line(uninterrupted, tmp_path):
    log_file = tmp_path / "run.log"
    proc = garden_process(*RUN, "hydra.run.dir=run", cwd=tmp_path, log=log_file, env={**ENV, "COLUMNS": "200"})
    deadline = time.monotonic() + 240
    while 8 not in steps_saved(tmp_path / "run"):  # the last step is done: evaluations follow
        assert proc.poll() is None, log_file.read_text()
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=120)
    text = " ".join(log_file.read_text().split())
    assert code == 128 + signal.SIGTERM, text
    run = tmp_path / "run"
    line = re.search(r"stopped by SIGTERM at step 8 of 8, in (an|the final) evaluation; checkpoint (\S+); "
                     r"continue with the same command and resume=(\S+)", text)
    assert line, text
    assert Path(line[2]) == (run / "checkpoints" / "step-000008").resolve() and Path(line[3]) == run.resolve()
    assert steps_saved(run)[-1] == 8 and not (run / "metrics.json").exists()
    resumed = garden(*RUN, f"resume={run}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.output
    assert_identical(run, uninterrupted)


def test_a_finished_run_is_never_resumed_nor_reused(uninterrupted, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(uninterrupted, run)
    before = snapshot(run)
    smoke = garden(*RUN, f"resume={run}", "data.limit=16", "trainer.max_steps=2", cwd=tmp_path)
    assert smoke.returncode == 2, smoke.output
    assert f"error: resume={run.resolve()}: that run is finished (metrics.json, 8 steps) and garden never " \
           "overwrites a finished run's outputs" in last_line(smoke)
    again = garden(*RUN, f"hydra.run.dir={run}", cwd=tmp_path)
    assert again.returncode == 2, again.output
    assert f"hydra.run.dir={run.resolve()} already holds a run (metrics.json, model/, checkpoints/)" \
        in last_line(again)
    assert snapshot(run) == before


def test_resume_with_settings_that_change_the_result_is_refused_naming_them(uninterrupted, tmp_path):
    run = stopped_copy(uninterrupted, tmp_path, 4)
    before = snapshot(run)
    changed = garden(*RUN, f"resume={run}", "trainer.lr=0.01", "data.batch_size=4", "trainer.log_every=2",
                     cwd=tmp_path)
    assert changed.returncode == 2, changed.output
    line = last_line(changed)
    assert "the checkpoint was made with data.batch_size=8 (now 4), trainer.lr=0.001 (now 0.01), and that " \
           "changes what the run computes" in line, line
    assert line.endswith("resume.allow_changes=[data.batch_size,trainer.lr]")  # log_every changes nothing
    assert snapshot(run) == before


def test_allowed_changes_are_accepted_and_everything_else_still_refused(tmp_path):
    from garden.config import compose
    from garden.runs import checkpoint

    run = tmp_path / "run"
    saved = compose(["model=vit", "task=classify", "preset=smoke"])
    (run / "checkpoints" / "step-000004").mkdir(parents=True)
    (run / "checkpoints" / "step-000004" / "checkpoint.json").write_text(json.dumps(
        {"model": "vit", "task": "classify", "config": checkpoint.result_config(saved), "files": {}}))
    longer = compose(["model=vit", "task=classify", "preset=smoke", "trainer.max_steps=40", "trainer.lr=0.01",
                      "resume.allow_changes=[trainer.max_steps,trainer.l*]"])
    assert checkpoint.check_resumable(longer, run) == {"trainer.max_steps": (20, 40), "trainer.lr": (0.001, 0.01)}
    by_section = compose(["model=vit", "task=classify", "preset=smoke", "data.limit=32", "seed=1",
                          "resume.allow_changes=[data]"])
    with pytest.raises(checkpoint.CheckpointError, match=r"made with seed=0 \(now 1\).*allow_changes=\[seed\]$"):
        checkpoint.check_resumable(by_section, run)


@pytest.fixture(scope="module")
def sweep_with_a_bad_point(tmp_path_factory):
    """A two-point sweep whose first point cannot run, under the usual umask."""
    where = tmp_path_factory.mktemp("sweep")
    old = os.umask(0o022)
    try:
        result = garden("--multirun", *TINY, "data.batch_size=0,8", "hydra.sweep.dir=sweep", cwd=where)
        infer = garden("model=vit", "task=classify", "mode=infer", "weights=sweep/1/model", "data.eval_limit=4",
                       "hydra.run.dir=infer", cwd=where)
    finally:
        os.umask(old)
    return where, result, infer


def test_a_sweep_with_a_bad_point_runs_the_others_and_names_the_failure_in_one_line(sweep_with_a_bad_point):
    where, result, _ = sweep_with_a_bad_point
    assert result.returncode == 1, result.output
    assert "Traceback" not in result.output
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: sweep job 0 (data.batch_size=0) failed: "), errors
    assert "batch_size" in errors[0].split("failed: ", 1)[1]
    summary = json.loads((where / "sweep" / "summary.json").read_text())
    assert [j["status"] for j in summary["jobs"]] == ["failed", "done"] and summary["failed"] == 1
    assert summary["jobs"][0]["error"] == errors[0].split("failed: ", 1)[1]
    failed = json.loads((where / "sweep" / "0" / "failed.json").read_text())
    assert "Traceback" in failed["traceback"]  # the whole story stays on disk, for whoever debugs it
    assert (where / "sweep" / "1" / "metrics.json").is_file()


def test_outputs_are_readable_by_others_as_a_plain_write_would_leave_them(sweep_with_a_bad_point):
    where, result, infer = sweep_with_a_bad_point
    assert infer.returncode == 0, infer.output
    job = where / "sweep" / "1"
    files = [job / "metrics.json", where / "sweep" / "summary.json", where / "infer" / "predictions.jsonl",
             where / "infer" / "metrics.json", *sorted((job / "model").iterdir())]
    assert {"model.safetensors", "ipu_config.json", "config.json"} <= {f.name for f in files}
    assert {str(f.relative_to(where)): oct(f.stat().st_mode & 0o777) for f in files} == \
        {str(f.relative_to(where)): "0o644" for f in files}
    assert oct((job / "model").stat().st_mode & 0o777) == "0o755"


def test_a_checkpoint_larger_than_the_file_size_limit_stops_with_one_line_and_leaves_no_partial_files(tmp_path):
    import resource

    limit = 256 * 1024  # above Hydra's files and the log, below the model's 575 KB of weights

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run([sys.executable, "-m", "garden", *TINY, "trainer.checkpoint_every=1", "hydra.run.dir=run"],
                          cwd=tmp_path, env={**os.environ, **ENV}, capture_output=True, text=True, timeout=300,
                          preexec_fn=limited)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = " ".join(proc.stderr.strip().splitlines()[-1].split())
    assert line == f"error: could not write checkpoint step-000001 in {(tmp_path / 'run' / 'checkpoints').resolve()}: " \
                   "[Errno 27] File too large; no earlier checkpoint exists", line
    assert list((tmp_path / "run" / "checkpoints").iterdir()) == []
    assert not (tmp_path / "run" / "metrics.json").exists() and not (tmp_path / "run" / "model").exists()
