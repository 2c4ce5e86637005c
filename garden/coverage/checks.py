"""The checks one architecture gets for one task, on a tiny random config (:mod:`.shrink`).

Run by a pair of processes (a 2-stage pipeline needs two), both building the same model from
the same seed; the local checks run on the first, the pipeline's on both::

    build            AutoFamily builds the task's Auto head from the tiny config (from one with
                     every width kept where the tiny one's model cannot compute the loss)
    train            one training step: finite loss, finite gradients reaching parameters
    infer            an eval forward with finite outputs
    reload           save_pretrained, build again from the folder: the same outputs
    plan             blocks found and traced, their outputs the model's, a 2-stage plan
    pipeline         torch.distributed.pipelining, 2 stages (GPipe, 2 micro-batches): the output
                     equals the local one and one SGD step updates every weight as the local step
                     does (tests/equivalence.py's comparison, relative to each update's size)
    ipu              the poptorch stand-in (tests/fake_poptorch), 2 IPUs placed by the plan: one
                     SGD step over 5 micro-batches updates the weights as the local step does

Each check is ``(True, detail)`` or ``(False, one-line reason)``; a check after a failed one is
skipped (``None``).
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from garden.compat import resolve_name

CHECKS = ("build", "train", "infer", "reload", "plan", "pipeline", "ipu")
#: one row per Auto mapping: garden's task name, except ``image-classify``, which is garden's
#: ``classify`` of an image classifier (transformers keeps text and image classifiers apart)
TASKS = ("classify", "image-classify", "token-classify", "qa", "mlm", "causal-lm", "text2text", "audio-classify",
         "asr")


def head_of(row: str) -> tuple[str, Any]:
    """garden's task and the Auto head for a coverage row."""
    from garden.families.auto import HEADS

    if row == "image-classify":
        return "classify", HEADS["classify"][1]
    return row, HEADS[row][0]
LABELS = ("a", "b", "c")
LR = 0.1
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Case:
    """One architecture x task, built and ready to check."""

    model_type: str
    task_name: str
    modality: str
    results: dict[str, Any] = field(default_factory=dict)
    family: Any = None
    spec: Any = None
    model: Any = None
    task: Any = None
    inputs: tuple = ()
    target: Any = None
    blocks: Any = None
    #: how the config was shrunk, where not by every rule
    shrunk: str = ""


def reason(err: BaseException) -> str:
    """One line: the exception's type and first sentence, and where in which library it was raised."""
    frames = traceback.extract_tb(err.__traceback__)
    where = ""
    for frame in reversed(frames):
        if "/site-packages/" in frame.filename or "/garden/" in frame.filename:
            where = f" [{frame.filename.split('/site-packages/')[-1].split('/garden/')[-1]}:{frame.lineno}]"
            break
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:240]}{where}"


def run_check(case: Case, name: str, fn: Any) -> bool:
    if any(case.results.get(c, (True,))[0] is not True for c in CHECKS[:CHECKS.index(name)]
           if c in case.results and c not in ("pipeline", "ipu")):
        case.results[name] = (None, "skipped: an earlier check failed")
        return False
    try:
        detail = fn(case)
        case.results[name] = (True, detail or "")
        return True
    except Exception as err:  # every failure is a result to report, never a crash of the run
        case.results[name] = (False, reason(err))
        return False


# -- the case -----------------------------------------------------------------------------------


def prepare_case(model_type: str, row: str) -> Case:
    """The case built from the tiny config; where that model does not build or compute the task's
    loss (a width its own rules cannot take), from the config shrunk with every width kept."""
    import torch

    from garden.errors import UnknownTaskError
    from garden.families import auto

    task_name, _ = head_of(row)
    auto.check_task(auto.entry_for(f"{auto.PREFIX}coverage/{model_type}", {"model_type": model_type}), task_name)
    try:
        case = build_case(model_type, row, widths=True)
        inputs, target = make_batch(case, 2)
        with torch.no_grad():
            case.task.loss(output_of(case, inputs), target)
        return case
    except UnknownTaskError:
        raise
    except Exception as err:  # noqa: BLE001  (any failure of the tiny widths: try the model's own)
        tiny = reason(err)
    case = build_case(model_type, row, widths=False)
    case.shrunk = f"widths kept (the tiny config failed: {tiny})"
    return case


