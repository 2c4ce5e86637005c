"""Backends run a prepared model: ``local`` (one process), ``pipeline`` (torchrun, one stage per
rank) and ``ipu`` (poptorch). A backend knows nothing of the model it runs beyond the task's
``inputs``/``forward``/``loss`` and, when it partitions, the family's stage blocks.

Every backend offers the same small surface to the trainer::

    parameters()            the parameters this process optimises
    train_step(batch)       forward + backward, returns the loss (or None off the last stage)
    forward(batch)          the model output for a batch (None off the last stage)
    clip_grad_norm(max)     clip by the global norm over all parameters of the model
    share(obj)              ``obj`` as the process holding the outputs has it, on every process
    model_for_saving()      the whole model, on the writing process (collective: all call it)
    close(failed)           release devices and process groups at the end of a run
    is_writer               whether this process writes outputs

Data-parallel replicas (``ipu.replication_factor``) and gradient accumulation
(``ipu.gradient_accumulation_steps``) are the trainer's on ``local`` and ``pipeline``: such a
backend sets ``replicas``, ``replica`` (this process's) and ``accumulation``, takes
``train_step(batch, scale, sync)`` (the micro-batch's weight in the global batch; whether to
synchronise gradients across replicas now) and offers ``replica_sum(value)`` and
``gather_replicas(obj)`` (every replica's ``obj`` on the process that computes metrics).

A backend that applies the optimizer itself (``ipu``: poptorch updates the weights inside the
compiled step) sets ``steps_optimizer = True`` and offers ``follow_optimizer(optimizer,
max_grad_norm)``: the trainer hands it its optimizer (settings and scheduled learning rate) and
then neither clips nor steps; ``train_step`` returns the loss after the update.
"""

from __future__ import annotations

import os
from typing import Any

from garden.errors import BackendError


def poptorch_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("poptorch") is not None


def replica_layout(replicas: int, stages: int | None, world: int, backend: str) -> tuple[int, int]:
    """``(replicas, stages)`` for ``world`` processes, or a BackendError naming both numbers.

    >>> replica_layout(2, 2, 4, "pipeline"), replica_layout(2, None, 4, "pipeline")
    ((2, 2), (2, 2))
    """
    if replicas < 1:
        raise BackendError(f"ipu.replication_factor={replicas} must be at least 1")
    if stages is None:
        stages = max(1, world // replicas)
    if replicas * stages != world:
        if backend == "local":
            how = (f"start torchrun --nproc-per-node {replicas} -m garden ... backend=local" if replicas > 1 else
                   f"set ipu.replication_factor={world} (one replica per process)")
            raise BackendError(f"ipu.replication_factor={replicas} replicas but {world} processes were started; {how}")
        raise BackendError(
            f"ipu.replication_factor={replicas} x ipu.ipus_per_replica={stages} = {replicas * stages} processes "
            f"but torchrun started {world}; run torchrun --nproc-per-node {replicas * stages}, or choose "
            f"replication_factor x ipus_per_replica = {world}")
    return replicas, stages


def select_backend(cfg: Any, prepared: Any):
    name = cfg.backend
    if name == "auto":
        name = "ipu" if poptorch_available() else "local"
    if name == "local":
        from garden.backends.local import LocalBackend

        return LocalBackend(prepared)
    if name == "pipeline":
        if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
            raise BackendError(
                "backend=pipeline runs one stage per process and needs torchrun; start it as "
                "torchrun --nproc-per-node N -m garden ... backend=pipeline (N = ipu.ipus_per_replica)"
            )
        from garden.backends.pipeline import PipelineBackend

        return PipelineBackend(prepared)
    if name == "ipu":
        from garden.backends.ipu import IPUBackend

        return IPUBackend(prepared)
    raise BackendError(f"unknown backend '{name}'; use one of auto, local, pipeline, ipu")
