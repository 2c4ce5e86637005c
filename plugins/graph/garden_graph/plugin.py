"""garden plugin: graph neural networks on PyTorch Geometric: Cluster-GCN, TGN and SchNet.

Parameter counts are for the default data (the 32-feature, 8-block SBM graph; the generated
event stream of 500 users and 500 items, 8-wide messages; G2 molecules), since a graph model's input and output
widths come from its data.
"""

from garden.declared import Declared
from garden.entries import ModelEntry, TaskEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

CLUSTER_GCN = ModelEntry(
    name="cluster_gcn",
    family="cluster_gcn",
    domain="gnn",
    description="Cluster-GCN: GCN layers trained on METIS clusters of one large graph, a few clusters a batch",
    tasks=("node-classify",),
    builder="garden_graph.cluster_gcn:ClusterGCN",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("cluster_gcn", "tiny"),
                config={"hidden": 32, "layers": 2},
                description="2 GCN layers, 32 wide; for tests and smoke runs"),
        Variant("base",
                **DECLARED.sizes("cluster_gcn", "base"),
                config={"hidden": 128, "layers": 3},
                description="3 GCN layers, 128 wide (+model.options.conv=sage for GraphSAGE)"),
    ),
    default="base",
    paper="Cluster-GCN: An Efficient Algorithm for Training Deep and Large Graph Convolutional Networks",
    paper_url="https://arxiv.org/abs/1905.07953",
    license="mit",
    results=DECLARED.results("cluster_gcn"),
)

TGN = ModelEntry(
    name="tgn",
    family="tgn",
    domain="gnn",
    description="Temporal Graph Network: a GRU memory per node and graph attention over recent events",
    tasks=("link-predict",),
    builder="garden_graph.tgn:TGN",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("tgn", "tiny"),
                config={"memory_dim": 16, "time_dim": 16, "embedding_dim": 16, "layers": 1},
                description="16-wide memory, one attention layer; for tests and smoke runs"),
        Variant("base",
                **DECLARED.sizes("tgn", "base"),
                config={"memory_dim": 100, "time_dim": 100, "embedding_dim": 100, "layers": 1},
                description="the paper's sizes: 100-wide memory and time encoding, one attention layer"),
    ),
    default="base",
    paper="Temporal Graph Networks for Deep Learning on Dynamic Graphs",
    paper_url="https://arxiv.org/abs/2006.10637",
    license="mit",
    results=DECLARED.results("tgn"),
)

SCHNET = ModelEntry(
    name="schnet",
    family="schnet",
    domain="gnn",
    description="SchNet: continuous-filter convolutions over interatomic distances, a molecule property",
    tasks=("graph-regress",),
    builder="garden_graph.schnet:SchNet",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("schnet", "tiny"),
                config={"hidden": 32, "filters": 32, "interactions": 2, "gaussians": 25},
                description="2 interaction blocks, 32 wide; for tests and smoke runs"),
        Variant("base",
                **DECLARED.sizes("schnet", "base"),
                config={"hidden": 128, "filters": 128, "interactions": 6, "gaussians": 50},
                description="the paper's sizes: 6 interaction blocks, 128 wide, 50 Gaussians"),
    ),
    default="base",
    paper="SchNet: A continuous-filter convolutional neural network for modeling quantum interactions",
    paper_url="https://arxiv.org/abs/1706.08566",
    license="mit",
    results=DECLARED.results("schnet"),
)


TASKS = [
    TaskEntry("node-classify", "gnn", "garden_graph.nodes:NodeClassification",
              "node classification on one large graph, trained on clusters of it"),
    TaskEntry("link-predict", "gnn", "garden_graph.events:LinkPrediction",
              "future links of a stream of timestamped events; average precision and ROC AUC"),
    TaskEntry("graph-regress", "gnn", "garden_graph.molecules:MoleculeRegression",
              "one number per graph (a molecule's property); mean absolute error"),
]


@hookimpl
def garden_models():
    return [CLUSTER_GCN, TGN, SCHNET]


@hookimpl
def garden_tasks():
    return TASKS


@hookimpl
def garden_config_dir():
    return "pkg://garden_graph.conf"
