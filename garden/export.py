"""``python -m garden export``: a model as an ONNX or OpenVINO graph that other runtimes load,
checked against torch before it is kept.

    python -m garden export model=vit format=onnx weights=outputs/DATE/TIME/model
    python -m garden export model=bert task=classify format=openvino weights=random out=exports/bert-ov

The graph is the model's forward pass as the task calls it (the task's ``forward`` is run once
with a recording stand-in for the model, so the graph's inputs are the batch tensors the task
passes and its outputs the fields it reads, e.g. ``logits``). The first batch dimension, and the
second of sequence inputs, stay free. ONNX goes through ``torch.onnx.export`` (the dynamo
exporter); OpenVINO converts from torch directly (``openvino.convert_model``, weights kept fp32).

Before the folder is moved into place the graph is run in its runtime on a held-out batch of
another size than the one it was traced with, and its outputs are compared with torch's:
the largest difference and the tolerance are printed, and an export outside the tolerance is
refused. The folder holds the graph, the preprocessor, the model's config and ``garden_export.json``
(:mod:`garden.backends.exported`), which ``backend=onnxruntime`` / ``backend=openvino`` read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import time
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

from garden.backends.exported import GRAPH, MANIFEST, RUNS
from garden.errors import BackendError, ConfigError
from garden.files import make_plain, staging_folder, write_atomic

FORMATS = tuple(GRAPH)
#: an exported fp32 graph differs from eager torch by the order of its sums (fused kernels,
#: another BLAS): ~1e-6 relative on base models; 1e-4 absolute + 1e-3 relative leaves room for
#: that on logits of any scale and still refuses a wrong graph (differences of order 1e-1 and up)
RTOL, ATOL = 1e-3, 1e-4


@dataclasses.dataclass
class Export:
    folder: Path
    format: str
    inputs: list[str]
    outputs: list[str]
    max_abs_diff: float
    max_rel_diff: float
    seconds: float


class _Unexportable(Exception):
    pass


class _Recorder:
    """Stands in for the model in one call of the task's ``forward``: notes the tensors it is
    called with, the output fields the task reads, and the model's helper methods it calls
    besides (e.g. ``_get_feat_extract_output_lengths``: arithmetic on the config, no weights)."""

    def __init__(self, model: Any):
        self._model, self.inputs, self.outputs, self.helpers = model, [], [], []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        if args:
            raise _Unexportable("the task calls the model with positional arguments")
        self.inputs = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
        return _Fields(self._model(**kwargs), self.outputs)

    def __getattr__(self, name: str) -> Any:
        if name == "generate" or not callable(getattr(self._model, name, None)):
            raise _Unexportable(f"the task calls model.{name} (not a single forward pass)")
        self.helpers.append(name)
        return getattr(self._model, name)


class _Fields:
    def __init__(self, output: Any, seen: list[str]):
        self._output, self._seen = output, seen

    def __getattr__(self, name: str) -> Any:
        if name not in self._seen:
            self._seen.append(name)
        return getattr(self._output, name)


def _graph_module(model: Any, inputs: list[str], outputs: list[str]) -> Any:
    """``model`` as a module from the input tensors (in order) to the output fields (a tuple)."""
    import torch

    class Graph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: Any) -> tuple:
            out = self.model(**dict(zip(inputs, tensors)))
            return tuple(getattr(out, name) for name in outputs)

    return Graph().eval()


def _batch(prepared: Any, size: int, offset: int = 0) -> dict[str, Any]:
    examples = prepared.data.eval if len(prepared.data.eval) >= size + offset else prepared.data.train
    if len(examples) < size + offset:
        raise ConfigError(f"export needs {size + offset} examples to trace and check the graph; the data has "
                          f"{len(examples)}")
    return prepared.data.collate([examples[i] for i in range(offset, offset + size)])


def _free_dims(tensors: list[Any]) -> list[dict[int, str]]:
    """The batch dimension of every input, and the length of sequence inputs (2-D: ids, masks, audio)."""
    return [{0: "batch", 1: "sequence"} if t.dim() == 2 else {0: "batch"} for t in tensors]


def _write_onnx(graph: Any, args: tuple, names: list[str], outputs: list[str], path: Path) -> None:
    import torch

    try:
        import onnxscript  # noqa: F401  (torch's dynamo exporter needs it)
    except ImportError:
        raise BackendError("export format=onnx needs onnx and onnxscript: pip install 'garden[onnx]'") from None
    free = _free_dims(list(args))
    dims = {name: torch.export.Dim.AUTO for d in free for name in d.values()}
    shapes = tuple({axis: dims[name] for axis, name in d.items()} for d in free)  # forward(*tensors): one tuple
    chatter = logging.getLogger("torch.onnx")  # e.g. "torchvision is not installed", once per operator
    level = chatter.level
    chatter.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            warnings.simplefilter("ignore")
            torch.onnx.export(graph, args, str(path), input_names=names, output_names=outputs, dynamic_shapes=(shapes,),
                              dynamo=True, external_data=False, verbose=False)
    finally:
        chatter.setLevel(level)


def _write_openvino(graph: Any, args: tuple, path: Path) -> None:
    try:
        import openvino as ov
    except ImportError:
        raise BackendError("export format=openvino needs OpenVINO: pip install 'garden[openvino]'") from None
    shapes = [ov.PartialShape([-1 if axis in d else size for axis, size in enumerate(t.shape)])
              for t, d in zip(args, _free_dims(list(args)))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = ov.convert_model(graph, example_input=args, input=shapes)
    ov.save_model(converted, str(path), compress_to_fp16=False)


def _runner(fmt: str, path: Path, threads: int):
    if fmt == "onnx":
        from garden.backends.onnxruntime import session

        return session(path, threads)
    from garden.backends.openvino import compiled

    return compiled(path, threads)


def export(cfg: Any, fmt: str, out: Path, *, say=print) -> Export:
    """Export the model ``cfg`` composes to ``out`` as ``fmt``, checked against torch (see the module doc)."""
    import torch

    from garden.runs.prepared import prepare

    if fmt not in FORMATS:
        raise ConfigError(f"format={fmt} is not one of {', '.join(FORMATS)}")
    start = time.perf_counter()
    prepared = prepare(cfg)
    for note in prepared.notes:
        say(f"note: {note}")
    model = prepared.family.build(prepared.spec).eval()
    task = prepared.task
    sample, check = _batch(prepared, 2), _batch(prepared, 3, offset=2)
    recorder = _Recorder(model)
    with torch.inference_mode():
        try:
            task.forward(recorder, sample)
        except _Unexportable as why:
            raise ConfigError(f"task {task.name} cannot be exported: {why}; export supports tasks that run the "
                              "model's forward pass once (classify, token-classify, qa, mlm, audio-classify, ...)") \
                from None
    names, outputs = recorder.inputs, recorder.outputs
    graph = _graph_module(model, names, outputs)
    args = tuple(sample[n] for n in names)
    folder = Path(out)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_folder(folder, ".export.")
    try:
        path = staging / GRAPH[fmt]
        say(f"exporting {prepared.entry.name} ({prepared.variant.name}, task {task.name}, weights "
            f"{prepared.weights_origin}) to {fmt}: inputs {', '.join(names)} -> outputs {', '.join(outputs)}")
        if fmt == "onnx":
            _write_onnx(graph, args, names, outputs, path)
        else:
            _write_openvino(graph, args, path)
        with torch.inference_mode():
            expected = graph(*(check[n] for n in names))
        got = _runner(fmt, path, torch.get_num_threads())([check[n].numpy() for n in names])
        abs_diff, rel_diff = 0.0, 0.0
        for e, g in zip(expected, got):
            g = torch.from_numpy(g)
            if g.shape != e.shape:
                raise BackendError(f"the {fmt} graph gives {outputs[0]} of shape {tuple(g.shape)} for a batch of 3, "
                                   f"torch {tuple(e.shape)}; the export is not kept")
            diff = (g.float() - e.float()).abs()
            abs_diff = max(abs_diff, float(diff.max()))
            rel_diff = max(rel_diff, float((diff / e.float().abs().clamp_min(ATOL)).max()))
            try:
                torch.testing.assert_close(g.float(), e.float(), rtol=RTOL, atol=ATOL)
            except AssertionError:
                raise BackendError(f"the {fmt} graph differs from torch by up to {abs_diff:.3g} (tolerance atol "
                                   f"{ATOL:g} + rtol {RTOL:g}); the export is not kept") from None
        say(f"checked against torch on 3 held-out examples: max abs difference {abs_diff:.3g}, max relative "
            f"{rel_diff:.3g} (tolerance: atol {ATOL:g} + rtol {RTOL:g} x |torch|): ok")
        if prepared.preprocessor is not None:
            prepared.preprocessor.save_pretrained(staging)
        if hasattr(model, "config"):
            model.config.save_pretrained(staging)
        manifest = {"format": fmt, "graph": GRAPH[fmt], "runs_on": f"backend={RUNS[fmt]}",
                    "model": prepared.entry.name, "variant": prepared.variant.name, "task": task.name,
                    "weights": prepared.weights_origin,
                    "labels": list(prepared.data.labels) if prepared.data.labels else None,
                    "inputs": names, "outputs": outputs, "helpers": recorder.helpers,
                    "params": sum(p.numel() for p in model.parameters()),
                    "check": {"examples": 3, "max_abs_diff": abs_diff, "max_rel_diff": rel_diff, "rtol": RTOL,
                              "atol": ATOL},
                    "garden": version("garden"), "torch": torch.__version__}
        write_atomic(staging / MANIFEST, json.dumps(manifest, indent=1) + "\n")
        for p in staging.rglob("*"):
            make_plain(p)
        if folder.exists():
            if not (folder / MANIFEST).exists():
                raise ConfigError(f"out={folder} exists and is not an earlier export; choose another folder")
            shutil.rmtree(folder)
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Export(folder, fmt, names, outputs, abs_diff, rel_diff, time.perf_counter() - start)
