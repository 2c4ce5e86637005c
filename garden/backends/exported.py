"""What the exported-model backends share: the export folder's manifest, and the exported graph
dressed as the model a task calls.

``python -m garden export`` writes a folder holding the graph (``model.onnx``, or OpenVINO's
``model.xml``/``model.bin``), the preprocessor and ``garden_export.json``: the model, variant,
task and labels it was exported for, the graph's input and output names, and the difference to
torch measured when it was written. ``backend=onnxruntime`` and ``backend=openvino`` read that
folder (``weights=DIR``) and run the task's own ``forward`` on it, so predictions, metrics and
outputs are the ones ``backend=local`` writes::

    output = task.forward(ExportedModel(run, inputs, outputs, "onnxruntime"), batch)   # .logits, ...
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, ClassVar

from garden.backends.base import Backend
from garden.errors import BackendError, WeightsError

MANIFEST = "garden_export.json"
#: the graph file each format writes, and the backend that runs it
GRAPH = {"onnx": "model.onnx", "openvino": "model.xml"}
RUNS = {"onnx": "onnxruntime", "openvino": "openvino"}


def read_manifest(folder: Path | str, backend: str | None = None) -> dict[str, Any]:
    """``folder``'s export manifest, or a WeightsError saying how to make one."""
    folder = Path(folder)
    path = folder / MANIFEST
    how = "write one with python -m garden export model=NAME format=onnx|openvino [weights=DIR]"
    if not path.is_file():
        raise WeightsError(f"weights={folder} holds no exported model ({MANIFEST}); {how}")
    manifest = json.loads(path.read_text())
    if backend is not None and RUNS.get(manifest.get("format")) != backend:
        runs = RUNS.get(manifest.get("format"), "?")
        raise WeightsError(f"{folder} holds a {manifest.get('format')} export, which backend={runs} runs, "
                           f"not backend={backend}; or {how.replace('onnx|openvino', _format_of(backend))}")
    return manifest


def _format_of(backend: str) -> str:
    return next((f for f, b in RUNS.items() if b == backend), "onnx")


class ExportedModel:
    """The exported graph as a task sees a model: called with the batch's tensors by name, it
    returns the graph's outputs by name (``.logits``, ``.start_logits``, ...). Anything else a
    task asks of the model (``generate``, a helper method) is not in the graph: a BackendError."""

    def __init__(self, run: Callable[[list[Any]], list[Any]], inputs: list[str], outputs: list[str], backend: str,
                 helpers: Any = None):
        self._run, self._inputs, self._outputs, self._backend = run, inputs, outputs, backend
        #: a weightless copy of the model whose helper methods the task calls (the manifest's ``helpers``)
        self._helpers = helpers

    def __call__(self, **kwargs: Any) -> SimpleNamespace:
        import torch

        missing = [n for n in self._inputs if kwargs.get(n) is None]
        if missing:
            raise BackendError(f"backend={self._backend}: the exported graph needs {', '.join(missing)}, "
                               "which this batch lacks; export again from the same task")
        results = self._run([kwargs[n].detach().cpu().numpy() for n in self._inputs])
        return SimpleNamespace(**{n: torch.from_numpy(r) for n, r in zip(self._outputs, results)})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith("garden_"):
            raise AttributeError(name)
        if self._helpers is not None and name in self._helpers[1]:
            return getattr(self._helpers[0], name)
        raise BackendError(f"backend={self._backend} runs the exported forward pass only, and this task also "
                           f"calls model.{name}; run it with backend=local")


def weightless(prepared: Any) -> Any:
    """The model built on the meta device (its config and methods, no weights), for helper methods."""
    import dataclasses

    import torch

    spec = dataclasses.replace(prepared.spec, weights_dir=None)
    with torch.device("meta"):
        return prepared.family.build(spec)


class ExportedBackend(Backend):
    """Inference on an exported graph in another runtime: ``mode=infer`` and ``mode=eval``."""

    #: the export format this backend runs
    format: ClassVar[str]
    inference_precisions = ("fp32",)

    def __init__(self, prepared: Any):
        folder = prepared.spec.weights_dir
        manifest = read_manifest(folder, self.name)
        for key, have in (("model", prepared.entry.name), ("task", prepared.task.name)):
            if manifest[key] != have:
                raise WeightsError(f"{folder} was exported for {key} {manifest[key]}, not {have}; "
                                   f"run it with {key}={manifest[key]} or export {have}")
        labels = list(prepared.data.labels) if prepared.data is not None and prepared.data.labels else None
        if manifest.get("labels") and labels and manifest["labels"] != labels:
            raise WeightsError(f"{folder} was exported with labels {manifest['labels'][:5]}..., the data has "
                               f"{labels[:5]}...; predict on the data it was trained for, or export again")
        self.task, self.manifest = prepared.task, manifest
        helpers = manifest.get("helpers") or []
        self.model = ExportedModel(self.load(Path(folder) / manifest["graph"], prepared.cfg), manifest["inputs"],
                                   manifest["outputs"], self.name, (weightless(prepared), helpers) if helpers else None)

    def load(self, graph: Path, cfg: Any) -> Callable[[list[Any]], list[Any]]:
        """A function from the inputs (numpy, in the manifest's order) to the outputs."""
        raise NotImplementedError

    def parameter_count(self) -> int:
        return int(self.manifest.get("params", 0))

    def parameters(self) -> list:
        return []

    def train_step(self, batch: dict[str, Any], scale: float = 1.0, sync: bool = True) -> Any:
        raise BackendError(f"backend={self.name} runs an exported model for mode=infer or mode=eval; "
                           "train with backend=local, then export the trained model")

    def forward(self, batch: dict[str, Any]) -> Any:
        import torch

        with torch.inference_mode():
            return self.task.forward(self.model, batch)

    def reference_forward(self, batch: dict[str, Any]) -> Any:
        return self.forward(batch)

    def clip_grad_norm(self, max_norm: float) -> None:
        raise BackendError(f"backend={self.name} does not train")

    def model_for_saving(self) -> Any:
        raise BackendError(f"backend={self.name} has no torch model to save")
