"""Temporal Graph Network (Rossi et al., 2020), after PyG's examples/tgn.py.

A batch is a set of timestamped events ``(src, dst, t, msg)`` with one sampled negative
destination each. The model scores each event's true and negative link from node embeddings:
each node's memory (``TGNMemory``: a GRU state per node, fed by identity messages and the last
message per node) refined by graph attention (``TransformerConv``) over its most recent
neighbours, whose edges carry the message and the encoded age of the event.

State: the memory and the recent-neighbour table are buffers (saved with the weights). A
*training* step reads them for its nodes, then writes its own events into both (without
gradient, as the example's ``memory.detach()`` does), so the next step sees them. Eval, infer
and any pass that records no gradient (the pipeline backend's shape probe) only read:
evaluating twice gives the same numbers, and held-out events never leak into the state the
model trains on. Leaving training flushes the pending messages into the memory.

Shapes: a batch's neighbourhood (nodes, edges) varies with the events, but what one stage
sends the next must have a size fixed by the batch size alone. So the neighbourhood is padded
to its largest possible size for ``B`` events (``3B(1 + neighbours) + 1`` nodes,
``3B * neighbours`` edges): padding nodes sort last and the padding edges join only the last
padding node to itself, so no real node's embedding sees them.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch_geometric.nn import TransformerConv
from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator, TGNMemory, TimeEncoder

from garden.hookspecs import Block
from garden_graph.family import GraphFamily


class Memory(TGNMemory):
    """TGNMemory whose flush on leaving training moves only the nodes with pending messages, and
    records no gradient. PyG's steps every node's GRU, so each switch to eval moved memories that
    had received nothing (and a reloaded model differed from the one saved). Its scratch index
    ``_assoc`` (uninitialised memory) is not saved with the weights."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        scratch = self._assoc
        del self._assoc
        self.register_buffer("_assoc", scratch, persistent=False)

    def flush(self) -> None:
        """Move the memory of the nodes with pending messages, and empty the message store."""
        pending = sorted({node for store in (self.msg_s_store, self.msg_d_store)
                          for node, (src, *_) in store.items() if src.numel()})
        with torch.no_grad():
            if pending:
                self._update_memory(torch.tensor(pending, device=self.memory.device))
            self._reset_message_store()

    def train(self, mode: bool = True):
        if self.training and not mode:
            self.flush()
        return nn.Module.train(self, mode)


