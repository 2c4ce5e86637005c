"""What makes a trained model folder Hub-ready beyond ``save_pretrained``: a model card that
says how it was made, and the ``ipu_config.json`` of the stage plan it ran with."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def model_card(prepared: Any, metrics: dict[str, Any], command: str | None) -> str:
    """A Hub model card (README.md with YAML front matter) for a garden training run."""
    entry, variant = prepared.entry, prepared.variant
    front = ["---", "library_name: transformers", "tags:", "- garden", f"- {entry.family}", f"- {prepared.task.name}"]
    if entry.license:
        front.append(f"license: {entry.license}")
    if variant.hub_id:
        front.append(f"base_model: {variant.hub_id}")
    front.append("---")
    rows = "\n".join(f"| {k} | {v:.4f} |" if isinstance(v, float) else f"| {k} | {v} |"
                     for k, v in metrics.get("eval", {}).items())
    lines = [
        *front,
        "",
        f"# {entry.name} ({variant.name}) for {prepared.task.name}",
        "",
        f"{entry.description}. Trained with garden from "
        f"{prepared.weights_origin} on {prepared.data.source}.",
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
        command or f"python -m garden model={entry.name} task={prepared.task.name} model.variant={variant.name}",
        "```",
    ]
    if entry.paper:
        lines += ["", f"Paper: [{entry.paper}]({entry.paper_url or ''})"]
    return "\n".join(lines) + "\n"


def write_run_files(folder: Path, prepared: Any, metrics: dict[str, Any], command: str | None,
                    stage_plan: Any = None) -> None:
    """Add the model card and ``ipu_config.json`` (the plan used, or the configured one) to ``folder``."""
    import dataclasses

    from garden.partition.ipu_config import write_ipu_config
    from garden.planning import optimum_ipu_config

    (folder / "README.md").write_text(model_card(prepared, metrics, command), encoding="utf-8")
    ipu = optimum_ipu_config(prepared.cfg.ipu, prepared.entry.name)
    if stage_plan is not None:
        layers = list(stage_plan.plan.layers_per_ipu)
        ipu = dataclasses.replace(ipu, layers_per_ipu=layers, ipus_per_replica=len(layers))
    write_ipu_config(ipu, folder / "ipu_config.json")
