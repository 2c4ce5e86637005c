"""A stand-in for poptorch 3.4 (Graphcore's PyTorch for IPUs) on machines without a Poplar SDK.

It offers the part of poptorch's API that garden's ``ipu`` backend uses, with the same names and
signatures, runs what an IPU would run on the CPU (so a run through it gives real numbers), and
fails where poptorch 3.4.0 fails. Each rule below names the poptorch source (github.com/graphcore/
poptorch at its 3.4 release) it follows; :data:`RULES` lists them for the docs and the tests.

* ``torch-version``: ``import poptorch`` asserts that ``torch.__version__`` starts with the torch
  poptorch was built for (``python/__init__.py``; ``CMakeLists.txt`` sets 2.0.1). The stand-in was
  "built for" ``$FAKE_POPTORCH_TORCH`` when set, else 2.0.1.
* ``pipeline-depth``: a pipelined training model needs ``gradientAccumulation`` >= its pipeline
  stages, ``2 x (IPU switches + 1) - 1``, and a pipelined inference model ``deviceIterations`` >=
  ``IPU switches + 1`` (``popart_compiler/source/Compiler.cpp``, ``Compiler::initSession``;
  ``CompilerImpl::numPipelineStages``; switches counted by ``Compiler::setActiveIpu``).
* ``batch-split``: a batch must split into ``deviceIterations x replicationFactor x
  gradientAccumulation`` micro-batches (``_poplar_executor.py``, ``_preprocessGraph``).
* ``fixed-inputs``: every call's inputs must have the number, shapes and dtypes the model was
  compiled with (``python/_args_parser.py``, ``ArgsParser.Args.validateInputs``).
* ``one-loss``: a training graph has exactly one loss that no other loss uses
  (``poptorch/source/RemoveSurplusIdentityLosses.cpp``). The stand-in counts the losses marked
  with :func:`identity_loss`, which is how garden marks its loss.
* ``copied-at-wrap``: ``trainingModel``/``inferenceModel`` wrap a shallow copy of the model
  (``python/__init__.py``), so plain attributes such as ``training`` are the copy's from then on;
  the options are frozen (``AttributeError: Can't modify frozen Options``) and the executor keeps
  a clone (``_poplar_executor.py``, ``PoplarExecutor.__init__``; ``_options_impl.py``,
  ``OptionsDict.checkIsFrozen``); a model already wrapped for training cannot be wrapped again.
* ``device-weights``: the device holds its own weights, uploaded from the host at compile and at
  every ``attachToDevice``; training changes only them. The host sees them after
  ``copyWeightsToHost``, after ``detachFromDevice``/``destroy`` of a training model, and an
  inference model of the same module refreshes its weights from the training one before each call
  (``_poplar_executor.py``: ``_compile``, ``attachToDevice``, ``detachFromDevice``, ``__call__``).
  poptorch also copies on any host read of a training model's parameters (``PoptorchModel``); the
  stand-in does not, so a read without a copy shows stale weights instead of hiding the missing copy.
* ``attached-copies``: ``copyWeightsToHost``/``copyWeightsToDevice`` move weights between host and
  device memory, so they need a compiled model attached to its IPUs (``Compiler::copyWeightsToHost``
  reads the device through ``Session::weightsToHost``; ``writeDeviceOptimizerStateTensorData``:
  "Must be attached to a device").
* ``ipu-count``: a model reserves ``max(IPUs used, highest ipu_id + 1) x replicationFactor`` IPUs,
  rounded up to a power of two only with ``autoRoundNumIPUs(True)``, at most 64 per process
  (``CompilerImpl::createDevice``, ``assertSingleInstanceMaxNumIPUs``); an ``ipu_id`` is >= 0.

fp16 arithmetic is not simulated: a half model is computed in fp32 and its weights are rounded to
fp16 after every update, as fp16 storage would round them. Every call is recorded in :data:`LOG`;
with ``FAKE_POPTORCH_LOG=path`` set, the log is written there as JSON when the process exits.
"""

from __future__ import annotations

import atexit
import copy
import enum
import json
import os
import weakref
from typing import Any, Dict, List, Optional

import torch

