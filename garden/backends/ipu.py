"""Graphcore IPUs through poptorch, placed as optimum-graphcore's ``parallelize()`` places them.

The stage plan is the one the pipeline backend and ``python -m garden plan`` use: each block's
first module becomes ``poptorch.BeginBlock(module, block.name, ipu_id=<its stage>)`` (as optimum
does for ``model.vit.embeddings``, every encoder layer and the head), and with
``ipu.recompute_checkpoint_every_layer`` each layer's outputs pass through
``poptorch.recomputationCheckpoint``. The ``ipu`` group becomes ``poptorch.Options`` the way
optimum's ``IPUConfig.to_options`` builds them (:func:`poptorch_options`).

poptorch trains what the model's forward returns as a loss and applies the optimizer inside the
compiled program, so the loss is computed in the model (:func:`step_module`) and this backend
``steps_optimizer``: the trainer hands it its optimizer (:meth:`IPUBackend.follow_optimizer`),
the device applies its poptorch twin (AdamW or SGD, :func:`device_optimizer`) and clips to
``trainer.grad_clip`` (``max_grad_norm``), and a learning rate moved by the trainer's schedule is
sent with ``setOptimizer`` before the next step, as optimum's trainer does. One trainer step is
one call: ``ipu.device_iterations`` updates, each over ``gradient_accumulation_steps x
replication_factor`` micro-batches of the trainer's batch.

The IPU runs a compiled, fixed batch: a short last training batch is skipped (optimum's
``poptorch.DataLoader`` drops it too) and a short inference batch is padded, then trimmed.
Precision is fp32; ``embedding_serialization_factor`` > 1 is not applied (noted at start).
"""

from __future__ import annotations

from typing import Any

from garden.backends.base import Backend
from garden.console import console
from garden.errors import BackendError, ConfigError
from garden.partition.ipu_config import inference_layout, training_layout
from garden.partition.plan import optimum_ipu_config, plan_for, sample_batch
from garden.partition.stages import run_blocks

INSTALL = ("backend=ipu needs poptorch, which ships with Graphcore's Poplar SDK; enable the SDK "
           "(source <sdk>/enable.sh) and pip install its poptorch wheel, or use backend=local or "
           "backend=pipeline")

#: optimum's ``output_mode`` names -> poptorch.OutputMode members
OUTPUT_MODES = {"all": "All", "sum": "Sum", "final": "Final", "default": "Default"}


def import_poptorch():
    """poptorch, or a BackendError saying how to get it."""
    try:
        import poptorch
    except ImportError:
        raise BackendError(INSTALL) from None
    return poptorch


def poptorch_options(ipu: Any, training: bool, seed: int | None = None, *, poptorch: Any = None):
    """The ``poptorch.Options`` for an Optimum Graphcore ``IPUConfig`` (garden's dataclass).

    Mirrors ``IPUConfig._to_options`` in optimum-graphcore: replicas and device iterations per mode,
    gradient accumulation (mean-reduced) for training only, ``output_mode`` for training and
    ``All`` for inference, a pipelined (training) or sharded (inference) execution with one stage
    per block, a per-IPU available-memory proportion, the executable cache, half partials and
    stochastic rounding. ``ipu.seed`` wins over the run's ``seed``. For example
    ``poptorch_options(IPUConfig(layers_per_ipu=[2, 2], matmul_proportion=0.3), True, 0)`` calls
    ``setAvailableMemoryProportion({"IPU0": 0.3, "IPU1": 0.3})`` and
    ``setExecutionStrategy(PipelinedExecution(AutoStage.AutoIncrement))``.
    """
    import torch

    poptorch = poptorch or import_poptorch()
    ipus = (training_layout(ipu) if training else inference_layout(ipu))[1]
    opts = poptorch.Options()
    opts.autoRoundNumIPUs(True)
    opts.replicationFactor(ipu.replication_factor if training else ipu.inference_replication_factor)
    opts.deviceIterations(ipu.device_iterations if training else ipu.inference_device_iterations)
    if training:
        opts.Training.gradientAccumulation(ipu.gradient_accumulation_steps)
        opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
    mode = OUTPUT_MODES[ipu.output_mode] if training else "All"
    opts.outputMode(getattr(poptorch.OutputMode, mode))
    chosen = ipu.seed if ipu.seed is not None else seed
    if chosen is not None:
        opts.randomSeed(int(chosen))
    strategy = poptorch.PipelinedExecution if training else poptorch.ShardedExecution
    opts.setExecutionStrategy(strategy(poptorch.AutoStage.AutoIncrement))
    opts.setAvailableMemoryProportion(memory_proportions(ipu, training, ipus))
    if ipu.executable_cache_dir and ipu.executable_cache_dir != "disabled":
        opts.enableExecutableCaching(ipu.executable_cache_dir)
    opts.Precision.enableStochasticRounding(training)
    if ipu.enable_half_partials:
        opts.Precision.setPartialsType(torch.float16)
    return opts


