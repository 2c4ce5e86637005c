"""A run, start to end: config -> registry entry -> family -> data -> model -> backend -> outputs.

    >>> import garden
    >>> result = garden.run(["model=vit", "task=classify", "preset=smoke"])               # doctest: +SKIP
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from garden.backends import select_backend
from garden.config import check_values, compose
from garden.console import console
from garden.runs.checkpoint import (
    LATEST, check_resumable, identity_of, known_model, resume_dir, resume_target, wants_resume,
)
from garden.runs.loops import infer, train
from garden.runs.prepared import prepare
from garden.runs.rundir import Claim, claim, new_run_dir, remove_unstarted


def run(overrides_or_cfg: Any, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Run a composed config (or a list of overrides) and return its metrics (``metrics.json``'s
    content) with ``output_dir``, the run's folder."""
    command = None
    if isinstance(overrides_or_cfg, (list, tuple)):
        command = command_line(overrides_or_cfg)
        overrides_or_cfg = compose(list(overrides_or_cfg))
    if output_dir is not None:
        return execute(overrides_or_cfg, Path(output_dir), command=command)
    output_dir = new_run_dir()
    try:
        return execute(overrides_or_cfg, output_dir, command=command)
    except BaseException:
        remove_unstarted(output_dir)
        raise


def command_line(overrides: Any) -> str:
    """The ``python -m garden ...`` line that reproduces a run from its overrides."""
    return "python -m garden " + " ".join(shlex.quote(o) for o in overrides)


def own(cfg: Any, output_dir: Path) -> Claim | None:
    """Lock ``output_dir`` for this run (:func:`garden.runs.rundir.claim`) and, when ``cfg``
    resumes the run in it, check that it may (:func:`garden.runs.checkpoint.check_resumable`);
    one line and nothing changed on disk when not. Called before anything is written there (by
    the command line before Hydra writes ``.hydra/``, and again, at no cost, by :func:`execute`)."""
    resuming = wants_resume(resume_target(cfg))
    held = claim(output_dir, resuming=resuming)
    if not resuming or (held is not None and held.checked):
        return held
    try:
        changes = check_resumable(cfg, output_dir)
    except BaseException:
        if held is not None:
            held.release()
        raise
    if held is not None:
        held.checked = True
        if changes:
            listed = ", ".join(f"{k} {old} -> {new}" for k, (old, new) in changes.items())
            console.print(f"[yellow]note:[/] resuming with changes that resume.allow_changes accepts: {listed}")
    return held


def execute(cfg: Any, output_dir: Path, *, command: str | None = None) -> dict[str, Any]:
    """Prepare, pick the backend, and train or infer; writes everything under ``output_dir``,
    which this process holds (:func:`own`) from before the first write to the end."""
    check_values(cfg)  # a sweep's points are composed by Hydra, not by compose()
    target = resume_target(cfg)
    if wants_resume(target):  # a stopped run continues in its own folder
        if str(target).strip().lower() in LATEST and identity_of(output_dir):
            target = output_dir  # resume=true in a given run dir continues that run
        output_dir = resume_dir(target, known_model(cfg.model.name), cfg.task.name)
    held = own(cfg, output_dir)
    try:
        return prepare_and_run(cfg, output_dir, command)
    finally:
        if held is not None:
            held.release()


def prepare_and_run(cfg: Any, output_dir: Path, command: str | None) -> dict[str, Any]:
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
    result["output_dir"] = str(output_dir)  # after metrics.json: the caller's, not the file's
    return result


def agreed_output_dir(output_dir: Path) -> Path:
    """Rank 0's output folder, on every process of a torchrun job.

    Each process composes its own Hydra run dir (the clock and a random suffix), so they differ;
    checkpoints need every process writing into one folder, the one rank 0 locked. A process whose folder differs
    removes it when it holds nothing but Hydra's own files (:func:`remove_unstarted`).
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return output_dir
    box = [str(output_dir.resolve())]
    dist.broadcast_object_list(box, src=0)
    agreed = Path(box[0])
    if agreed != output_dir.resolve():
        remove_unstarted(output_dir)
    return agreed