#: the torch this stand-in pretends to be built against (poptorch 3.4.0: CMakeLists.txt)
TORCH_VERSION = os.environ.get("FAKE_POPTORCH_TORCH", "2.0.1")

assert torch.__version__.startswith(TORCH_VERSION), (
    f"This version of PopTorch only works with torch=={TORCH_VERSION} but the version installed is "
    f"{torch.__version__}")

__version__ = "3.4.0+fake"

#: rule name -> the poptorch source it follows (see the module docstring)
RULES = {
    "torch-version": "python/__init__.py (module assert); CMakeLists.txt TORCH_VERSION",
    "pipeline-depth": "popart_compiler/source/Compiler.cpp Compiler::initSession; "
                      "CompilerImpl.cpp CompilerImpl::numPipelineStages; Compiler::setActiveIpu",
    "batch-split": "python/_poplar_executor.py PoplarExecutor._preprocessGraph",
    "fixed-inputs": "python/_args_parser.py ArgsParser.Args.validateInputs",
    "one-loss": "poptorch/source/RemoveSurplusIdentityLosses.cpp removeSurplusIdentityLosses",
    "copied-at-wrap": "python/__init__.py trainingModel/inferenceModel; _poplar_executor.py "
                      "PoplarExecutor.__init__; _options_impl.py OptionsDict.checkIsFrozen",
    "device-weights": "python/_poplar_executor.py _compile, attachToDevice, detachFromDevice, __call__",
    "attached-copies": "popart_compiler/source/Compiler.cpp Compiler::copyWeightsToHost, "
                       "writeDeviceOptimizerStateTensorData",
    "ipu-count": "popart_compiler/source/CompilerImpl.cpp CompilerImpl::createDevice, "
                 "assertSingleInstanceMaxNumIPUs",
}

#: every recorded call, in order: {"call": name, ...}
LOG: List[Dict[str, Any]] = []
_tracing = False


class Error(RuntimeError):
    """poptorch.Error: what the compiler and the executor raise."""


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it (enums and strategies by name)."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, _IExecutionStrategy):
        return {"strategy": type(value).__name__, "args": [_plain(a) for a in value.args]}
    if isinstance(value, TensorLocationSettings):
        return {"on_chip": value.on_chip, "replicated_tensor_sharding": value.replicated_tensor_sharding}
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


class MatMulSerializationMode(enum.Enum):
    InputChannels = "input_channels"
    ReducingDim = "reducing_dim"
    OutputChannels = "output_channels"
    Disabled = "none"


class _IExecutionStrategy:
    def __init__(self, *args: Any) -> None:
        self.args = args


class PipelinedExecution(_IExecutionStrategy):
    """One pipeline stage per block (``AutoStage``) or per named stage."""


class ShardedExecution(PipelinedExecution):
    """The blocks run one IPU after the other, without pipelining."""


class TensorLocationSettings:
    """Where a kind of tensor lives (``opts.TensorLocations.setOptimizerLocation(...)``)."""

    def __init__(self) -> None:
        self.on_chip = True
        self.replicated_tensor_sharding = False

    def useOnChipStorage(self, use: bool = True) -> "TensorLocationSettings":
        self.on_chip = bool(use)
        return self

    def useReplicatedTensorSharding(self, use: bool = True) -> "TensorLocationSettings":
        self.replicated_tensor_sharding = bool(use)
        return self


# --- options --------------------------------------------------------------------------------------

class _Frozen:
    """poptorch's OptionsDict freezing: after a wrap, the user's options refuse every change."""

    _is_frozen = False

    def _check_frozen(self) -> None:
        if self._is_frozen:
            raise AttributeError("Can't modify frozen Options")


class _Group(_Frozen):
    """A chained attribute group of :class:`Options` (``opts.Training``, ``opts.Precision``)."""

    def __init__(self, owner: "Options", name: str) -> None:
        self._owner, self._name = owner, name

    def _note(self, method: str, *args: Any) -> None:
        self._check_frozen()
        _record(f"Options.{self._name}.{method}", options=self._owner.id, args=list(args))


