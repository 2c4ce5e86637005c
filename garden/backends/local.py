"""One process, one device: the model runs whole (the reference the other backends must match)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from garden.backends import plans
from garden.backends.base import Backend, autocast, replica_layout, to_device


class Replicated:
    """A DistributedDataParallel model that still answers the model's own attributes (tasks call
    helpers such as ``model._get_feat_extract_output_lengths``)."""

    def __init__(self, ddp: Any):
        self.ddp = ddp

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.ddp(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ddp.module, name)


class LocalBackend(Backend):
    """The whole model in this process; under torchrun, one data-parallel replica per process.

    ``ipu.replication_factor=R`` asks for R replicas: ``torchrun --nproc-per-node R -m garden ...
    backend=local ipu.replication_factor=R`` wraps the model in ``DistributedDataParallel`` (gloo
    on CPU, nccl on GPU), which averages gradients across replicas in the backward pass. The
    trainer hands each replica its share of every batch with the share's weight (``scale``), so
    the averaged gradient is the whole batch's. ``ipu.gradient_accumulation_steps=A`` runs A
    micro-steps per optimizer step, gradients synchronised on the last (``sync``).
    """

    name = "local"
    inference_precisions = plans.PRECISIONS
    can_compile = True

    def __init__(self, prepared: Any):
        import torch

        cfg = prepared.cfg
        self.task = prepared.task
        world = int(os.environ.get("WORLD_SIZE", "1"))
        self.replicas, _ = replica_layout(cfg.ipu.replication_factor, 1, world, "local")
        self.accumulation = cfg.ipu.gradient_accumulation_steps
        self.replica = int(os.environ.get("RANK", "0")) if self.replicas > 1 else 0
        self.is_writer = self.replica == 0
        cuda = torch.cuda.is_available()
        local = int(os.environ.get("LOCAL_RANK", "0"))
        self.device = torch.device(f"cuda:{local}" if self.replicas > 1 else "cuda") if cuda else torch.device("cpu")
        self.model = prepared.family.build(prepared.spec).to(self.device)
        #: what ``forward`` runs: the model, or its quantised / compiled form (:meth:`use_plan`)
        self.inference_model: Any = None
        self._prepared_forms: dict[str, Any] = {}
        self.ddp: Any = None
        self._owns_group = False
        if self.replicas > 1:
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel

            if cuda:
                torch.cuda.set_device(self.device)
            if not dist.is_initialized():
                dist.init_process_group("nccl" if cuda else "gloo")
                self._owns_group = True
            # unused parameters (a pooler the task skips) would stall DDP's reduction: look for them
            self.ddp = DistributedDataParallel(self.model, device_ids=[self.device] if cuda else None,
                                               find_unused_parameters=True)

    def parameters(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def train_step(self, batch: dict[str, Any], scale: float = 1.0, sync: bool = True):
        """Forward and backward of ``loss x scale`` (this micro-batch's share of the global batch);
        gradients accumulate, and are averaged across replicas when ``sync``."""
        self.model.train()
        batch = to_device(batch, self.device)
        model = Replicated(self.ddp) if self.ddp is not None else self.model
        with contextlib.ExitStack() as stack:
            if self.ddp is not None and not sync:
                stack.enter_context(self.ddp.no_sync())
            with autocast(self.precision, self.device.type):
                output = self.task.forward(model, batch)
            loss = self.task.loss(output, self.task.target(batch))
            # DDP averages over replicas; the shares' weights already sum to one over all of them
            (loss * (scale * self.replicas) if (scale != 1.0 or self.replicas > 1) else loss).backward()
        return loss.detach()

    def use_plan(self, plan: Any) -> None:
        """Quantise (``int8-dynamic``: a copy, the fp32 model stays for the agreement check)
        and/or compile the model that ``forward`` runs."""
        super().use_plan(plan)
        if plan.quantised and self.device.type != "cpu":
            from garden.errors import BackendError

            raise BackendError(f"infer.precision={plan.label} runs on the CPU only (dynamic int8); use bf16 or fp32")
        self.model.eval()
        if plan.label not in self._prepared_forms:  # quantised / compiled once per process, like the warm-up
            model = plans.quantize_dynamic(self.model) if plan.quantised else self.model
            self._prepared_forms[plan.label] = plans.compiled(model) if plan.compile else \
                (None if model is self.model else model)
        self.inference_model = self._prepared_forms[plan.label]

    def forward(self, batch: dict[str, Any]):
        model = self.model if self.inference_model is None else self.inference_model  # a compiled one has no truth value
        return self._forward(model, batch, self.precision)

    def reference_forward(self, batch: dict[str, Any]):
        return self._forward(self.model, batch, "fp32")

    def _forward(self, model: Any, batch: dict[str, Any], precision: str):
        import torch

        self.model.eval()
        batch = to_device(batch, self.device)
        with torch.inference_mode(), autocast(precision, self.device.type):
            return self.task.forward(model, batch)

    def clip_grad_norm(self, max_norm: float) -> None:
        import torch

        torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm)

    def replica_sum(self, value: float) -> float:
        """``value`` summed over the replicas."""
        if self.replicas == 1:
            return value
        import torch
        import torch.distributed as dist

        total = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(total)
        return float(total.item())

    def gather_replicas(self, obj: Any) -> list | None:
        """Every replica's ``obj`` (in replica order) on replica 0, ``None`` elsewhere."""
        if self.replicas == 1:
            return [obj]
        import torch.distributed as dist

        out = [None] * self.replicas if self.is_writer else None
        dist.gather_object(obj, out, dst=0)
        return out

    def share(self, obj: Any) -> Any:
        """``obj`` as replica 0 has it, on every replica."""
        if self.replicas == 1:
            return obj
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self, failed: bool = False) -> None:
        """Leave the replicas' process group; after a failure, without waiting for the others."""
        if self.replicas > 1 and not failed:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.barrier()
                if self._owns_group:
                    dist.destroy_process_group()

    def model_for_saving(self):
        return self.model
