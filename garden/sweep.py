"""The summary of a Hydra sweep (``python -m garden --multirun ...``): one row per job.

Hydra runs each job of a sweep in its own folder under the sweep dir (``multirun/DATE/TIME/0``,
``/1``, ...), where garden writes the job's ``metrics.json``. :class:`SweepSummary` is a Hydra
callback, registered in ``conf/config.yaml`` under ``hydra.callbacks``; when the sweep ends (on
the machine that launched it, with any launcher: basic, submitit local or Slurm) it reads every
job's metrics, prints a table and writes ``summary.json``, the same table as ``summary.csv``
and ``comparison.png`` (each job's final eval metric as a bar) next to the jobs::

    python -m garden --multirun model=vit task=classify preset=smoke trainer.lr=1e-3,3e-3

A point that fails does not stop the sweep: its job records the one-line cause (and the
traceback) in ``failed.json`` in its folder (:func:`record_failure`), the summary lists it as
``failed`` with that cause, one ``error:`` line per failed point follows the table, and the
command exits 1.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from garden.runs.outputs import write_json

SUMMARY = "summary.json"
TABLE = "summary.csv"
COMPARISON = "comparison.png"
FAILED = "failed.json"


def one_line(err: BaseException) -> str:
    """An exception as one line: garden's own messages as they are, others with their type."""
    from garden.errors import GardenError

    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    if isinstance(err, GardenError):
        return text or type(err).__name__
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def record_failure(job_dir: Path, err: BaseException) -> None:
    """Write the failed job's cause (one line) and traceback to ``job_dir/failed.json``."""
    job_dir.mkdir(parents=True, exist_ok=True)
    write_json(job_dir / FAILED, {"error": one_line(err), "type": type(err).__name__,
                                  "traceback": "".join(traceback.format_exception(err))})


def job_overrides(job: Path) -> list[str]:
    """The overrides Hydra recorded for one job (``.hydra/overrides.yaml``)."""
    path = job / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return []
    from omegaconf import OmegaConf

    return [str(o) for o in OmegaConf.load(path)]


def summarize(sweep_dir: Path) -> dict[str, Any]:
    """Every job of the sweep in ``sweep_dir``: its swept values, status and final metrics."""
    jobs = sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))
    rows = []
    for job in jobs:
        overrides = job_overrides(job)
        row: dict[str, Any] = {"job": int(job.name), "dir": str(job), "overrides": overrides}
        metrics_file, failed_file = job / "metrics.json", job / FAILED
        if metrics_file.is_file():
            metrics = json.loads(metrics_file.read_text())
            row.update(status="done", steps=metrics.get("steps"), eval=metrics.get("eval") or {},
                       train_samples_per_second=metrics.get("train_samples_per_second"))
        elif failed_file.is_file():
            row.update(status="failed", error=json.loads(failed_file.read_text()).get("error"), eval={})
        else:
            row.update(status="no metrics.json (killed, or still running)", eval={})
        rows.append(row)
    # the keys whose values differ between jobs are the sweep's axes
    values: dict[str, set] = {}
    for row in rows:
        for o in row["overrides"]:
            key, _, value = o.partition("=")
            values.setdefault(key, set()).add(value)
    swept = [k for k, v in values.items() if len(v) > 1]
    for row in rows:
        chosen = dict(o.partition("=")[::2] for o in row["overrides"])
        row["swept"] = {k: chosen.get(k) for k in swept}
    failed = sum(row["status"] != "done" for row in rows)
    return {"sweep_dir": str(sweep_dir), "swept": swept, "jobs": rows, "failed": failed}


def table_csv(summary: dict[str, Any]) -> str:
    """The summary as CSV: one row per job, the swept settings, every eval metric, steps, status."""
    metrics = sorted({k for row in summary["jobs"] for k in row["eval"]})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["job", *summary["swept"], *(f"eval_{k}" for k in metrics), "steps",
                     "train_samples_per_second", "status", "dir"])
    for row in summary["jobs"]:
        writer.writerow([row["job"], *(row["swept"].get(k) for k in summary["swept"]),
                         *(row["eval"].get(k, "") for k in metrics), row.get("steps", ""),
                         row.get("train_samples_per_second") or "", row["status"], row["dir"]])
    return out.getvalue()


def show(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    metrics = sorted({k for row in summary["jobs"] for k in row["eval"]})
    table = Table(title=f"sweep · {len(summary['jobs'])} jobs · {summary['sweep_dir']}")
    table.add_column("job", justify="right")
    for key in summary["swept"]:
        table.add_column(key)
    for key in metrics:
        table.add_column(f"eval {key}", justify="right")
    table.add_column("steps", justify="right")
    table.add_column("status")
    for row in summary["jobs"]:
        cells = [str(row["job"]), *(str(row["swept"].get(k)) for k in summary["swept"])]
        for key in metrics:
            value = row["eval"].get(key)
            cells.append(f"{value:.4f}" if isinstance(value, float) else str(value if value is not None else "-"))
        cells += [str(row.get("steps", "-")), row["status"]]
        table.add_row(*cells)
    Console().print(table)


def write_summary(sweep_dir: Path) -> dict[str, Any]:
    """The table and ``summary.json``, then one ``error:`` line per job that did not finish."""
    from garden import plots
    from garden.files import write_atomic

    summary = summarize(sweep_dir)
    write_json(sweep_dir / SUMMARY, summary)
    write_atomic(sweep_dir / TABLE, table_csv(summary))
    comparison = plots.sweep_comparison(summary)
    if comparison is not None:
        plots.save(comparison, sweep_dir / COMPARISON)
    show(summary)
    print(f"sweep summary written to {sweep_dir / SUMMARY}" + (f" and {sweep_dir / COMPARISON}" if comparison else ""))
    sys.stdout.flush()
    for row in summary["jobs"]:
        if row["status"] != "done":
            point = " ".join(o for o in row["overrides"] if o.partition("=")[0] in summary["swept"]) \
                or " ".join(row["overrides"])
            cause = row.get("error") or row["status"]
            print(f"error: sweep job {row['job']} ({point}) failed: {cause}", file=sys.stderr)
    return summary


try:  # Hydra is a dependency; the import stays cheap (no torch)
    from hydra.experimental.callback import Callback as _Callback
except ImportError:  # pragma: no cover
    _Callback = object  # type: ignore[misc,assignment]


class SweepSummary(_Callback):
    """Hydra callback: the sweep's table and ``summary.json`` once every job has ended; exits 1
    (``SystemExit``, which Hydra lets through where it would turn an exception into a warning)
    when a job failed."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if sweep_dir.is_dir() and write_summary(sweep_dir)["failed"]:
            raise SystemExit(1)