class _TrainingOptions(_Group):
    def __init__(self, owner: "Options") -> None:
        super().__init__(owner, "Training")
        self.gradient_accumulation = 1
        self.accumulation_and_replication_reduction_type = ReductionType.Mean
        self.auto_loss_scaling = False

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

    def setAutomaticLossScaling(self, enabled: bool) -> "_TrainingOptions":
        self._note("setAutomaticLossScaling", enabled)  # fp16 dynamics: not simulated
        self.auto_loss_scaling = bool(enabled)
        return self


class _PrecisionOptions(_Group):
    def __init__(self, owner: "Options") -> None:
        super().__init__(owner, "Precision")
        self.partials_type = torch.float32

    def setPartialsType(self, dtype: torch.dtype) -> "_PrecisionOptions":
        if dtype not in (torch.float, torch.float32, torch.half, torch.float16):
            raise ValueError("parameter to setPartialsType should be either torch.float or torch.half")
        self._note("setPartialsType", dtype)  # an IPU matmul detail: not simulated on the CPU
        self.partials_type = dtype
        return self

    def enableStochasticRounding(self, enabled: bool) -> "_PrecisionOptions":
        self._note("enableStochasticRounding", enabled)  # affects fp16 only: not simulated
        return self


class _TensorLocationOptions(_Group):
    def __init__(self, owner: "Options") -> None:
        super().__init__(owner, "TensorLocations")
        self.optimizer = TensorLocationSettings()

    def setOptimizerLocation(self, location: TensorLocationSettings) -> "_TensorLocationOptions":
        assert isinstance(location, TensorLocationSettings)
        self._note("setOptimizerLocation", location)
        self.optimizer = location
        return self


class Options(_Frozen):
    """Records every setter; keeps the values the executors need."""

    _count = 0

    def __init__(self) -> None:
        Options._count += 1
        self.id = Options._count
        self.device_iterations = 1
        self.replication_factor = 1
        self.output_mode = OutputMode.Default
        self.available_memory_proportion: Dict[int, float] = {}
        self.auto_round_num_ipus = False
        self._execution_strategy: _IExecutionStrategy = PipelinedExecution()
        self._training = _TrainingOptions(self)
        self._precision = _PrecisionOptions(self)
        self._locations = _TensorLocationOptions(self)
        _record("Options", options=self.id)

    @property
    def Training(self) -> _TrainingOptions:
        return self._training

    @property
    def Precision(self) -> _PrecisionOptions:
        return self._precision

    @property
    def TensorLocations(self) -> _TensorLocationOptions:
        return self._locations

    def _freeze(self) -> None:
        for part in (self, self._training, self._precision, self._locations):
            part._is_frozen = True

    def clone(self) -> "Options":
        """An unfrozen deep copy (what a wrapped model keeps), with its own id."""
        twin = copy.deepcopy(self)
        for part in (twin, twin._training, twin._precision, twin._locations):
            part._is_frozen = False
        for part in (twin._training, twin._precision, twin._locations):
            part._owner = twin
        Options._count += 1
        twin.id = Options._count
        _record("Options.clone", options=twin.id, of=self.id)
        return twin

    def _note(self, method: str, *args: Any) -> None:
        self._check_frozen()
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

    def setAvailableMemoryProportion(self, available_memory_proportion: Dict[str, float]) -> "Options":
        for key in available_memory_proportion:
            assert key.startswith("IPU"), (
                'Available memory proportions are expected to be in a dictionary of {"IPU0": 0.5} '
                f"where the 0 in IPU is the index of the IPU. Invalid key: {key}")
        self._note("setAvailableMemoryProportion", dict(available_memory_proportion))
        self.available_memory_proportion = {int(k[3:]): v for k, v in available_memory_proportion.items()}
        return self

    def enableExecutableCaching(self, path: Optional[str]) -> "Options":
        self._note("enableExecutableCaching", path)
        return self

    def outputMode(self, output_mode: OutputMode, output_return_period: Optional[int] = None) -> "Options":
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

    def __init__(self, user_id: Optional[str], ipu_id: Optional[int]) -> None:
        self._user_id, self._ipu_id = user_id, ipu_id

    def __call__(self, module: torch.nn.Module, inputs: Any) -> None:
        if _tracing:
            _record("stage", user_id=self._user_id, ipu_id=self._ipu_id)
            _trace_ipus.append(self._ipu_id if self._ipu_id is not None else len(_trace_ipus))

    def __repr__(self) -> str:
        return f"BeginBlock(user_id={self._user_id}, ipu_id={self._ipu_id})"


