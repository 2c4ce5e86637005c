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
from hydra.types import RunMode
from rich.console import Console

from garden import registry
from garden.config import HF, compose, register, sugar, validate_choices
from garden.errors import GardenError
from garden.hub import resolve_weights
from garden.runs.checkpoint import override_value, resume_overrides
from garden.runs.execution import command_line, execute, own
from garden.runs.rundir import check_new_sweep, owns_run_dirs, remove_unstarted
from garden.sweep import record_failure


def run_hydra(argv: list[str]) -> int:
    """Validate the overrides (one-line errors), then hand them to ``hydra.main``.

    A folder named on the command line (``hydra.run.dir=DIR``, or the run ``resume=`` continues)
    is claimed here, before Hydra writes ``.hydra/`` into it, so a refused command changes
    nothing there; a sweep's ``hydra.sweep.dir`` must not hold an earlier sweep.
    """
    argv = sugar(argv)
    multirun = any(a in ("-m", "--multirun") for a in argv)
    overrides = [a for a in argv if not a.startswith("-")]
    if multirun:
        for values in _sweep_choices(overrides):
            validate_choices(values)
        register()  # garden's schema and plugin config dirs, which compose() registers otherwise
        sweep_dir = override_value(overrides, "hydra.sweep.dir")
        if sweep_dir and "${" not in sweep_dir:
            check_new_sweep(Path(sweep_dir))
    else:
        cfg = compose(overrides)
        argv = resume_overrides(argv)  # resume=true|DIR: continue in that run's folder
        run_dir = override_value(argv, "hydra.run.dir")
        if run_dir and "${" not in run_dir:
            own(cfg, Path(run_dir))  # held until the process ends
        say_what_starts(cfg)

    @hydra.main(version_base="1.3", config_path="pkg://garden.conf", config_name="config")
    def job(cfg: Any) -> Any:
        hydra_cfg = HydraConfig.get()
        output_dir = Path(hydra_cfg.runtime.output_dir)
        sweeping = hydra_cfg.mode == RunMode.MULTIRUN
        try:
            return execute(cfg, output_dir, command=command_line(hydra_cfg.overrides.task))
        except GardenError as err:
            if sweeping:  # the sweep goes on; its summary names the failed point and its cause
                return record_failure(output_dir, err)
            remove_unstarted(output_dir)
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
        except Exception as err:
            if sweeping:
                return record_failure(output_dir, err)
            remove_unstarted(output_dir)
            raise
        except BaseException:  # a stop signal: a run stopped before its first step leaves nothing
            if not sweeping:
                remove_unstarted(output_dir)
            raise

    sys.argv = [sys.argv[0], *argv]
    job()
    return 0


def say_what_starts(cfg: Any) -> None:
    """The run's first line, on stdout before torch loads (several seconds on a laptop): what runs,
    from which weights. The weights are resolved first (torch-free: the Hub cache, or a download
    with its own progress bar), so a pretrained variant whose checkpoint is out of reach stops
    here with one line and no run folder (:func:`garden.hub.resolve_weights`). An ``hf:`` model's
    architecture, and so its weights, are known only once its config is read (with torch)."""
    if cfg.model.name.startswith(HF):
        if owns_run_dirs():
            Console(highlight=False).print(f"[bold]{cfg.model.name}[/] · {cfg.task.name} · {cfg.mode} · loading torch…")
        return
    entry = registry.get(cfg.model.name)
    variant = entry.variant(cfg.model.variant)
    weights = resolve_weights(cfg.weights.source, variant, allow_pickle=cfg.weights.allow_pickle,
                              for_training=cfg.mode == "train", entry=entry)
    if not owns_run_dirs():  # a torchrun rank other than 0: rank 0 speaks for the run
        return
    # stdout, where the run's results go: stderr keeps to progress, notes and the one-line errors
    Console(highlight=False).print(f"[bold]{entry.name}[/] ({variant.name}) · {cfg.task.name} · {cfg.mode} · "
                                   f"weights {weights.origin} · loading torch…")


def _sweep_choices(overrides: list[str]) -> list[list[str]]:
    """Each combination of the swept model and task values, for validation before a sweep."""
    picked = {k: v.split(",") for k, v in (o.split("=", 1) for o in overrides if "=" in o) if k in ("model", "task")}
    keys = list(picked)
    return [[f"{k}={v}" for k, v in zip(keys, combo)] for combo in itertools.product(*picked.values())]