def build_case(model_type: str, row: str, *, widths: bool) -> Case:
    """Config shrunk, family, task object, model built from seed 0."""
    import torch

    from garden.coverage.shrink import tiny_config
    from garden.families import auto
    from garden.hookspecs import BuildSpec

    task_name, head = head_of(row)
    config = tiny_config(model_type, widths=widths)
    entry = auto.entry_for(f"{auto.PREFIX}coverage/{model_type}", {**config.to_dict(), "model_type": model_type})
    case = Case(model_type, task_name, head.modality)
    family = (auto.AutoVisionFamily if head.modality == "vision" else auto.AutoFamily)()
    labels = LABELS if task_name in ("classify", "token-classify", "audio-classify") else None
    spec = BuildSpec(entry=entry, variant=entry.variants[0], task=task_name, labels=labels,
                     options={"dropout": 0.0})
    forward = family.head_forward_arguments(spec)
    if head.modality == "text":
        family.text_inputs = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids")
                                   if n in forward and (n != "token_type_ids" or task_name != "causal-lm"))
    if head.modality == "speech":
        extractor = auto.default_feature_extractor(config)
        family.processor = extractor
        family.audio_input = extractor.model_input_names[0]
        family.audio_inputs = auto.audio_inputs(extractor, forward)
    case.family, case.spec = family, spec
    case.task = resolve_name(family.tasks[task_name])(family)
    if task_name == "asr":
        case.task.tokenizer = SimpleNamespace(pad_token_id=getattr(config, "pad_token_id", None) or 0)
    torch.manual_seed(0)
    case.model = family.build(spec)
    case.model.eval()
    return case


def make_batch(case: Case, size: int) -> tuple[tuple, Any]:
    """``size`` examples of probe inputs and targets the task's loss reads."""
    import torch

    from garden.families.auto import probe_inputs

    inputs = probe_inputs(case.model, case.task, case.family.processor, batch=size, length=8)
    if "attention_mask" in case.task.input_names and case.task_name in ("mlm", "causal-lm", "text2text"):
        index = case.task.input_names.index("attention_mask")  # every token labelled: micro-batch means agree
        inputs = (*inputs[:index], torch.ones_like(inputs[index]), *inputs[index + 1:])
    generator = torch.Generator().manual_seed(1)
    names = dict(zip(case.task.input_names, inputs))
    config = case.model.config
    vocab = int(getattr(config.get_text_config() if hasattr(config, "get_text_config") else config,
                        "vocab_size", None) or 100)
    if case.task_name in ("classify", "audio-classify"):
        target = torch.randint(0, len(LABELS), (size,), generator=generator)
    elif case.task_name == "token-classify":
        target = torch.randint(0, len(LABELS), names["input_ids"].shape, generator=generator)
    elif case.task_name == "qa":
        target = torch.randint(0, names["input_ids"].shape[1], (size, 2), generator=generator)
    elif case.task_name in ("mlm", "causal-lm"):
        target = names["input_ids"].clone()
    elif case.task_name == "text2text":
        target = torch.randint(1, vocab, names["decoder_input_ids"].shape, generator=generator)
    else:  # asr: a few characters per utterance (never the blank)
        target = torch.randint(1, max(2, vocab), (size, 3), generator=generator)
        target[target == case.task.tokenizer.pad_token_id] = 1
    return inputs, target


def output_of(case: Case, inputs: tuple) -> Any:
    return case.task.forward(case.model, dict(zip(case.task.input_names, inputs)))


def flat(output: Any) -> list:
    return list(output) if isinstance(output, (tuple, list)) else [output]


def max_difference(a: Any, b: Any) -> float:
    return max(float((x.float() - y.float()).abs().max()) if x.numel() else 0.0 for x, y in zip(flat(a), flat(b)))


def gradients(case: Case, inputs: tuple, target: Any) -> dict[str, Any]:
    """The local gradients of the task's loss, by parameter name (eval mode: no dropout, the
    running statistics a pipeline stage uses too)."""
    case.model.zero_grad(set_to_none=True)
    loss = case.task.loss(output_of(case, inputs), target)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in case.model.named_parameters() if p.grad is not None}
    case.model.zero_grad(set_to_none=True)
    return grads


# -- the local checks ------------------------------------------------------------------------------


def check_build(case: Case) -> str:
    n = sum(p.numel() for p in case.model.parameters())
    case.inputs, case.target = make_batch(case, 4)
    return f"{type(case.model).__name__}, {n:,} parameters" + (f"; {case.shrunk}" if case.shrunk else "")


def check_train(case: Case) -> str:
    import torch

    model = case.model
    kept = {n: b.detach().clone() for n, b in model.named_buffers()}  # BatchNorm's statistics move in train mode
    model.train()
    try:
        loss = case.task.loss(output_of(case, case.inputs), case.target)
        if not torch.isfinite(loss):
            raise ValueError(f"the loss is {float(loss)}")
        loss.backward()
        grads = [(n, p.grad) for n, p in model.named_parameters() if p.grad is not None]
        if not grads:
            raise ValueError("backward reached no parameter")
        bad = [n for n, g in grads if not torch.isfinite(g).all()]
        if bad:
            raise ValueError(f"non-finite gradient in {bad[0]}")
        return f"loss {float(loss):.3f}, gradients for {len(grads)} tensors"
    finally:
        model.zero_grad(set_to_none=True)
        model.eval()
        with torch.no_grad():  # the later checks, and the other rank (which skips this one), see the built model
            for n, b in model.named_buffers():
                b.copy_(kept[n])


