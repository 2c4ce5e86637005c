"""Backends run a prepared model: ``local`` (one process), ``pipeline`` (torchrun, one stage per
rank), ``ipu`` (poptorch), and, for inference on a model written by ``python -m garden export``,
``onnxruntime`` and ``openvino``. A backend knows nothing of the model it runs beyond the task's
``inputs``/``forward``/``loss`` and, when it partitions, the family's stage blocks; the surface
the loops drive is :class:`garden.backends.base.Backend`, the same for all three.

    >>> backend = select_backend(cfg, prepared)      # doctest: +SKIP
    >>> backend.name, backend.replicas, backend.stages  # doctest: +SKIP
    ('local', 1, 1)
"""

from __future__ import annotations

import os
from typing import Any

from garden.backends.base import Backend
from garden.backends.ipu import IPUBackend, ipus_available
from garden.backends.local import LocalBackend
from garden.backends.onnxruntime import OnnxRuntimeBackend
from garden.backends.openvino import OpenVINOBackend
from garden.backends.pipeline import PipelineBackend
from garden.errors import BackendError

__all__ = ["Backend", "select_backend"]


def select_backend(cfg: Any, prepared: Any) -> Backend:
    name = cfg.backend
    if name == "auto":
        name = "ipu" if ipus_available() else "local"
    if name == "local":
        return LocalBackend(prepared)
    if name == "pipeline":
        if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
            raise BackendError(
                "backend=pipeline runs one stage per process and needs torchrun; start it as "
                "torchrun --nproc-per-node N -m garden ... backend=pipeline (N = ipu.ipus_per_replica)"
            )
        return PipelineBackend(prepared)
    if name == "ipu":
        return IPUBackend(prepared)
    if name == "onnxruntime":
        return OnnxRuntimeBackend(prepared)
    if name == "openvino":
        return OpenVINOBackend(prepared)
    raise BackendError(f"unknown backend '{name}'; use one of auto, local, pipeline, ipu, onnxruntime, openvino")
