"""A recording double of poptorch (Graphcore's PyTorch for IPUs) for machines without a Poplar SDK.

It offers the part of poptorch's documented API that garden's ``ipu`` backend uses, with the same
names, signatures and checks (``BeginBlock`` registers a forward pre-hook and returns the module,
``setAvailableMemoryProportion`` wants ``"IPU<n>"`` keys, a batch must split into
``deviceIterations x replicationFactor x gradientAccumulation`` micro-batches, ``detachFromDevice``
refuses an uncompiled or detached model, ...), and it runs what an IPU would run on the CPU, as one
device: a training call does every micro-batch's forward and backward, averages the gradients
(``ReductionType.Mean``), clips them to the optimizer's ``max_grad_norm`` and steps the optimizer,
once per device iteration. A run through it therefore gives real numbers.

Every call is recorded in :data:`LOG`; with ``FAKE_POPTORCH_LOG=path`` set, the log is written
there as JSON when the process exits. Blocks and recomputation checkpoints are recorded as the
compiler sees them: while the first call of a compiled model traces it.
"""

from __future__ import annotations

import atexit
import enum
import json
import os
from typing import Any

import torch

__version__ = "0.0.0+fake"

#: every recorded call, in order: {"call": name, ...}
LOG: list[dict[str, Any]] = []
_tracing = False


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it (enums and strategies by name)."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, _IExecutionStrategy):
        return {"strategy": type(value).__name__, "args": [_plain(a) for a in value.args]}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _record(call: str, **fields: Any) -> None:
    LOG.append({"call": call, **{k: _plain(v) for k, v in fields.items()}})


def _dump() -> None:
    path = os.environ.get("FAKE_POPTORCH_LOG")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(LOG, out, indent=1)


atexit.register(_dump)


# --- enums and execution strategies (poptorch/enums.py, poptorch/options.py) -------------------

class OutputMode(enum.Enum):
    All = 0
    Final = 1
    EveryN = 2
    Sum = 3
    Default = 4


class ReductionType(enum.Enum):
    Sum = 0
    Mean = 1
    NoReduction = 2


class AutoStage(enum.Enum):
    SameAsIpu = 0
    AutoIncrement = 1


class _IExecutionStrategy:
    def __init__(self, *args: Any) -> None:
        self.args = args


class PipelinedExecution(_IExecutionStrategy):
    """One pipeline stage per block (``AutoStage``) or per named stage."""


class ShardedExecution(PipelinedExecution):
    """The blocks run one IPU after the other, without pipelining."""


# --- options --------------------------------------------------------------------------------------

class _Group:
    """A chained attribute group of :class:`Options` (``opts.Training``, ``opts.Precision``)."""

    def __init__(self, owner: "Options", name: str) -> None:
        self._owner, self._name = owner, name

    def _note(self, method: str, *args: Any) -> None:
        _record(f"Options.{self._name}.{method}", options=self._owner.id, args=list(args))


class _TrainingOptions(_Group):
    def __init__(self, owner: "Options") -> None:
        super().__init__(owner, "Training")
        self.gradient_accumulation = 1
        self.accumulation_and_replication_reduction_type = ReductionType.Mean

    def gradientAccumulation(self, gradient_accumulation: int) -> "_TrainingOptions":
        assert isinstance(gradient_accumulation, int) and gradient_accumulation >= 1
        self._note("gradientAccumulation", gradient_accumulation)
        self.gradient_accumulation = gradient_accumulation
        return self

    def accumulationAndReplicationReductionType(self, reduction_type: ReductionType) -> "_TrainingOptions":
        if not isinstance(reduction_type, ReductionType) or reduction_type is ReductionType.NoReduction:
            raise ValueError("accumulationAndReplicationReductionType must be set to "
                             "poptorch.ReductionType.Mean or poptorch.ReductionType.Sum")
        self._note("accumulationAndReplicationReductionType", reduction_type)
        self.accumulation_and_replication_reduction_type = reduction_type
        return self