def check_infer(case: Case) -> str:
    import torch

    with torch.no_grad():
        out = output_of(case, case.inputs)
    shapes = [tuple(t.shape) for t in flat(out)]
    if not all(torch.isfinite(t.float()).all() for t in flat(out)):
        raise ValueError("non-finite outputs")
    return f"outputs {shapes}"


def check_reload(case: Case) -> str:
    import dataclasses

    import torch

    with tempfile.TemporaryDirectory() as folder, torch.no_grad():
        case.family.save(case.model, None, Path(folder))
        again = case.family.build(dataclasses.replace(case.spec, weights_dir=Path(folder))).eval()
        expected = output_of(case, case.inputs)
        got = case.task.forward(again, dict(zip(case.task.input_names, case.inputs)))
    difference = max_difference(got, expected)
    if difference > 1e-5:
        raise ValueError(f"reloaded outputs differ by {difference:.3g}")
    return f"max |difference| {difference:.1e}"


def check_plan(case: Case) -> str:
    import torch

    from garden.partition.planner import plan_stages
    from garden.partition.profile import block_costs, profile_blocks
    from garden.partition.stages import check_coverage, run_blocks

    case.blocks = case.family.stage_blocks(case.model, case.task_name)
    check_coverage(case.model, case.blocks)
    inputs, _ = make_batch(case, 3)  # another batch size than the trace's probe: the trace is dynamic
    with torch.no_grad():
        difference = max_difference(run_blocks(case.model, case.blocks, *inputs), output_of(case, inputs))
    if difference > 1e-4:
        raise ValueError(f"blocks in order differ from the forward by {difference:.3g}")
    profiles = profile_blocks(case.model, case.blocks, inputs)
    plan = plan_stages(block_costs(profiles, "flops"), [-1, -1], model=case.model_type)
    layers = sum(b.kind == "layer" for b in case.blocks)
    return f"{len(case.blocks)} blocks ({layers} layers), layers_per_ipu={list(plan.layers_per_ipu)}"


# -- 2-stage checks ---------------------------------------------------------------------------------


def two_stage_plan(case: Case) -> Any:
    """The 2-stage plan the pipeline and the IPU use (FLOPs-balanced, as ``python -m garden plan``)."""
    from garden.partition.plan import StagePlan
    from garden.partition.planner import plan_stages
    from garden.partition.profile import block_costs, profile_blocks

    profiles = profile_blocks(case.model, case.blocks, case.inputs)
    plan = plan_stages(block_costs(profiles, "flops"), [-1, -1], model=case.model_type)
    return StagePlan(plan, case.blocks, profiles, None, None, 2)


def equivalence() -> Any:
    """tests/equivalence.py, the suite's comparison of training steps, loaded from the checkout."""
    name = "garden_equivalence"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "equivalence.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


