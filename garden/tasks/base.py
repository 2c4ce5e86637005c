"""The Task interface every task family implements, and the pieces they share."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from garden.errors import DataError


@dataclass
class TaskData:
    """A task's data, ready for a loader: datasets of examples and the collate that batches them.

    ``labels`` are class names when the task has classes. ``info`` carries what the model
    needs to know about the data (e.g. a vocabulary size) into ``BuildSpec.options``.
    """

    train: Sequence[Any]
    eval: Sequence[Any]
    collate: Callable[[list[Any]], dict[str, Any]]
    labels: tuple[str, ...] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    #: one-line notes for the user about the data (examples truncated, events re-sorted, ...)
    notes: list[str] = field(default_factory=list)


class Task:
    """One task family. Batches are dicts of tensors; ``inputs`` names the ones the model reads.

    The same methods serve every backend: ``inputs(batch)`` is what enters the first pipeline
    stage, ``forward`` runs the whole model, ``loss`` turns the last stage's output into the
    training loss, so a pipelined run computes exactly what a local run does.
    """

    name = "task"
    metric = "accuracy"
    #: whether a larger ``metric`` is better (accuracy) or worse (loss, WER, MAE)
    greater_is_better = True
    #: whether training batches are shuffled (a stream of timestamped events keeps its order)
    shuffle_train = True
    #: whether a batch can be cut along its first dimension into pipeline micro-batches
    #: (a graph cannot: its edges index its nodes, so it travels whole)
    splittable = True
    #: whether ``infer.precision=auto`` may pick bf16 (classification: yes; fine regression: no)
    bf16_inference = True
    #: whether ``auto`` may pick dynamic int8 (checked against fp32 on the run's first batches)
    int8_inference = True
    #: the best value ``metric`` can take (1 for accuracy, 0 for an error rate)
    perfect = 1.0

    def __init__(self, family: Any):
        self.family = family

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        """Read the task's data (``cfg.data``) and split it into train and eval."""
        raise NotImplementedError

    #: the batch keys of the tensors :meth:`inputs` returns, in order, each the model's argument of
    #: that name (so ``forward`` can be rebuilt from positional inputs, as a traced stage needs)
    input_names: tuple[str, ...] = ()

    def inputs(self, batch: dict[str, Any]) -> tuple:
        """The tensors the model's first block receives, in order."""
        if not self.input_names:
            raise NotImplementedError
        return tuple(batch[k] for k in self.input_names)

    def target(self, batch: dict[str, Any]) -> Any:
        """What the loss compares the model output with."""
        return batch["labels"]

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        """The model's output for ``batch`` (logits)."""
        raise NotImplementedError

    def loss_units(self, target: Any) -> float:
        """How many things ``loss`` averages over for ``target``: examples by default, labelled
        tokens for token-level losses. A pipeline re-weights its micro-batches' losses by this so
        that they average to exactly the whole batch's loss."""
        first = target[0] if isinstance(target, (tuple, list)) else target
        return float(first.shape[0])

    def loss(self, output: Any, target: Any) -> Any:
        raise NotImplementedError

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        """Metrics over the whole eval split from the collected outputs."""
        raise NotImplementedError

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        """Readable predictions for one batch (labels with scores, spans, text, ...)."""
        raise NotImplementedError

    def confusion(self, outputs: list[Any], batches: list[dict[str, Any]]) -> list[list[int]] | None:
        """Counts of (true class, predicted class) over the eval split, for a run's
        ``plots/confusion.png``; ``None`` for a task without classes."""
        return None

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        """The user's own inputs for ``mode=infer`` (``infer.inputs=path/or/glob``)."""
        raise DataError(f"task '{self.name}' does not read infer.inputs files")

    def baseline(self, data: TaskData) -> dict[str, Any] | None:
        """``metric`` on the eval split for a predictor that ignores the inputs, fitted on the train split.

        A trained model's result means something only beside it (``bench/results.py`` declares
        both), e.g. ``{"name": "majority class of the training split", "metric": "accuracy",
        "value": 0.5083, "perfect": 1.0}``; ``None`` where the task has no baseline.
        """
        return None

    def baseline_of(self, name: str, value: float) -> dict[str, Any]:
        return {"name": name, "metric": self.metric, "value": value, "perfect": self.perfect}


class Classification(Task):
    """One class per example (images, sentences, utterances, questions): cross-entropy, accuracy,
    and the top-k class names with their probabilities as predictions."""

    metric = "accuracy"
    #: the batch key naming each example in the predictions (a file, the sentence itself)
    input_key = "input_names"

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        return F.cross_entropy(output.float(), target)

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        import torch

        logits = torch.cat([o.float() for o in outputs])
        labels = torch.cat([b["labels"] for b in batches])
        return {"accuracy": (logits.argmax(-1) == labels).float().mean().item(),
                "loss": self.loss(logits, labels).item()}

    def confusion(self, outputs: list[Any], batches: list[dict[str, Any]]) -> list[list[int]] | None:
        import torch

        logits = torch.cat([o.float() for o in outputs])
        labels = torch.cat([b["labels"] for b in batches])
        n = logits.shape[-1]
        counts = torch.bincount(labels * n + logits.argmax(-1), minlength=n * n)
        return counts.view(n, n).tolist()

    def baseline(self, data: TaskData) -> dict[str, Any]:
        from collections import Counter

        import torch

        train = Counter(torch.cat([b["labels"] for b in batches(data.train, data.collate)]).tolist())
        majority = max(sorted(train), key=train.__getitem__)
        labels = torch.cat([b["labels"] for b in batches(data.eval, data.collate)])
        return self.baseline_of("majority class of the training split", (labels == majority).float().mean().item())

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        probs = output.float().softmax(-1)
        scores, indices = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
        names = data.labels or ()
        rows = []
        for i, (s, idx) in enumerate(zip(scores.tolist(), indices.tolist())):
            row: dict[str, Any] = {"input": batch[self.input_key][i] if self.input_key in batch else None}
            if "labels" in batch:
                row["label"] = names[int(batch["labels"][i])] if names else int(batch["labels"][i])
            row["predictions"] = [{"label": names[j] if j < len(names) else str(j), "score": round(p, 6)}
                                  for p, j in zip(s, idx)]
            rows.append(row)
        return rows


def batches(dataset: Sequence[Any], collate: Callable[[list[Any]], dict[str, Any]], size: int = 64) -> list[dict]:
    """``dataset`` collated in order, ``size`` examples at a time (no loader: for a baseline's counts)."""
    return [collate([dataset[j] for j in range(i, min(i + size, len(dataset)))]) for i in range(0, len(dataset), size)]


def split(items: list[Any], eval_fraction: float, seed: int) -> tuple[list[Any], list[Any]]:
    """A seeded shuffle and a train/eval split that keeps at least one example on each side."""
    if len(items) < 2:
        raise DataError(f"need at least 2 examples to split train/eval, found {len(items)}")
    items = list(items)
    random.Random(seed).shuffle(items)
    n_eval = min(max(1, round(len(items) * eval_fraction)), len(items) - 1)
    return items[n_eval:], items[:n_eval]


def limit(items: list[Any], n: int | None) -> list[Any]:
    return items if n is None else items[:n]