class _PrecisionOptions(_Group):
    def __init__(self, owner: "Options") -> None:
        super().__init__(owner, "Precision")

    def setPartialsType(self, dtype: torch.dtype) -> "_PrecisionOptions":
        if dtype not in (torch.float, torch.float32, torch.half, torch.float16):
            raise ValueError("parameter to setPartialsType should be either torch.float or torch.half")
        self._note("setPartialsType", dtype)  # an IPU matmul detail: not simulated on the CPU
        return self

    def enableStochasticRounding(self, enabled: bool) -> "_PrecisionOptions":
        self._note("enableStochasticRounding", enabled)  # affects fp16 only: not simulated
        return self


class Options:
    """Records every setter; keeps the values the executors need."""

    _count = 0

    def __init__(self) -> None:
        Options._count += 1
        self.id = Options._count
        self.device_iterations = 1
        self.replication_factor = 1
        self.output_mode = OutputMode.Default
        self.available_memory_proportion: dict[int, float] = {}
        self.auto_round_num_ipus = False
        self._execution_strategy: _IExecutionStrategy = PipelinedExecution()
        self._training = _TrainingOptions(self)
        self._precision = _PrecisionOptions(self)
        _record("Options", options=self.id)

    @property
    def Training(self) -> _TrainingOptions:
        return self._training

    @property
    def Precision(self) -> _PrecisionOptions:
        return self._precision

    def _note(self, method: str, *args: Any) -> None:
        _record(f"Options.{method}", options=self.id, args=list(args))

    def deviceIterations(self, device_iterations: int) -> "Options":
        self._note("deviceIterations", device_iterations)
        self.device_iterations = device_iterations
        return self

    def replicationFactor(self, replication_factor: int) -> "Options":
        self._note("replicationFactor", replication_factor)
        self.replication_factor = replication_factor
        return self

    def autoRoundNumIPUs(self, auto_round_num_ipus: bool = True) -> "Options":
        self._note("autoRoundNumIPUs", auto_round_num_ipus)
        self.auto_round_num_ipus = auto_round_num_ipus
        return self

    def setExecutionStrategy(self, strategy: _IExecutionStrategy) -> "Options":
        assert isinstance(strategy, _IExecutionStrategy)
        self._note("setExecutionStrategy", strategy)
        self._execution_strategy = strategy
        return self

    def setAvailableMemoryProportion(self, available_memory_proportion: dict[str, float]) -> "Options":
        for key in available_memory_proportion:
            assert key.startswith("IPU"), (
                'Available memory proportions are expected to be in a dictionary of {"IPU0": 0.5} '
                f"where the 0 in IPU is the index of the IPU. Invalid key: {key}")
        self._note("setAvailableMemoryProportion", dict(available_memory_proportion))
        self.available_memory_proportion = {int(k[3:]): v for k, v in available_memory_proportion.items()}
        return self

    def enableExecutableCaching(self, path: str | None) -> "Options":
        self._note("enableExecutableCaching", path)
        return self

    def outputMode(self, output_mode: OutputMode, output_return_period: int | None = None) -> "Options":
        assert isinstance(output_mode, OutputMode)
        self._note("outputMode", output_mode)
        self.output_mode = output_mode
        return self

    def randomSeed(self, random_seed: int) -> "Options":
        assert isinstance(random_seed, int)
        self._note("randomSeed", random_seed)
        torch.manual_seed(random_seed)  # as poptorch does
        return self


# --- blocks and ops -------------------------------------------------------------------------------

class _BlockHook:
    """poptorch's forward pre-hook: all that runs after it belongs to this block (and IPU)."""

    def __init__(self, user_id: str | None, ipu_id: int | None) -> None:
        self._user_id, self._ipu_id = user_id, ipu_id

    def __call__(self, module: torch.nn.Module, inputs: Any) -> None:
        if _tracing:
            _record("stage", user_id=self._user_id, ipu_id=self._ipu_id)

    def __repr__(self) -> str:
        return f"BeginBlock(user_id={self._user_id}, ipu_id={self._ipu_id})"


