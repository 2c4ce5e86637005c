"""Pipeline-stage planning: which blocks go on which IPU, in Optimum Graphcore's terms.

A model arrives as an ordered list of :class:`BlockCost` (embeddings, repeated layers, heads)
and a ``layers_per_ipu`` list, one entry per pipeline stage, counting layers only; ``-1`` asks
the planner to choose. The other blocks are placed the way Optimum Graphcore places them:

* blocks before the first layer (the embeddings) go on stage 0;
* blocks after the last layer (the head) go on the last stage;
* blocks between two layers (a decoder's embeddings, an encoder's final layer norm) travel
  with the layer before them, so they never split a stage boundary on their own;
* a block with ``tied_to`` goes wherever the block it shares weights with goes, which puts a
  tied LM head on stage 0 beside the embeddings (BERT pre-training, GPT-2).

Automatic entries are filled to minimise the bottleneck (the costliest stage) exactly, by
dynamic programming over contiguous splits; among plans with the same bottleneck the planner
takes the most balanced one (the sorted stage costs, largest first, are lexicographically
least), and fixed entries and the per-stage memory budget are honoured throughout.

This module is pure Python so that planning never needs torch::

    >>> blocks = [BlockCost("emb", "embedding", 2.0), *(BlockCost(f"layer.{i}", "layer", 1.0)
    ...           for i in range(12)), BlockCost("lm_head", "head", 2.0, tied_to="emb")]
    >>> plan_stages(blocks, [-1, -1, -1, -1], model="bert").layers_per_ipu
    (0, 4, 4, 4)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import accumulate
from typing import Sequence

from garden.errors import ConfigError

KINDS = ("embedding", "layer", "head")


@dataclass(frozen=True)
class BlockCost:
    """One block as the planner sees it: ``BlockCost("layer.3", "layer", cost=2.1e9)``.

    ``cost`` is in any unit shared by all blocks (FLOPs, measured milliseconds). ``params``
    and ``memory_bytes`` (weights, optimiser state and activations held on the IPU) are
    whatever the caller counts; shared weights should be counted once. ``tied_to`` names the
    block whose weights this one shares.
    """

    name: str
    kind: str
    cost: float
    params: int = 0
    memory_bytes: float = 0.0
    tied_to: str | None = None


@dataclass(frozen=True)
class Stage:
    """What one IPU holds: ``Stage(0, ("emb", "lm_head"), layers=0, cost=4.0, ...)``."""

    index: int
    blocks: tuple[str, ...]
    layers: int
    cost: float
    params: int
    memory_bytes: float


@dataclass(frozen=True)
class Plan:
    """A complete placement; ``layers_per_ipu`` is what ``ipu_config.json`` would say."""

    layers_per_ipu: tuple[int, ...]
    stages: tuple[Stage, ...]

    @property
    def bottleneck(self) -> float:
        """The costliest stage, which sets the pipeline's pace."""
        return max(stage.cost for stage in self.stages)

    @property
    def ideal(self) -> float:
        """The stage cost of a perfect split: total cost / number of stages."""
        return sum(stage.cost for stage in self.stages) / len(self.stages)

    @property
    def bottleneck_ratio(self) -> float:
        """How far the bottleneck is from ideal: 1.0 is perfect, 1.5 wastes a third."""
        return self.bottleneck / self.ideal if self.ideal else 1.0

    def bubble(self, micro_batches: int) -> float:
        """The idle fraction of a pipelined step, (p - 1) / (m + p - 1): 4 stages, 16 -> 0.158."""
        if micro_batches < 1:
            raise ConfigError(f"a pipelined step needs at least 1 micro-batch, got {micro_batches}")
        p = len(self.stages)
        return (p - 1) / (micro_batches + p - 1)

    def to_dict(self) -> dict:
        """JSON-ready summary for run reports and benchmarks."""
        return {
            "layers_per_ipu": list(self.layers_per_ipu),
            "stages": [asdict(stage) | {"blocks": list(stage.blocks)} for stage in self.stages],
            "bottleneck": self.bottleneck,
            "ideal": self.ideal,
            "bottleneck_ratio": self.bottleneck_ratio,
        }


def uniform_layers(n_layers: int, n_stages: int) -> list[int]:
    """Optimum Graphcore's split for an all ``-1`` list: equal counts, the remainder on the last.

    The baseline the planner is measured against: ``uniform_layers(14, 4) == [3, 3, 3, 5]``.
    """
    quotient, remainder = divmod(n_layers, n_stages)
    return [quotient] * (n_stages - 1) + [quotient + remainder]


