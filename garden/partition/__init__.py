"""Pipeline partitioning without torch: the stage planner and Optimum Graphcore's ``ipu_config.json``."""

from garden.partition.ipu_config import (
    IPUConfig,
    inference_layout,
    ipu_config_from_dict,
    read_ipu_config,
    training_layout,
    write_ipu_config,
)
from garden.partition.planner import BlockCost, Plan, Stage, check_layers_per_ipu, plan_stages, uniform_layers

__all__ = [
    "BlockCost",
    "IPUConfig",
    "Plan",
    "Stage",
    "check_layers_per_ipu",
    "inference_layout",
    "ipu_config_from_dict",
    "plan_stages",
    "read_ipu_config",
    "training_layout",
    "uniform_layers",
    "write_ipu_config",
]
