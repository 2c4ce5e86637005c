"""What every backend offers the run's loops, and the pieces the backends share.

:class:`Backend` is the whole surface ``garden.runs.loops`` drives: one ``train_step(batch,
scale, sync)``, ``forward`` and ``model_for_saving`` for ``local``, ``pipeline`` and ``ipu``
alike, with the single-replica, single-stage, host-optimizer answers as defaults, so a loop
calls every method on every backend and never asks which one it has::

    loss = backend.train_step(micro_batch, scale=n / size, sync=last_micro_step)
    step_loss = backend.replica_sum(loss)       # the loss itself where there is one replica
"""

from __future__ import annotations

import abc
import contextlib
from typing import Any, ClassVar

from garden.errors import BackendError


class Backend(abc.ABC):
    """Runs a prepared model for the loops: one process, a pipeline of ranks, or IPUs.

    Data-parallel replicas (``ipu.replication_factor``) and gradient accumulation
    (``ipu.gradient_accumulation_steps``) are the loops' on ``local`` and ``pipeline``: such a
    backend sets ``replicas``, ``replica`` (this process's) and ``accumulation``, and the loops
    hand each micro-batch to ``train_step`` with its weight in the global batch. ``ipu``
    replicates and accumulates inside poptorch, so the loops see one replica and one micro-step.

    A backend that applies the optimizer itself (``ipu``: poptorch updates the weights inside
    the compiled step) sets ``steps_optimizer``; the loops then hand it their optimizer through
    :meth:`follow_optimizer` and neither clip nor step.
    """

    name: ClassVar[str]
    #: the whole model (on the host for ``ipu``); the run's outputs are saved from it
    model: Any
    #: whether this process writes the outputs (metrics, the model folder, messages)
    is_writer: bool = True
    #: data-parallel replicas the loops split each global batch over, and this process's one
    replicas: int = 1
    replica: int = 0
    #: micro-steps per optimizer step (gradient accumulation done by the loops)
    accumulation: int = 1
    #: pipeline stages of one replica (recorded in checkpoints: a resume needs the same layout)
    stages: int = 1
    #: ``fp32``, ``bf16`` or ``fp16``; set by the loops from ``trainer``/``infer.precision``
    precision: str = "fp32"
    #: whether the backend applies the optimizer itself (see :meth:`follow_optimizer`)
    steps_optimizer: bool = False
    #: the stage plan the model ran with (a ``StagePlan``), written to ``ipu_config.json``
    stage_plan: Any = None
    #: where checkpointed optimizer state is loaded to
    device: Any = "cpu"
    #: the inference precisions this backend runs (``infer.precision``; see garden.backends.plans)
    inference_precisions: ClassVar[tuple[str, ...]] = ("fp32", "bf16", "fp16")
    #: whether it can ``torch.compile`` the model for inference
    can_compile: ClassVar[bool] = False

    @abc.abstractmethod
    def parameters(self) -> list:
        """The parameters this process optimises."""

    @abc.abstractmethod
    def train_step(self, batch: dict[str, Any], scale: float = 1.0, sync: bool = True) -> Any:
        """Forward and backward of ``batch``, its gradients weighed by ``scale`` (the batch's share
        of the global batch) and added to those accumulated, synchronised across replicas when
        ``sync`` (the step's last micro-batch). Returns the loss, or ``None`` on a process that
        does not compute it (a pipeline's earlier stages)."""

    @abc.abstractmethod
    def forward(self, batch: dict[str, Any]) -> Any:
        """The model's output for ``batch`` (``None`` on a process that does not hold it)."""

    @abc.abstractmethod
    def clip_grad_norm(self, max_norm: float) -> None:
        """Clip by the global norm over all parameters of the model."""

    def use_plan(self, plan: Any) -> None:
        """Run ``forward`` as ``plan`` says (a :class:`garden.backends.plans.Plan`), or a
        BackendError naming what this backend runs instead."""
        if plan.precision not in self.inference_precisions or (plan.compile and not self.can_compile):
            runs = ", ".join(self.inference_precisions) + (" (each +compile)" if self.can_compile else "")
            raise BackendError(f"backend={self.name} runs infer.precision={runs}, not {plan.label}")
        self.precision = plan.precision

    def reference_forward(self, batch: dict[str, Any]) -> Any:
        """The output of the model as loaded, in fp32: what a quantised plan is checked against."""
        plain = self.precision
        self.precision = "fp32"
        try:
            return self.forward(batch)
        finally:
            self.precision = plain

    def parameter_count(self) -> int:
        """The model's parameters (what ``infer.precision=auto`` weighs)."""
        return sum(p.numel() for p in self.model.parameters())

    def share(self, obj: Any) -> Any:
        """``obj`` as the process holding the outputs has it, on every process."""
        return obj

    def replica_sum(self, value: float) -> float:
        """``value`` summed over the replicas."""
        return value

    def gather_replicas(self, obj: Any) -> list | None:
        """Every replica's ``obj``, in replica order, on the process that computes metrics
        (``None`` elsewhere)."""
        return [obj]

    def follow_optimizer(self, optimizer: Any, max_grad_norm: float | None = None) -> None:
        """Take the loops' optimizer (settings and scheduled learning rate) and clipping, for a
        backend that ``steps_optimizer``; one whose loops step the optimizer has nothing to do."""

    def checkpoint_part(self) -> tuple[str, Any, bool]:
        """``(name, module, writes)``: the weights this process keeps in a checkpoint."""
        return "model", self.model, self.is_writer

    def model_for_saving(self) -> Any:
        """The whole trained model, on the writing process (a collective: every process calls it)."""
        return self.model

    def stage_seconds(self) -> list[float] | None:
        """Seconds each pipeline stage spent computing over the run, in stage order, on the
        writing process (a collective: every process calls it); ``None`` with no stages to time."""
        return None

    def close(self, failed: bool = False) -> None:
        """Release devices and process groups at the end of a run (``failed``: without waiting
        for the other processes, which may be elsewhere)."""


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


def autocast(precision: str, device_type: str):
    """An autocast context for ``bf16``/``fp16``; a no-op for ``fp32``."""
    import torch

    if precision in ("bf16", "fp16"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        return torch.autocast(device_type=device_type, dtype=dtype)
    return contextlib.nullcontext()


def to_device(batch: dict[str, Any], device: Any) -> dict[str, Any]:
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}
