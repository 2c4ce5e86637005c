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

The IPU runs a compiled program with fixed input shapes (poptorch refuses any other): every
tensor a batch holds is padded to the longest example in the run's data (:class:`FixedShapes`), a
short last training batch is skipped (optimum's ``poptorch.DataLoader`` drops it too) and a short
inference batch is padded, then trimmed. A pipelined training step needs
``gradient_accumulation_steps`` >= its pipeline stages (:func:`pipeline_stages`), checked before
compiling. ``trainer.precision=fp16`` runs as optimum-graphcore runs fp16: a half model with half
partials and the optimizer's loss scaling. ``docs/ipu.md`` lists every optimum ``IPUConfig`` field
and what this backend does with it.
"""

from __future__ import annotations

from typing import Any

from garden.backends.base import Backend
from garden.console import console
from garden.errors import BackendError, ConfigError
from garden.partition.ipu_config import ignored_fields, inference_layout, training_layout
from garden.partition.plan import optimum_ipu_config, plan_for, sample_batch
from garden.partition.stages import run_blocks

INSTALL = ("backend=ipu needs poptorch, which ships with Graphcore's Poplar SDK; enable the SDK "
           "(source <sdk>/enable.sh) and pip install its poptorch wheel, or use backend=local or "
           "backend=pipeline")

#: optimum's ``output_mode`` names -> poptorch.OutputMode members
OUTPUT_MODES = {"all": "All", "sum": "Sum", "final": "Final", "default": "Default"}


def import_poptorch():
    """poptorch, or a BackendError saying how to get it, or that it was built for another torch."""
    try:
        import poptorch
    except ImportError:
        raise BackendError(INSTALL) from None
    except AssertionError as err:  # python/__init__.py: "only works with torch==X but ... is Y"
        import torch

        detail = str(err).splitlines()[0] if str(err) else "it was built for another torch"
        raise BackendError(f"poptorch cannot run with torch {torch.__version__} ({detail}); install garden in "
                           "the Poplar SDK's environment with constraints-sdk.txt (docs/ipu.md)") from None
    return poptorch


def ipus_available() -> bool:
    """Whether ``backend=auto`` should choose ``ipu``: poptorch imports and IPU hardware is present."""
    import importlib.util

    if importlib.util.find_spec("poptorch") is None:
        return False
    try:
        poptorch = import_poptorch()
    except BackendError as err:
        console.print(f"[yellow]note:[/] backend=auto runs locally: {err}")
        return False
    return bool(poptorch.ipuHardwareIsAvailable())


def pipeline_stages(ipus: list, training: bool) -> int:
    """The pipeline stages poptorch compiles for blocks placed on ``ipus`` (in the order they run).

    Each change of IPU starts a stage (poptorch counts switches from IPU 0), and training adds the
    backward stages: ``2 x forward - 1``, the last IPU's backward sharing its forward's stage
    (poptorch's ``CompilerImpl::numPipelineStages``). ``pipeline_stages([0, 0, 1, 1], True)`` is 3.
    """
    switches, last = 0, 0
    for ipu in ipus:
        switches += ipu != last
        last = ipu
    return 2 * (switches + 1) - 1 if training else switches + 1


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
    extra = ipu.extra
    if training and extra.get("auto_loss_scaling"):
        opts.Training.setAutomaticLossScaling(True)
    sharding = bool(extra.get("replicated_tensor_sharding")) and opts_replicas(ipu, training) > 1
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings()
        .useOnChipStorage(not extra.get("optimizer_state_offchip", False))
        .useReplicatedTensorSharding(sharding))
    return opts


def opts_replicas(ipu: Any, training: bool) -> int:
    return ipu.replication_factor if training else ipu.inference_replication_factor


def memory_proportions(ipu: Any, training: bool, ipus: int) -> dict[str, float]:
    """``{"IPU0": p0, ...}``: one number for every IPU, or a list with one entry per IPU.

    Inference uses ``inference_matmul_proportion`` when set, else the training value, or 0.2 when
    that is a list of another length than the inference IPUs (optimum's ``IPUConfig.__init__``).
    """
    value = ipu.matmul_proportion
    key = "ipu.matmul_proportion"
    if not training:
        if ipu.inference_matmul_proportion is not None:
            value, key = ipu.inference_matmul_proportion, "ipu.inference_matmul_proportion"
        elif isinstance(value, list) and len(value) != ipus:
            value = 0.2
    if not isinstance(value, list):
        return {f"IPU{i}": float(value) for i in range(ipus)}
    if len(value) != ipus:
        raise ConfigError(f"{key}={value} has {len(value)} entries but {'training' if training else 'inference'} "
                          f"runs on {ipus} IPUs; give one proportion per IPU or a single number")
    return {f"IPU{i}": float(p) for i, p in enumerate(value)}


def device_optimizer(host: Any, parameters: list, max_grad_norm: float | None, poptorch: Any,
                     loss_scaling: float | None = None):
    """The ``poptorch.optim`` twin of the trainer's optimizer ``host`` (``trainer.optimizer``: AdamW
    or SGD), with ``host``'s settings, ``max_grad_norm`` (``None``/0: no clipping) and
    ``loss_scaling`` (fp16), which poptorch applies on the device. For example
    ``torch.optim.SGD(ps, lr=0.1, momentum=0.9)`` becomes
    ``poptorch.optim.SGD(ps, lr=0.1, momentum=0.9, ..., max_grad_norm=inf)``.
    """
    import torch

    group = host.param_groups[0]
    clip = float(max_grad_norm) if max_grad_norm else float("inf")
    scaling = {"loss_scaling": float(loss_scaling)} if loss_scaling else {}
    if isinstance(host, torch.optim.AdamW):
        return poptorch.optim.AdamW(parameters, lr=float(group["lr"]), betas=tuple(group["betas"]), eps=group["eps"],
                                    weight_decay=group["weight_decay"], max_grad_norm=clip, **scaling)
    if isinstance(host, torch.optim.SGD):
        return poptorch.optim.SGD(parameters, lr=float(group["lr"]), momentum=group["momentum"],
                                  dampening=group["dampening"], weight_decay=group["weight_decay"],
                                  nesterov=group["nesterov"], max_grad_norm=clip, **scaling)
    raise BackendError(f"backend=ipu has no poptorch optimizer for {type(host).__name__}; "
                       "set trainer.optimizer=adamw or trainer.optimizer=sgd")


def step_module(model: Any, blocks: list, task: Any, poptorch: Any):
    """``model`` as the task runs it, with the task's loss inside when training.

    poptorch places modules, not calls: ``BeginBlock`` marks the module that starts each block and
    everything run from there on goes to that block's IPU. So, as optimum's models do, the model's
    own forward runs (``task.forward``, its batch rebuilt from the inputs by ``task.input_names``);
    a task without input names (graphs, VQA) runs the blocks in order.

    poptorch differentiates what the forward marks as the loss: in training mode the forward takes
    the task's inputs followed by the target and returns the output's tensors followed by the loss
    (``(logits, loss)``, or ``(logits, frames, loss)`` for CTC: poptorch's outputs are flat); in eval mode it takes
    the inputs and returns the output. One module serves both, so poptorch's training and
    inference models wrap the same host model and share its weights.
    """
    import torch

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def run(self, *inputs: Any) -> Any:
            if task.input_names:  # self.model: poptorch may run a copy of this module
                return task.forward(self.model, dict(zip(task.input_names, inputs)))
            return run_blocks(self.model, blocks, *inputs)

        def forward(self, *args):
            if not self.training:
                return self.run(*args)
            *inputs, target = args
            output = self.run(*inputs)
            loss = poptorch.identity_loss(task.loss(output, target), reduction="none")
            return (*output, loss) if isinstance(output, tuple) else (output, loss)  # flat: poptorch's outputs

    return Step()


def block_starts(model: Any, stage_plan: Any) -> list[tuple[str, Any, str]]:
    """``(path, module, block name)`` of the module that starts each block on its IPU: the block's
    first module not already starting an earlier one (a block whose modules all start earlier
    blocks, a layer run twice as ALBERT's, runs where they are)."""
    starts, placed = [], set()
    for block in stage_plan.blocks:
        path = next((p for p in block.modules if _module_at(model, p) is not None
                     and id(_module_at(model, p)) not in placed), None)
        if path is not None:
            module = model.get_submodule(path)
            placed.add(id(module))
            starts.append((path, module, block.name))
    return starts


def ipus_in_call_order(model: Any, stage_plan: Any, forward: Any) -> list[int]:
    """The IPUs ``forward()`` visits as poptorch places ``model``: each call of a block's starting
    module moves it to that block's IPU, so a module called again later (T5's shared embedding for
    the decoder after the encoder, an LM head tied to it) brings it back to an earlier IPU, which
    poptorch counts as a new pipeline stage. Runs in eval mode without gradients: no dropout draws
    the training's random numbers."""
    import torch

    stage_of = {name: stage.index for stage in stage_plan.plan.stages for name in stage.blocks}
    order: list[int] = []
    hooks = [module.register_forward_pre_hook(lambda *_, ipu=stage_of[name]: order.append(ipu))
             for _, module, name in block_starts(model, stage_plan)]
    training = model.training
    try:
        model.eval()
        with torch.no_grad():
            forward()
    finally:
        model.train(training)
        for hook in hooks:
            hook.remove()
    return order


def place_blocks(model: Any, stage_plan: Any, poptorch: Any, *, recompute: bool) -> list:
    """Put each block on its stage's IPU (:func:`block_starts`); return the recomputation hooks added.

    ``BeginBlock`` annotates the starting module in place and returns it; it is set back on its
    parent as optimum does. Earlier annotations are removed first, so training and inference can
    place the same model by different plans.
    """
    import torch

    poptorch.removeBlocks(model)
    stage_of = {name: stage.index for stage in stage_plan.plan.stages for name in stage.blocks}
    kinds = {block.name: block.kind for block in stage_plan.blocks}

    def checkpoint(module, inputs, outputs):
        if isinstance(outputs, torch.Tensor):
            return poptorch.recomputationCheckpoint(outputs)
        if isinstance(outputs, tuple):
            return tuple(poptorch.recomputationCheckpoint(y) if isinstance(y, torch.Tensor) else y
                         for y in outputs)
        return outputs

    hooks = []
    for path, module, name in block_starts(model, stage_plan):
        parent_path, _, attr = path.rpartition(".")
        parent = model.get_submodule(parent_path) if parent_path else model
        setattr(parent, attr, poptorch.BeginBlock(module, name, ipu_id=stage_of[name]))
        if recompute and kinds[name] == "layer":
            hooks.append(module.register_forward_hook(checkpoint))
    return hooks


def _module_at(model: Any, path: str) -> Any:
    """The module at ``path``, or ``None`` where ``path`` names a parameter."""
    try:
        return model.get_submodule(path)
    except AttributeError:
        return None


def _trim(output: Any, n: int) -> Any:
    if isinstance(output, (tuple, list)):
        return type(output)(_trim(o, n) for o in output)
    return output[:n] if hasattr(output, "dim") and output.dim() else output


#: what a batch's padded positions hold, by key (labels are ignored by the losses at -100)
PAD_VALUES = {"attention_mask": 0, "visual_attention_mask": 0, "token_type_ids": 0, "labels": -100,
              "input_values": 0.0, "input_ids": 0, "decoder_input_ids": 0}


class FixedShapes:
    """A task's collate whose batches always have the same shapes: each tensor's second dimension
    (a sequence's tokens, a waveform's samples) padded to the longest in ``datasets``.

    poptorch compiles for the shapes of the first batch and refuses any other, so text padded to
    each batch's longest sequence cannot run; optimum pads to ``max_seq_length`` for the same
    reason. The lengths are measured once by collating the data in chunks; the pad values are the
    collate's own (``Padder.pads``, a task's ``pad_id``) or :data:`PAD_VALUES`.
    """

    def __init__(self, collate: Any, datasets: list, pad_id: int | None = None, chunk: int = 256):
        self.collate = collate
        self.pads = {**PAD_VALUES, **({"input_ids": pad_id, "decoder_input_ids": pad_id} if pad_id is not None else {}),
                     **getattr(collate, "pads", {})}
        self.lengths: dict[str, int] = {}
        for data in datasets:
            for start in range(0, len(data), chunk):
                batch = collate([data[i] for i in range(start, min(len(data), start + chunk))])
                for key, value in batch.items():
                    if hasattr(value, "dim") and value.dim() >= 2:
                        self.lengths[key] = max(self.lengths.get(key, 0), value.shape[1])

    def __call__(self, examples: list) -> dict[str, Any]:
        import torch

        batch = self.collate(examples)
        for key, length in self.lengths.items():
            value = batch.get(key)
            if value is None or value.shape[1] == length:
                continue
            if value.shape[1] > length:
                raise BackendError(f"backend=ipu compiled '{key}' for length {length} (the longest in the run's data), "
                                   f"got {value.shape[1]}; set data.max_length to bound the inputs")
            pad = torch.full((value.shape[0], length - value.shape[1], *value.shape[2:]), self.pads.get(key, 0),
                             dtype=value.dtype)
            batch[key] = torch.cat([value, pad], dim=1)
        return batch


def serialize_embeddings(model: Any, factor: int, poptorch: Any) -> str:
    """Apply ``embedding_serialization_factor`` as optimum's BERT and GPT-2 do; say what was done.

    A word embedding tied to an LM head: the head's matmul runs in ``factor`` slices of the
    vocabulary (``poptorch.serializedMatMul``, optimum's ``SerializedLinear``); otherwise the
    embedding looks up ``factor`` slices of the vocabulary and adds them (optimum's
    ``SerializedEmbedding``). The weights stay the same parameters, under the same names.
    """
    import torch

    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if not isinstance(embedding, torch.nn.Embedding):
        return "not applied: this model has no word embedding"
    vocabulary = embedding.num_embeddings
    if vocabulary % factor:
        raise BackendError(f"ipu.embedding_serialization_factor={factor} does not divide the vocabulary of "
                           f"{vocabulary}; choose a factor of {vocabulary}")
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if isinstance(head, torch.nn.Linear) and head.weight is embedding.weight:
        def serialized(self, x):
            out = poptorch.serializedMatMul(x, self.weight.t(), poptorch.MatMulSerializationMode.OutputChannels,
                                            factor)
            return out if self.bias is None else out + self.bias

        head.forward = serialized.__get__(head)
        return f"the tied LM head's {vocabulary}-word matmul runs in {factor} slices"
    split = vocabulary // factor

    def looked_up(self, ids):
        total = None
        for i in range(factor):
            local = ids - i * split
            inside = ((local >= 0) & (local < split)).detach()
            part = torch.nn.functional.embedding(local * inside, self.weight[i * split:(i + 1) * split])
            part = part * inside.unsqueeze(-1).to(part.dtype)
            total = part if total is None else total + part
        return total

    embedding.forward = looked_up.__get__(embedding)
    return f"the {vocabulary}-word embedding looks up {factor} slices"


class IPUBackend(Backend):
    """Trains and runs the model on IPUs through poptorch (the surface is :class:`Backend`).

    poptorch replicates and accumulates inside the compiled step, so the loops see one replica
    and one micro-step (``train_step`` gets the whole batch, ``scale`` 1 and ``sync``)."""

    name = "ipu"
    inference_precisions = ("fp32",)
    #: the backend applies the optimizer itself (on the device); see ``garden.runs.loops.train``
    steps_optimizer = True

    def __init__(self, prepared: Any):
        refused = getattr(prepared.family, "ipu_unsupported", None)
        if refused:
            raise BackendError(f"model '{prepared.entry.name}' does not run with backend=ipu: {refused}")
        self.poptorch = import_poptorch()
        self.prepared, self.task, cfg = prepared, prepared.task, prepared.cfg
        self.ipu = optimum_ipu_config(cfg.ipu, prepared.entry.name)
        for field_name, why in ignored_fields(self.ipu).items():
            prepared.notes.append(f"ipu.{field_name} is ignored by backend=ipu: {why}")
        self.model = prepared.family.build(prepared.spec)
        if (self.ipu.embedding_serialization_factor or 1) > 1:
            done = serialize_embeddings(self.model, self.ipu.embedding_serialization_factor, self.poptorch)
            prepared.notes.append(f"ipu.embedding_serialization_factor={self.ipu.embedding_serialization_factor}: {done}")
        self.step = step_module(self.model, prepared.family.stage_blocks(self.model, self.task.name),
                                self.task, self.poptorch)
        data = prepared.data
        data.collate = FixedShapes(data.collate, [data.train, data.eval], getattr(self.task, "pad_id", None))
        self._host_optimizer: Any = None
        self._max_grad_norm: float | None = cfg.trainer.grad_clip
        self._loss_scaling: float | None = getattr(cfg.ipu, "loss_scaling", None)
        self._device_optimizer: Any = None
        self._compiled: dict[bool, Any] = {}  # training? -> poptorch model
        self._batch: dict[bool, int] = {}
        self._hooks: list = []
        self._skipped = 0

    # -- the trainer's optimizer, followed on the device --------------------------------------------

    def follow_optimizer(self, optimizer: Any, max_grad_norm: float | None = None) -> None:
        """Use ``optimizer``'s hyperparameters (and its scheduled lr, step by step) on the device,
        clipping gradients to ``max_grad_norm`` (``None``/0: no clipping)."""
        self._host_optimizer, self._max_grad_norm = optimizer, max_grad_norm

    def _optimizer_for_device(self, pipelined: bool):
        """The device's twin of the loops' optimizer (handed over by :meth:`follow_optimizer`
        before the first training step), as it is set now. AdamW under pipelining does not clip,
        as optimum-graphcore's IPUTrainer builds it without ``max_grad_norm``."""
        import torch

        if self._host_optimizer is None:
            raise BackendError("backend=ipu trains with the run's optimizer: call follow_optimizer(optimizer) "
                               "before the first train_step")
        clip = self._max_grad_norm
        if clip and pipelined and isinstance(self._host_optimizer, torch.optim.AdamW):
            console.print(f"[yellow]note:[/] trainer.grad_clip={clip} is not applied: AdamW on pipelined IPUs "
                          "does not clip, as in optimum-graphcore")
            clip = None
        scaling = self._loss_scaling if self.precision == "fp16" else None
        return device_optimizer(self._host_optimizer, self.parameters(), clip, self.poptorch, loss_scaling=scaling)

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
            other.detachFromDevice()  # a training model brings its weights home first
        if training not in self._compiled:
            self._check_precision()
            for hook in self._hooks:
                hook.remove()
            sample = sample_batch(self.prepared.data)  # as ``python -m garden plan`` measures it
            plan = plan_for(self.prepared, self.model, sample, training=training)
            if training:
                self.stage_plan = plan  # written to the saved model's ipu_config.json
            stages = self._check_pipeline(plan, sample, training)
            self._hooks = place_blocks(self.model, plan, self.poptorch,
                                       recompute=training and self.ipu.recompute_checkpoint_every_layer)
            opts = poptorch_options(self.ipu, training, self.prepared.cfg.seed, poptorch=self.poptorch)
            if training:
                self._device_optimizer = self._optimizer_for_device(pipelined=stages > 1)
                compiled = self.poptorch.trainingModel(self.step, options=opts, optimizer=self._device_optimizer)
            else:
                compiled = self.poptorch.inferenceModel(self.step, options=opts)
            self._compiled[training] = compiled
        return self._compiled[training]

    def _check_pipeline(self, plan: Any, sample: Any, training: bool) -> int:
        """The pipeline stages of a training ``plan``, counted along the IPUs a forward of ``sample``
        visits (:func:`ipus_in_call_order`), or a ConfigError when ``gradient_accumulation_steps``
        cannot fill them (poptorch would refuse to compile)."""
        if not training:
            return 1  # inference runs sharded: one IPU after the other, no pipeline to fill
        inputs = self.task.inputs(sample)
        stages = pipeline_stages(ipus_in_call_order(self.model, plan, lambda: self.step.run(*inputs)), training=True)
        steps = self.ipu.gradient_accumulation_steps
        if steps < stages:
            raise ConfigError(f"ipu.gradient_accumulation_steps={steps} cannot fill the {stages} pipeline stages of "
                              f"training on {len(plan.plan.stages)} IPUs (forward and backward); poptorch needs "
                              f"at least {stages}: set ipu.gradient_accumulation_steps={stages} or more")
        return stages

    def _check_precision(self) -> None:
        """fp32, or fp16 as optimum runs it (a half model; half partials follow
        ``ipu.enable_half_partials``, loss scaling ``ipu.loss_scaling``/``auto_loss_scaling``)."""
        infer = self.prepared.cfg.mode == "infer"
        requested = self.prepared.cfg.infer.precision if infer else self.precision
        if requested == "fp16":
            self.model.half()
            self.precision = "fp16"
        elif requested in ("fp32", "auto"):
            self.precision = "fp32"
        else:
            raise BackendError(f"backend=ipu runs fp32 or fp16, not {requested}; set "
                               f"{'infer' if infer else 'trainer'}.precision=fp16 or fp32")

    def _inputs(self, inputs: tuple) -> tuple:
        """Float inputs in the model's precision (a half model takes half inputs)."""
        if self.precision != "fp16":
            return inputs
        return tuple(x.half() if hasattr(x, "is_floating_point") and x.is_floating_point() else x for x in inputs)

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
        *_, loss = model(*self._inputs(inputs), target)
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
        model = self._compiled_model(False)
        output = _trim(model(*self._inputs(inputs)), size)
        return output if self.precision != "fp16" else _as_float(output)

    def clip_grad_norm(self, max_norm: float) -> None:
        """Clipping happens on the device (the optimizer's ``max_grad_norm``); nothing to do here."""

    def _weights_home(self) -> None:
        """The device's trained weights copied into the host model (a detached training model
        brought them home when it detached)."""
        training = self._compiled.get(True)
        if training is not None and training.isAttachedToDevice():
            training.copyWeightsToHost()

    def checkpoint_part(self) -> tuple[str, Any, bool]:
        self._weights_home()
        return "model", self.model, self.is_writer

    def close(self, failed: bool = False) -> None:
        """Release the IPUs held by the compiled models."""
        for compiled in self._compiled.values():
            if compiled.isCompiled() and compiled.isAttachedToDevice():
                compiled.detachFromDevice()

    def model_for_saving(self):
        """The host model with the trained weights copied back, in fp32, without IPU annotations."""
        self._weights_home()
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        self.poptorch.removeBlocks(self.model)
        return self.model.float() if self.precision == "fp16" else self.model


def _as_float(output: Any) -> Any:
    if isinstance(output, (tuple, list)):
        return type(output)(_as_float(o) for o in output)
    return output.float() if hasattr(output, "is_floating_point") and output.is_floating_point() else output
