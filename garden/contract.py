"""The plugin contract, checked: what garden relies on from every installed model plugin.

``python -m garden plugin check NAME`` and :func:`garden.testing.assert_plugin_contract` run
these checks on an installed plugin (NAME is its distribution, its entry-point name or one of
its models). Each check is one promise the core makes use of:

* the plugin loads, for this garden's plugin API, and contributes at least one model;
* each model's entry follows ``registry.schema.json`` (what ``registry build`` will write), and
  each variant on the Hub is pinned to a full commit hash;
* for each task, the Hydra configs compose (``preset=smoke weights=random``), the default data
  loads and the smallest variant builds;
* the stage layout holds every parameter, and running its blocks in order computes the
  model's own forward;
* one batch goes forward and backward with a finite loss;
* split into a 2-stage plan (as the pipeline backends split it), the stages compute the same
  outputs and the same gradients as the whole model (within 1e-5);
* weights written by ``family.save`` and read back by ``family.build`` give the same outputs.

A check that cannot run because an earlier one failed is reported as skipped, so the first
failure is the one to fix::

    >>> [r.line() for r in check_plugin("vit")][:2]        # doctest: +SKIP
    ['✓ garden-vit 0.1.0 loads (plugin API 1.0; hooks garden_config_dir, garden_models)',
     '✓ vit: entry follows the registry schema']
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from garden.backends.pipeline import stage_module
from garden.compat import strip_prefix
from garden.config import compose as compose_config
from garden.errors import PluginError
from garden.partition.plan import plan_for
from garden.partition.stages import check_coverage, run_blocks
from garden.plugins import discover
from garden.registry import SCHEMA_VERSION, entry_record, pin_problems
from garden.runs.data import loader
from garden.runs.prepared import prepare
from garden.schema import validate_registry

#: how far two runs of the same computation may drift apart (max |a - b|, relative above 1)
TOLERANCE = 1e-5

MARKS = {"pass": "✓", "fail": "✗", "skip": "-"}

#: where a traceback frame is not the plugin's own code (its location would not help its author)
LIBRARIES = ("/garden/", "/torch/", "/transformers/", "/hydra/", "/omegaconf/", "/pluggy/", "/importlib/")


@dataclass
class CheckResult:
    """One point of the contract: ``CheckResult("vit/classify: configs compose", "pass")``.

    ``status`` is ``pass``, ``fail`` or ``skip`` (an earlier check it depends on failed);
    ``detail`` says why a check failed, or a short fact about a pass.
    """

    name: str
    status: str
    detail: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def line(self) -> str:
        text = f"{MARKS[self.status]} {self.name}"
        return f"{text}: {self.detail}" if self.detail else text

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "ok": self.ok}


class _Skip(Exception):
    """Raised inside a check to mark it skipped rather than failed."""


class _Checks:
    """Collects results; ``with checks.run(name) as note:`` records a pass, or the exception."""

    def __init__(self) -> None:
        self.results: list[CheckResult] = []

    def add(self, name: str, status: str, detail: str = "") -> CheckResult:
        result = CheckResult(name, status, detail)
        self.results.append(result)
        return result

    def run(self, name: str, fn: Callable[[], str | None], *, after: Sequence[CheckResult] = ()) -> CheckResult:
        blocked = [r for r in after if r.status != "pass"]
        if blocked:
            return self.add(name, "skip", f"needs '{blocked[0].name}'")
        start = time.perf_counter()
        try:
            detail = fn() or ""
            status = "pass"
        except _Skip as why:
            status, detail = "skip", str(why)
        except Exception as err:  # a plugin's bug of any kind is a failed check, not a crash
            status, detail = "fail", describe(err)
        result = self.add(name, status, detail)
        result.seconds = time.perf_counter() - start
        return result


def describe(err: BaseException) -> str:
    """One line for an exception: its type, its first line, and where in the plugin it arose."""
    first = (str(err).strip().splitlines() or [""])[0]
    text = f"{type(err).__name__}: {first}" if first else type(err).__name__
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not any(lib in f.filename.replace("\\", "/") for lib in LIBRARIES)]
    if frames and type(err).__module__ != "garden.errors":
        frame = frames[-1]
        text += f" (at {Path(frame.filename).name}:{frame.lineno})"
    return text


def find_plugin(name: str):
    """The discovered plugin called ``name`` (distribution or entry-point name), or the one that
    contributes model ``name``; a ``PluginError`` lists what is installed otherwise."""
    found = discover()
    for info in found.plugins:
        if name in (info.distribution, info.name) or name.replace("_", "-") == info.distribution:
            return info
    for info in found.plugins:
        if name in info.models:
            return info
    installed = ", ".join(sorted(p.distribution for p in found.plugins)) or "none"
    raise PluginError(
        f"no installed plugin or model is called '{name}'; installed plugins: {installed} "
        "(python -m garden plugins lists them)"
    )


def check_plugin(name: str, *, tasks: list[str] | None = None) -> list[CheckResult]:
    """Run the whole contract on the installed plugin ``name``; see the module docstring."""
    info = find_plugin(name)
    checks = _Checks()
    label = f"{info.distribution} {info.version}"
    if info.status == "blocked":
        checks.add(f"{label} loads", "fail",
                   "blocked by GARDEN_PLUGINS / GARDEN_DISABLE_PLUGINS; unset them to check it")
        return checks.results
    if info.status == "failed":
        checks.add(f"{label} loads", "fail", info.error or "failed to load")
        return checks.results
    hooks = ", ".join(info.hooks) or "none"
    checks.add(f"{label} loads", "pass", f"plugin API {info.api_version}; hooks {hooks}")
    if not info.models:
        checks.add(f"{label} contributes models", "fail",
                   "garden_models returned no entries; return a list of garden.entries.ModelEntry")
        return checks.results
    entries = discover().entries
    for model in info.models:
        entry = entries[model]
        checks.run(f"{model}: entry follows the registry schema", lambda: _schema(entry))
        for task in entry.tasks if tasks is None else [t for t in tasks if t in entry.tasks]:
            _check_task(checks, entry, task)
    return checks.results


def failures(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if not r.ok]


# --- the checks ---------------------------------------------------------------------------


def _schema(entry: Any) -> str:
    document = {"schema_version": SCHEMA_VERSION, "models": [entry_record(entry)]}
    problems = pin_problems(entry) or validate_registry(document)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PluginError(strip_prefix(problems[0], "models[0] ") + more)
    return f"{len(entry.variants)} variants, tasks {', '.join(entry.tasks)}"


@dataclass
class _State:
    cfg: Any = None
    prepared: Any = None
    model: Any = None
    batch: Any = None
    blocks: Any = None


def _check_task(checks: _Checks, entry: Any, task: str) -> None:
    s = _State()
    at = f"{entry.name}/{task}"

    def compose() -> str:
        s.cfg = compose_config([f"model={entry.name}", f"task={task}", "preset=smoke", "weights=random"])
        return None

    composed = checks.run(f"{at}: configs compose (preset=smoke weights=random)", compose)

    def build() -> str:
        import torch

        s.prepared = prepare(s.cfg)
        p = s.prepared
        s.batch = next(iter(loader(p.data.train, p.data.collate, p.cfg.data.batch_size, shuffle=False, seed=0)))
        torch.manual_seed(0)
        s.model = p.family.build(p.spec)
        n = sum(t.numel() for t in s.model.parameters())
        return f"variant {p.variant.name}, {n:,} parameters, data: {p.data.source or 'default'}"

    built = checks.run(f"{at}: default data loads and the smallest variant builds", build, after=[composed])

    def coverage() -> str:
        s.blocks = s.prepared.family.stage_blocks(s.model, task)
        if not s.blocks:
            raise PluginError("stage_blocks returned no blocks")
        kinds = [b.kind for b in s.blocks]
        bad = sorted({k for k in kinds if k not in ("embedding", "layer", "head")})
        if bad:
            raise PluginError(f"block kinds {bad}; use embedding, layer or head")
        check_coverage(s.model, s.blocks)
        return f"{len(s.blocks)} blocks, {kinds.count('layer')} layers"

    covered = checks.run(f"{at}: stage blocks hold every parameter", coverage, after=[built])

    def blocks_forward() -> str:
        import torch

        p = s.prepared
        s.model.eval()
        with torch.no_grad():
            expected = p.task.forward(s.model, s.batch)
            got = run_blocks(s.model, s.blocks, *p.task.inputs(s.batch))
        return "max |difference| " + compare(got, expected, "blocks vs forward")

    checks.run(f"{at}: stage blocks in order compute the model's forward", blocks_forward, after=[covered])

    def forward_backward() -> str:
        import torch

        p = s.prepared
        s.model.train()
        s.model.zero_grad(set_to_none=True)
        loss = p.task.loss(p.task.forward(s.model, s.batch), p.task.target(s.batch))
        if not torch.isfinite(loss).all():
            raise PluginError(f"the loss is {loss.item()}")
        loss.backward()
        params = [(n, t) for n, t in s.model.named_parameters() if t.requires_grad]
        with_grad = [(n, t) for n, t in params if t.grad is not None]
        if not with_grad:
            raise PluginError("backward reached no parameter")
        bad = [n for n, t in with_grad if not torch.isfinite(t.grad).all()]
        if bad:
            raise PluginError(f"non-finite gradient in {bad[0]}")
        s.model.zero_grad(set_to_none=True)
        return f"loss {loss.item():.4f}, {len(with_grad)}/{len(params)} parameters get gradients"

    checks.run(f"{at}: a batch goes forward and backward", forward_backward, after=[built])
    checks.run(f"{at}: a 2-stage plan computes what 1 stage does (outputs and gradients)",
               lambda: _two_stages(s), after=[covered])

    def save_reload() -> str:
        import torch

        p = s.prepared
        with tempfile.TemporaryDirectory(prefix="garden-check-") as folder, _quiet():
            p.family.save(s.model, p.preprocessor, Path(folder))
            reloaded = p.family.build(dataclasses.replace(p.spec, weights_dir=Path(folder)))
            s.model.eval()
            reloaded.eval()
            with torch.no_grad():
                return "max |difference| " + compare(p.task.forward(reloaded, s.batch),
                                                     p.task.forward(s.model, s.batch), "reloaded vs saved")

    checks.run(f"{at}: weights saved and reloaded give identical outputs", save_reload, after=[built])


def _two_stages(s: _State) -> str:
    """Plan 2 stages as the pipeline backend does and run the blocks stage by stage, detaching
    the activations wherever they cross to another stage (as a send/recv would); outputs and
    gradients must equal the whole model's.

    The blocks run in the model's order. When the plan sends the activations back to a stage
    they left (a tied LM head placed beside the embeddings), that is followed too, as IPU
    pipelines do, and the detail says so.
    """
    import torch

    p = s.prepared
    n_layers = sum(b.kind == "layer" for b in s.blocks)
    if n_layers < 2:
        raise _Skip(f"the model has {n_layers} layer block(s); 2 stages need 2")
    plan = plan_for(p, s.model, s.batch, training=True, n_stages=2)
    where = {name: stage.index for stage in plan.plan.stages for name in stage.blocks}
    segments: list[tuple[int, list[Any]]] = []
    for block in s.blocks:
        if segments and segments[-1][0] == where[block.name]:
            segments[-1][1].append(block)
        else:
            segments.append((where[block.name], [block]))
    target = p.task.target(s.batch)
    s.model.eval()  # no dropout: both runs must see the same function

    s.model.zero_grad(set_to_none=True)
    whole = p.task.forward(s.model, s.batch)
    p.task.loss(whole, target).backward()
    expected = {n: t.grad.clone() for n, t in s.model.named_parameters() if t.grad is not None}

    s.model.zero_grad(set_to_none=True)
    carry, crossings = tuple(p.task.inputs(s.batch)), []
    for i, (_, blocks) in enumerate(segments):
        if i:
            received = tuple(_detach(t) for t in carry)
            crossings.append((carry, received))
            carry = received
        out = stage_module(s.model, blocks)(*carry)
        carry = out if isinstance(out, tuple) else (out,)
    output = carry[0] if len(carry) == 1 else carry
    p.task.loss(output, target).backward()
    for sent, received in reversed(crossings):  # the backward pass, stage by stage
        pairs = [(a, r.grad) for a, r in zip(sent, received)
                 if _is_float(a) and a.requires_grad and r.grad is not None]
        if pairs:
            torch.autograd.backward([a for a, _ in pairs], [g for _, g in pairs])
    got = {n: t.grad.clone() for n, t in s.model.named_parameters() if t.grad is not None}
    s.model.zero_grad(set_to_none=True)

    out_diff = compare(output, whole, "2 stages vs 1")
    missing = sorted(set(expected) - set(got))
    if missing:
        raise PluginError(f"with 2 stages {missing[0]} gets no gradient (it does in 1 stage); "
                          "does a block reach past its stage boundary?")
    worst, worst_at = 0.0, ""
    for name, grad in expected.items():
        diff = _difference(got[name], grad)
        if diff > worst:
            worst, worst_at = diff, name
    if worst > TOLERANCE:
        raise PluginError(f"2-stage gradient of {worst_at} differs from 1 stage by {worst:.2e} (> {TOLERANCE})")
    order = " -> ".join(str(stage) for stage, _ in segments)
    loop = f" (stages run {order}: the activations return to a stage)" if len(segments) > 2 else ""
    return f"layers_per_ipu={list(plan.plan.layers_per_ipu)}, outputs {out_diff}, gradients {worst:.1e}{loop}"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Without transformers' per-call progress bars (writing and loading shards)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # a plugin need not use transformers
        yield
        return
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def _is_float(x: Any) -> bool:
    return hasattr(x, "is_floating_point") and x.is_floating_point()


def _detach(x: Any) -> Any:
    if _is_float(x):
        return x.detach().requires_grad_(x.requires_grad)
    return x


def _leaves(x: Any) -> Iterator[Any]:
    if isinstance(x, dict):
        for key in sorted(x):
            yield from _leaves(x[key])
    elif isinstance(x, (tuple, list)):
        for item in x:
            yield from _leaves(item)
    else:
        yield x


def _difference(a: Any, b: Any) -> float:
    """max |a - b|, relative to the size of ``b`` where ``b`` is larger than 1."""
    a, b = a.detach().double(), b.detach().double()
    if a.shape != b.shape:
        return float("inf")
    if a.numel() == 0:
        return 0.0
    return float((a - b).abs().max() / max(1.0, float(b.abs().max())))


def compare(got: Any, expected: Any, what: str) -> str:
    """Raise unless ``got`` equals ``expected`` (tensors, or tuples/dicts of them) within
    :data:`TOLERANCE`; returns the largest difference, formatted."""
    got_leaves, expected_leaves = list(_leaves(got)), list(_leaves(expected))
    if len(got_leaves) != len(expected_leaves):
        raise PluginError(f"{what}: {len(got_leaves)} outputs where {len(expected_leaves)} were expected")
    worst = 0.0
    for a, b in zip(got_leaves, expected_leaves):
        if hasattr(b, "shape") and hasattr(a, "shape"):
            if tuple(a.shape) != tuple(b.shape):
                raise PluginError(f"{what}: output of shape {tuple(a.shape)} where {tuple(b.shape)} was expected")
            worst = max(worst, _difference(a, b))
        elif a != b:
            raise PluginError(f"{what}: {a!r} where {b!r} was expected")
    if worst > TOLERANCE:
        raise PluginError(f"{what}: outputs differ by {worst:.2e} (> {TOLERANCE})")
    return f"{worst:.1e}"
