"""One pipeline stage per process with ``torch.distributed.pipelining`` (gloo on CPU, nccl on GPU).

Every rank builds the whole model from the same seed (or the same weights), plans the stages
the same way, and keeps the blocks of its own stage in a :class:`StageModule`; the schedule
(GPipe or 1F1B, ``ipu.schedule``) moves micro-batches between ranks. Gradients are scaled by
the number of micro-batches, and gradient clipping uses the norm over every stage, so one
step here updates the weights exactly as one local step does. Rank 0 writes the outputs.

With ``ipu.replication_factor=R`` the processes form an R x P grid (a ``DeviceMesh`` with
dimensions ``replica`` and ``stage``; rank = replica x P + stage): each replica is a pipeline of
P stages talking inside its ``stage`` group, trains on its share of every batch, and after the
step's last micro-batch each stage's gradients are summed across its ``replica`` group (the
trainer weighs each share, so the sum is the whole batch's gradient). ``torchrun
--nproc-per-node R*P`` runs both at once.
"""

from __future__ import annotations

import os
import time
from typing import Any

from garden.backends.base import Backend, autocast, replica_layout, to_device
from garden.errors import BackendError, ConfigError
from garden.partition.plan import plan_for, sample_batch
from garden.partition.stages import block_parameters

SCHEDULES = ("GPipe", "1F1B")


