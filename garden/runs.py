"""A run, start to end: config -> registry entry -> family -> data -> model -> backend -> outputs.

    >>> import garden
    >>> model = garden.load_model("vit", task="classify", variant="tiny", weights="random")  # doctest: +SKIP
    >>> result = garden.run(["model=vit", "task=classify", "preset=smoke"])               # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from garden import registry
from garden.entries import ModelEntry, Variant
from garden.errors import ConfigError, WeightsError
from garden.hookspecs import BuildSpec, ModelFamily
from garden.tasks import import_path
from garden.tasks.base import Task, TaskData


@dataclass
class Prepared:
    """Everything a backend needs, built from a config."""

    cfg: Any
    entry: ModelEntry
    variant: Variant
    family: ModelFamily
    task: Task
    spec: BuildSpec
    preprocessor: Any
    data: TaskData
    weights_origin: str
    notes: list[str] = field(default_factory=list)
    command: str | None = None


def family_of(entry: ModelEntry) -> ModelFamily:
    """The ModelFamily that builds ``entry`` (imported now, not at discovery)."""
    try:
        cls = import_path(entry.builder)
    except (ImportError, AttributeError) as err:
        raise ConfigError(
            f"plugin '{entry.plugin}' names builder '{entry.builder}' for model '{entry.name}', "
            f"which does not import ({err}); reinstall or fix the plugin"
        ) from None
    return cls()


def resolve_weights(source: str, variant: Variant, *, allow_pickle: bool, for_training: bool, entry: ModelEntry):
    from garden import hub

    return hub.resolve_weights(source, variant, allow_pickle=allow_pickle, for_training=for_training, entry=entry)


def prepare(cfg: Any, *, load_data: bool = True) -> Prepared:
    """Resolve the entry, family, task, weights and data a composed config asks for."""
    import torch

    entry = registry.get(cfg.model.name)
    registry.check_task(entry, cfg.task.name)
    variant = entry.variant(cfg.model.variant)
    family = family_of(entry)
    task = family.task(cfg.task.name)
    weights = resolve_weights(
        cfg.weights.source, variant, allow_pickle=cfg.weights.allow_pickle, for_training=cfg.mode == "train",
        entry=entry,
    )
    if cfg.mode == "infer" and weights.folder is None and cfg.weights.source == "auto":
        raise WeightsError(
            f"model '{entry.name}' variant '{variant.name}' has no pretrained weights to predict with; "
            "pass weights=DIR (a trained run's model/ folder), weights=hub:org/name, or weights=random"
        )
    notes = [weights.note] if weights.note else []
    spec = BuildSpec(entry=entry, variant=variant, task=cfg.task.name, weights_dir=weights.folder,
                     options=dict(cfg.model.options))
    preprocessor = family.preprocessor(spec)
    data = task.load(cfg, preprocessor) if load_data else None
    if data is not None:
        spec = dataclasses.replace(spec, labels=data.labels, options={**spec.options, **data.info})
        notes += data.notes
    torch.manual_seed(cfg.seed)
    return Prepared(cfg, entry, variant, family, task, spec, preprocessor, data, weights.origin, notes)


def load_model(
    name: str,
    task: str | None = None,
    *,
    variant: str = "default",
    weights: str = "auto",
    labels: list[str] | None = None,
    allow_pickle: bool = False,
):
    """The torch module for model ``name`` with its weights, like ``timm.create_model``.

    ``weights`` is ``auto``, ``hub``, ``hub:org/name[@rev]``, a local folder or ``random``.
    """
    entry = registry.get(name)
    task = task or entry.tasks[0]
    registry.check_task(entry, task)
    chosen = entry.variant(variant)
    resolved = resolve_weights(weights, chosen, allow_pickle=allow_pickle, for_training=weights == "random",
                               entry=entry)
    spec = BuildSpec(entry=entry, variant=chosen, task=task, weights_dir=resolved.folder,
                     labels=tuple(labels) if labels else None)
    return family_of(entry).build(spec)


def run(overrides_or_cfg: Any, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Run a composed config (or a list of overrides) and return its metrics."""
    from garden.config import compose

    command = None
    if isinstance(overrides_or_cfg, (list, tuple)):
        command = command_line(overrides_or_cfg)
        overrides_or_cfg = compose(list(overrides_or_cfg))
    if output_dir is None:
        output_dir = Path("outputs") / time.strftime("%Y-%m-%d") / time.strftime("%H-%M-%S")
    return execute(overrides_or_cfg, Path(output_dir), command=command)


def command_line(overrides: Any) -> str:
    """The ``python -m garden ...`` line that reproduces a run from its overrides."""
    import shlex

    return "python -m garden " + " ".join(shlex.quote(o) for o in overrides)


def execute(cfg: Any, output_dir: Path, *, command: str | None = None) -> dict[str, Any]:
    """Prepare, pick the backend, and train or infer; writes everything under ``output_dir``."""
    from garden.backends import select_backend
    from garden.checkpoint import resume_dir, wants_resume
    from garden.trainer import infer, train

    if wants_resume(cfg.get("resume")):  # a stopped run continues in its own folder
        output_dir = resume_dir(cfg.resume, registry.get(cfg.model.name).name, cfg.task.name)
    output_dir.mkdir(parents=True, exist_ok=True)
    prepared = prepare(cfg)
    prepared.command = command
    backend = select_backend(cfg, prepared)
    output_dir = agreed_output_dir(output_dir)
    try:
        if cfg.mode == "infer":
            result = infer(prepared, backend, output_dir)
        else:
            result = train(prepared, backend, output_dir, evaluate_only=cfg.mode == "eval")
    except BaseException:
        backend.close(failed=True)  # no farewell collective: the other ranks may be elsewhere
        raise
    backend.close()
    return result


def agreed_output_dir(output_dir: Path) -> Path:
    """Rank 0's output folder, on every process of a torchrun job.

    Each process composes its own Hydra run dir from the clock, so two may differ by a second;
    checkpoints need every process writing into one folder. A process whose folder differs
    removes it when it holds nothing but Hydra's own files.
    """
    import shutil

    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return output_dir
    box = [str(output_dir.resolve())]
    dist.broadcast_object_list(box, src=0)
    agreed = Path(box[0])
    if agreed != output_dir.resolve() and output_dir.is_dir():
        if all(p.name == ".hydra" or p.suffix == ".log" for p in output_dir.iterdir()):
            shutil.rmtree(output_dir, ignore_errors=True)
            try:
                output_dir.parent.rmdir()  # a date folder left empty
            except OSError:
                pass
    return agreed


def write_json(path: Path, obj: Any) -> None:
    from garden.files import write_atomic

    write_atomic(path, json.dumps(obj, indent=2, default=str) + "\n")
