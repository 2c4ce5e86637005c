"""Cluster-GCN (Chiang et al., 2019): GCN or GraphSAGE layers trained on METIS clusters.

The clustering lives in the task (:mod:`garden_graph.nodes`): a batch is the subgraph a few
clusters induce, so the network itself is a plain stack: a linear input encoder, ``layers``
message-passing layers (``GCNConv`` or ``SAGEConv``, both run without torch-sparse) and a
linear classifier. Each piece is a method the stage blocks call, so blocks and ``forward`` share
one code path.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from garden.errors import ConfigError
from garden.hookspecs import Block
from garden_graph.family import GraphFamily


class ClusterGCNNet(nn.Module):
    def __init__(self, in_channels: int, num_classes: int, hidden: int, layers: int, conv: str, dropout: float):
        from torch_geometric.nn import GCNConv, SAGEConv

        super().__init__()
        if conv not in ("gcn", "sage"):
            raise ConfigError(f"model.options.conv={conv} is not one of: gcn, sage")
        self.dropout = dropout
        self.encoder = nn.Linear(in_channels, hidden)
        make = (lambda: GCNConv(hidden, hidden)) if conv == "gcn" else (lambda: SAGEConv(hidden, hidden))
        self.convs = nn.ModuleList(make() for _ in range(layers))
        self.classifier = nn.Linear(hidden, num_classes)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.dropout(self.encoder(x).relu(), self.dropout, self.training)

    def propagate(self, i: int, h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Layer ``i`` with a residual connection, which keeps deeper stacks from over-smoothing."""
        out = self.convs[i](h, edge_index).relu() + h
        return nn.functional.dropout(out, self.dropout, self.training)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        h = self.encode(x)
        for i in range(len(self.convs)):
            h = self.propagate(i, h, edge_index)
        return self.classifier(h)


class ClusterGCN(GraphFamily):
    defaults = {"in_channels": 0, "num_classes": 0, "hidden": 128, "layers": 3, "conv": "gcn", "dropout": 0.2}

    def network(self, config: dict[str, Any]) -> nn.Module:
        return ClusterGCNNet(**config)

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Input encoder, one block per message-passing layer, then the classifier."""

        def layer(i: int) -> Block:
            return Block(f"conv.{i}", "layer", (f"convs.{i}",), lambda m, h, ei: (m.propagate(i, h, ei), ei))

        return [
            Block("encoder", "embedding", ("encoder",), lambda m, x, ei: (m.encode(x), ei)),
            *[layer(i) for i in range(len(model.convs))],
            Block("classifier", "head", ("classifier",), lambda m, h, ei: (m.classifier(h),)),
        ]
