"""Loading a checkpoint into a family's model, and saying exactly what happened.

``from_pretrained`` does the loading (sharded safetensors, renamed modules across transformers
releases, tied weights); this module adds what a user of timm or the Hub expects around it:

- plugins may map checkpoint keys they know (older or converted checkpoints) onto the model
  (the ``garden_checkpoint_keys`` hook);
- a shape mismatch outside the task head is an error naming the parameter and both shapes;
- one summary line: tensors loaded, head parameters newly initialised, missing and unexpected keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from garden.errors import WeightsError
from garden.plugins import discover


def checkpoint_files(folder: Path) -> list[Path]:
    """The safetensors files of a checkpoint folder, shards included."""
    folder = Path(folder)
    index = folder / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [folder / s for s in shards]
    return sorted(folder.glob("*.safetensors"))


def checkpoint_keys(folder: Path) -> list[str]:
    """Tensor names in a checkpoint, read from the safetensors headers (no tensor is loaded)."""
    from safetensors import safe_open

    keys: list[str] = []
    for file in checkpoint_files(folder):
        with safe_open(str(file), framework="pt") as f:
            keys.extend(f.keys())
    return keys


def renamed_state_dict(folder: Path, renames: dict[str, str]) -> dict[str, Any]:
    """The checkpoint's tensors with ``renames`` (old name -> new name) applied."""
    from safetensors.torch import load_file

    state: dict[str, Any] = {}
    for file in checkpoint_files(folder):
        for key, tensor in load_file(str(file)).items():
            state[renames.get(key, key)] = tensor
    return state


def key_renames(model_name: str, keys: list[str]) -> dict[str, str]:
    """What the plugins' ``garden_checkpoint_keys`` hooks rename for ``model_name``'s checkpoint."""
    renames: dict[str, str] = {}
    for mapping in discover().hook.garden_checkpoint_keys(model=model_name, keys=keys):
        renames.update(mapping or {})
    return {old: new for old, new in renames.items() if old != new}


def _under(key: str, prefixes: Iterable[str]) -> bool:
    return any(key == p or key.startswith(p + ".") for p in prefixes)


def load_summary(info: dict[str, Any], model: Any, head_modules: Iterable[str], origin: str) -> str:
    """One line about a load; raises on a shape mismatch outside the head.

    ``info`` is ``from_pretrained(..., output_loading_info=True)``'s report.
    """
    head = tuple(head_modules)
    mismatched = sorted(info.get("mismatched_keys") or [], key=lambda m: m[0])
    body = [m for m in mismatched if not _under(m[0], head)]
    if body:
        name, ckpt, ours = body[0]
        more = f" (and {len(body) - 1} more)" if len(body) > 1 else ""
        raise WeightsError(
            f"{origin}: parameter {name} has shape {tuple(ckpt)} in the checkpoint but {tuple(ours)} in the model"
            f"{more}; the checkpoint is for a different architecture or size: pick the matching model.variant"
        )
    missing = sorted(info.get("missing_keys") or [])
    unexpected = sorted(info.get("unexpected_keys") or [])
    new_head = [k for k in missing if _under(k, head)] + [m[0] for m in mismatched]
    missing_body = [k for k in missing if not _under(k, head)]
    total = len(model.state_dict())
    loaded = total - len(missing) - len(mismatched)
    parts = [f"loaded {loaded}/{total} tensors from {origin}"]
    if new_head:
        parts.append(f"newly initialised head: {_names(new_head)}")
    if missing_body:
        parts.append(f"missing (random init): {_names(missing_body)}")
    if unexpected:
        parts.append(f"unused from checkpoint: {_names(unexpected)}")
    return "; ".join(parts)


def _names(keys: list[str], limit: int = 4) -> str:
    shown = ", ".join(keys[:limit])
    return f"{shown} (+{len(keys) - limit} more)" if len(keys) > limit else shown
