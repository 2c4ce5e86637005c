"""A run's metrics history, written as it goes, and the pictures drawn from it at the end.

``RUN_DIR/history.jsonl`` holds one JSON object per line: a training step's
``{"step", "epoch", "loss", "lr", "samples_per_second"}`` and, after each evaluation, an
``{"step", "epoch", "eval_<metric>": ...}`` record. Each line goes to the file in one
``O_APPEND`` write, so a reader (a notebook, ``tail -f``) sees whole lines while the run goes
on, and a run killed mid-write leaves at most a torn last line, which :func:`read_history`
skips. A resumed run first drops the records past its checkpoint's step.

At the end :func:`draw` writes ``RUN_DIR/plots/*.png`` (:mod:`garden.plots`), and
``logger=tensorboard`` mirrors every record into TensorBoard event files under
``RUN_DIR/tensorboard`` through torch's ``SummaryWriter``.

    >>> records = read_history(Path("outputs/2026-12-01/03-31-53-4f2a9c"))   # doctest: +SKIP
    >>> [r["loss"] for r in records if "loss" in r][:2]                       # doctest: +SKIP
    [2.31, 2.27]
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from garden.errors import ConfigError
from garden.files import plain_mode, write_atomic

HISTORY = "history.jsonl"
PLOTS = "plots"
TENSORBOARD = "tensorboard"
LOGGERS = ("none", "tensorboard")


def read_history(run_dir: Path) -> list[dict[str, Any]]:
    """Every whole record of ``run_dir/history.jsonl`` in order (a torn last line is skipped)."""
    path = Path(run_dir) / HISTORY
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


class History:
    """Appends a run's records to ``history.jsonl`` (and TensorBoard) on the writing process.

    Every process of a run makes one and calls it at the same steps: a pipeline's loss lives on
    its last stage, so each record passes through ``share`` (the backend's broadcast from the
    process holding the outputs; the record itself on one process) before rank 0 writes it.
    """

    def __init__(self, run_dir: Path, *, writer: bool, share: Callable[[Any], Any] = lambda x: x,
                 logger: str = "none", resumed_at: int | None = None):
        if logger not in LOGGERS:
            raise ConfigError(f"logger={logger} is not one of: {', '.join(LOGGERS)}")
        self.run_dir, self.writer, self.share = Path(run_dir), writer, share
        self.path = self.run_dir / HISTORY
        self.tensorboard = None
        if not writer:
            return
        if resumed_at is not None:  # records past the checkpoint are done again by this run
            kept = [r for r in read_history(self.run_dir) if r.get("step", 0) <= resumed_at]
            write_atomic(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        if logger == "tensorboard":
            self.tensorboard = summary_writer(self.run_dir / TENSORBOARD)

    def step(self, step: int, epoch: int, loss: float | None, lr: float, samples: int, seconds: float) -> None:
        """One optimizer step: its mean loss, the learning rate it used, examples per second."""
        record = {"step": step, "epoch": epoch, "loss": loss, "lr": lr,
                  "samples_per_second": round(samples / seconds, 3) if seconds else None}
        self.write(self.share(record))

    def evaluated(self, step: int, epoch: int, metrics: dict[str, Any]) -> None:
        """An evaluation's metrics (already shared by the loop), as ``eval_<name>`` keys."""
        record = {"step": step, "epoch": epoch}
        record.update({f"eval_{k}": v for k, v in metrics.items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)})
        self.write(record)

    def write(self, record: dict[str, Any]) -> None:
        if not self.writer:
            return
        line = (json.dumps(record) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, plain_mode())
        try:
            os.write(fd, line)  # one write of a whole line: readers never see half a record
        finally:
            os.close(fd)
        if self.tensorboard is not None:
            for key, value in record.items():
                if key in ("step", "epoch") or not isinstance(value, (int, float)):
                    continue
                tag = f"eval/{key[5:]}" if key.startswith("eval_") else f"train/{key}"
                self.tensorboard.add_scalar(tag, value, record["step"])
            self.tensorboard.flush()

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()
            self.tensorboard = None


def summary_writer(folder: Path) -> Any:
    """torch's TensorBoard ``SummaryWriter`` on ``folder``, or one line saying what to install."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ConfigError("logger=tensorboard needs the tensorboard package: pip install 'garden[tensorboard]' "
                          "(or pip install tensorboard), or run with logger=none") from None
    return SummaryWriter(log_dir=str(folder))


def draw(run_dir: Path, *, title: str, stage_plan: dict[str, Any] | None = None,
         confusion: dict[str, Any] | None = None, stage_seconds: list[float] | None = None) -> list[Path]:
    """``run_dir/plots/*.png`` from the history and what the run measured; the paths written.

    ``training.png`` (loss, learning rate, throughput per step), ``eval.png`` (each eval metric
    per evaluation), ``stages.png`` (the plan's cost per stage, bottleneck marked),
    ``confusion.png`` (``{"labels", "matrix"}``) and ``stage_times.png`` (a pipeline's measured
    seconds per stage), each where the run has the data for it.
    """
    from garden import plots

    folder = Path(run_dir) / PLOTS
    records = read_history(run_dir)
    figures = {}
    if any("loss" in r for r in records):
        figures["training"] = plots.training_curves(records, title)
    figures["eval"] = plots.eval_curves(records, title and f"{title} · evaluation")
    if stage_plan and len(stage_plan.get("stages", ())) > 1:
        figures["stages"] = plots.stage_costs(stage_plan)
    if confusion and confusion.get("matrix"):
        figures["confusion"] = plots.confusion(confusion["matrix"], confusion.get("labels") or [])
    if stage_seconds and len(stage_seconds) > 1:
        figures["stage_times"] = plots.stage_times(stage_seconds)
    return [plots.save(fig, folder / f"{name}.png") for name, fig in figures.items() if fig is not None]