_trace_ipus: List[int] = []


def BeginBlock(layer_to_call: torch.nn.Module, user_id: Optional[str] = None, ipu_id: Optional[int] = None):
    """Annotate ``layer_to_call`` (in place) as the start of a block on ``ipu_id``; returns it."""
    if not isinstance(layer_to_call, torch.nn.Module):
        raise TypeError("module is not an instance of torch.nn.Module or function.")
    if ipu_id is not None and (not isinstance(ipu_id, int) or ipu_id < 0):
        raise Error(f"ipu_id must be an IPU index (an integer >= 0), got {ipu_id!r}")
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


def serializedMatMul(lhs: torch.Tensor, rhs: torch.Tensor, mode: MatMulSerializationMode, factor: int = 0,
                     keep_precision: bool = False) -> torch.Tensor:
    """``lhs @ rhs`` computed in ``factor`` slices (the same numbers on the CPU)."""
    if not isinstance(mode, MatMulSerializationMode):
        raise ValueError("mode must be a poptorch.MatMulSerializationMode")
    if mode is MatMulSerializationMode.OutputChannels and factor > 1:
        if rhs.shape[-1] % factor:
            raise Error(f"serializedMatMul: {rhs.shape[-1]} output channels do not split into {factor}")
        if _tracing:
            _record("serializedMatMul", mode=mode, factor=factor)
        return torch.cat([lhs @ part for part in rhs.chunk(factor, dim=-1)], dim=-1)
    return lhs @ rhs


_losses: List[torch.Tensor] = []


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


def _independent_losses(losses: List[torch.Tensor]) -> List[torch.Tensor]:
    """The losses no other loss is computed from (poptorch removes those that are)."""
    used = set()
    for i, loss in enumerate(losses):
        others = [j for j, other in enumerate(losses) if j != i and other.requires_grad and loss.requires_grad]
        if not others:
            continue
        grads = torch.autograd.grad(loss.sum(), [losses[j] for j in others], retain_graph=True, allow_unused=True)
        used.update(j for j, grad in zip(others, grads) if grad is not None)
    return [loss for i, loss in enumerate(losses) if i not in used]


# --- executors ------------------------------------------------------------------------------------

def _split(args: tuple, parts: int) -> List[tuple]:
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


def _detached(output: Any) -> Any:
    if isinstance(output, (tuple, list)):
        return type(output)(_detached(x) for x in output)
    return output.detach() if isinstance(output, torch.Tensor) else output