def stage_module(model: Any, blocks: list):
    """An ``nn.Module`` owning exactly the parameters of ``blocks``, running them in order: their
    modules in ``parts``, parameters named on their own (wav2vec2's ``masked_spec_embed``) in ``loose``."""
    import torch

    class StageModule(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            parts: dict[str, Any] = {}
            loose: dict[str, Any] = {}
            for path in (path for b in blocks for path in b.modules):
                try:
                    parts[path.replace(".", "__")] = model.get_submodule(path)
                except AttributeError:
                    loose[path.replace(".", "__")] = model.get_parameter(path)
            self.parts = torch.nn.ModuleDict(parts)
            self.loose = torch.nn.ParameterDict(loose)
            object.__setattr__(self, "whole", model)  # not a submodule: other stages own the rest

        def forward(self, *carry):
            for block in blocks:
                carry = block.run(self.whole, *carry)
            carry = tuple(t.contiguous() for t in carry)  # sent to the next rank: no expanded views
            return carry if len(carry) > 1 else carry[0]

    return StageModule()


def micro_batches_for(batch: int, wanted: int) -> int:
    """The largest count <= ``wanted`` that splits ``batch`` evenly (so micro-batch losses average
    to the batch loss exactly, as in a local step)."""
    return max(n for n in range(1, min(batch, wanted) + 1) if batch % n == 0)


class PipelineBackend(Backend):
    name = "pipeline"

    def __init__(self, prepared: Any):
        import torch
        import torch.distributed as dist

        self.prepared, self.task, cfg = prepared, prepared.task, prepared.cfg
        self.rank, self.world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", self.rank))
        cuda = torch.cuda.is_available()
        self.device = torch.device(f"cuda:{local}") if cuda else torch.device("cpu")
        if cuda:
            torch.cuda.set_device(self.device)
        if not dist.is_initialized():
            dist.init_process_group("nccl" if cuda else "gloo")
        if cfg.ipu.schedule not in SCHEDULES:
            raise ConfigError(f"ipu.schedule={cfg.ipu.schedule} is not one of: {', '.join(SCHEDULES)}")
        self.training = cfg.mode == "train"
        self.replicas = cfg.ipu.replication_factor
        self.accumulation = cfg.ipu.gradient_accumulation_steps
        if self.replicas == 1:
            self.stages, self.stage_group, self.replica_group = self.world, None, None
        else:
            from torch.distributed.device_mesh import init_device_mesh

            _, self.stages = replica_layout(self.replicas, cfg.ipu.ipus_per_replica, self.world, "pipeline")
            mesh = init_device_mesh(self.device.type, (self.replicas, self.stages),
                                    mesh_dim_names=("replica", "stage"))
            self.stage_group, self.replica_group = mesh.get_group("stage"), mesh.get_group("replica")
        self.replica, self.stage = divmod(self.rank, self.stages)
        self.model = prepared.family.build(prepared.spec).to(self.device)
        self.stage_plan = self._plan()
        self.is_first, self.is_last = self.stage == 0, self.stage == self.stages - 1
        self.is_writer = self.rank == 0
        self.module = stage_module(self.model, self.stage_plan.sequential_stage_blocks(self.stage))
        self.shared, self.counted_elsewhere = self._share_across_stages()
        self._schedules: dict[tuple[int, bool], Any] = {}
        self._busy = 0.0  # seconds this stage spent in its forward and backward chunks

    def _plan(self):
        import torch.distributed as dist

        cfg, data = self.prepared.cfg, self.prepared.data
        stages = cfg.ipu.ipus_per_replica
        if self.replicas == 1 and stages is not None and stages != self.world:
            raise BackendError(
                f"ipu.ipus_per_replica={stages} stages but torchrun started {self.world} processes; "
                f"run torchrun --nproc-per-node {stages} or set ipu.ipus_per_replica={self.world}"
            )
        sample = to_device(sample_batch(data, cfg.data.batch_size), self.device)
        plan = plan_for(self.prepared, self.model, sample, training=self.training, n_stages=self.stages)
        chosen = [list(plan.plan.layers_per_ipu)]
        dist.broadcast_object_list(chosen, src=0)  # measured costs differ between ranks: follow rank 0
        if chosen[0] != list(plan.plan.layers_per_ipu):
            plan = plan_for(self.prepared, self.model, sample, training=self.training, n_stages=self.stages,
                            layers_per_ipu=chosen[0])
        return plan

    def _share_across_stages(self) -> tuple[list[tuple[list, Any]], set[int]]:
        """Parameters that blocks on several stages hold: a tied head on the last stage and the
        embeddings on the first, a layer run twice (ALBERT), embeddings a decoder reads again.

        Each process holds its own copy; after every backward their gradients are summed over
        the stages holding them (as Megatron does for tied embeddings), so every copy takes the
        same steps as the one shared parameter of a local run. Returns this stage's
        ``[(parameters, process group)]`` and the shared parameters another stage counts in the
        gradient norm (the first stage holding each).
        """
        import torch.distributed as dist

        holders: dict[int, set[int]] = {}
        for stage in range(self.stages):
            for block in self.stage_plan.sequential_stage_blocks(stage):
                for param in block_parameters(self.model, block).values():
                    holders.setdefault(id(param), set()).add(stage)
        by_stages: dict[tuple[int, ...], list] = {}
        for param in self.model.parameters():  # the same order on every rank
            stages = tuple(sorted(holders.get(id(param), ())))
            if len(stages) > 1:
                by_stages.setdefault(stages, []).append(param)
        mine = []
        for stages, params in sorted(by_stages.items()):
            for replica in range(self.replicas):  # every rank creates every group, in the same order
                ranks = [replica * self.stages + s for s in stages]
                group = dist.new_group(ranks)
                if self.rank in ranks:
                    mine.append((params, group))
        elsewhere = {id(p) for stages, params in by_stages.items() if stages[0] != self.stage for p in params}
        return mine, elsewhere

    def _sum_shared_gradients(self) -> None:
        import torch
        import torch.distributed as dist

        for params, group in self.shared:
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad, group=group)

    def _schedule(self, n: int, training: bool, inputs: tuple):
        """A schedule per micro-batch count and input shape: stages size their receive buffers
        from the first batch they see, and text batches vary in length. Every rank reads the same
        batches, so each computes the same key without asking the others."""
        key = (n, training, tuple(tuple(t.shape) for t in inputs))
        if key not in self._schedules:
            from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

            static = self._static_arguments(tuple(t.tensor_split(n)[0] for t in inputs), training)
            stage = PipelineStage(self.module, self.stage, self.stages, self.device, group=self.stage_group, **static)
            self._time_chunks(stage)
            # 1F1B needs a micro-batch per stage; a single graph (or a tiny batch) runs as GPipe
            one_f_one_b = self.prepared.cfg.ipu.schedule == "1F1B" and n >= self.stages
            cls = Schedule1F1B if one_f_one_b else ScheduleGPipe
            loss = self._micro_batch_loss if training else None
            self._schedules[key] = cls(stage, n_microbatches=n, loss_fn=loss)
        return self._schedules[key]

    def _time_chunks(self, stage: Any) -> None:
        """Add the time ``stage`` spends computing each micro-batch (not waiting for its
        neighbours) to ``_busy``, for :meth:`stage_seconds`."""
        import torch

        cuda = self.device.type == "cuda"
        for name in ("forward_one_chunk", "backward_one_chunk"):
            method = getattr(stage, name, None)
            if method is None:
                continue

            def timed(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return _method(*args, **kwargs)
                finally:
                    if cuda:
                        torch.cuda.synchronize(self.device)
                    self._busy += time.perf_counter() - start

            setattr(stage, name, timed)

    def stage_seconds(self) -> list[float] | None:
        """Each stage's computing seconds, as replica 0's processes (ranks 0 .. stages-1) measured them."""
        import torch.distributed as dist

        everyone: list[Any] = [None] * self.world
        dist.all_gather_object(everyone, round(self._busy, 6))
        return everyone[: self.stages]

    def _static_arguments(self, micro: tuple, training: bool) -> dict[str, Any]:
        """What this stage receives and sends for one micro-batch (and the gradients flowing back),
        found by running the stages before it here: every rank holds the whole model. Static
        shapes spare the stages their run-time shape inference, which feeds blocks uninitialised
        tensors, wrong for blocks that read what they carry (lengths from a mask, edge indices)."""
        import torch

        carry = micro
        with torch.no_grad():
            for earlier in range(self.stage):
                for block in self.stage_plan.sequential_stage_blocks(earlier):
                    carry = block.run(self.model, *carry)
            example_in = tuple(t.contiguous() for t in carry)
            out = self.module(*example_in)
        example_out = out if isinstance(out, tuple) else (out,)
        static: dict[str, Any] = {"input_args": example_in, "output_args": example_out}
        if training:  # what crosses a stage boundary carries gradients back (run under no_grad above)
            for t in (*([] if self.is_first else example_in), *([] if self.is_last else example_out)):
                if t.is_floating_point():
                    t.requires_grad_(True)

            def grads(tensors: tuple, flows: bool) -> tuple:
                return tuple(torch.zeros_like(t) if flows and t.is_floating_point() else None for t in tensors)

            static["input_grads"] = grads(example_in, not self.is_first)
            static["output_grads"] = grads(example_out, not self.is_last)
        return static

    def _micro_batch_loss(self, output: Any, target: Any) -> Any:
        """A micro-batch's loss, weighted by its share of the batch's loss units (labelled tokens
        for a language model), so the schedule's average of micro-batch losses is the batch loss."""
        n, total = self._weighting
        return self.task.loss(output, target) * (self.task.loss_units(target) * n / total)

    def parameters(self):
        return [p for p in self.module.parameters() if p.requires_grad]

    def _run(self, batch: dict[str, Any], training: bool):
        batch = to_device(batch, self.device)
        inputs = self.task.inputs(batch)
        size = inputs[0].shape[0]
        n = micro_batches_for(size, self.prepared.cfg.ipu.micro_batches) if self.task.splittable else 1
        if self.task.splittable and self.stages > 1 and n < self.stages and training and size >= self.stages:
            n = micro_batches_for(size, max(self.prepared.cfg.ipu.micro_batches, self.stages))
        schedule = self._schedule(n, training, inputs)
        args = inputs if self.is_first else ()
        kwargs: dict[str, Any] = {}
        losses: list = []
        if self.is_last and training:
            target = self.task.target(batch)
            self._weighting = (n, max(1.0, self.task.loss_units(target)))
            kwargs = {"target": target, "losses": losses}
        with autocast(self.precision, self.device.type):
            output = schedule.step(*args, **kwargs) if training else schedule.eval(*args)
        return output, losses

    def train_step(self, batch: dict[str, Any], scale: float = 1.0, sync: bool = True):
        """One pipelined forward and backward over ``batch``; its gradients, times ``scale`` (the
        batch's share of the global batch), are added to those already accumulated, and summed
        across replicas when ``sync``."""
        import torch

        self.model.train()
        params = self.parameters()
        held = [p.grad for p in params]
        if scale != 1.0 or any(g is not None for g in held):
            for p in params:  # the schedule rescales .grad by its micro-batch count: keep earlier ones out
                p.grad = None
        _, losses = self._run(batch, training=True)
        self._sum_shared_gradients()
        for p, before in zip(params, held):
            if p.grad is not None and scale != 1.0:
                p.grad.mul_(scale)
            if before is not None:
                p.grad = before if p.grad is None else p.grad.add_(before)
        if sync and self.replicas > 1:
            self._sum_across_replicas(params)
        return torch.stack([l.detach() for l in losses]).mean() if losses else None

    def _sum_across_replicas(self, params: list) -> None:
        """Each gradient summed over this stage's replicas (one flat all-reduce)."""
        import torch
        import torch.distributed as dist

        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat, group=self.replica_group)
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset:offset + p.numel()].view_as(p.grad))
            offset += p.numel()

    def forward(self, batch: dict[str, Any]):
        import torch

        self.model.eval()
        with torch.no_grad():
            output, _ = self._run(batch, training=False)
        return output if self.is_last else None

    def clip_grad_norm(self, max_norm: float) -> None:
        """Clip by the global norm over all stages, as ``clip_grad_norm_`` would on the whole model."""
        import torch
        import torch.distributed as dist

        grads = [p.grad for p in self.parameters() if p.grad is not None and id(p) not in self.counted_elsewhere]
        local = torch.stack([g.detach().float().pow(2).sum() for g in grads]).sum() if grads else torch.zeros(())
        total = local.to(self.device)
        dist.all_reduce(total, group=self.stage_group)  # replicas hold the same gradients: one pipeline
        coef = torch.clamp(max_norm / (total.sqrt() + 1e-6), max=1.0)
        for p in self.parameters():
            if p.grad is not None:
                p.grad.mul_(coef.to(p.grad.device, p.grad.dtype))

    def share(self, obj: Any) -> Any:
        """``obj`` as the last stage of replica 0 has it (metrics, predictions), on every rank."""
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=self.stages - 1)
        return box[0]

    def replica_sum(self, value: float) -> float:
        """``value`` (a last-stage loss) summed over the replicas' last stages."""
        if self.replicas == 1:
            return value
        import torch
        import torch.distributed as dist

        total = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(total, group=self.replica_group)
        return float(total.item())

    def gather_replicas(self, obj: Any) -> list | None:
        """Every replica's ``obj`` on replica 0's last stage (where :meth:`share` reads), in
        replica order; ``None`` elsewhere. Only last stages hold outputs, so only they gather."""
        import torch.distributed as dist

        if not self.is_last:
            return None
        if self.replicas == 1:
            return [obj]
        out = [None] * self.replicas if self.replica == 0 else None
        dist.gather_object(obj, out, dst=self.stages - 1, group=self.replica_group)
        return out

    def checkpoint_part(self) -> tuple[str, Any, bool]:
        """This stage's weights, written by replica 0's process for the stage."""
        return f"stage-{self.stage}", self.module, self.replica == 0

    def close(self, failed: bool = False) -> None:
        """Wait for every rank (rank 0 may still be writing), then leave the process group.

        After a failure there is no barrier: another rank may be stuck in a different
        collective, and waiting would hang the run instead of ending it with the error."""
        import torch.distributed as dist

        if dist.is_initialized() and not failed:
            dist.barrier()
            dist.destroy_process_group()

    def model_for_saving(self):
        """The whole model on rank 0, each stage's trained parameters gathered from its rank."""
        import torch.distributed as dist

        state = {}
        for key, value in self.module.state_dict().items():
            _, part, *rest = key.split(".", 2)  # parts.<module path with __>.<param>, loose.<param path with __>
            state[".".join([part.replace("__", "."), *rest])] = value.detach().cpu()
        if self.replica:
            state = {}  # replicas hold the same weights: replica 0's stages send theirs
        gathered = [None] * self.world if self.is_writer else None
        dist.gather_object(state, gathered, dst=0)
        if self.is_writer:
            merged = {k: v for part in gathered for k, v in part.items()}
            result = self.model.load_state_dict(merged, strict=False)
            assert not result.unexpected_keys, result.unexpected_keys
        return self.model