def memory_proportions(ipu: Any, training: bool, ipus: int) -> dict[str, float]:
    """``{"IPU0": p0, ...}``: one number for every IPU, or a list with one entry per IPU.

    Inference uses ``inference_matmul_proportion`` when set, else the training value (optimum's
    fallback).
    """
    value = ipu.matmul_proportion
    key = "ipu.matmul_proportion"
    if not training and ipu.inference_matmul_proportion is not None:
        value, key = ipu.inference_matmul_proportion, "ipu.inference_matmul_proportion"
    if not isinstance(value, list):
        return {f"IPU{i}": float(value) for i in range(ipus)}
    if len(value) != ipus:
        raise ConfigError(f"{key}={value} has {len(value)} entries but {'training' if training else 'inference'} "
                          f"runs on {ipus} IPUs; give one proportion per IPU or a single number")
    return {f"IPU{i}": float(p) for i, p in enumerate(value)}


def device_optimizer(host: Any, parameters: list, max_grad_norm: float | None, poptorch: Any):
    """The ``poptorch.optim`` twin of the trainer's optimizer ``host`` (``trainer.optimizer``: AdamW
    or SGD), with ``host``'s settings and ``max_grad_norm`` (``None``/0: no clipping), which
    poptorch applies on the device. For example ``torch.optim.SGD(ps, lr=0.1, momentum=0.9)``
    becomes ``poptorch.optim.SGD(ps, lr=0.1, momentum=0.9, ..., max_grad_norm=inf)``.
    """
    import torch

    group = host.param_groups[0]
    clip = float(max_grad_norm) if max_grad_norm else float("inf")
    if isinstance(host, torch.optim.AdamW):
        return poptorch.optim.AdamW(parameters, lr=float(group["lr"]), betas=tuple(group["betas"]), eps=group["eps"],
                                    weight_decay=group["weight_decay"], max_grad_norm=clip)
    if isinstance(host, torch.optim.SGD):
        return poptorch.optim.SGD(parameters, lr=float(group["lr"]), momentum=group["momentum"],
                                  dampening=group["dampening"], weight_decay=group["weight_decay"],
                                  nesterov=group["nesterov"], max_grad_norm=clip)
    raise BackendError(f"backend=ipu has no poptorch optimizer for {type(host).__name__}; "
                       "set trainer.optimizer=adamw or trainer.optimizer=sgd")


def step_module(model: Any, blocks: list, task: Any, poptorch: Any):
    """``model`` run block by block, with the task's loss inside when training.

    poptorch differentiates what the forward marks as the loss: in training mode the forward takes
    the task's inputs followed by the target and returns ``(output, loss)``; in eval mode it takes
    the inputs and returns the output. One module serves both, so poptorch's training and
    inference models wrap the same host model and share its weights.
    """
    import torch

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args):
            if not self.training:
                return run_blocks(self.model, blocks, *args)
            *inputs, target = args
            output = run_blocks(self.model, blocks, *inputs)
            return output, poptorch.identity_loss(task.loss(output, target), reduction="none")

    return Step()


