"""Did two runs take the same training steps? Compare what the steps did to the weights.

Every equivalence test (local vs pipeline, replicas, gradient accumulation, the IPU path) trains
the same model from the same initial weights twice and asks :func:`step_mismatches` whether the
second run's update (weights after minus weights before) is the first run's, tensor by tensor,
relative to the update's own size::

    ||update_other - update_reference|| <= RTOL x ||update_reference||
                                           + ATOL x u x sqrt(n) + 2 x eps32 x ||weights||

The steps are plain SGD (:data:`SGD_STEPS`: no weight decay, no clipping, a constant lr), so an
update is linear in the gradient and a gradient at the wrong scale (a loss summed instead of
averaged, a missing ``x replicas``, an accumulation divided twice) moves it by 50-100 % of its
size. AdamW would not see it: its first steps are ``lr x sign(gradient)`` whatever the gradient's
scale. Clipping would not either: it rescales every gradient to the same norm.

The three terms, and why they hold on any CPU:

* ``RTOL = 1e-4`` of the tensor's own update. Correct runs differ by float reassociation only
  (micro-batches summed in another order, gradients all-reduced across ranks, a matmul split
  across stages): a few fp32 ulps of each gradient, 1e-7 to 1e-6 of an update.
* ``ATOL = 1e-3`` of a typical weight's update ``u`` (:func:`typical_update`) per entry, ``n``
  entries. A tensor whose gradient is zero in exact arithmetic (an attention key's bias shifts a
  row's scores alike; a QA head's bias shifts a softmax) or nearly so gets pure rounding, a
  cancelled sum of terms as large as anyone's, 1e-8 of its own (zero) size but up to ~1e-5 of ``u``.
* ``2 eps32 ||weights||``: each run stores its weights in fp32, rounded by half an ulp.

Measured on the thirteen families, ViT's 2 and 3 stages, replicas and accumulation: the largest
difference used 0.11 of its allowance (camembert's token type embeddings), most under 0.01. And a
test can fail: :func:`assert_same_steps` first checks that the reference's own steps made 1e-3
longer would be reported (the thirteen families catch 1e-4 to 4e-4), so a real bug of 1e-3 of
an update or more (one lost example in 8 is 0.125) always fails.

The initial weights come from the same command with ``trainer.max_steps=0`` (:func:`initial`).
"""

from __future__ import annotations

import json
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

#: one optimizer step = lr x gradient (garden's sgd has momentum 0.9: the first step is lr x
#: gradient, later ones stay linear in the gradients' scale)
SGD_STEPS = ("trainer.optimizer=sgd", "trainer.weight_decay=0", "trainer.grad_clip=null",
             "trainer.scheduler=constant", "trainer.warmup_steps=0")
RTOL = 1e-4
ATOL = 1e-3
EPS32 = 2.0 ** -23


@dataclass
class Run:
    """A finished run's saved weights (``model/model.safetensors``) and ``metrics.json``."""

    weights: dict
    metrics: dict


def read_run(where: Path) -> Run:
    """The one run under ``where`` (its ``hydra.run.dir``, or a folder holding ``outputs/``)."""
    from safetensors.torch import load_file

    [metrics] = [where / "metrics.json"] if (where / "metrics.json").exists() else where.glob("outputs/*/*/metrics.json")
    return Run(load_file(metrics.parent / "model" / "model.safetensors"), json.loads(metrics.read_text()))


def initial(args: tuple[str, ...], where: Path) -> Run:
    """The weights ``python -m garden ARGS`` starts from: the same command, zero steps."""
    from conftest import garden_cli

    where.mkdir(parents=True, exist_ok=True)
    result = garden_cli(*args, "backend=local", "trainer.max_steps=0", cwd=where)
    assert result.returncode == 0, result.output
    run = read_run(where)
    assert run.metrics["steps"] == 0
    return run


def updates(before: Run, after: Run) -> dict:
    """Each floating tensor's update, in float64, over its entries finite after the steps (non-finite
    ones are compared as they are, see :func:`tensor_mismatch`); an entry filled in counts from 0."""
    import torch

    out = {}
    for name, end in after.weights.items():
        start = before.weights.get(name)
        if start is None or not end.is_floating_point() or start.shape != end.shape:
            continue
        finite = end.isfinite()
        out[name] = (end[finite].double() - torch.where(start.isfinite(), start, 0)[finite].double())
    return out


def typical_update(before: Run, after: Run) -> float:
    """The median over tensors that moved of their root-mean-square update: a typical weight's
    step, whatever a few state buffers (a memory's event times) or a large vocabulary do."""
    import statistics

    moved = [s for s in updates(before, after).values() if s.numel() and bool(s.any())]
    return statistics.median(float(s.pow(2).mean()) ** 0.5 for s in moved) if moved else 0.0


