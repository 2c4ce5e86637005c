"""Concurrent runs lose nothing (issue 23): a run directory belongs to one process.

New runs started in the same second get folders of their own; a process that finds its folder
held by another stops with one line naming the holder, before it writes anything there; a folder
that holds a run is only continued by ``resume=``; two ``registry build`` at once leave a valid
registry.json. The load test (``-m slow``) starts 8 smoke runs at once in one folder, and two
resumes of one run at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from garden.pytest_plugin import Started, garden_process
from test_resume import ENV, descendants, steps_saved

TINY = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=2",
        "trainer.eval=false", "data.limit=16", "data.eval_limit=8")

# Composes garden's Hydra config as a run does and prints the folders a run and a sweep would get,
# with Hydra's clock stopped at one second: as if every process started in that same second.
FOLDERS = """
import datetime
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf
from garden.config import register

register()
with initialize_config_module(config_module="garden.conf", version_base=None):
    OmegaConf.register_new_resolver(
        "now", lambda pattern: datetime.datetime(2026, 12, 1, 3, 31, 53).strftime(pattern), replace=True)
    cfg = compose(config_name="config", overrides=["model=vit", "task=classify"], return_hydra_config=True)
    print(cfg.hydra.run.dir, cfg.hydra.sweep.dir)
"""


def test_runs_started_in_the_same_second_get_folders_of_their_own(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", FOLDERS], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              text=True) for _ in range(4)]
    printed = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    runs, sweeps = {run for run, _ in printed}, {sweep for _, sweep in printed}
    assert len(runs) == 4 and len(sweeps) == 4, printed
    assert all(run.startswith("outputs/2026-12-01/03-31-53-") for run in runs), runs


def hold(run_dir: Path):
    """Hold ``run_dir`` from this (test) process, as a running garden would."""
    from garden.runs.rundir import claim

    return claim(run_dir, resuming=True)


def test_a_second_process_on_a_held_run_dir_stops_naming_the_holder_and_writes_nothing(cli, tmp_path):
    run = tmp_path / "run"
    held = hold(run)
    try:
        result = cli(*TINY, f"hydra.run.dir={run}")
    finally:
        held.release()
    assert result.returncode == 2, result.output
    line = " ".join(result.stderr.strip().splitlines()[-1].split())
    assert line.startswith(f"error: {run.resolve()} is in use by pid {os.getpid()} on host {socket.gethostname()} "
                           "(started "), line
    assert line.endswith(f"run again without hydra.run.dir=, or give a new folder"), line
    assert sorted(p.name for p in run.iterdir()) == [".garden.lock"], "Hydra wrote nothing into it"


def test_a_resume_of_a_run_another_process_holds_is_refused_with_how_to_continue(cli, tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints" / "step-000010").mkdir(parents=True)
    (run / "checkpoints" / "step-000010" / "checkpoint.json").write_text(
        json.dumps({"model": "vit", "task": "classify", "files": {}}))
    held = hold(run)
    try:
        result = cli(*TINY, f"resume={run}")
    finally:
        held.release()
    assert result.returncode == 2, result.output
    line = " ".join(result.stderr.strip().splitlines()[-1].split())
    assert f"is in use by pid {os.getpid()}" in line
    assert line.endswith(f"wait for it to end (or stop it: kill {os.getpid()}), then resume={run.resolve()}"), line


def test_a_new_run_or_sweep_never_reuses_a_folder_that_holds_one(cli, tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "predictions.jsonl").write_text("{}\n")
    result = cli(*TINY, "hydra.run.dir=run")
    assert result.returncode == 2, result.output
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: hydra.run.dir={(tmp_path / 'run').resolve()} already holds a run (predictions.jsonl); a new run "
        f"never reuses one: give a new folder, or continue that run with resume={(tmp_path / 'run').resolve()}")
    assert not (tmp_path / "run" / ".hydra").exists()
    (tmp_path / "sweep" / "0").mkdir(parents=True)
    (tmp_path / "sweep" / "0" / "metrics.json").write_text("{}\n")
    swept = cli("--multirun", *TINY, "seed=0,1", "hydra.sweep.dir=sweep")
    assert swept.returncode == 2, swept.output
    assert swept.stderr.strip().splitlines()[-1] == (
        "error: hydra.sweep.dir=sweep already holds a sweep (jobs 0); a new sweep never reuses one: give a new folder")
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == ["0"]


def test_two_registry_builds_at_once_leave_a_valid_registry_json(tmp_path):
    env = {**os.environ, "COLUMNS": "200"}
    old = os.umask(0o022)
    try:
        procs = [subprocess.Popen([sys.executable, "-m", "garden", "registry", "build", "--path", "registry.json"],
                                  cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        outputs = [p.communicate(timeout=120) for p in procs]
    finally:
        os.umask(old)
    assert [p.returncode for p in procs] == [0, 0], outputs
    written = tmp_path / "registry.json"
    assert json.loads(written.read_text()) == json.loads((ROOT / "registry.json").read_text())
    assert oct(written.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in tmp_path.iterdir()] == ["registry.json"], "no temporary file left behind"


# -- the load test ----------------------------------------------------------------------------------

LOAD = 8
LOAD_RUN = (*TINY, "trainer.max_steps=1", "data.limit=8", "data.eval_limit=4", "trainer.threads=1")


def start(args: tuple, cwd: Path, log: Path) -> Started:
    """A run started at once, in a process of its own (forked from the test's server)."""
    return garden_process(*args, cwd=cwd, log=log, env={**ENV, "COLUMNS": "300"})


def report(figures: dict) -> None:
    """The load test's figures, for the issue's closing note (``pytest -s`` shows them)."""
    print("\nload test: " + json.dumps(figures))


@pytest.mark.slow
def test_eight_runs_started_at_once_in_one_folder_each_keep_their_own_directory(tmp_path):
    rates = [f"{i}e-3" for i in range(1, LOAD + 1)]
    began = time.monotonic()
    procs = {lr: start((*LOAD_RUN, f"trainer.lr={lr}"), tmp_path, tmp_path / f"lr-{lr}.log") for lr in rates}
    codes = {lr: p.wait(timeout=900) for lr, p in procs.items()}
    wall = time.monotonic() - began
    folders = sorted(p.parent for p in tmp_path.glob("outputs/*/*/.hydra"))
    report({"runs": LOAD, "cores": os.cpu_count(), "wall_s": round(wall, 1), "directories": len(folders),
            "failures": sum(c != 0 for c in codes.values())})
    assert codes == {lr: 0 for lr in rates}, {lr: (tmp_path / f"lr-{lr}.log").read_text()[-2000:] for lr in rates}
    assert len(folders) == LOAD
    weights = set()
    for lr in rates:
        log = " ".join((tmp_path / f"lr-{lr}.log").read_text().split())
        [printed] = {Path(w.strip("│ ")) for w in log.split() if "/outputs/" in w}
        assert printed in folders, (lr, printed)  # each run says where it wrote, and it is its own folder
        assert f"trainer.lr={lr}" in (printed / ".hydra" / "overrides.yaml").read_text()
        assert f"trainer.lr={lr}" in (printed / "model" / "README.md").read_text()  # the card's command
        assert json.loads((printed / "metrics.json").read_text())["steps"] == 1
        lock = json.loads((printed / ".garden.lock").read_text())
        assert lock["pid"] == procs[lr].pid  # written by the process that ran with this lr
        weights.add(hashlib.sha256((printed / "model" / "model.safetensors").read_bytes()).hexdigest())
    assert len(weights) == LOAD, "eight learning rates, eight different models"


@pytest.mark.slow
def test_two_resumes_of_one_run_at_once_exactly_one_proceeds(tmp_path):
    args = (*TINY, "trainer.max_steps=40", "trainer.checkpoint_every=1", "data.limit=64")
    first = start((*args, "hydra.run.dir=run"), tmp_path, tmp_path / "first.log")
    deadline = time.monotonic() + 300
    while not steps_saved(tmp_path / "run") or max(steps_saved(tmp_path / "run")) < 3:
        assert first.poll() is None, (tmp_path / "first.log").read_text()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    for pid in [*descendants(first.pid), first.pid]:
        os.kill(pid, 9)
    first.wait(timeout=60)
    began = time.monotonic()
    procs = [start((*args, f"resume={tmp_path / 'run'}"), tmp_path, tmp_path / f"resume-{i}.log") for i in range(2)]
    codes = [p.wait(timeout=900) for p in procs]
    logs = [" ".join((tmp_path / f"resume-{i}.log").read_text().split()) for i in range(2)]
    report({"resumes": 2, "wall_s": round(time.monotonic() - began, 1), "exit_codes": codes})
    assert sorted(codes) == [0, 2], logs
    winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
    # the loser met the winner's lock, or (if it started late) the winner's finished run
    assert (f"is in use by pid {procs[winner].pid}" in logs[loser]
            or "that run is finished" in logs[loser]), logs[loser]
    assert "resuming from step-" in logs[winner]
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["steps"] == 40
    assert not list((tmp_path / "run" / "checkpoints").glob(".partial-*"))
