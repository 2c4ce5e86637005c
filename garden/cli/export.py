"""``python -m garden export model=M format=onnx|openvino [task=T] [weights=...] [out=DIR]``.

    python -m garden export model=vit format=onnx weights=outputs/DATE/TIME/model
    python -m garden model=vit task=classify mode=infer backend=onnxruntime weights=exports/vit-tiny-classify-onnx

``format`` and ``out`` are the command's own; every other argument is a run's Hydra override
(the task defaults to the model's first). See :mod:`garden.export`.
"""

from __future__ import annotations

from pathlib import Path

from garden import registry
from garden.config import choices, compose
from garden.console import console
from garden.errors import ConfigError
from garden.export import FORMATS, export


def cmd_export(argv: list[str]) -> int:
    own = {k: v for k, v in (a.split("=", 1) for a in argv if a.split("=", 1)[0] in ("format", "out"))}
    overrides = [a for a in argv if a.split("=", 1)[0] not in ("format", "out")]
    fmt = own.get("format")
    if fmt not in FORMATS:
        raise ConfigError(f"export needs format={'|'.join(FORMATS)}"
                          + (f" (format={fmt} is not one of them)" if fmt else "")
                          + ", e.g. python -m garden export model=NAME format=onnx weights=DIR")
    picked = choices(overrides)
    if "model" not in picked:
        raise ConfigError("export needs model=NAME (python -m garden list shows them), e.g. "
                          "python -m garden export model=NAME format=onnx weights=DIR")
    extra = [] if "task" in picked else [f"task={registry.get(picked['model']).tasks[0]}"]
    cfg = compose([*overrides, *extra, "mode=infer"])
    variant = registry.get(cfg.model.name).variant(cfg.model.variant).name
    out = Path(own.get("out") or f"exports/{cfg.model.name}-{variant}-{cfg.task.name}-{fmt}")
    done = export(cfg, fmt, out, say=lambda text: console.print(text, highlight=False))
    console.print(f"wrote {done.folder} in {done.seconds:.0f} s; run it with: python -m garden model={cfg.model.name} "
                  f"task={cfg.task.name} mode=infer backend={'onnxruntime' if fmt == 'onnx' else 'openvino'} "
                  f"weights={done.folder}", highlight=False)
    return 0
