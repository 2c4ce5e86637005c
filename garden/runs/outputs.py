"""What a run leaves behind: ``metrics.json``, the trained model as a Hub-ready folder
(``save_pretrained`` output, a model card that says how it was made, and the ``ipu_config.json``
of the stage plan it ran with), and the tables printed at the end.

    >>> write_json(Path("outputs/run/metrics.json"), {"eval": {"accuracy": 0.91}})   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from garden.files import make_plain, staging_folder, write_atomic
from garden.partition.ipu_config import write_ipu_config
from garden.partition.plan import optimum_ipu_config
from garden.runs.prepared import Prepared, pinned_override


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=2, default=str) + "\n")


def save_model(prepared: Prepared, model: Any, folder: Path, metrics: dict[str, Any], stage_plan: Any = None) -> None:
    """The trained model as a Hub-ready folder: ``save_pretrained`` (safetensors), the
    preprocessor, a model card and ``ipu_config.json``; swapped in whole, never half-written."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_folder(folder, ".model.")
    try:
        prepared.family.save(model, prepared.preprocessor, staging)
        write_run_files(staging, prepared, metrics, prepared.command, stage_plan)
        for path in staging.rglob("*"):  # safetensors writes its files 0600, whatever the umask
            make_plain(path)
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def pinned_command(command: str | None, prepared: Prepared) -> str | None:
    """``command`` with an ``hf:`` model pinned to the commit the run used, so it reruns the same
    model after the branch moves: ``model=hf:org/name`` becomes ``model=hf:org/name@<commit>``."""
    pinned = pinned_override(prepared)
    if command is None or pinned is None or not pinned.startswith("model="):
        return command
    words = [w for w in shlex.split(command) if w != "model=hf" and not w.startswith("model.revision=")]
    return shlex.join([pinned if w.startswith(("model=hf:", "model.name=hf:")) else w for w in words])


def model_card(prepared: Prepared, metrics: dict[str, Any], command: str | None) -> str:
    """A Hub model card (README.md with YAML front matter) for a garden training run."""
    entry, variant = prepared.entry, prepared.variant
    front = ["---", "library_name: transformers", "tags:", "- garden", f"- {entry.family}", f"- {prepared.task.name}"]
    if entry.license:
        front.append(f"license: {entry.license}")
    if variant.hub_id:
        front.append(f"base_model: {variant.hub_id}")
    if prepared.revision:
        front.append(f"base_model_revision: {prepared.revision}")
    front.append("---")
    rows = "\n".join(f"| {k} | {v:.4f} |" if isinstance(v, float) else f"| {k} | {v} |"
                     for k, v in metrics.get("eval", {}).items())
    lines = [
        *front,
        "",
        f"# {entry.name} ({variant.name}) for {prepared.task.name}",
        "",
        f"{entry.description}. Trained with garden from "
        f"{prepared.weights_origin} on {prepared.data.source}."
        + (f" Hub commit: `{prepared.revision}`." if prepared.revision else ""),
        "",
        "## Evaluation",
        "",
        f"Held-out split: {metrics.get('eval_examples')} examples.",
        "",
        "| metric | value |",
        "|---|---|",
        rows,
        "",
        "## Training",
        "",
        f"- steps: {metrics.get('steps')}, backend: {metrics.get('backend')}",
        "- stage plan: see `ipu_config.json` (Optimum Graphcore format)",
        "",
        "Reproduce with:",
        "",
        "```sh",
        pinned_command(command, prepared)
        or f"python -m garden model={entry.name} task={prepared.task.name} model.variant={variant.name}",
        "```",
    ]
    if entry.paper:
        lines += ["", f"Paper: [{entry.paper}]({entry.paper_url or ''})"]
    return "\n".join(lines) + "\n"


def write_run_files(folder: Path, prepared: Prepared, metrics: dict[str, Any], command: str | None,
                    stage_plan: Any = None) -> None:
    """Add the model card and ``ipu_config.json`` (the plan used, or the configured one) to ``folder``."""
    (folder / "README.md").write_text(model_card(prepared, metrics, command), encoding="utf-8")
    ipu = optimum_ipu_config(prepared.cfg.ipu, prepared.entry.name)
    if stage_plan is not None:
        layers = list(stage_plan.plan.layers_per_ipu)
        ipu = dataclasses.replace(ipu, layers_per_ipu=layers, ipus_per_replica=len(layers))
    write_ipu_config(ipu, folder / "ipu_config.json")


def summary(metrics: dict[str, Any], output_dir: Path) -> None:
    table = Table(title=f"{metrics['model']} · {metrics['task']} · {metrics['mode']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in metrics["eval"].items():
        table.add_row(f"eval {key}", f"{value:.4f}" if isinstance(value, float) else str(value))
    if metrics.get("train_samples_per_second"):
        table.add_row("train samples/s", f"{metrics['train_samples_per_second']:.1f}")
    table.add_row("steps", str(metrics["steps"]))
    table.add_row("outputs", str(output_dir))
    Console().print(table)


def show_predictions(rows: list[dict]) -> None:
    table = Table(title="predictions")
    table.add_column("input")
    table.add_column("prediction")
    for row in rows:
        name = row.get("input") or (f"label {row['label']}" if "label" in row else "")
        preds = row.get("predictions")
        text = ", ".join(f"{p['label']} {p['score']:.3f}" for p in preds) if preds else json.dumps(row.get("output", row))
        table.add_row(str(name), text)
    Console().print(table)
