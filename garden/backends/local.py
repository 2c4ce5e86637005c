"""One process, one device: the model runs whole (the reference the other backends must match)."""

from __future__ import annotations

import contextlib
from typing import Any


def autocast(precision: str, device_type: str):
    """An autocast context for ``bf16``/``fp16``; a no-op for ``fp32``."""
    import torch

    if precision in ("bf16", "fp16"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        return torch.autocast(device_type=device_type, dtype=dtype)
    return contextlib.nullcontext()


def to_device(batch: dict[str, Any], device: Any) -> dict[str, Any]:
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}


class LocalBackend:
    name = "local"
    is_writer = True

    def __init__(self, prepared: Any):
        import torch

        self.task = prepared.task
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = prepared.family.build(prepared.spec).to(self.device)
        self.precision = "fp32"

    def parameters(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def train_step(self, batch: dict[str, Any]):
        self.model.train()
        batch = to_device(batch, self.device)
        with autocast(self.precision, self.device.type):
            output = self.task.forward(self.model, batch)
        loss = self.task.loss(output, self.task.target(batch))
        loss.backward()
        return loss.detach()

    def forward(self, batch: dict[str, Any]):
        import torch

        self.model.eval()
        batch = to_device(batch, self.device)
        with torch.inference_mode(), autocast(self.precision, self.device.type):
            return self.task.forward(self.model, batch)

    def clip_grad_norm(self, max_norm: float) -> None:
        import torch

        torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm)

    def share(self, obj: Any) -> Any:
        return obj

    def close(self) -> None:
        pass

    def model_for_saving(self):
        return self.model
