"""Runs that draw themselves: a train run writes ``history.jsonl`` as it goes and ``plots/*.png``
at the end, ``logger=tensorboard`` writes event files TensorBoard's own reader parses, ``plan
--plot`` draws the stage plan, and a sweep draws its comparison. The pictures are read back: their
size, that they are not blank, and the number of bars against the number of stages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from garden import plots
from garden.runs.history import History, read_history

SMOKE = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=6",
         "data.limit=24", "data.eval_limit=16", "data.batch_size=4")


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def bars_in(path: Path) -> list[bool]:
    """The bars of a chart drawn by :mod:`garden.plots`, left to right, each ``True`` where it is
    the bottleneck's colour: runs of pixel columns that contain a bar's fill."""
    with Image.open(path) as picture:
        image = picture.convert("RGB")
    ordinary, red = rgb(plots.BAR), rgb(plots.BOTTLENECK)
    width, height = image.size
    pixels = image.load()
    found: list[bool] = []
    inside = False
    for x in range(width):
        column = {pixels[x, y] for y in range(height)}
        if ordinary in column or red in column:
            if not inside:
                found.append(False)
            found[-1] = found[-1] or red in column
            inside = True
        else:
            inside = False
    return found


def bar_count(path: Path) -> int:
    return len(bars_in(path))


def assert_a_picture(path: Path, min_size: tuple[int, int] = (300, 200)) -> None:
    with Image.open(path) as picture:
        assert picture.format == "PNG"
        assert picture.size[0] >= min_size[0] and picture.size[1] >= min_size[1], picture.size
        colours = picture.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 16, f"{path.name} is (nearly) blank: {len(colours)} colours"
    assert colours is None or max(c for c, _ in colours) < 0.97 * sum(c for c, _ in colours), "one colour fills it"


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    from garden import run

    where = tmp_path_factory.mktemp("run") / "run"
    metrics = run([*SMOKE, "logger=tensorboard"], output_dir=where)
    return where, metrics


def test_a_train_run_writes_one_history_record_per_step_and_one_per_evaluation(smoke_run):
    where, metrics = smoke_run
    records = read_history(where)
    steps = [r for r in records if "loss" in r]
    assert [r["step"] for r in steps] == list(range(1, metrics["steps"] + 1))
    assert all(r["lr"] > 0 and r["samples_per_second"] > 0 and r["epoch"] >= 1 for r in steps)
    evals = [r for r in records if "eval_accuracy" in r]
    assert [r["step"] for r in evals] == [metrics["steps"]]
    assert evals[-1]["eval_accuracy"] == pytest.approx(metrics["eval"]["accuracy"])
    # the step losses average to the epoch's train loss the metrics report
    epoch_loss = metrics["history"][-1]["train_loss"]
    assert sum(r["loss"] for r in steps) / len(steps) == pytest.approx(epoch_loss, rel=1e-6)


def test_a_train_run_draws_its_curves_and_confusion_matrix(smoke_run):
    where, _ = smoke_run
    names = sorted(p.name for p in (where / "plots").iterdir())
    assert names == ["confusion.png", "eval.png", "training.png"]  # one stage: no stage plot
    for name in names:
        assert_a_picture(where / "plots" / name)


def test_tensorboards_reader_parses_the_runs_event_files(smoke_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    where, metrics = smoke_run
    events = EventAccumulator(str(where / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train/loss", "train/lr", "train/samples_per_second", "eval/accuracy", "eval/loss"} <= tags
    losses = events.Scalars("train/loss")
    history = [r for r in read_history(where) if "loss" in r]
    assert [e.step for e in losses] == [r["step"] for r in history]
    # event files hold float32: compare at its precision
    assert [e.value for e in losses] == pytest.approx([r["loss"] for r in history], rel=1e-6)
    assert events.Scalars("eval/accuracy")[-1].value == pytest.approx(metrics["eval"]["accuracy"], rel=1e-6)


def test_tensorboard_is_off_by_default_and_a_bad_logger_is_one_line(cli):
    result = cli(*SMOKE, "trainer.max_steps=1", "hydra.run.dir=run", "logger=wandb")
    assert result.returncode == 2, result.output
    assert result.stderr.strip().splitlines()[-1] == "error: logger=wandb is not one of: none, tensorboard"


def test_a_resumed_history_drops_the_records_past_the_checkpoint(tmp_path):
    first = History(tmp_path, writer=True)
    for step in (1, 2, 3):
        first.step(step, 1, loss=1.0 / step, lr=0.1, samples=4, seconds=0.5)
    first.evaluated(3, 1, {"accuracy": 0.5})
    with open(tmp_path / "history.jsonl", "a") as f:
        f.write('{"step": 4, "epo')  # a run killed in the middle of a line
    assert [r["step"] for r in read_history(tmp_path)] == [1, 2, 3, 3]
    again = History(tmp_path, writer=True, resumed_at=2)
    again.step(3, 1, loss=0.3, lr=0.1, samples=4, seconds=0.5)
    assert [(r["step"], r["loss"]) for r in read_history(tmp_path)] == [(1, 1.0), (2, 0.5), (3, 0.3)]


def test_a_process_that_does_not_write_leaves_no_history(tmp_path):
    quiet = History(tmp_path, writer=False)
    quiet.step(1, 1, loss=1.0, lr=0.1, samples=4, seconds=0.5)
    assert not (tmp_path / "history.jsonl").exists()


@pytest.mark.parametrize("stages", [2, 4])
def test_plan_plot_draws_one_bar_per_stage_and_marks_the_bottleneck(cli, tmp_path, stages):
    result = cli("plan", "model=vit", f"ipu.ipus_per_replica={stages}", "--plot=plan.png", "--json")
    assert result.returncode == 0, result.output
    summary = json.loads(result.stdout)
    assert_a_picture(tmp_path / "plan.png")
    assert bar_count(tmp_path / "plan.png") == len(summary["stages"]) == stages
    shares = [s["cost_share"] for s in summary["stages"]]
    assert bars_in(tmp_path / "plan.png") == [i == shares.index(max(shares)) for i in range(stages)]


def test_the_default_plot_name_says_model_and_stages(cli, tmp_path):
    result = cli("plan", "model=vit", "ipu.ipus_per_replica=2", "ipu.cost=params", "--plot")
    assert result.returncode == 0, result.output
    assert "plot written to plan-vit-2stages.png" in result.stdout
    assert bar_count(tmp_path / "plan-vit-2stages.png") == 2


def test_the_bar_counter_counts_what_was_drawn():
    """The counter the tests above rely on, on charts of known bar counts."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for n in (1, 3, 7):
            path = plots.save(plots.stage_times([1.0 + (i % 2) for i in range(n)]), Path(folder) / f"{n}.png")
            assert bar_count(path) == n


@pytest.mark.distributed
def test_a_pipelined_run_draws_its_plan_and_each_stages_measured_time(tmp_path):
    from test_pipeline import ranks

    result = ranks(2, *SMOKE, "trainer.max_steps=2", "trainer.eval=false", "backend=pipeline",
                   "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    where = tmp_path / "run"
    steps = [r for r in read_history(where) if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(isinstance(r["loss"], float) for r in steps), "the last stage's loss reaches rank 0's history"
    assert bar_count(where / "plots" / "stages.png") == 2
    assert bar_count(where / "plots" / "stage_times.png") == 2
    assert_a_picture(where / "plots" / "stage_times.png")