def tensor_mismatch(name: str, step, reference, other, typical: float) -> str | None:
    """Why ``other`` (a tensor after the steps) is not ``reference`` whose update was ``step``
    (:func:`updates`), or None when they agree as the module docstring says. Integer tensors
    (position ids, counters) must be equal; non-finite entries (a memory's empty slots at -inf)
    must be equal and in the same places.
    """
    import torch

    if reference.shape != other.shape or reference.dtype != other.dtype:
        return f"{name}: {tuple(other.shape)} {other.dtype}, expected {tuple(reference.shape)} {reference.dtype}"
    if not reference.is_floating_point():
        return None if torch.equal(reference, other) else f"{name}: integer values differ"
    finite = reference.isfinite()
    if not torch.equal(other.isfinite(), finite) or not torch.equal(other[~finite], reference[~finite]):
        return f"{name}: non-finite entries differ"
    ref, got = reference[finite].double(), other[finite].double()
    size, off = step.norm().item(), (got - ref).norm().item()
    allowed = RTOL * size + ATOL * typical * step.numel() ** 0.5 + 2 * EPS32 * ref.norm().item()
    if off <= allowed:
        return None
    return f"{name}: differs by {off / size if size else float('inf'):.3g} of its update ({off:.3g}, allowed {allowed:.3g})"


def step_mismatches(before: Run, reference: Run, other: Run) -> list[str]:
    """Every way ``other``'s steps differ from ``reference``'s, both started from ``before``'s
    weights: each tensor's update (:func:`tensor_mismatch`), and the change of the eval loss,
    relative to the reference's change (plus 1e-5 of the loss for the eval's own reassociation).
    Empty when they are the same steps."""
    problems = []
    if reference.weights.keys() != other.weights.keys():
        only_ref, only_other = reference.weights.keys() - other.weights.keys(), other.weights.keys() - reference.weights.keys()
        problems.append(f"different tensors: only in the reference {sorted(only_ref)}, only in the other {sorted(only_other)}")
    steps, typical = updates(before, reference), typical_update(before, reference)
    for name in sorted(reference.weights.keys() & other.weights.keys()):
        problem = tensor_mismatch(name, steps.get(name), reference.weights[name], other.weights[name], typical)
        if problem:
            problems.append(problem)
    start, ref, got = (run.metrics["eval"]["loss"] for run in (before, reference, other))
    if abs(got - ref) > RTOL * abs(ref - start) + 1e-5 * abs(ref):
        problems.append(f"eval loss {got!r}, expected {ref!r} (the step moved it from {start!r})")
    return problems


def scaled(before: Run, after: Run, factor: float) -> Run:
    """``after``'s weights as if its steps had been ``factor`` times as long (a gradient at another
    scale); its metrics as they are, so only the weights can tell."""
    import torch

    weights = {}
    for name, end in after.weights.items():
        start = before.weights[name]
        if end.is_floating_point():
            longer = (start.double() + factor * (end.double() - start.double())).to(end.dtype)
            end = torch.where(end.isfinite() & start.isfinite(), longer, end)
        weights[name] = end
    return Run(weights, after.metrics)


def assert_same_steps(before: Run, reference: Run, other: Run) -> None:
    """``other`` trained exactly as ``reference`` did, from ``before``. First, that the comparison
    could fail here: it must catch the reference's own steps made 1e-3 longer (steps too small
    for their weights' fp32 rounding would hide that)."""
    assert step_mismatches(before, reference, scaled(before, reference, 1 + 1e-3)), (
        "the reference's steps are too small to compare: raise trainer.lr")
    problems = step_mismatches(before, reference, other)
    assert not problems, "the steps differ:\n  " + "\n  ".join(problems[:20])


def mutation_env(site: Path, patch: str) -> dict:
    """The environment of a run with a bug put in: ``patch`` (Python source) is the module of a
    plugin every run loads as it finds its model (torchrun's ranks included), installed in
    ``site``, and should print a line with ``MUTATION`` when the bug is reached (so a test knows it
    ran). A plugin, not a ``sitecustomize``: runs given it still fork from the test's server."""
    from garden.hookspecs import API_VERSION
    from garden.pytest_plugin import make_distribution

    site.mkdir(parents=True, exist_ok=True)
    make_distribution(site, "garden-mutation", "garden_mutation",
                      f"GARDEN_API_VERSION = {API_VERSION!r}\n" + textwrap.dedent(patch))
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
