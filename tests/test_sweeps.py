"""Sweeps: ``--multirun`` runs one job per combination, each in its own folder, and ends with a
summary table and summary.json; garden's Slurm launcher config composes, and submitit's local
executor (the same submission path without a cluster) runs a smoke job."""

from __future__ import annotations

import json

TINY = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=2",
        "trainer.eval=false", "data.limit=16", "data.eval_limit=8")


def test_a_two_by_two_sweep_runs_four_jobs_and_prints_their_summary(cli, tmp_path):
    result = cli("--multirun", *TINY, "trainer.lr=1e-3,3e-3", "seed=0,1", "hydra.sweep.dir=sweep")
    assert result.returncode == 0, result.output
    sweep = tmp_path / "sweep"
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir() and p.name.isdigit()) == ["0", "1", "2", "3"]
    assert all((sweep / str(i) / "metrics.json").is_file() for i in range(4))
    summary = json.loads((sweep / "summary.json").read_text())
    assert summary["swept"] == ["trainer.lr", "seed"]
    assert [(j["swept"]["trainer.lr"], j["swept"]["seed"]) for j in summary["jobs"]] == \
        [("0.001", "0"), ("0.001", "1"), ("0.003", "0"), ("0.003", "1")]
    assert all(j["status"] == "done" and "accuracy" in j["eval"] for j in summary["jobs"])
    table = result.stdout[result.stdout.index("sweep · 4 jobs"):]
    assert "trainer.lr" in table and "eval accuracy" in table and "0.003" in table
    assert "sweep summary written to sweep/summary.json and sweep/comparison.png" in result.stdout
    rows = (sweep / "summary.csv").read_text().splitlines()
    assert rows[0].startswith("job,trainer.lr,seed,eval_accuracy,") and len(rows) == 5
    from test_run_plots import assert_a_picture, bars_in

    assert_a_picture(sweep / "comparison.png")
    accuracy = [j["eval"]["accuracy"] for j in summary["jobs"]]
    best = accuracy.index(max(accuracy))  # a bar of height 0 draws no pixels of its colour
    assert bars_in(sweep / "comparison.png") == [i == best for i, a in enumerate(accuracy) if a > 0]


def test_the_slurm_launcher_config_composes_with_gardens_defaults():
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from garden.config import register

    register()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="garden.conf", version_base=None):
        cfg = compose(config_name="config", overrides=["model=vit", "task=classify", "hydra/launcher=garden_slurm",
                                                       "hydra.launcher.partition=gpu"], return_hydra_config=True)
    GlobalHydra.instance().clear()
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert (launcher.nodes, launcher.gpus_per_node, launcher.tasks_per_node, launcher.timeout_min) == (1, 1, 1, 60)
    assert launcher.partition == "gpu"
    assert cfg.hydra.callbacks.garden_sweep_summary._target_ == "garden.sweep.SweepSummary"


def test_submitits_local_executor_runs_a_smoke_job(cli, tmp_path):
    result = cli("--multirun", "hydra/launcher=submitit_local", "hydra.sweep.dir=sub", *TINY)
    assert result.returncode == 0, result.output
    assert "Submitit 'local' sweep output dir : sub" in result.output
    assert (tmp_path / "sub" / "0" / "metrics.json").is_file()
    assert list((tmp_path / "sub" / ".submitit").glob("*/*_log.out"))  # submitit's own job logs
    summary = json.loads((tmp_path / "sub" / "summary.json").read_text())
    assert [j["status"] for j in summary["jobs"]] == ["done"]