def BeginBlock(layer_to_call: torch.nn.Module, user_id: str | None = None, ipu_id: int | None = None):
    """Annotate ``layer_to_call`` (in place) as the start of a block on ``ipu_id``; returns it."""
    if not isinstance(layer_to_call, torch.nn.Module):
        raise TypeError("module is not an instance of torch.nn.Module or function.")
    if any(isinstance(h, _BlockHook) for h in layer_to_call._forward_pre_hooks.values()):
        raise RuntimeError("module has already been assigned to a block.")
    layer_to_call.register_forward_pre_hook(_BlockHook(user_id, ipu_id))
    _record("BeginBlock", user_id=user_id, ipu_id=ipu_id, module=type(layer_to_call).__name__)
    return layer_to_call


def removeBlocks(module: torch.nn.Module) -> None:
    """Remove every BeginBlock annotation under ``module``."""
    from collections import OrderedDict

    for m in module.modules():
        m._forward_pre_hooks = OrderedDict(
            (k, h) for k, h in m._forward_pre_hooks.items() if not isinstance(h, _BlockHook))
    _record("removeBlocks", module=type(module).__name__)


def recomputationCheckpoint(*tensors: torch.Tensor):
    """Identity; on an IPU the values are stored instead of recomputed in the backward pass."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return type(tensors[0])(recomputationCheckpoint(*tensors[0]))
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise ValueError("All inputs must be tensors")
    if _tracing:
        _record("recomputationCheckpoint", count=len(tensors))
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


_losses: list[torch.Tensor] = []


def identity_loss(x: torch.Tensor, reduction: str) -> torch.Tensor:
    """Mark ``x`` as the loss to back-propagate from (custom losses must pass through this)."""
    if reduction == "sum":
        x = x.sum()
    elif reduction == "mean":
        x = x.mean()
    else:
        assert reduction == "none", "Unsupported reduction type!"
    _losses.append(x)
    return x


# --- executors ------------------------------------------------------------------------------------

def _split(args: tuple, parts: int) -> list[tuple]:
    size = args[0].shape[0]
    step = size // parts
    return [tuple(a[i * step:(i + 1) * step] if isinstance(a, torch.Tensor) and a.dim() else a for a in args)
            for i in range(parts)]


def _combine(outputs: list, mode: OutputMode):
    """What comes back to the host for ``outputs`` (one per micro-batch), per output mode."""
    first = outputs[0]
    if isinstance(first, (tuple, list)):
        return type(first)(_combine([o[i] for o in outputs], mode) for i in range(len(first)))
    if mode is OutputMode.Final:
        return outputs[-1]
    if mode is OutputMode.Sum:
        return torch.stack(outputs).sum(0)
    return torch.stack(outputs) if first.dim() == 0 else torch.cat(outputs)


class PoplarExecutor:
    """What ``trainingModel``/``inferenceModel`` return: compiled on the first call, then run."""

    def __init__(self, model: torch.nn.Module, options: Options | None, training: bool, optimizer=None):
        self._user_model = model
        self._options = options or Options()
        self._training = training
        self._compiled = self._attached = False
        self._batch: int | None = None
        if training:
            if self._options.output_mode is OutputMode.Default:
                self._options.output_mode = OutputMode.Final
            self._optimizer = optimizer or torch.optim.SGD(model.parameters(), lr=0.01)
        else:
            if self._options.output_mode is OutputMode.Default:
                self._options.output_mode = OutputMode.All
            assert self._options.Training.gradient_accumulation == 1, (
                "Gradient accumulation should be left to its default value (1) for inference")
            assert optimizer is None, "Optimizer should be None for inference"

    @property
    def model(self) -> torch.nn.Module:
        return self._user_model

    @property
    def options(self) -> Options:
        return self._options

    def _record(self, call: str, **fields: Any) -> None:
        _record(call, kind="training" if self._training else "inference", **fields)

    def isCompiled(self) -> bool:
        return self._compiled

    def isAttachedToDevice(self) -> bool:
        return self._compiled and self._attached

    def attachToDevice(self) -> None:
        if not self._compiled:
            raise RuntimeError("Model has not been compiled or has been destroyed.")
        if self._attached:
            raise RuntimeError("Device is already attached")
        self._attached = True
        self._record("attachToDevice")

    def detachFromDevice(self) -> None:
        if not self._compiled:
            raise RuntimeError("Model has not been compiled or has been destroyed.")
        if not self._attached:
            raise RuntimeError("Device is not attached")
        self._attached = False
        self._record("detachFromDevice")

    def copyWeightsToHost(self) -> None:
        if not self._compiled:
            raise RuntimeError("Model has not been compiled or has been destroyed.")
        self._record("copyWeightsToHost")  # one device: the host tensors are the device's

    def copyWeightsToDevice(self) -> None:
        if not self._compiled:
            raise RuntimeError("Model has not been compiled or has been destroyed.")
        self._record("copyWeightsToDevice")

    def setOptimizer(self, optimizer) -> None:
        assert self._training, "setOptimizer is for training models"
        self._optimizer = optimizer
        self._record("setOptimizer", lr=optimizer.param_groups[0]["lr"])

    def destroy(self) -> None:
        self._compiled = self._attached = False
        self._record("destroy")

    def _factor(self) -> int:
        o = self._options
        return o.device_iterations * o.replication_factor * o.Training.gradient_accumulation

    def __call__(self, *args: torch.Tensor):
        global _tracing
        size = args[0].shape[0]
        if size % self._factor():
            raise AssertionError(
                f"Invalid batch dimension: the batch dimension ({size}) must be a multiple of "
                f"deviceIterations({self._options.device_iterations}) * replicationFactor"
                f"({self._options.replication_factor}) * gradientAccumulation"
                f"({self._options.Training.gradient_accumulation}) = {self._factor()}")
        if self._compiled and size != self._batch:
            raise RuntimeError(f"the model was compiled for a batch of {self._batch}, not {size}")
        first = not self._compiled
        if first:
            self._batch = size
            self._record("compile", batch=size, strategy=self._options._execution_strategy,
                         micro_batch=size // self._factor())
            self._compiled = self._attached = True
        elif not self._attached:
            self.attachToDevice()
        _tracing = first
        try:
            return self._train(args) if self._training else self._infer(args)
        finally:
            _tracing = False

    def _infer(self, args: tuple):
        o = self._options
        global _tracing
        outputs = []
        with torch.no_grad():
            for part in _split(args, o.device_iterations * o.replication_factor):
                outputs.append(self._user_model(*part))
                _tracing = False  # the graph is traced once; later micro-batches run it
        return _combine(outputs, o.output_mode)

    def _train(self, args: tuple):
        global _tracing
        o, opt = self._options, self._optimizer
        per_update = o.replication_factor * o.Training.gradient_accumulation
        mean = o.Training.accumulation_and_replication_reduction_type is ReductionType.Mean
        params = [p for g in opt.param_groups for p in g["params"]]
        outputs = []
        for part in _split(args, o.device_iterations * per_update):
            _losses.clear()
            output = self._user_model(*part)
            _tracing = False  # the graph is traced once; later micro-batches run it
            if not _losses:
                raise RuntimeError("the training model returned no loss marked with poptorch.identity_loss")
            loss = torch.stack([l.float() for l in _losses]).sum()
            (loss / per_update if mean else loss).backward()
            outputs.append(output.detach() if isinstance(output, torch.Tensor)
                           else type(output)(x.detach() for x in output))
            if len(outputs) % per_update == 0:
                if getattr(opt, "max_grad_norm", float("inf")) != float("inf"):
                    torch.nn.utils.clip_grad_norm_(params, opt.max_grad_norm)
                opt.step()
                opt.zero_grad(set_to_none=True)
        _losses.clear()
        return _combine(outputs, o.output_mode)


def trainingModel(model: torch.nn.Module, options: Options | None = None, optimizer=None) -> PoplarExecutor:
    _record("trainingModel", options=options.id if options else None, model=type(model).__name__,
            optimizer=type(optimizer).__name__ if optimizer is not None else None)
    return PoplarExecutor(model, options, training=True, optimizer=optimizer)


def inferenceModel(model: torch.nn.Module, options: Options | None = None) -> PoplarExecutor:
    _record("inferenceModel", options=options.id if options else None, model=type(model).__name__)
    return PoplarExecutor(model, options, training=False)


def ipuHardwareIsAvailable() -> bool:
    return False


from . import optim  # noqa: E402  (poptorch.optim, as in poptorch)
