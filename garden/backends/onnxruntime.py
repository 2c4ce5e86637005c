"""``backend=onnxruntime``: a task's inference on a model exported with ``format=onnx``, in ONNX
Runtime (the ``garden[onnx]`` extra), fp32, on as many threads as torch uses.

    python -m garden export model=vit format=onnx weights=outputs/DATE/TIME/model out=exports/vit
    python -m garden model=vit task=classify mode=infer backend=onnxruntime weights=exports/vit
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from garden.backends.exported import ExportedBackend
from garden.errors import BackendError


class OnnxRuntimeBackend(ExportedBackend):
    name = "onnxruntime"
    format = "onnx"

    def load(self, graph: Path, cfg: Any) -> Callable[[list[Any]], list[Any]]:
        return session(graph, threads(cfg))


def threads(cfg: Any) -> int:
    import torch

    return int(cfg.trainer.threads or torch.get_num_threads())


def session(graph: Path, threads: int) -> Callable[[list[Any]], list[Any]]:
    """A function running ``graph`` in ONNX Runtime on the CPU with ``threads`` threads."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise BackendError("backend=onnxruntime needs ONNX Runtime: pip install 'garden[onnx]'") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    sess = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]

    def run(arrays: list[Any]) -> list[Any]:
        return sess.run(None, dict(zip(names, arrays)))

    return run
