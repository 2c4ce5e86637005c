"""Node classification on one large graph, batched the Cluster-GCN way.

The graph is cut into ``data.options.clusters`` parts by METIS (pymetis); an example is one
cluster and a batch is the subgraph its clusters induce, between-cluster edges included, so a
step touches a few thousand nodes however large the graph. Nodes are split train/eval at
random (``data.eval_fraction``); train batches score their train nodes, eval batches their eval
nodes; ``data.limit``/``data.eval_limit`` count clusters.

Graphs (see docs/graph_data.md):

- default, ``data.source=sbm``: a generated stochastic-block-model graph, 20,000 nodes in 8
  blocks, features drawn around each block's centre (``data.options``: nodes, classes,
  features, degree, homophily, signal, clusters);
- ``data.source=karate``: Zachary's karate club (networkx ships it), the club each member joined;
- ``data.path=DIR``: ``edges``, ``features`` and ``labels`` files (``.npy``, ``.csv`` or
  ``.txt``), or ``data.path=FILE.pt``, a saved ``torch_geometric.data.Data`` with x, edge_index, y;
- ``data.hub=planetoid:Cora`` (CiteSeer, PubMed) or ``data.hub=reddit``: PyG's datasets, online.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from garden.errors import DataError
from garden.tasks.base import Task, TaskData, batches, limit

SUFFIXES = (".npy", ".csv", ".txt")
SBM = {"nodes": 20_000, "classes": 8, "features": 32, "degree": 10, "homophily": 0.8, "signal": 0.4}


@dataclass
class Graph:
    """A graph as numpy arrays: features ``x`` [N, F], ``edge_index`` [2, E] (both directions), ``y`` [N]."""

    x: Any
    edge_index: Any
    y: Any
    labels: tuple[str, ...]
    source: str


def sbm(nodes: int, classes: int, features: int, degree: int, homophily: float, signal: float, seed: int) -> Graph:
    """A stochastic-block-model graph whose features only hint at the block, so edges matter.

    Each node draws ``degree / 2`` partners, a fraction ``homophily`` of them from its own
    block; features are the block's random centre times ``signal`` plus unit noise.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, nodes)
    members = [np.flatnonzero(y == c) for c in range(classes)]
    src = np.repeat(np.arange(nodes), max(1, degree // 2))
    same = rng.random(src.size) < homophily
    dst = rng.integers(0, nodes, src.size)
    for c, nodes_of_c in enumerate(members):
        pick = same & (y[src] == c)
        dst[pick] = nodes_of_c[rng.integers(0, nodes_of_c.size, pick.sum())]
    keep = src != dst
    edge_index = undirected(np.stack([src[keep], dst[keep]]), nodes)
    centres = rng.normal(size=(classes, features))
    x = (signal * centres[y] + rng.normal(size=(nodes, features))).astype(np.float32)
    source = f"stochastic block model ({nodes:,} nodes, {classes} blocks, {edge_index.shape[1] // 2:,} edges)"
    return Graph(x, edge_index, y, tuple(f"block {c}" for c in range(classes)), source)


def karate() -> Graph:
    """Zachary's karate club: 34 members, the club each joined after the split; one-hot features."""
    import networkx as nx
    import numpy as np

    g = nx.karate_club_graph()
    names = ("Mr. Hi", "Officer")
    y = np.array([names.index(g.nodes[n]["club"]) for n in g.nodes])
    edge_index = undirected(np.array(list(g.edges)).T, g.number_of_nodes())
    return Graph(np.eye(34, dtype=np.float32), edge_index, y, names, "Zachary's karate club (networkx, 34 members)")


def undirected(edge_index: Any, nodes: int) -> Any:
    """Both directions of every edge, once each, without self-loops."""
    import numpy as np

    both = np.concatenate([edge_index, edge_index[::-1]], axis=1)
    both = both[:, both[0] != both[1]]
    keys = np.unique(both[0].astype(np.int64) * nodes + both[1])
    return np.stack([keys // nodes, keys % nodes])


def read_array(path: Path) -> Any:
    import numpy as np

    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        return np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None, ndmin=2)
    except ValueError as err:
        raise DataError(f"data.path: cannot read {path} as numbers ({err}); write a .npy, .csv or .txt") from None


def find(folder: Path, stem: str) -> Path:
    for suffix in SUFFIXES:
        if (folder / f"{stem}{suffix}").is_file():
            return folder / f"{stem}{suffix}"
    raise DataError(f"data.path={folder} has no {stem} file; add {stem}.npy, {stem}.csv or {stem}.txt")


def graph_folder(path: str) -> Graph:
    """``edges`` (one ``src,dst`` row per edge), ``features`` (a row per node) and ``labels`` files."""
    import numpy as np

    folder = Path(path).expanduser()
    if folder.suffix == ".pt":
        return saved_data(folder)
    if not folder.is_dir():
        raise DataError(f"data.path={path} is neither a directory of edges/features/labels files nor a .pt Data file")
    edges_file, x_file, y_file = find(folder, "edges"), find(folder, "features"), find(folder, "labels")
    edges, x, y = read_array(edges_file), read_array(x_file), read_array(y_file).reshape(-1)
    if edges.ndim != 2 or 2 not in edges.shape:
        raise DataError(f"data.path: {edges_file} holds a {edges.shape} array; write one 'src,dst' row per edge")
    edges = edges if edges.shape[1] == 2 else edges.T
    if len(y) != len(x):
        raise DataError(f"data.path: {y_file} has {len(y)} labels for the {len(x)} nodes in {x_file}; give one per node")
    check_edges(edges.astype(np.int64), len(x), str(edges_file))
    classes = sorted(set(y.tolist()))
    index = {c: i for i, c in enumerate(classes)}
    y = np.array([index[c] for c in y.tolist()])
    return Graph(x.astype(np.float32).reshape(len(x), -1), undirected(edges.T.astype(np.int64), len(x)), y,
                 tuple(str(int(c) if float(c).is_integer() else c) for c in classes), f"graph files {folder}")


def check_edges(edges: Any, nodes: int, where: str) -> None:
    """Refuse an edge whose endpoint is not a node: the first such row, named with its number."""
    import numpy as np

    bad = np.flatnonzero((edges < 0).any(axis=1) | (edges >= nodes).any(axis=1))
    if bad.size:
        row = int(bad[0])
        raise DataError(
            f"data.path: {where} edge row {row} ({edges[row, 0]}, {edges[row, 1]}) points past the graph's {nodes} "
            f"nodes (ids 0..{nodes - 1}, one per feature row); fix the edge or add the node's features"
        )


def saved_data(path: Path) -> Graph:
    """A ``torch.save``d PyG ``Data`` (loaded with ``weights_only``: no code runs)."""
    import torch
    from torch_geometric.data import Data
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    if not path.is_file():
        raise DataError(f"data.path={path} does not exist; save a graph with torch.save(Data(x=..., edge_index=..., y=...))")
    with torch.serialization.safe_globals([Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]):
        data = torch.load(path, weights_only=True)
    if not all(getattr(data, k, None) is not None for k in ("x", "edge_index", "y")):
        raise DataError(f"data.path={path} is not a PyG Data with x, edge_index and y; save one that has all three")
    return from_pyg(data, f"PyG Data {path}", str(path))


def from_pyg(data: Any, source: str, where: str) -> Graph:
    y = data.y.reshape(-1).numpy()
    edges = data.edge_index.numpy().T
    check_edges(edges, data.x.shape[0], where)
    labels = tuple(str(c) for c in range(int(y.max()) + 1))
    return Graph(data.x.float().numpy(), undirected(edges.T, data.x.shape[0]), y, labels, source)


def hub_graph(name: str) -> Graph:
    """PyG's Planetoid citation graphs or Reddit, downloaded into ~/.cache/garden/pyg when online."""
    from torch_geometric import datasets

    root = Path("~/.cache/garden/pyg").expanduser()
    kind, _, graph = name.partition(":")
    try:
        if kind.lower() == "planetoid" and graph:
            dataset = datasets.Planetoid(str(root / "planetoid"), graph)
        elif kind.lower() == "reddit":
            dataset = datasets.Reddit(str(root / "reddit"))
        else:
            raise DataError(f"data.hub={name} is not planetoid:Cora|CiteSeer|PubMed or reddit")
    except DataError:
        raise
    except Exception as err:  # urllib, zip and PyG's own errors: the download did not happen
        raise DataError(
            f"data.hub={name}: PyG could not fetch it ({type(err).__name__}); go online once, or use data.path= or data.source=sbm"
        ) from None
    return from_pyg(dataset[0], f"PyG {name}", f"data.hub={name}")


def metis_clusters(graph: Graph, parts: int) -> list[Any]:
    """The node ids of each METIS part, none empty."""
    import numpy as np
    import pymetis

    nodes = len(graph.y)
    order = np.argsort(graph.edge_index[0], kind="stable")
    adjncy = graph.edge_index[1][order]
    xadj = np.concatenate([[0], np.cumsum(np.bincount(graph.edge_index[0], minlength=nodes))])
    parts = min(parts, nodes)
    _, membership = pymetis.part_graph(parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy))
    membership = np.asarray(membership)
    return [c for c in (np.flatnonzero(membership == p) for p in range(parts)) if c.size]


class ClusterBatches:
    """Collate: the subgraph induced by a batch's clusters, scored on its train or its eval nodes."""

    def __init__(self, graph: Graph, eval_mask: Any):
        import torch

        self.x = torch.from_numpy(graph.x)
        self.edge_index = torch.from_numpy(graph.edge_index)
        self.y = torch.from_numpy(graph.y).long()
        self.eval_mask = torch.from_numpy(eval_mask)

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch
        from torch_geometric.utils import subgraph

        nodes = torch.cat([e["nodes"] for e in examples]).sort().values
        edge_index, _ = subgraph(nodes, self.edge_index, relabel_nodes=True, num_nodes=len(self.y))
        scored = self.eval_mask[nodes] if examples[0]["split"] == "eval" else ~self.eval_mask[nodes]
        labels = torch.where(scored, self.y[nodes], torch.full_like(nodes, -100))
        return {"x": self.x[nodes], "edge_index": edge_index, "labels": labels, "node_ids": nodes}


class NodeClassification(Task):
    splittable = False
    name = "node-classify"
    metric = "accuracy"

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        import numpy as np
        import torch

        data = cfg.data
        options = dict(data.options)
        if data.path:
            graph = graph_folder(data.path)
        elif data.hub:
            graph = hub_graph(data.hub)
        elif data.source == "karate":
            graph = karate()
        elif data.source in ("sbm", "default"):
            unknown = sorted(set(options) - set(SBM) - {"clusters"})
            if unknown:
                raise DataError(f"data.options has unknown key(s) {', '.join(unknown)}; sbm takes {', '.join(SBM)}, clusters")
            graph = sbm(**{k: type(v)(options.get(k, v)) for k, v in SBM.items()}, seed=cfg.seed)
        else:
            raise DataError(f"data.source={data.source} is not sbm or karate; or give data.path= / data.hub=")
        nodes = len(graph.y)
        clusters = metis_clusters(graph, int(options.get("clusters", max(2, nodes // 100))))
        eval_mask = np.zeros(nodes, dtype=bool)
        order = np.random.default_rng(cfg.seed).permutation(nodes)
        eval_mask[order[: min(max(1, round(nodes * data.eval_fraction)), nodes - 1)]] = True
        shuffled = [clusters[i] for i in np.random.default_rng(cfg.seed + 1).permutation(len(clusters))]

        def examples(split: str, n: int | None) -> list[dict[str, Any]]:
            return [{"nodes": torch.from_numpy(c), "split": split} for c in limit(shuffled, n)]

        return TaskData(
            train=examples("train", data.limit),
            eval=examples("eval", data.eval_limit),
            collate=ClusterBatches(graph, eval_mask),
            labels=graph.labels,
            info={"in_channels": int(graph.x.shape[1]), "num_classes": len(graph.labels)},
            source=f"{graph.source}, {len(clusters)} METIS clusters",
        )

    def inputs(self, batch: dict[str, Any]) -> tuple:
        return (batch["x"], batch["edge_index"])

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return model(batch["x"], batch["edge_index"])

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        return F.cross_entropy(output.float(), target, ignore_index=-100)

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        import torch

        logits = torch.cat([o.float() for o in outputs])
        labels = torch.cat([b["labels"] for b in batches])
        scored = labels != -100
        return {
            "accuracy": (logits[scored].argmax(-1) == labels[scored]).float().mean().item(),
            "loss": self.loss(logits, labels).item(),
        }

    def baseline(self, data: TaskData) -> dict[str, Any]:
        from collections import Counter

        import torch

        def labels(dataset: Any) -> list[int]:
            return [y for y in torch.cat([b["labels"] for b in batches(dataset, data.collate)]).tolist() if y != -100]

        train, held_out = Counter(labels(data.train)), labels(data.eval)
        majority = max(sorted(train), key=train.__getitem__)
        return self.baseline_of("majority class of the training nodes", held_out.count(majority) / len(held_out))

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        probs = output.float().softmax(-1)
        scores, indices = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
        names = data.labels or ()
        rows = []
        for i in (batch["labels"] != -100).nonzero().flatten().tolist():
            rows.append({
                "input": f"node {int(batch['node_ids'][i])}",
                "label": names[int(batch["labels"][i])],
                "predictions": [{"label": names[j], "score": round(p, 6)}
                                for p, j in zip(scores[i].tolist(), indices[i].tolist())],
            })
        return rows