def step_problems(case: Case, local: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """Where an SGD step with ``other``'s gradients is not the step with ``local``'s (relative to
    each update's size, tests/equivalence.py)."""
    eq = equivalence()
    weights = {n: p.detach().clone() for n, p in case.model.named_parameters()}
    before = eq.Run(weights, {})
    reference = eq.Run({n: w - LR * local[n] if n in local else w for n, w in weights.items()}, {})
    after = eq.Run({n: w - LR * other[n] if n in other else w for n, w in weights.items()}, {})
    typical = eq.typical_update(before, reference)
    steps = eq.updates(before, reference)
    problems = [eq.tensor_mismatch(n, steps.get(n), reference.weights[n], after.weights[n], typical)
                for n in sorted(weights)]
    return [p for p in problems if p]


def check_pipeline(case: Case, rank: int, group: Any) -> str:
    """A 2-stage pipelining schedule over the plan: forward equal to local, SGD steps equal."""
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    from garden.backends.pipeline import stage_module

    stage_plan = two_stage_plan(case)
    module = stage_module(case.model, stage_plan.sequential_stage_blocks(rank))
    local_out = output_of(case, case.inputs)
    local_grads = gradients(case, case.inputs, case.target)
    micro = tuple(t.tensor_split(2)[0] for t in case.inputs)
    carry = micro
    with torch.no_grad():
        for block in stage_plan.sequential_stage_blocks(0) if rank == 1 else []:
            carry = block.run(case.model, *carry)
        example_in = tuple(t.contiguous() for t in carry)
        out = module(*example_in)
    example_out = out if isinstance(out, tuple) else (out,)
    for t in (*([] if rank == 0 else example_in), *([] if rank == 1 else example_out)):
        if t.is_floating_point():
            t.requires_grad_(True)

    def zeros(tensors: tuple, flows: bool) -> tuple:
        return tuple(torch.zeros_like(t) if flows and t.is_floating_point() else None for t in tensors)

    stage = PipelineStage(module, rank, 2, torch.device("cpu"), group=group, input_args=example_in,
                          output_args=example_out, input_grads=zeros(example_in, rank == 1),
                          output_grads=zeros(example_out, rank == 0))
    whole = float(case.task.loss_units(case.target))

    def loss_fn(output: Any, target: Any) -> Any:  # micro-batch losses averaging to the batch's
        return case.task.loss(output, target) * (case.task.loss_units(target) * 2 / whole)

    schedule = ScheduleGPipe(stage, n_microbatches=2, loss_fn=loss_fn)
    with torch.no_grad():
        eval_out = ScheduleGPipe(PipelineStage(module, rank, 2, torch.device("cpu"), group=group,
                                               input_args=example_in, output_args=example_out),
                                 n_microbatches=2).eval(*(case.inputs if rank == 0 else ()))
    case.model.zero_grad(set_to_none=True)
    schedule.step(*(case.inputs if rank == 0 else ()), **({"target": case.target} if rank == 1 else {}))
    mine = {id(p): p for p in module.parameters()}
    grads = {n: p.grad.detach().clone() for n, p in case.model.named_parameters()
             if id(p) in mine and p.grad is not None}
    gathered: list = [None, None]
    dist.all_gather_object(gathered, grads, group=group)
    case.model.zero_grad(set_to_none=True)
    summed: dict[str, Any] = {}
    for part in gathered:  # a parameter on both stages (tied, shared) gets both gradients
        for n, g in part.items():
            summed[n] = summed[n] + g if n in summed else g
    forward = max_difference(eval_out, local_out) if rank == 1 else 0.0
    differences = [0.0, 0.0]
    dist.all_gather_object(differences, forward, group=group)
    if max(differences) > 1e-4:
        raise ValueError(f"the pipelined output differs from the local one by {max(differences):.3g}")
    problems = step_problems(case, local_grads, summed)
    if problems:
        raise ValueError(f"an SGD step differs: {problems[0]} ({len(problems)} tensors)")
    return f"layers_per_ipu={list(stage_plan.plan.layers_per_ipu)}, output and {len(summed)} gradients agree"


def fake_poptorch() -> Any:
    """poptorch, or its stand-in from this checkout's tests/fake_poptorch; ``None`` without either."""
    try:
        import poptorch
        return poptorch
    except ImportError:
        where = ROOT / "tests" / "fake_poptorch"
        if not where.is_dir():
            return None
        import os

        import torch

        os.environ.setdefault("FAKE_POPTORCH_TORCH", torch.__version__)
        os.environ.setdefault("FAKE_POPTORCH_IPUS", "2")
        sys.path.insert(0, str(where))
        import poptorch
        return poptorch


def check_ipu(case: Case) -> str:
    """One training step through poptorch (its stand-in): 2 IPUs placed by the plan, 5 micro-batches."""
    import torch

    from garden.backends.ipu import place_blocks, step_module

    poptorch = fake_poptorch()
    if poptorch is None:
        raise ImportError("no poptorch and no stand-in (tests/fake_poptorch) in this checkout")
    inputs, target = make_batch(case, 10)
    local = gradients(case, inputs, target)
    stage_plan = two_stage_plan(case)
    weights = {n: p.detach().clone() for n, p in case.model.named_parameters()}
    step = step_module(case.model, case.blocks, case.task, poptorch)
    hooks = place_blocks(case.model, stage_plan, poptorch, recompute=False)
    try:
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(5)
        opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
        opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
        optimizer = poptorch.optim.SGD(case.model.parameters(), lr=LR)
        step.eval()  # no dropout; poptorch trains what the forward marks as the loss
        step.training = True
        trained = poptorch.trainingModel(step, options=opts, optimizer=optimizer)
        trained(*inputs, target)
        trained.copyWeightsToHost()
        moved = {n: (weights[n] - p.detach()) / LR for n, p in case.model.named_parameters()}
    finally:
        for hook in hooks:
            hook.remove()
        poptorch.removeBlocks(case.model)
        with torch.no_grad():
            for n, p in case.model.named_parameters():
                p.copy_(weights[n])
    problems = step_problems(case, local, {n: g for n, g in moved.items() if n in local})
    if problems:
        raise ValueError(f"the IPU step differs: {problems[0]} ({len(problems)} tensors)")
    return f"layers_per_ipu={list(stage_plan.plan.layers_per_ipu)}, the step agrees"


LOCAL = {"build": check_build, "train": check_train, "infer": check_infer, "reload": check_reload,
         "plan": check_plan}