def _signature(args: tuple) -> List[Any]:
    return [(tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args]


def _round_up_to_power_of_two(n: int) -> int:
    power = 1
    while power < n:
        power *= 2
    return power


#: user model -> its training executor (as poptorch marks a wrapped model by its class), for inference
#: models of the same module and to refuse a second training wrap
_training_of: "weakref.WeakKeyDictionary[torch.nn.Module, PoplarExecutor]" = weakref.WeakKeyDictionary()


class PoplarExecutor:
    """What ``trainingModel``/``inferenceModel`` return: compiled on the first call, then run."""

    def __init__(self, model: torch.nn.Module, options: Optional[Options], training: bool, optimizer=None):
        if options is not None:
            if not isinstance(options, Options):
                raise Error(f"Invalid type: 'options' is of type {type(options)} (Expected poptorch.Options)")
            options._freeze()  # the caller's options refuse changes from now on
            options = options.clone()
        self._user_model = model
        self._model = copy.copy(model)  # a shallow copy: its own plain attributes, the same parameters
        self._options = options or Options()
        self._training = training
        self._device: Optional[torch.nn.Module] = None
        self._device_optimizer = None
        self._attached = False
        self._dirty = False  # the device's weights are newer than the host's
        self._inputs: Optional[List[Any]] = None
        self._host_version_seen = 0
        self.host_weights_version = 0
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
        return self._device is not None

    def isAttachedToDevice(self) -> bool:
        return self.isCompiled() and self._attached

    def _need_compiled(self) -> None:
        if not self.isCompiled():
            raise Error("Model has not been compiled or has been destroyed.")

    def _need_attached(self, what: str) -> None:
        self._need_compiled()
        if not self._attached:
            raise Error(f"{what} needs the model attached to its IPUs: the device is detached "
                        "(call attachToDevice() first)")

    def attachToDevice(self) -> None:
        self._need_compiled()
        if self._attached:
            raise Error("Device is already attached")
        self._attached = True
        self._record("attachToDevice")
        self.copyWeightsToDevice()  # the IPUs lost their memory while detached

    def detachFromDevice(self) -> None:
        self._need_compiled()
        if self._training and self._dirty and self._attached:
            self.copyWeightsToHost()
        if not self._attached:
            raise Error("Device is not attached")
        self._attached = False
        self._record("detachFromDevice")

    def copyWeightsToHost(self) -> None:
        self._need_attached("copyWeightsToHost")
        _copy_state(self._device, self._model)
        self._dirty = False
        self.host_weights_version += 1
        self._record("copyWeightsToHost")

    def copyWeightsToDevice(self) -> None:
        self._need_attached("copyWeightsToDevice")
        _copy_state(self._model, self._device)
        self._dirty = False
        self._record("copyWeightsToDevice")

    def setOptimizer(self, optimizer) -> None:
        assert self._training, "setOptimizer is for training models"
        self._optimizer = optimizer
        if self._device_optimizer is not None:  # new hyperparameters; the state stays on the device
            for mine, theirs in zip(self._device_optimizer.param_groups, optimizer.param_groups):
                mine.update({k: v for k, v in theirs.items() if k != "params"})
            for name in ("loss_scaling", "max_grad_norm"):
                if hasattr(optimizer, name):
                    setattr(self._device_optimizer, name, getattr(optimizer, name))
        self._record("setOptimizer", lr=optimizer.param_groups[0]["lr"])

    def destroy(self) -> None:
        if self.isCompiled() and self._training and self._dirty and self._attached:
            self.copyWeightsToHost()
        self._device = self._device_optimizer = None
        self._attached = False
        if _training_of.get(self._user_model) is self:
            del _training_of[self._user_model]
        self._record("destroy")

    def _factor(self) -> int:
        o = self._options
        return o.device_iterations * o.replication_factor * o.Training.gradient_accumulation

    def _compile(self, args: tuple) -> None:
        """Trace (record the blocks), check the graph as PopART would, upload the weights."""
        global _tracing
        o = self._options
        self._record("compile", batch=args[0].shape[0], strategy=o._execution_strategy,
                     micro_batch=args[0].shape[0] // self._factor())
        memo: Dict[int, Any] = {}
        self._device = copy.deepcopy(self._model, memo)  # the weights uploaded at compile
        if self._training:
            self._device_optimizer = copy.deepcopy(self._optimizer, memo)
            for name, value in vars(self._optimizer).items():  # torch's __getstate__ drops poptorch's extras
                if name not in vars(self._device_optimizer):
                    setattr(self._device_optimizer, name, value)
            optimizer = self._optimizer
            optimizer.state_dict = self._device_optimizer.state_dict  # poptorch reads it from the device
        self._attached = True
        _trace_ipus.clear()
        _tracing = True
        try:
            self._run(args)
        except BaseException:
            self._device = self._device_optimizer = None
            self._attached = False
            raise
        finally:
            _tracing = False

    def _check_graph(self, losses: List[torch.Tensor]) -> None:
        """What PopART checks once the first micro-batch is traced."""
        o = self._options
        ipus = list(_trace_ipus) or [0]
        switches, last = 0, 0
        for ipu in ipus:
            if ipu != last:
                switches += 1
            last = ipu
        if isinstance(o._execution_strategy, PipelinedExecution) and not isinstance(
                o._execution_strategy, ShardedExecution):
            stages = 2 * (switches + 1) - 1 if self._training else switches + 1
            if self._training and o.Training.gradient_accumulation < stages:
                raise Error(
                    "poptorch.Options().Training.gradientAccumulation must be greater than or equal to the number "
                    f"of pipeline stages ({stages}) when using poptorch.PipelinedExecution. Please note that a model "
                    f"with {switches + 1} pipeline stages in PopTorch will have an additional {switches} stages when "
                    "training.")
            if not self._training and o.device_iterations < stages:
                raise Error("poptorch.Options().deviceIterations must be greater than or equal to the number of "
                            f"pipeline stages ({stages}) when using PopTorch.PipelinedExecution.")
        used = max(len(set(ipus)), max(ipus) + 1) * o.replication_factor
        if used > 64:
            raise Error(f"Too many IPUs requested ({used}). Experiments that need more than 64 IPUs require "
                        "distributed execution.")
        rounded = _round_up_to_power_of_two(used)
        if rounded != used and not o.auto_round_num_ipus:
            raise Error(f"The model specifies the use of {used} IPUs, however PopTorch must reserve a minimum of "
                        f"{rounded} in order to allow the model to run, because PopTorch must reserve a power of 2 "
                        "or maximum of 64 IPUs per process. Please reconfigure your model to use a different "
                        "number of IPUs or set poptorch.Options().autoRoundNumIPUs(True).")
        self._record("ipus", used=used, reserved=rounded, pipeline_switches=switches)
        if self._training:
            if not losses:
                raise Error("Couldn't find a loss in graph!")
            if len(_independent_losses(losses)) != 1:
                raise Error("Multiple independent losses found in graph. Graph must have one final loss. "
                            "Wrap final graph loss in poptorch.identityLoss.")

    def __call__(self, *args: torch.Tensor):
        size = args[0].shape[0]
        if size % self._factor():
            raise AssertionError(
                f"Invalid batch dimension: the batch dimension ({size}) must be a multiple of "
                f"deviceIterations({self._options.device_iterations}) * replicationFactor"
                f"({self._options.replication_factor}) * gradientAccumulation"
                f"({self._options.Training.gradient_accumulation}) = {self._factor()}")
        signature = _signature(args)
        if self._inputs is not None:
            if len(signature) != len(self._inputs):
                raise Error(f"Number of positional arguments mismatch: expected {len(self._inputs)} arguments "
                            f"but got {len(signature)}.")
            for i, (was, now) in enumerate(zip(self._inputs, signature)):
                if isinstance(was, tuple) and isinstance(now, tuple):
                    if was[1] != now[1]:
                        raise Error(f"Data type mismatch for argument {i}: expected {was[1]} but got {now[1]}. "
                                    "The inputs passed at runtime must match the inputs used to compile the model.")
                    if was[0] != now[0]:
                        raise Error(f"Shape mismatch for argument {i}: expected {torch.Size(was[0])} but got "
                                    f"{torch.Size(now[0])}. The inputs passed at runtime must match the inputs "
                                    "used to compile the model.")
                elif was != now:
                    raise Error(f"Value mismatch for argument {i}: expected {was} but got {now}.")
        if not self.isCompiled():
            self._inputs = signature
            self._compile(args)
            return self._last
        if not self._attached:
            self.attachToDevice()
        if not self._training:
            self._refresh_from_training()
        return self._run(args)

    def _refresh_from_training(self) -> None:
        """An inference model of a module that is also trained: its weights follow the training's."""
        trainer = _training_of.get(self._user_model)
        if trainer is None:
            return
        if trainer._dirty and trainer.isAttachedToDevice():
            trainer.copyWeightsToHost()
        if trainer.host_weights_version != self._host_version_seen:
            self.copyWeightsToDevice()
            self._host_version_seen = trainer.host_weights_version

    def _run(self, args: tuple):
        args = tuple(a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.half else a for a in args)
        with _float_compute(self._device):
            self._last = self._train(args) if self._training else self._infer(args)
        return self._last

    def _infer(self, args: tuple):
        global _tracing
        o = self._options
        outputs = []
        with torch.no_grad():
            for part in _split(args, o.device_iterations * o.replication_factor):
                outputs.append(self._device(*part))
                if _tracing:
                    self._check_graph([])
                _tracing = False  # the graph is traced once; later micro-batches run it
        return _combine(outputs, o.output_mode)

    def _train(self, args: tuple):
        global _tracing
        o, opt = self._options, self._device_optimizer
        per_update = o.replication_factor * o.Training.gradient_accumulation
        mean = o.Training.accumulation_and_replication_reduction_type is ReductionType.Mean
        scaling = float(getattr(opt, "loss_scaling", 1.0) or 1.0)
        params = [p for g in opt.param_groups for p in g["params"]]
        outputs = []
        for part in _split(args, o.device_iterations * per_update):
            _losses.clear()
            output = self._device(*part)
            if _tracing:
                self._check_graph(list(_losses))
            _tracing = False  # the graph is traced once; later micro-batches run it
            if not _losses:
                raise Error("Couldn't find a loss in graph!")
            [loss] = _independent_losses(list(_losses))
            (loss.float() * scaling / (per_update if mean else 1)).backward()
            outputs.append(_detached(output))
            if len(outputs) % per_update == 0:
                for p in params:
                    if p.grad is not None:
                        p.grad.div_(scaling)
                if getattr(opt, "max_grad_norm", float("inf")) != float("inf"):
                    torch.nn.utils.clip_grad_norm_(params, opt.max_grad_norm)
                opt.step()
                opt.zero_grad(set_to_none=True)
                _round_to_storage(self._device)
        _losses.clear()
        self._dirty = True
        return _combine(outputs, o.output_mode)


class _float_compute:
    """Run a half model in fp32 on the CPU (remembering which tensors were half)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self._model = model

    def __enter__(self) -> None:
        halves = [t for t in list(self._model.parameters()) + list(self._model.buffers()) if t.dtype == torch.half]
        self._model._fake_half = getattr(self._model, "_fake_half", set()) | {id(t) for t in halves}
        for t in halves:
            t.data = t.data.float()
            if t.grad is not None:
                t.grad = t.grad.float()

    def __exit__(self, *exc: Any) -> None:
        pass  # kept in fp32 between calls; _copy_state casts back to the host's dtype


def _round_to_storage(model: torch.nn.Module) -> None:
    """fp16 storage: weights that are half on the host are rounded to fp16 after each update."""
    halves = getattr(model, "_fake_half", set())
    with torch.no_grad():
        for p in model.parameters():
            if id(p) in halves:
                p.copy_(p.half().float())


def _copy_state(source: torch.nn.Module, target: torch.nn.Module) -> None:
    """Copy ``source``'s parameters and buffers into ``target``'s tensors, in place."""
    theirs = dict(source.named_parameters())
    theirs.update(source.named_buffers())
    with torch.no_grad():
        for name, tensor in list(target.named_parameters()) + list(target.named_buffers()):
            tensor.copy_(theirs[name].to(tensor.dtype))


def trainingModel(model: torch.nn.Module, options: Optional[Options] = None, optimizer=None) -> PoplarExecutor:
    if isinstance(model, PoplarExecutor):
        model = model._user_model
    if model in _training_of:
        raise RuntimeError("Model has already been wrapped in 'poptorch.trainingModel'. Call model.destroy() on "
                           "the model to unwrap before wrapping again.")
    _record("trainingModel", options=options.id if options else None, model=type(model).__name__,
            optimizer=type(optimizer).__name__ if optimizer is not None else None)
    executor = PoplarExecutor(model, options, training=True, optimizer=optimizer)
    _training_of[model] = executor
    return executor


def inferenceModel(model: torch.nn.Module, options: Optional[Options] = None) -> PoplarExecutor:
    if isinstance(model, PoplarExecutor):
        model = model._user_model
    _record("inferenceModel", options=options.id if options else None, model=type(model).__name__)
    return PoplarExecutor(model, options, training=False)


def ipuHardwareIsAvailable(num_ipus: int = 1) -> bool:
    """Whether IPUs are present: ``$FAKE_POPTORCH_IPUS`` of them (none unless set)."""
    return int(os.environ.get("FAKE_POPTORCH_IPUS", "0")) >= num_ipus


from . import optim  # noqa: E402  (poptorch.optim, as in poptorch)
