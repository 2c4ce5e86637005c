"""A model as stages: running its blocks in order, and checking they cover it exactly.

The family's ``stage_blocks`` describe the model as an ordered list of ``Block``s; running
them in sequence must give what the model's own forward gives, and every parameter must belong
to a block, or no stage would train it. Both are checked here, and the pipeline backends build
each stage from a slice of the same list. A parameter several blocks hold is shared (a tied
head, a layer run twice): the pipeline sums its gradients over the stages that hold it.
"""

from __future__ import annotations

from typing import Any, Sequence

from garden.errors import ConfigError
from garden.hookspecs import Block


def run_blocks(model: Any, blocks: Sequence[Block], *inputs: Any) -> Any:
    """Carry ``inputs`` through ``blocks``; a one-tensor result is returned bare, like a forward."""
    carry = tuple(inputs)
    for block in blocks:
        carry = block.run(model, *carry)
        if not isinstance(carry, tuple):
            raise ConfigError(f"stage block '{block.name}' returned {type(carry).__name__}; blocks return tuples")
    return carry[0] if len(carry) == 1 else carry


def block_parameters(model: Any, block: Block) -> dict[str, Any]:
    """The named parameters a block owns (by module path)."""
    owned = {}
    for path in block.modules:
        try:
            module = model.get_submodule(path)
        except AttributeError:
            try:  # a bare parameter, such as wav2vec2's masked_spec_embed
                owned[path] = model.get_parameter(path)
                continue
            except AttributeError:
                raise ConfigError(f"stage block '{block.name}' names module '{path}', which the model lacks") from None
        for name, param in module.named_parameters(prefix=path):
            owned[name] = param
    return owned


def check_coverage(model: Any, blocks: Sequence[Block]) -> None:
    """Raise unless every parameter of ``model`` belongs to a block (by identity: a tied head
    naming the embeddings' weight under its own name holds the same parameter)."""
    owner: dict[int, str] = {}
    for block in blocks:
        for param in block_parameters(model, block).values():
            owner.setdefault(id(param), block.name)
    missing = [n for n, p in model.named_parameters() if id(p) not in owner]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise ConfigError(f"stage blocks leave parameters without a stage: {', '.join(missing[:3])}{more}")
