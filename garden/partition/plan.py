"""From a run's config and model to a stage plan: the ``ipu`` group, the family's blocks, and
their measured costs, handed to the planner. The backends and ``python -m garden plan`` share it.

It reads a run's prepared parts (``cfg``, ``entry``, ``family``, ``task``) by their attributes
and imports nothing above :mod:`garden.partition`, so a backend can plan without reaching up::

    >>> stage_plan = plan_for(prepared, model, sample_batch(prepared.data, 8), training=True)  # doctest: +SKIP
    >>> stage_plan.plan.layers_per_ipu                                                    # doctest: +SKIP
    (6, 6)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from garden.errors import ConfigError
from garden.hookspecs import Block
from garden.partition.ipu_config import IPUConfig, inference_layout, ipu_config_from_dict, read_ipu_config, training_layout
from garden.partition.planner import Plan, plan_stages, uniform_layers
from garden.partition.profile import BlockProfile, block_costs, parameter_profiles, parse_bytes, profile_blocks

#: keys of garden's ``ipu`` group that are garden's own, not Optimum Graphcore's
GARDEN_ONLY = ("config_file", "cost", "memory_budget", "micro_batches", "schedule", "loss_scaling")


def optimum_ipu_config(ipu: Any, model: str | None = None) -> IPUConfig:
    """The Optimum Graphcore IPUConfig a run's ``ipu`` group stands for.

    ``ipu.config_file`` (an ``ipu_config.json`` or a folder holding one) replaces the fields
    it sets, so a published Graphcore config is used as it is.
    """
    from omegaconf import OmegaConf

    values = OmegaConf.to_container(ipu, resolve=True) if not isinstance(ipu, dict) else dict(ipu)
    if values.get("config_file"):
        return read_ipu_config(values["config_file"])
    values = {k: v for k, v in values.items() if k not in GARDEN_ONLY and v is not None}
    return ipu_config_from_dict(values, source=f"ipu settings of model '{model}'" if model else "ipu settings")


def sample_batch(data: Any, size: int = 1) -> dict[str, Any]:
    """The first ``size`` held-out examples of ``data`` (a ``TaskData``), batched as an unshuffled
    loader batches them: the batch a plan's costs are measured on."""
    return data.collate([data.eval[i] for i in range(min(size, len(data.eval)))])


@dataclass
class StagePlan:
    plan: Plan
    blocks: list[Block]
    profiles: list[BlockProfile]
    ipu: IPUConfig
    uniform: Plan | None
    micro_batches: int

    def stage_blocks(self, index: int) -> list[Block]:
        """The blocks IPU ``index`` holds, as planned (a tied head shares stage 0 with its embeddings)."""
        names = set(self.plan.stages[index].blocks)
        return [b for b in self.blocks if b.name in names]

    def sequential_stage_blocks(self, index: int) -> list[Block]:
        """The blocks stage ``index`` runs when stages must run in order, one per process.

        An IPU pipeline may wrap back to IPU 0 for a tied head; ``torch.distributed.pipelining``
        cannot, so a tied block placed on an earlier stage than the blocks before it moves to the
        last stage, and the pipeline backend keeps its weights in step with the embeddings'.
        """
        last = len(self.plan.stages) - 1
        placed = {name: stage.index for stage in self.plan.stages for name in stage.blocks}
        furthest = 0
        where: dict[str, int] = {}
        for block in self.blocks:
            stage = placed[block.name]
            where[block.name] = last if block.tied_to and stage < furthest else stage
            furthest = max(furthest, stage)
        return [b for b in self.blocks if where[b.name] == index]

    def summary(self) -> dict[str, Any]:
        plan = self.plan
        flops = {p.name: p.flops_per_sample for p in self.profiles}
        stages = []
        for stage in plan.stages:
            stages.append({
                "index": stage.index, "blocks": list(stage.blocks), "layers": stage.layers,
                "params": stage.params, "cost": stage.cost,
                "flops_per_sample": sum(flops[b] for b in stage.blocks),
                "memory_bytes": stage.memory_bytes,
                "cost_share": stage.cost / (plan.ideal * len(plan.stages)) if plan.ideal else 0.0,
            })
        return {
            "layers_per_ipu": list(plan.layers_per_ipu),
            "stages": stages,
            "bottleneck_ratio": plan.bottleneck_ratio,
            "uniform_layers_per_ipu": list(self.uniform.layers_per_ipu) if self.uniform else None,
            "uniform_bottleneck_ratio": self.uniform.bottleneck_ratio if self.uniform else None,
            "micro_batches": self.micro_batches,
            "bubble": plan.bubble(self.micro_batches),
        }


def plan_for(prepared: Any, model: Any, sample_batch: dict[str, Any] | None, *, training: bool,
             n_stages: int | None = None, layers_per_ipu: list[int] | None = None) -> StagePlan:
    """Plan ``model``'s stages as the run's ``ipu`` group asks; ``n_stages`` and
    ``layers_per_ipu`` override the group's count and list. Without a ``sample_batch`` the
    blocks are weighed by parameter count alone (no forward pass: a meta-device model will do)."""
    cfg = prepared.cfg
    ipu = optimum_ipu_config(cfg.ipu, prepared.entry.name)
    layers, ipus = training_layout(ipu) if training else inference_layout(ipu)
    if n_stages is not None and n_stages != ipus:
        layers, ipus = ([-1] * n_stages if layers == [-1] else layers), n_stages
    if layers_per_ipu is not None:
        layers = list(layers_per_ipu)
    blocks = prepared.family.stage_blocks(model, prepared.task.name)
    if sample_batch is None:
        profiles, cost = parameter_profiles(model, blocks), "params"
    else:
        profiles = profile_blocks(model, blocks, prepared.task.inputs(sample_batch), timed=cfg.ipu.cost == "measured")
        cost = cfg.ipu.cost
    costs = block_costs(profiles, cost, micro_batch=cfg.data.batch_size // max(1, cfg.ipu.micro_batches),
                        micro_batches_in_flight=ipus, training=training)
    setting = "ipu.layers_per_ipu" if training else "ipu.inference_layers_per_ipu"
    plan = plan_stages(costs, layers, model=prepared.entry.name, n_stages=ipus,
                       memory_budget=parse_bytes(cfg.ipu.memory_budget), setting=setting)
    automatic = [-1] * ipus if list(layers) == [-1] else list(layers)
    empty = [stage.index for stage in plan.stages if not stage.blocks and automatic[stage.index] == -1]
    if empty:  # more IPUs than the model has blocks to place
        raise ConfigError(
            f"{setting.replace('layers_per_ipu', 'ipus_per_replica')}={ipus} leaves {len(empty)} automatic stages of "
            f"model '{prepared.entry.name}' with nothing to run (it has {sum(b.kind == 'layer' for b in blocks)} layers); "
            f"use at most {ipus - len(empty)} IPUs")
    n_layers = sum(b.kind == "layer" for b in blocks)
    uniform = None
    if ipus > 1 and n_layers >= ipus:
        uniform = plan_stages(costs, uniform_layers(n_layers, ipus), model=prepared.entry.name)
    return StagePlan(plan, blocks, profiles, ipu, uniform, cfg.ipu.micro_batches)
