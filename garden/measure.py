"""Each variant's sizes measured from the model itself: parameters, FLOPs per sample, file size.

Plugins declare these numbers on their :class:`~garden.entries.Variant` (as torchvision's
weight ``meta`` and timm's ``pretrained_cfg`` carry them), so ``list``, ``show`` and the registry
page read them without torch. ``python -m garden registry measure`` recomputes them and names
every declared number that disagrees, which is how a plugin keeps them true.

What is measured is the model ``python -m garden model=M`` runs: the variant's architecture
(a Hub variant with its own vocabulary) with the head of the entry's first task, sized by that
task's default data, built with random weights (no download). FLOPs are one forward pass on the
first example of that data (``torch.utils.flop_counter``: a multiply-add counts two; the input's
shapes are reported beside them); the file size is the bytes of the safetensors file the family
saves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from garden.config import compose
from garden.entries import ModelEntry, Variant
from garden.hookspecs import BuildSpec
from garden.runs.data import loader
from garden.runs.prepared import prepare
from garden.text import VOCABULARY_KEYS

#: a measured FLOP count may drift this much (kernel choices) before it disagrees
FLOPS_TOLERANCE = 0.01


@dataclass(frozen=True)
class Measurement:
    model: str
    variant: str
    task: str
    params: int
    flops: int
    file_size: int
    #: the shapes FLOPs were counted on, e.g. "pixel_values 1x3x224x224"
    input: str

    def disagreements(self, declared: Variant) -> list[str]:
        """Each declared number that differs from this measurement, as ``field declared -> measured``."""
        found = []
        if declared.flops_input != self.input:
            found.append(f"{self.model}/{self.variant} flops_input: declared {declared.flops_input!r}, "
                         f"measured {self.input!r}")
        for name in ("params", "file_size", "flops"):
            have, want = getattr(declared, name), getattr(self, name)
            tolerance = FLOPS_TOLERANCE * want if name == "flops" else 0
            if have is None or abs(have - want) > tolerance:
                found.append(f"{self.model}/{self.variant} {name}: declared {have}, measured {want}")
        return found


def shapes(batch: dict[str, Any]) -> str:
    """The tensors a batch holds, its labels aside, as ``name AxB`` items."""
    import torch

    return ", ".join(f"{k} {'x'.join(map(str, v.shape))}" for k, v in batch.items()
                     if isinstance(v, torch.Tensor) and k != "labels")


def checkpoint_sized(spec: BuildSpec) -> BuildSpec:
    """A Hub variant keeps its own vocabulary. Offline, garden's stand-in tokenizer resizes a
    randomly initialised model to its small vocabulary; online the checkpoint's tokenizer
    matches the checkpoint, which is the model a user runs."""
    config = spec.options.get("config")
    if spec.variant.hub_id is None or not isinstance(config, dict):
        return spec
    kept = {k: v for k, v in config.items() if k not in VOCABULARY_KEYS}
    return dataclasses.replace(spec, options={**spec.options, "config": kept})


@contextlib.contextmanager
def quietly():
    """Data notes and save progress bars held back: the measurement is the output here."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def measure(entry: ModelEntry, variant: Variant) -> Measurement:
    """Build ``variant`` for the entry's first task with random weights and measure it."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    task = entry.tasks[0]
    cfg = compose([f"model={entry.name}", f"task={task}", f"model.variant={variant.name}", "weights=random",
                   "mode=infer", "data.batch_size=1", "data.eval_limit=1"])
    with quietly():
        prepared = prepare(cfg)
        model = prepared.family.build(checkpoint_sized(prepared.spec)).eval()
    params = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    data = prepared.data
    batch = next(iter(loader(data.eval, data.collate, 1, shuffle=False, seed=cfg.seed)))
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        prepared.task.forward(model, batch)
    with tempfile.TemporaryDirectory() as tmp, quietly():
        prepared.family.save(model, prepared.preprocessor, Path(tmp))
        size = sum(f.stat().st_size for f in Path(tmp).rglob("*.safetensors"))
    return Measurement(entry.name, variant.name, task, params, int(counter.get_total_flops()), size, shapes(batch))


def measure_all(models: list[ModelEntry]) -> list[Measurement]:
    """Every variant of ``models``, offline and quietly (random weights need no Hub)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    return [measure(entry, variant) for entry in models for variant in entry.variants]