def check_layers_per_ipu(
    layers: Sequence[int], n_ipus: int, n_layers: int, model: str, *, setting: str = "ipu.layers_per_ipu"
) -> list[int]:
    """Validate a ``layers_per_ipu`` list and return it with one entry per IPU.

    A lone ``[-1]`` means all automatic, as in optimum: ``check_layers_per_ipu([-1], 3, 12,
    "vit") == [-1, -1, -1]``. Every problem is a one-line :class:`ConfigError` that names the
    setting, the model and its layer count.
    """
    given = list(layers)
    total = f"the model has {n_layers} layers"
    ipus_setting = setting.replace("layers_per_ipu", "ipus_per_replica")
    if not given:
        raise ConfigError(
            f"{setting}=[] for model '{model}' is empty ({total}); give one entry per IPU, -1 for automatic"
        )
    if n_ipus < 1:
        raise ConfigError(f"{ipus_setting}={n_ipus} for model '{model}' must be at least 1")
    if any(isinstance(n, bool) or not isinstance(n, int) or n < -1 for n in given):
        raise ConfigError(
            f"{setting}={given} for model '{model}' has entries that are neither a layer count nor -1 ({total})"
        )
    if given == [-1]:
        given = [-1] * n_ipus
    if len(given) != n_ipus:
        raise ConfigError(
            f"{setting}={given} for model '{model}' has {len(given)} entries but {ipus_setting}={n_ipus} ({total}); "
            "give one entry per IPU"
        )
    fixed = sum(n for n in given if n != -1)
    if -1 not in given and fixed != n_layers:
        raise ConfigError(
            f"{setting}={given} for model '{model}' sums to {fixed} but {total}; "
            f"make the entries sum to {n_layers} or use -1 for automatic entries"
        )
    if fixed > n_layers:
        raise ConfigError(
            f"{setting}={given} for model '{model}' fixes {fixed} layers but {total}; lower the fixed entries"
        )
    return given


def plan_stages(
    blocks: Sequence[BlockCost],
    layers_per_ipu: Sequence[int],
    *,
    model: str,
    n_stages: int | None = None,
    memory_budget: float | None = None,
    setting: str = "ipu.layers_per_ipu",
) -> Plan:
    """Place ``blocks`` on pipeline stages, filling ``-1`` entries to minimise the bottleneck.

    ``n_stages`` defaults to ``len(layers_per_ipu)``; give it with ``[-1]`` for an all
    automatic plan. ``memory_budget`` (bytes per stage) rules out plans with any stage above
    it; when none fits, the error says how far over the most memory-balanced plan is.
    ``setting`` names the list in error messages (``"ipu.inference_layers_per_ipu"``).
    """
    n_stages = len(layers_per_ipu) if n_stages is None else n_stages
    n_layers = sum(block.kind == "layer" for block in blocks)
    wanted = check_layers_per_ipu(layers_per_ipu, n_stages, n_layers, model, setting=setting)
    anchors = _anchors(blocks, n_stages, model)
    if memory_budget is not None and memory_budget <= 0:
        raise ConfigError(f"ipu.memory_budget for model '{model}' must be positive, got {memory_budget}")

    def totals(attribute: str) -> tuple[list[float], list[float]]:
        per_layer, per_stage = [0.0] * n_layers, [0.0] * n_stages
        for block, (where, index) in zip(blocks, anchors):
            (per_layer if where == "layer" else per_stage)[index] += getattr(block, attribute)
        return per_layer, per_stage

    cost, memory = totals("cost"), totals("memory_bytes")
    counts = _balanced_counts(*cost, wanted, memory if memory_budget is not None else None, memory_budget)
    if counts is None:
        tightest = _stages(blocks, anchors, _balanced_counts(*memory, wanted))
        worst = max(tightest, key=lambda stage: stage.memory_bytes)
        raise ConfigError(
            f"model '{model}' does not fit with {setting}={list(layers_per_ipu)}: even the most memory-balanced plan "
            f"has stage {worst.index} needing {_bytes(worst.memory_bytes)}, "
            f"{_bytes(worst.memory_bytes - memory_budget)} over the {_bytes(memory_budget)} budget; "
            "raise ipu.memory_budget or use more IPUs"
        )
    return Plan(layers_per_ipu=tuple(counts), stages=tuple(_stages(blocks, anchors, counts)))