def place_blocks(model: Any, stage_plan: Any, poptorch: Any, *, recompute: bool) -> list:
    """Put each block on its stage's IPU; return the recomputation hooks added.

    The first module of a block starts it (``BeginBlock`` annotates the module in place and
    returns it; it is set back on its parent as optimum does). Earlier annotations are removed
    first, so training and inference can place the same model by different plans.
    """
    import torch

    poptorch.removeBlocks(model)
    stage_of = {name: stage.index for stage in stage_plan.plan.stages for name in stage.blocks}

    def checkpoint(module, inputs, outputs):
        if isinstance(outputs, torch.Tensor):
            return poptorch.recomputationCheckpoint(outputs)
        if isinstance(outputs, tuple):
            return tuple(poptorch.recomputationCheckpoint(y) if isinstance(y, torch.Tensor) else y
                         for y in outputs)
        return outputs

    hooks = []
    for block in stage_plan.blocks:
        path = block.modules[0]
        parent_path, _, attr = path.rpartition(".")
        parent = model.get_submodule(parent_path) if parent_path else model
        module = model.get_submodule(path)
        setattr(parent, attr, poptorch.BeginBlock(module, block.name, ipu_id=stage_of[block.name]))
        if recompute and block.kind == "layer":
            hooks.append(module.register_forward_hook(checkpoint))
    return hooks


def _trim(output: Any, n: int) -> Any:
    if isinstance(output, (tuple, list)):
        return type(output)(_trim(o, n) for o in output)
    return output[:n] if hasattr(output, "dim") and output.dim() else output


