"""What a run needs, resolved from its config: the registry entry, the family that builds it,
the task, the weights and the data; and :func:`load_model`, the same resolution for one model.

    >>> prepared = prepare(garden.compose(["model=vit", "task=classify", "preset=smoke"]))  # doctest: +SKIP
    >>> prepared.entry.name, prepared.task.name, prepared.weights_origin                      # doctest: +SKIP
    ('vit', 'classify', 'random init')
"""

from __future__ import annotations

import dataclasses
import pkgutil
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from garden import hub, registry
from garden.entries import ModelEntry, Variant
from garden.errors import ConfigError, WeightsError
from garden.hookspecs import BuildSpec, ModelFamily
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
        cls = pkgutil.resolve_name(entry.builder)
    except (ImportError, AttributeError, ValueError) as err:
        raise ConfigError(
            f"plugin '{entry.plugin}' names builder '{entry.builder}' for model '{entry.name}', "
            f"which does not import ({err}); reinstall or fix the plugin"
        ) from None
    return cls()


def prepare(cfg: Any, *, load_data: bool = True) -> Prepared:
    """Resolve the entry, family, task, weights and data a composed config asks for."""
    import torch

    entry = registry.get(cfg.model.name)
    registry.check_task(entry, cfg.task.name)
    variant = entry.variant(cfg.model.variant)
    family = family_of(entry)
    task = family.task(cfg.task.name)
    if cfg.backend in EXPORTED:
        weights = exported_weights(cfg)
    else:
        weights = hub.resolve_weights(
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


#: the backends that run a folder written by ``python -m garden export`` instead of torch weights
EXPORTED = ("onnxruntime", "openvino")


def exported_weights(cfg: Any) -> hub.WeightsResolution:
    """``weights=DIR`` for an exported-model backend: a folder holding an export for it."""
    from garden.backends.exported import read_manifest

    if cfg.mode == "train":
        raise ConfigError(f"backend={cfg.backend} runs an exported model for mode=infer or mode=eval; train with "
                          "backend=local, then export the trained model (python -m garden export)")
    folder = Path(cfg.weights.source).expanduser()
    manifest = read_manifest(folder, cfg.backend)  # names the command that writes one
    return hub.WeightsResolution(folder.resolve(), f"{manifest['format']} export {folder} ({manifest['weights']})")


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
    resolved = hub.resolve_weights(weights, chosen, allow_pickle=allow_pickle, for_training=weights == "random",
                                   entry=entry)
    spec = BuildSpec(entry=entry, variant=chosen, task=task, weights_dir=resolved.folder,
                     labels=tuple(labels) if labels else None)
    return family_of(entry).build(spec)