def _anchors(blocks: Sequence[BlockCost], n_stages: int, model: str) -> list[tuple[str, int]]:
    """Where each block goes: ``("layer", i)`` travels with layer i, ``("stage", s)`` is fixed."""
    index_of: dict[str, int] = {}
    for i, block in enumerate(blocks):
        if block.kind not in KINDS:
            raise ConfigError(f"block '{block.name}' of model '{model}' has kind '{block.kind}', not one of {KINDS}")
        if block.name in index_of:
            raise ConfigError(f"model '{model}' has two blocks named '{block.name}'")
        index_of[block.name] = i
    layer_positions = [i for i, block in enumerate(blocks) if block.kind == "layer"]
    if layer_positions:
        first, last = layer_positions[0], layer_positions[-1]
    else:  # no layers: embeddings on the first stage, heads on the last
        first = next((i for i, block in enumerate(blocks) if block.kind == "head"), len(blocks))
        last = first - 1

    own: list[tuple[str, int]] = []
    layers_seen = 0
    for i, block in enumerate(blocks):
        layers_seen += block.kind == "layer"
        if i < first:
            own.append(("stage", 0))
        elif i > last:
            own.append(("stage", n_stages - 1))
        else:  # a layer, or a block between layers that travels with the layer before it
            own.append(("layer", layers_seen - 1))

    def follow_ties(i: int) -> tuple[str, int]:
        seen = {i}
        while (target := blocks[i].tied_to) is not None:
            if target not in index_of:
                raise ConfigError(f"block '{blocks[i].name}' of model '{model}' is tied to unknown block '{target}'")
            i = index_of[target]
            if i in seen:
                raise ConfigError(f"block '{blocks[i].name}' of model '{model}' is tied to itself through a cycle")
            seen.add(i)
        return own[i]

    return [follow_ties(i) for i in range(len(blocks))]


def _balanced_counts(
    layer_weight: Sequence[float],
    stage_weight: Sequence[float],
    wanted: Sequence[int],
    memory: tuple[Sequence[float], Sequence[float]] | None = None,
    budget: float | None = None,
) -> list[int] | None:
    """Layer counts per stage whose stage weights, sorted largest first, are lexicographically least.

    Minimising that sorted vector minimises the maximum first and then balances the rest; the
    order is preserved under adding the same stage to two partial plans, so the dynamic
    programme over (stages placed, layers used) is exact. ``None`` when no plan keeps every
    stage's memory within ``budget``.
    """
    weight_before = list(accumulate(layer_weight, initial=0.0))
    memory_before = list(accumulate(memory[0], initial=0.0)) if memory else []
    n_layers = len(layer_weight)
    frontier: dict[int, tuple[tuple[float, ...], tuple[int, ...]]] = {0: ((), ())}
    for stage, count in enumerate(wanted):
        reached: dict[int, tuple[tuple[float, ...], tuple[int, ...]]] = {}
        for used, (weights, counts) in sorted(frontier.items()):
            for take in range(n_layers - used + 1) if count == -1 else (count,):
                end = used + take
                if end > n_layers:
                    continue
                if memory and memory[1][stage] + memory_before[end] - memory_before[used] > budget:
                    continue
                weight = stage_weight[stage] + weight_before[end] - weight_before[used]
                sorted_weights = tuple(sorted((*weights, weight), reverse=True))
                if end not in reached or sorted_weights < reached[end][0]:
                    reached[end] = (sorted_weights, (*counts, take))
        frontier = reached
    return list(frontier[n_layers][1]) if n_layers in frontier else None


def _stages(blocks: Sequence[BlockCost], anchors: Sequence[tuple[str, int]], counts: Sequence[int]) -> list[Stage]:
    """Build the stages that ``counts`` layers per stage give."""
    stage_of_layer = [stage for stage, count in enumerate(counts) for _ in range(count)]
    members: list[list[BlockCost]] = [[] for _ in counts]
    for block, (where, index) in zip(blocks, anchors):
        members[stage_of_layer[index] if where == "layer" else index].append(block)
    return [
        Stage(
            index=stage,
            blocks=tuple(block.name for block in held),
            layers=counts[stage],
            cost=sum(block.cost for block in held),
            params=sum(block.params for block in held),
            memory_bytes=sum(block.memory_bytes for block in held),
        )
        for stage, held in enumerate(members)
    ]


def _bytes(n: float) -> str:
    """``3.3e9 -> '3.1 GiB'``: the largest binary unit that keeps the number at least 1."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"
