"""Block costs measured on a real model: parameters, FLOPs per sample, activation bytes, time.

The planner is pure arithmetic over ``BlockCost``s; this module is where torch meets it. One
sample batch is carried through the blocks once, and each block is measured on the way:
FLOPs with ``torch.utils.flop_counter.FlopCounterMode`` (the matmuls and convolutions the block
really runs, so the count follows the configured input size), activations from the tensors it
hands to the next block, and (for ``ipu.cost=measured``) its wall time on this device.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from garden.errors import ConfigError
from garden.hookspecs import Block
from garden.partition.planner import BlockCost
from garden.partition.stages import block_parameters

COSTS = ("params", "flops", "measured")
#: bytes per parameter held during training: fp32 weight + gradient + two AdamW moments
TRAINING_BYTES_PER_PARAM = 16


@dataclass(frozen=True)
class BlockProfile:
    name: str
    kind: str
    params: int
    flops_per_sample: float
    activation_bytes_per_sample: float
    seconds_per_sample: float
    tied_to: str | None


def _unique_params(model: Any, block: Block, seen: set[int]) -> int:
    total = 0
    for param in block_parameters(model, block).values():
        if id(param) not in seen:
            seen.add(id(param))
            total += param.numel()
    return total


def profile_blocks(model: Any, blocks: Sequence[Block], inputs: tuple, *, timed: bool = False) -> list[BlockProfile]:
    """Carry ``inputs`` (one batch) through ``blocks`` and measure each block per sample."""
    import torch

    from garden.families.compat import flop_counter

    batch = next((t.shape[0] for t in inputs if hasattr(t, "shape") and t.dim() > 0), 1)
    seen: set[int] = set()
    profiles = []
    carry = tuple(inputs)
    model.eval()
    with torch.no_grad():
        for block in blocks:
            counter = flop_counter()
            with counter:
                out = block.run(model, *carry)
            seconds = 0.0
            if timed:
                block.run(model, *carry)  # warm-up
                start = time.perf_counter()
                block.run(model, *carry)
                seconds = (time.perf_counter() - start) / batch
            activation = sum(t.numel() * t.element_size() for t in out if hasattr(t, "numel"))
            profiles.append(BlockProfile(block.name, block.kind, _unique_params(model, block, seen),
                                         counter.get_total_flops() / batch, activation / batch, seconds,
                                         block.tied_to))
            carry = out
    return profiles


def parameter_profiles(model: Any, blocks: Sequence[Block]) -> list[BlockProfile]:
    """Profiles with parameter counts alone: no forward pass, so a meta-device model will do."""
    seen: set[int] = set()
    return [BlockProfile(b.name, b.kind, _unique_params(model, b, seen), 0.0, 0.0, 0.0, b.tied_to) for b in blocks]


def block_costs(profiles: Sequence[BlockProfile], cost: str, *, micro_batch: int = 1,
                micro_batches_in_flight: int = 1, training: bool = True) -> list[BlockCost]:
    """Turn profiles into what the planner weighs: ``cost`` is params, flops or measured."""
    if cost not in COSTS:
        raise ConfigError(f"ipu.cost={cost} is not one of: {', '.join(COSTS)}")
    per_param = TRAINING_BYTES_PER_PARAM if training else 4
    out = []
    for p in profiles:
        weight = {"params": float(p.params), "flops": p.flops_per_sample, "measured": p.seconds_per_sample}[cost]
        memory = p.params * per_param + p.activation_bytes_per_sample * micro_batch * micro_batches_in_flight
        out.append(BlockCost(p.name, p.kind, weight, p.params, memory, p.tied_to))
    return out


def parse_bytes(text: str | float | int | None) -> float | None:
    """``'900MB'`` -> 9e8 bytes; ``'2GiB'`` -> 2**31; plain numbers are bytes."""
    if text is None or text == "":
        return None
    if isinstance(text, (int, float)):
        return float(text)
    units = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "B": 1}
    s = str(text).strip().upper().replace(" ", "")
    for unit, size in units.items():
        if s.endswith(unit):
            try:
                return float(s[: -len(unit)]) * size
            except ValueError:
                break
    try:
        return float(s)
    except ValueError:
        raise ConfigError(f"ipu.memory_budget={text} is not a size; write e.g. 900MB or 2GiB") from None
