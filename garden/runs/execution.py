"""A run, start to end: config -> registry entry -> family -> data -> model -> backend -> outputs.

    >>> import garden
    >>> result = garden.run(["model=vit", "task=classify", "preset=smoke"])               # doctest: +SKIP
"""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path
from typing import Any

from garden import registry
from garden.backends import select_backend
from garden.config import compose
from garden.runs.checkpoint import resume_dir, wants_resume
from garden.runs.loops import infer, train
from garden.runs.prepared import prepare


def run(overrides_or_cfg: Any, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Run a composed config (or a list of overrides) and return its metrics."""
    command = None
    if isinstance(overrides_or_cfg, (list, tuple)):
        command = command_line(overrides_or_cfg)
        overrides_or_cfg = compose(list(overrides_or_cfg))
    if output_dir is None:
        output_dir = Path("outputs") / time.strftime("%Y-%m-%d") / time.strftime("%H-%M-%S")
    return execute(overrides_or_cfg, Path(output_dir), command=command)


def command_line(overrides: Any) -> str:
    """The ``python -m garden ...`` line that reproduces a run from its overrides."""
    return "python -m garden " + " ".join(shlex.quote(o) for o in overrides)


def execute(cfg: Any, output_dir: Path, *, command: str | None = None) -> dict[str, Any]:
    """Prepare, pick the backend, and train or infer; writes everything under ``output_dir``."""
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
