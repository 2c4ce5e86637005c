"""``backend=openvino``: a task's inference on a model exported with ``format=openvino``, in
OpenVINO (the ``garden[openvino]`` extra) on the CPU, at fp32 (``INFERENCE_PRECISION_HINT=f32``:
OpenVINO would otherwise run bf16 on CPUs that have it), on as many threads as torch uses.

    python -m garden export model=vit format=openvino weights=outputs/DATE/TIME/model out=exports/vit-ov
    python -m garden model=vit task=classify mode=infer backend=openvino weights=exports/vit-ov
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from garden.backends.exported import ExportedBackend
from garden.errors import BackendError


class OpenVINOBackend(ExportedBackend):
    name = "openvino"
    format = "openvino"

    def load(self, graph: Path, cfg: Any) -> Callable[[list[Any]], list[Any]]:
        import torch

        return compiled(graph, int(cfg.trainer.threads or torch.get_num_threads()))


def compiled(graph: Path, threads: int) -> Callable[[list[Any]], list[Any]]:
    """A function running ``graph`` (OpenVINO IR) on the CPU at fp32 with ``threads`` threads."""
    try:
        import openvino as ov
    except ImportError:
        raise BackendError("backend=openvino needs OpenVINO: pip install 'garden[openvino]'") from None
    model = ov.Core().compile_model(str(graph), "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                         "INFERENCE_PRECISION_HINT": "f32"})
    outputs = list(model.outputs)

    def run(arrays: list[Any]) -> list[Any]:
        result = model(arrays)
        return [result[o] for o in outputs]

    return run
