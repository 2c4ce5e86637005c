"""SchNet (Schütt et al., 2017) from PyG, with its interaction graph computed in plain torch.

PyG's ``SchNet`` finds neighbours with ``radius_graph``, which needs torch-cluster; here
:class:`RadiusGraph` gives it the same ``(edge_index, edge_weight)`` from pairwise distances
inside each molecule. Everything else is PyG's: the atom embedding, the Gaussian distance
expansion, the interaction blocks (continuous-filter convolutions), ``lin1``/``act``/``lin2``
and the sum readout, with the target's per-atom mean and spread (from the training split) put
back on each atom as SchNet's ``mean``/``std`` do, so an extensive property starts near scale.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch_geometric.nn.models import SchNet as PyGSchNet

from garden.hookspecs import Block
from garden_graph.family import GraphFamily


class RadiusGraph(nn.Module):
    """Every ordered pair of distinct atoms of one molecule closer than ``cutoff`` (in Å)."""

    def __init__(self, cutoff: float):
        super().__init__()
        self.cutoff = cutoff

    def forward(self, pos: torch.Tensor, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        same = batch.view(-1, 1) == batch.view(1, -1)
        close = torch.cdist(pos, pos) < self.cutoff
        row, col = (same & close & ~torch.eye(len(pos), dtype=torch.bool, device=pos.device)).nonzero().T
        return torch.stack([row, col]), (pos[row] - pos[col]).norm(dim=-1)


class SchNetNet(PyGSchNet):
    """PyG's SchNet as three steps the stage blocks share: embed, interact, read out."""

    def __init__(self, hidden: int, filters: int, interactions: int, gaussians: int, cutoff: float,
                 mean: float, std: float):
        super().__init__(hidden_channels=hidden, num_filters=filters, num_interactions=interactions,
                         num_gaussians=gaussians, cutoff=cutoff, interaction_graph=RadiusGraph(cutoff),
                         mean=mean, std=std)

    def embed(self, z, pos, batch) -> tuple[torch.Tensor, ...]:
        edge_index, edge_weight = self.interaction_graph(pos, batch)
        return self.embedding(z), edge_index, edge_weight, self.distance_expansion(edge_weight), batch

    def interact(self, i: int, h, edge_index, edge_weight, edge_attr, batch) -> tuple[torch.Tensor, ...]:
        return h + self.interactions[i](h, edge_index, edge_weight, edge_attr), edge_index, edge_weight, edge_attr, batch

    def read_out(self, h, edge_index, edge_weight, edge_attr, batch) -> torch.Tensor:
        """One value per molecule: the sum over its atoms of the rescaled atom-wise outputs."""
        h = self.lin2(self.act(self.lin1(h))) * self.std + self.mean
        return self.readout(h, batch, dim=0).squeeze(-1)

    def forward(self, z, pos, batch) -> torch.Tensor:
        carry = self.embed(z, pos, batch)
        for i in range(len(self.interactions)):
            carry = self.interact(i, *carry)
        return self.read_out(*carry)


class SchNet(GraphFamily):
    defaults = {"hidden": 128, "filters": 128, "interactions": 6, "gaussians": 50, "cutoff": 5.0,
                "mean": 0.0, "std": 1.0}

    def network(self, config: dict[str, Any]) -> nn.Module:
        return SchNetNet(**config)

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Atom embedding with the distance expansion, one block per interaction, then the readout MLP."""

        def layer(i: int) -> Block:
            return Block(f"interaction.{i}", "layer", (f"interactions.{i}",), lambda m, *c: m.interact(i, *c))

        return [
            Block("embedding", "embedding", ("embedding", "distance_expansion"), lambda m, *c: m.embed(*c)),
            *[layer(i) for i in range(len(model.interactions))],
            Block("readout", "head", ("lin1", "lin2"), lambda m, *c: (m.read_out(*c),)),
        ]
