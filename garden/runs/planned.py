"""A composed run's model planned into pipeline stages, without running it: what ``python -m
garden plan`` prints and ``garden.plan`` returns.

    >>> plan_summary(["model=vit", "ipu.ipus_per_replica=2"])["layers_per_ipu"]   # doctest: +SKIP
    [6, 6]
"""

from __future__ import annotations

import dataclasses

from garden.config import choices, compose, model_name, sugar
from garden.partition.plan import StagePlan, plan_for, sample_batch
from garden.runs.prepared import Prepared, entry_of, prepare


def plan_run(overrides: list[str]) -> tuple[Prepared, StagePlan]:
    """What ``python -m garden plan ...`` shows: the composed run's model, planned as configured.

    The task defaults to the model's first; the model is the configured variant with random
    weights (planning needs shapes, not trained values). With ``ipu.cost=params`` it is built on
    the meta device, so even the largest variant plans in a moment.
    """
    picked = choices(sugar(overrides))
    extra = []
    if "task" not in picked and "model" in picked:
        extra.append(f"task={entry_of(model_name(picked), picked.get('model.revision')).tasks[0]}")
    if "weights" not in picked:
        extra.append("weights=random")
    cfg = compose([*overrides, *extra])  # a bad setting stops here, before torch loads
    import torch

    prepared = prepare(cfg)
    spec = dataclasses.replace(prepared.spec, weights_dir=None)
    sample = sample_batch(prepared.data)
    if cfg.ipu.cost == "params":
        try:
            with torch.device("meta"):
                model = prepared.family.build(spec)
        except (RuntimeError, NotImplementedError):  # a model that reads values while it builds
            model = prepared.family.build(spec)
        return prepared, plan_for(prepared, model, None, training=cfg.mode == "train")
    model = prepared.family.build(spec)
    return prepared, plan_for(prepared, model, sample, training=cfg.mode == "train")


def plan_summary(overrides: list[str]) -> dict:
    """What ``plan ... --json`` prints: the plan's summary with the model, variant, task and cost."""
    prepared, stage_plan = plan_run(overrides)
    summary = stage_plan.summary()
    summary.update({"model": prepared.entry.name, "variant": prepared.variant.name,
                    "task": prepared.task.name, "cost": prepared.cfg.ipu.cost})
    return summary
