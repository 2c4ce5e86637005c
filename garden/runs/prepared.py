"""What a run needs, resolved from its config: the registry entry, the family that builds it,
the task, the weights and the data; and :func:`load_model`, the same resolution for one model.

    >>> prepared = prepare(garden.compose(["model=vit", "task=classify", "preset=smoke"]))  # doctest: +SKIP
    >>> prepared.entry.name, prepared.task.name, prepared.weights_origin                      # doctest: +SKIP
    ('vit', 'classify', 'random init')
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from garden import hub, registry
from garden.compat import resolve_name
from garden.entries import COMMIT_HASH, ModelEntry, Variant
from garden.errors import ConfigError, WeightsError, reading
from garden.families import auto
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
    #: the full Hub commit the run's model came from (its config, for ``hf:``, and weights), or None
    revision: str | None = None


def entry_of(name: str, revision: str | None = None) -> ModelEntry:
    """The registry entry called ``name``; for ``hf:<repo-id>[@<revision>]`` (or ``revision``) or
    ``hf:<folder>``, one made from the checkpoint's config (``garden.families.auto``)."""
    if name.startswith(auto.PREFIX):
        return auto.hub_entry(name, revision)
    return registry.get(name)


def check_task(entry: ModelEntry, task: str) -> None:
    """One line listing ``entry``'s tasks unless it has ``task``."""
    if auto.is_hf(entry.name):
        auto.check_task(entry, task)
    else:
        registry.check_task(entry, task)


def weights_source(entry: ModelEntry, source: str) -> str:
    """``weights=auto`` for ``model=hf:<folder>`` is that folder's checkpoint."""
    if source == "auto" and auto.is_hf(entry.name) and entry.variant("default").hub_id is None:
        return str(auto.resolve(entry.name)[1])
    return source


def family_of(entry: ModelEntry) -> ModelFamily:
    """The ModelFamily that builds ``entry`` (imported now, not at discovery)."""
    try:
        cls = resolve_name(entry.builder)
    except (ImportError, AttributeError, ValueError) as err:
        raise ConfigError(
            f"plugin '{entry.plugin}' names builder '{entry.builder}' for model '{entry.name}', "
            f"which does not import ({err}); reinstall or fix the plugin"
        ) from None
    return cls()


def task_of(entry: ModelEntry, family: ModelFamily, name: str) -> Task:
    """The Task that runs ``task=name`` for ``entry``: the one a plugin registered for the name and
    the model's domain (``garden_tasks``), or the family's own class for it (``ModelFamily.tasks``)."""
    registered = registry.task_entry(entry, name)
    path = family.tasks.get(name) or registered.builder
    try:
        cls = resolve_name(path)
    except (ImportError, AttributeError, ValueError) as err:
        source = f"the family of model '{entry.name}'" if name in family.tasks else f"plugin {registered.plugin}"
        raise ConfigError(f"task '{name}' names class '{path}' ({source}), which does not import ({err}); "
                          f"reinstall or fix the plugin") from None
    return cls(family)


def prepare(cfg: Any, *, load_data: bool = True) -> Prepared:
    """Resolve the entry, family, task, weights and data a composed config asks for."""
    import torch

    entry = entry_of(cfg.model.name, cfg.model.get("revision"))
    check_task(entry, cfg.task.name)
    variant = entry.variant(cfg.model.variant)
    family = family_of(entry)
    task = task_of(entry, family, cfg.task.name)
    if cfg.backend in EXPORTED:
        weights = exported_weights(cfg)
    else:
        weights = hub.resolve_weights(
            weights_source(entry, cfg.weights.source), variant, allow_pickle=cfg.weights.allow_pickle,
            for_training=cfg.mode == "train", entry=entry,
        )
    if cfg.mode == "infer" and weights.folder is None and cfg.weights.source == "auto":
        raise WeightsError(
            f"model '{entry.name}' variant '{variant.name}' has no pretrained weights to predict with; "
            "pass weights=DIR (a trained run's model/ folder), weights=hub:org/name, or weights=random"
        )
    notes: list[str] = []
    options = dict(cfg.model.options)
    if cfg.model.get("blocks"):
        options["blocks"] = cfg.model.blocks
    spec = BuildSpec(entry=entry, variant=variant, task=cfg.task.name, weights_dir=weights.folder, options=options)
    if weights.folder is not None:
        family.check_weights(spec)
    preprocessor = family.preprocessor(spec)
    data = None
    if load_data:
        with reading(cfg.data.skip_unreadable) as policy:
            data = task.load(cfg, preprocessor)
        notes += [policy.warning()] if policy.warning() else []
    if data is not None:
        spec = dataclasses.replace(spec, labels=data.labels, options={**spec.options, **data.info})
        notes += data.notes
    torch.manual_seed(cfg.seed)
    return Prepared(cfg, entry, variant, family, task, spec, preprocessor, data, weights.origin, notes,
                    revision=revision_of(entry, variant, weights))


def revision_of(entry: ModelEntry, variant: Variant, weights: Any) -> str | None:
    """The full commit a run's model came from: an ``hf:`` model's (its config is read from it
    whatever the weights), else the Hub snapshot its weights were loaded from."""
    if auto.is_hf(entry.name) and variant.hub_id:
        return variant.revision
    folder = weights.folder
    if weights.origin.startswith("hub ") and folder is not None and COMMIT_HASH.fullmatch(folder.name):
        return folder.name
    return None


def pinned_override(prepared: Prepared, commit: str | None = None) -> str | None:
    """The override that runs the same model at ``commit`` (the run's own by default):
    ``model=hf:org/name@<commit>`` for an ``hf:`` model, ``weights=hub:org/name@<commit>`` for Hub
    weights; ``None`` when the run has no Hub commit."""
    commit = commit or prepared.revision
    hub_id = prepared.variant.hub_id
    if commit is None or hub_id is None:
        return None
    if auto.is_hf(prepared.entry.name):
        return f"model={auto.PREFIX}{hub_id}@{commit}"
    return f"weights=hub:{prepared.weights_origin.split()[-1].partition('@')[0]}@{commit}"


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
    entry = entry_of(name)
    task = task or entry.tasks[0]
    check_task(entry, task)
    chosen = entry.variant(variant)
    resolved = hub.resolve_weights(weights_source(entry, weights), chosen, allow_pickle=allow_pickle,
                                   for_training=weights == "random", entry=entry)
    spec = BuildSpec(entry=entry, variant=chosen, task=task, weights_dir=resolved.folder,
                     labels=tuple(labels) if labels else None)
    family = family_of(entry)
    if resolved.folder is not None:
        family.check_weights(spec)
    return family.build(spec)
