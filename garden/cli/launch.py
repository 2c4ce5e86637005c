"""A run from the command line: overrides checked (one-line errors), then handed to Hydra, whose
job composes the config and executes the run in its own output folder.

    python -m garden model=vit task=classify preset=smoke
    python -m garden --multirun model=vit task=classify preset=smoke trainer.lr=1e-3,3e-3
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig

from garden.config import compose, register, sugar, validate_choices
from garden.errors import GardenError
from garden.runs.checkpoint import resume_overrides
from garden.runs.execution import command_line, execute


def run_hydra(argv: list[str]) -> int:
    """Validate the overrides (one-line errors), then hand them to ``hydra.main``."""
    argv = sugar(argv)
    multirun = any(a in ("-m", "--multirun") for a in argv)
    overrides = [a for a in argv if not a.startswith("-")]
    if multirun:
        for values in _sweep_choices(overrides):
            validate_choices(values)
        register()  # garden's schema and plugin config dirs, which compose() registers otherwise
    else:
        compose(overrides)
        argv = resume_overrides(argv)  # resume=true|DIR: continue in that run's folder

    @hydra.main(version_base="1.3", config_path="pkg://garden.conf", config_name="config")
    def job(cfg: Any) -> Any:
        hydra_cfg = HydraConfig.get()
        try:
            return execute(cfg, Path(hydra_cfg.runtime.output_dir), command=command_line(hydra_cfg.overrides.task))
        except GardenError as err:
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None

    sys.argv = [sys.argv[0], *argv]
    job()
    return 0


def _sweep_choices(overrides: list[str]) -> list[list[str]]:
    """Each combination of the swept model and task values, for validation before a sweep."""
    picked = {k: v.split(",") for k, v in (o.split("=", 1) for o in overrides if "=" in o) if k in ("model", "task")}
    keys = list(picked)
    return [[f"{k}={v}" for k, v in zip(keys, combo)] for combo in itertools.product(*picked.values())]
