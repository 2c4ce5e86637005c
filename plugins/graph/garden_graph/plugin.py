"""garden plugin: graph neural networks on PyTorch Geometric: Cluster-GCN, TGN and SchNet.

Parameter counts are for the default data (the 32-feature, 8-block SBM graph; the generated
event stream of 500 users and 500 items, 8-wide messages; G2 molecules), since a graph model's input and output
widths come from its data.
"""

from garden.entries import ModelEntry, TaskEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

# where bench/results.py measured the results below
MEASURED_ON = "Intel(R) Xeon(R) Processor, 2 cores, 1 process"

# what registry measure counted FLOPs on: the first example of the first task's default data
CLUSTER_INPUT = "x 102x32, edge_index 2x336, node_ids 102"
EVENT_INPUT = "src 1, dst 1, neg_dst 1, t 1, msg 1x8"
MOLECULE_INPUT = "z 10, pos 10x3, batch 10"

CLUSTER_GCN = ModelEntry(
    name="cluster_gcn",
    family="cluster_gcn",
    domain="gnn",
    description="Cluster-GCN: GCN layers trained on METIS clusters of one large graph, a few clusters a batch",
    tasks=("node-classify",),
    builder="garden_graph.cluster_gcn:ClusterGCN",
    variants=(
        Variant("tiny",
                params=3_432, flops=678_912,
                flops_input=CLUSTER_INPUT, file_size=14_336,
                config={"hidden": 32, "layers": 2},
                description="2 GCN layers, 32 wide; for tests and smoke runs"),
        Variant("base",
                params=54_792, flops=11_071_488,
                flops_input=CLUSTER_INPUT, file_size=219_960,
                config={"hidden": 128, "layers": 3},
                description="3 GCN layers, 128 wide (+model.options.conv=sage for GraphSAGE)"),
    ),
    default="base",
    paper="Cluster-GCN: An Efficient Algorithm for Training Deep and Large Graph Convolutional Networks",
    paper_url="https://arxiv.org/abs/1905.07953",
    license="mit",
    results=(
        {"task": "node-classify", "variant": "tiny",
         "dataset": "stochastic block model (20,000 nodes, 8 blocks, 99,858 edges), 200 METIS clusters, held-out split",
         "metrics": {"accuracy": 0.9482, "loss": 0.2109},
         "throughput": 2080.2, "hardware": MEASURED_ON, "source": "python bench/results.py"},
    ),
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
                params=5_649, flops=94_784,
                flops_input=EVENT_INPUT, file_size=537_012,
                config={"memory_dim": 16, "time_dim": 16, "embedding_dim": 16, "layers": 1},
                description="16-wide memory, one attention layer; for tests and smoke runs"),
        Variant("base",
                params=194_901, flops=3_448_400,
                flops_input=EVENT_INPUT, file_size=1_630_100,
                config={"memory_dim": 100, "time_dim": 100, "embedding_dim": 100, "layers": 1},
                description="the paper's sizes: 100-wide memory and time encoding, one attention layer"),
    ),
    default="base",
    paper="Temporal Graph Networks for Deep Learning on Dynamic Graphs",
    paper_url="https://arxiv.org/abs/2006.10637",
    license="mit",
    results=(
        {"task": "link-predict", "variant": "tiny",
         "dataset": "generated events (500 users, 500 items, 10,000 events), held-out split",
         "metrics": {"average_precision": 0.7175, "roc_auc": 0.7327, "loss": 0.6174},
         "throughput": 10408.2, "hardware": MEASURED_ON, "source": "python bench/results.py"},
    ),
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
                params=13_793, flops=790_080,
                flops_input=MOLECULE_INPUT, file_size=57_888,
                config={"hidden": 32, "filters": 32, "interactions": 2, "gaussians": 25},
                description="2 interaction blocks, 32 wide; for tests and smoke runs"),
        Variant("base",
                params=455_809, flops=30_670_080,
                flops_input=MOLECULE_INPUT, file_size=1_830_588,
                config={"hidden": 128, "filters": 128, "interactions": 6, "gaussians": 50},
                description="the paper's sizes: 6 interaction blocks, 128 wide, 50 Gaussians"),
    ),
    default="base",
    paper="SchNet: A continuous-filter convolutional neural network for modeling quantum interactions",
    paper_url="https://arxiv.org/abs/1706.08566",
    license="mit",
    results=(
        {"task": "graph-regress", "variant": "tiny",
         "dataset": "ASE G2 molecules (148), zero-point energy (kcal/mol), held-out split",
         "metrics": {"mae": 1.0126, "loss": 1.4627},
         "throughput": 4018.9, "hardware": MEASURED_ON, "source": "python bench/results.py"},
    ),
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