class RecentNeighbours(nn.Module):
    """The ``size`` most recent events of every node: who, when, and the event's message."""

    def __init__(self, num_nodes: int, size: int, msg_dim: int):
        super().__init__()
        self.register_buffer("neighbours", torch.full((num_nodes, size), -1, dtype=torch.long))
        self.register_buffer("times", torch.full((num_nodes, size), float("-inf")))
        self.register_buffer("messages", torch.zeros(num_nodes, size, msg_dim))

    def gather(self, nodes: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The subgraph of ``nodes`` and their neighbours: sorted node ids, local edges, edge times, messages."""
        neighbours, valid = self.neighbours[nodes], self.neighbours[nodes] >= 0
        centre = nodes.view(-1, 1).expand_as(neighbours)[valid]
        n_id = torch.cat([nodes, neighbours[valid]]).unique()
        edge_index = torch.stack([torch.searchsorted(n_id, neighbours[valid]), torch.searchsorted(n_id, centre)])
        return n_id, edge_index, self.times[nodes][valid], self.messages[nodes][valid]

    def insert(self, src: torch.Tensor, dst: torch.Tensor, t: torch.Tensor, msg: torch.Tensor) -> None:
        """Add each event to both endpoints' lists, keeping the latest ``size`` by time."""
        nodes, others = torch.cat([src, dst]), torch.cat([dst, src])
        times, messages = torch.cat([t, t]).to(self.times.dtype), torch.cat([msg, msg])
        touched, inverse = nodes.unique(return_inverse=True)
        counts = torch.bincount(inverse, minlength=len(touched))
        order = torch.argsort(inverse, stable=True)
        row = inverse[order]
        slot = torch.arange(len(row), device=row.device) - (counts.cumsum(0) - counts)[row]
        width = int(counts.max())
        new_n = torch.full((len(touched), width), -1, dtype=torch.long, device=row.device)
        new_t = torch.full((len(touched), width), float("-inf"), device=row.device)
        new_m = messages.new_zeros(len(touched), width, messages.shape[-1])
        new_n[row, slot], new_t[row, slot], new_m[row, slot] = others[order], times[order], messages[order]
        all_t = torch.cat([self.times[touched], new_t], 1)
        keep = all_t.topk(self.neighbours.shape[1], dim=1).indices
        self.times[touched] = all_t.gather(1, keep)
        self.neighbours[touched] = torch.cat([self.neighbours[touched], new_n], 1).gather(1, keep)
        all_m = torch.cat([self.messages[touched], new_m], 1)
        self.messages[touched] = all_m.gather(1, keep.unsqueeze(-1).expand(-1, -1, all_m.shape[-1]))


class LinkPredictor(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.lin_src, self.lin_dst, self.lin_final = nn.Linear(channels, channels), nn.Linear(channels, channels), nn.Linear(channels, 1)

    def forward(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        return self.lin_final((self.lin_src(z_src) + self.lin_dst(z_dst)).relu()).squeeze(-1)


class TGNNet(nn.Module):
    def __init__(self, num_nodes: int, msg_dim: int, memory_dim: int, time_dim: int, embedding_dim: int,
                 layers: int, neighbours: int, dropout: float):
        super().__init__()
        self.memory = Memory(num_nodes, msg_dim, memory_dim, time_dim,
                             message_module=IdentityMessage(msg_dim, memory_dim, time_dim),
                             aggregator_module=LastAggregator())
        self.neighbours = RecentNeighbours(num_nodes, neighbours, msg_dim)
        self.time_encoder = TimeEncoder(time_dim)
        widths = [memory_dim] + [embedding_dim] * layers
        self.convs = nn.ModuleList(
            TransformerConv(widths[i], embedding_dim // 2, heads=2, dropout=dropout, edge_dim=msg_dim + time_dim)
            for i in range(layers)
        )
        self.link_predictor = LinkPredictor(embedding_dim)

    def embed_events(self, src, dst, neg_dst, t, msg) -> tuple[torch.Tensor, ...]:
        """The events' padded neighbourhood: node ids, local edges, each edge's encoded age and
        message, and each node's memory; a training step then writes its events into the state."""
        n_id, edge_index, edge_t, edge_msg = self.neighbours.gather(torch.cat([src, dst, neg_dst]).unique())
        age = (t.max().to(edge_t.dtype) - edge_t).to(edge_msg.dtype)
        edge_attr = torch.cat([self.time_encoder(age), edge_msg], dim=-1)
        h, _ = self.memory(n_id)
        if self.training and torch.is_grad_enabled():
            with torch.no_grad():
                self.memory.update_state(src, dst, t, msg)
                self.neighbours.insert(src, dst, t, msg)
        return (src, dst, neg_dst, *self.pad(len(src), n_id, edge_index, edge_attr, h))

    def pad(self, events: int, n_id, edge_index, edge_attr, h) -> tuple[torch.Tensor, ...]:
        """The neighbourhood at its largest size for ``events`` events (see the module's docstring)."""
        width = self.neighbours.neighbours.shape[1]
        nodes, edges = 3 * events * (1 + width) + 1, 3 * events * width
        sentinel = self.neighbours.neighbours.shape[0]  # past every node id: padding sorts last
        last = nodes - 1
        return (
            torch.cat([n_id, n_id.new_full((nodes - len(n_id),), sentinel)]),
            torch.cat([edge_index, edge_index.new_full((2, edges - edge_index.shape[1]), last)], 1),
            torch.cat([edge_attr, edge_attr.new_zeros(edges - len(edge_attr), edge_attr.shape[1])]),
            torch.cat([h, h.new_zeros(nodes - len(h), h.shape[1])]),
        )

    def attend(self, i: int, src, dst, neg_dst, n_id, edge_index, edge_attr, h) -> tuple[torch.Tensor, ...]:
        return src, dst, neg_dst, n_id, edge_index, edge_attr, self.convs[i](h, edge_index, edge_attr)

    def score(self, src, dst, neg_dst, n_id, edge_index, edge_attr, h) -> torch.Tensor:
        """Logits of the true links, then of the sampled negatives."""
        z_src = h[torch.searchsorted(n_id, src)]
        pos = self.link_predictor(z_src, h[torch.searchsorted(n_id, dst)])
        neg = self.link_predictor(z_src, h[torch.searchsorted(n_id, neg_dst)])
        return torch.cat([pos, neg])

    def forward(self, src, dst, neg_dst, t, msg) -> torch.Tensor:
        carry = self.embed_events(src, dst, neg_dst, t, msg)
        for i in range(len(self.convs)):
            carry = self.attend(i, *carry)
        return self.score(*carry)


class TGN(GraphFamily):
    defaults = {"num_nodes": 0, "msg_dim": 0, "memory_dim": 100, "time_dim": 100, "embedding_dim": 100,
                "layers": 1, "neighbours": 10, "dropout": 0.1}

    def network(self, config: dict[str, Any]) -> nn.Module:
        return TGNNet(**config)

    def save(self, model: Any, preprocessor: Any, folder: Any) -> None:
        """Pending messages are flushed into the memory first: the saved state is then complete
        (the message store is not a buffer), and a reloaded model predicts what this one does."""
        model.memory.flush()
        super().save(model, preprocessor, folder)

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """The memory, neighbour table and time encoder as one block (it owns the state, so it
        stays on one stage), then the attention layers, then the link predictor."""

        def layer(i: int) -> Block:
            return Block(f"attention.{i}", "layer", (f"convs.{i}",), lambda m, *c: m.attend(i, *c))

        return [
            Block("memory", "embedding", ("memory", "neighbours", "time_encoder"), lambda m, *c: m.embed_events(*c)),
            *[layer(i) for i in range(len(model.convs))],
            Block("link_predictor", "head", ("link_predictor",), lambda m, *c: (m.score(*c),)),
        ]
