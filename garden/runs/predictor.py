"""Predictions from Python: a model, loaded once, that takes raw images, audio and text.

:class:`Predictor` is ``mode=infer`` without files: it is composed and prepared like a run
(model, task, variant, weights, the task's data for its labels), and each call turns raw inputs
into the task's examples through the task's own ``load_inputs`` (what ``infer.inputs=`` reads),
so a notebook and the command line predict the same thing from the same input::

    >>> predict = garden.predictor("vit", task="classify", weights="outputs/DATE/TIME/model")  # doctest: +SKIP
    >>> [row["prediction"] for row in predict([Image.open("seven.png"), "photos/*.png"])]        # doctest: +SKIP
    ['7', '3', '7']

An input is a string (a path, a glob, or the text itself, as ``infer.inputs=`` takes it), a
``PIL.Image``, an array (``HxW[xC]`` pixels, or a 1-D waveform at ``data.sample_rate``), a
``(waveform, sample_rate)`` pair, or a dict (``{"question", "context"}`` for qa,
``{"image", "question"}`` for vqa). Each row is the task's prediction (as in
``predictions.jsonl``) plus ``prediction``: its answer in one value (the top label, the
transcript, the generated text).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

from garden.backends import select_backend
from garden.config import compose
from garden.errors import DataError, needs
from garden.runs.data import loader
from garden.runs.loops import inference_plan
from garden.runs.prepared import entry_of, prepare


class Predictor:
    """A prepared model on this process (``backend=local``) that predicts raw inputs."""

    def __init__(self, overrides: Sequence[str]):
        self.cfg = compose([*overrides, "mode=infer", "backend=local"])
        self.prepared = prepare(self.cfg)
        self.task, self.data = self.prepared.task, self.prepared.data
        self.backend = select_backend(self.cfg, self.prepared)
        # calls come one by one, so auto picks no plan that needs a check against fp32 (int8) or a warm-up
        self.backend.use_plan(inference_plan(self.prepared, self.backend, 0, checked=False))

    @property
    def labels(self) -> tuple[str, ...] | None:
        """The class names a classifier chooses from (``None`` for a task without classes)."""
        return self.data.labels

    def __call__(self, inputs: Any = None, *, top_k: int | None = None) -> list[dict[str, Any]]:
        """Predictions for ``inputs`` (one input or a list; ``None``: the held-out split)."""
        if inputs is None:
            examples, names = self.data.eval, None
        else:
            items = list(inputs) if isinstance(inputs, (list, tuple)) and not is_waveform_pair(inputs) else [inputs]
            examples, names = self.examples(items)
        cfg = self.cfg
        rows: list[dict[str, Any]] = []
        for batch in loader(examples, self.data.collate, cfg.data.eval_batch_size or cfg.data.batch_size,
                            shuffle=False, seed=cfg.seed):
            output = self.backend.forward(batch)
            rows.extend(self.task.predict(output, batch, self.data, top_k or cfg.infer.top_k))
        for i, row in enumerate(rows):
            if names is not None and names[i] is not None:
                row["input"] = names[i]
            row["prediction"] = answer(row)
        return rows

    def examples(self, items: list[Any]) -> tuple[list[Any], list[str | None]]:
        """The task's examples for ``items`` and, per example, the name to show for a raw input."""
        examples: list[Any] = []
        names: list[str | None] = []
        with tempfile.TemporaryDirectory(prefix="garden-predict-") as folder:
            for i, item in enumerate(items):
                spec, raw = as_input(item, Path(folder) / f"{i:06d}", self.cfg.data.sample_rate)
                made = self.task.load_inputs(spec, self.prepared.preprocessor, self.data)
                made = [made[j] for j in range(len(made))]  # a dataset (audio) read while the file exists
                examples += made
                names += [f"input {i}" if raw else None] * len(made)
        return examples, names


def is_waveform_pair(item: Any) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], int) and hasattr(item[0], "__len__")


def as_input(item: Any, stem: Path, sample_rate: int) -> tuple[str, bool]:
    """What ``Task.load_inputs`` reads for ``item`` (a raw object is written to a file beside
    ``stem`` first), and whether it was raw."""
    if isinstance(item, (str, Path)):
        return str(item), False
    if isinstance(item, dict):
        path = stem.with_suffix(".json")
        path.write_text(json.dumps([item], default=str), encoding="utf-8")
        return str(path), True
    if is_waveform_pair(item):
        return write_wave(item[0], item[1], stem), True
    if hasattr(item, "save") and hasattr(item, "mode"):  # a PIL image
        path = stem.with_suffix(".png")
        item.convert("RGB").save(path)
        return str(path), True
    array = to_numpy(item)
    if array is not None:
        if array.ndim == 1 or (array.ndim == 2 and min(array.shape) <= 2 and array.dtype.kind == "f"):
            return write_wave(array, sample_rate, stem), True
        from PIL import Image

        if array.dtype.kind == "f":
            array = (array.clip(0, 1) * 255).round()
        path = stem.with_suffix(".png")
        Image.fromarray(array.astype("uint8")).convert("RGB").save(path)
        return str(path), True
    raise DataError(f"cannot predict from a {type(item).__name__}; give a path or text (str), a PIL image, an "
                    "array (pixels or a waveform), a (waveform, sample_rate) pair, or a dict of the task's fields")


def to_numpy(item: Any) -> Any:
    """``item`` as a numpy array when it is one (or a tensor), else ``None``."""
    import numpy as np

    if isinstance(item, np.ndarray):
        return item
    if hasattr(item, "detach") and hasattr(item, "numpy"):
        return item.detach().cpu().numpy()
    return None


def write_wave(samples: Any, rate: int, stem: Path) -> str:
    import numpy as np

    soundfile = needs("soundfile", "soundfile", "writing audio")
    array = np.asarray(to_numpy(samples) if to_numpy(samples) is not None else samples, dtype="float32")
    if array.ndim == 2 and array.shape[0] <= 2 < array.shape[1]:  # channels first, as torchaudio has it
        array = array.T
    path = stem.with_suffix(".wav")
    soundfile.write(path, array, rate)
    return str(path)


def answer(row: dict[str, Any]) -> Any:
    """A prediction row's answer in one value: the transcript, the generated text, or the top label."""
    for key in ("transcript", "output"):
        if key in row:
            return row[key]
    predictions = row.get("predictions")
    if predictions and isinstance(predictions, list) and isinstance(predictions[0], dict):
        return predictions[0].get("label")
    return predictions


def predictor(model: str, task: str | None = None, *, variant: str = "default", weights: str = "auto",
              overrides: Iterable[str] = ()) -> Predictor:
    """A :class:`Predictor` for ``model`` (its first task unless ``task``), like
    ``python -m garden model=M task=T mode=infer weights=W``; ``overrides`` are further Hydra ones."""
    entry = entry_of(model)
    chosen = [f"model={model if model.startswith('hf:') else entry.name}", f"task={task or entry.tasks[0]}",
              f"weights={weights}"]
    if variant != "default":
        chosen.append(f"model.variant={variant}")
    return Predictor([*chosen, *overrides])