class IPUBackend(Backend):
    """Trains and runs the model on IPUs through poptorch (the surface is :class:`Backend`).

    poptorch replicates and accumulates inside the compiled step, so the loops see one replica
    and one micro-step (``train_step`` gets the whole batch, ``scale`` 1 and ``sync``)."""

    name = "ipu"
    #: the backend applies the optimizer itself (on the device); see ``garden.runs.loops.train``
    steps_optimizer = True

    def __init__(self, prepared: Any):
        self.poptorch = import_poptorch()
        self.prepared, self.task, cfg = prepared, prepared.task, prepared.cfg
        self.ipu = optimum_ipu_config(cfg.ipu, prepared.entry.name)
        self.model = prepared.family.build(prepared.spec)
        self.step = step_module(self.model, prepared.family.stage_blocks(self.model, self.task.name),
                                self.task, self.poptorch)
        self._host_optimizer: Any = None
        self._max_grad_norm: float | None = prepared.cfg.trainer.grad_clip
        self._device_optimizer: Any = None
        self._compiled: dict[bool, Any] = {}  # training? -> poptorch model
        self._batch: dict[bool, int] = {}
        self._hooks: list = []
        self._skipped = 0
        if (self.ipu.embedding_serialization_factor or 1) > 1:
            prepared.notes.append(
                f"ipu.embedding_serialization_factor={self.ipu.embedding_serialization_factor} is not applied by "
                "backend=ipu yet: the word embedding runs unserialised")

    # -- the trainer's optimizer, followed on the device --------------------------------------------

    def follow_optimizer(self, optimizer: Any, max_grad_norm: float | None = None) -> None:
        """Use ``optimizer``'s hyperparameters (and its scheduled lr, step by step) on the device,
        clipping gradients to ``max_grad_norm`` (``None``/0: no clipping)."""
        self._host_optimizer, self._max_grad_norm = optimizer, max_grad_norm

    def _optimizer_for_device(self):
        """The device's twin of the loops' optimizer (handed over by :meth:`follow_optimizer`
        before the first training step), as it is set now."""
        if self._host_optimizer is None:
            raise BackendError("backend=ipu trains with the run's optimizer: call follow_optimizer(optimizer) "
                               "before the first train_step")
        return device_optimizer(self._host_optimizer, self.parameters(), self._max_grad_norm, self.poptorch)

    def _follow_lr(self, model: Any) -> None:
        if self._host_optimizer is None:
            return
        lr = float(self._host_optimizer.param_groups[0]["lr"])
        if lr != self._device_optimizer.param_groups[0]["lr"]:
            for group in self._device_optimizer.param_groups:
                group["lr"] = lr
            model.setOptimizer(self._device_optimizer)

    # -- compiling -----------------------------------------------------------------------------------

    def _compiled_model(self, training: bool):
        """The poptorch model for training or inference, placed by that mode's plan (compiled on
        its first call); the other one is detached first, so both fit the same IPUs."""
        other = self._compiled.get(not training)
        if other is not None and other.isAttachedToDevice():
            other.detachFromDevice()
        if training not in self._compiled:
            self._check_precision()
            for hook in self._hooks:
                hook.remove()
            plan = self._plan(training)
            if training:
                self.stage_plan = plan  # written to the saved model's ipu_config.json
            self._hooks = place_blocks(self.model, plan, self.poptorch,
                                       recompute=training and self.ipu.recompute_checkpoint_every_layer)
            opts = poptorch_options(self.ipu, training, self.prepared.cfg.seed, poptorch=self.poptorch)
            if training:
                self._device_optimizer = self._optimizer_for_device()
                compiled = self.poptorch.trainingModel(self.step, options=opts, optimizer=self._device_optimizer)
            else:
                compiled = self.poptorch.inferenceModel(self.step, options=opts)
            self._compiled[training] = compiled
        return self._compiled[training]

    def _plan(self, training: bool):
        sample = sample_batch(self.prepared.data)  # as ``python -m garden plan`` measures it
        return plan_for(self.prepared, self.model, sample, training=training)

    def _check_precision(self) -> None:
        auto = self.prepared.cfg.mode == "infer" and self.prepared.cfg.infer.precision == "auto"
        if self.precision in ("fp32", "auto") or auto:
            self.precision = "fp32"
            return
        raise BackendError(f"backend=ipu runs fp32 for now, not {self.precision}; set "
                           f"{'infer' if self.prepared.cfg.mode == 'infer' else 'trainer'}.precision=fp32")

    def _micro_batching(self, training: bool, size: int) -> None:
        ipu = self.ipu
        if training:
            factor = ipu.device_iterations * ipu.replication_factor * ipu.gradient_accumulation_steps
            names = "ipu.device_iterations x ipu.replication_factor x ipu.gradient_accumulation_steps"
        else:
            factor = ipu.inference_device_iterations * ipu.inference_replication_factor
            names = "inference_device_iterations x inference_replication_factor"
        if size % factor:
            raise BackendError(f"a batch of {size} does not split into {names} = {factor} micro-batches; "
                               f"make data.{'batch_size' if training else 'eval_batch_size'} a multiple of {factor}")

    # -- the backend surface -------------------------------------------------------------------------

    def parameters(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def train_step(self, batch: dict[str, Any], scale: float = 1.0, sync: bool = True):
        """One compiled step over the whole batch: ``device_iterations`` updates of ``replicas x
        gradient_accumulation_steps`` micro-batches each, the optimizer applied on the device."""
        inputs, target = self.task.inputs(batch), self.task.target(batch)
        size = inputs[0].shape[0]
        if True in self._batch and size != self._batch[True]:
            self._skipped += 1
            if self._skipped == 1:
                console.print(f"[yellow]note:[/] backend=ipu skips training batches smaller than the compiled "
                              f"{self._batch[True]} (here {size}), as poptorch's DataLoader does")
            return None
        self._micro_batching(True, size)
        self._batch[True] = size
        self.step.train()
        model = self._compiled_model(True)
        self._follow_lr(model)
        _, loss = model(*inputs, target)
        return loss.detach().float().mean()

    def forward(self, batch: dict[str, Any]):
        import torch

        inputs = self.task.inputs(batch)
        size = inputs[0].shape[0]
        compiled = self._batch.setdefault(False, size)
        if size > compiled:
            raise BackendError(f"backend=ipu compiled inference for batches of {compiled}, got {size}")
        self._micro_batching(False, compiled)
        if size < compiled:  # the program takes a fixed batch: pad with the last example, then trim
            inputs = tuple(torch.cat([x, x[-1:].expand(compiled - size, *x.shape[1:])])
                           if isinstance(x, torch.Tensor) and x.dim() else x for x in inputs)
        self.step.eval()
        return _trim(self._compiled_model(False)(*inputs), size)

    def clip_grad_norm(self, max_norm: float) -> None:
        """Clipping happens on the device (the optimizer's ``max_grad_norm``); nothing to do here."""

    def close(self, failed: bool = False) -> None:
        """Release the IPUs held by the compiled models."""
        for compiled in self._compiled.values():
            if compiled.isCompiled() and compiled.isAttachedToDevice():
                compiled.detachFromDevice()

    def model_for_saving(self):
        """The host model with the trained weights copied back, without IPU annotations."""
        training = self._compiled.get(True)
        if training is not None and training.isCompiled():
            training.copyWeightsToHost()
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        self.poptorch.removeBlocks(self.model)
        return self.model
