"""garden plugin: graph neural networks on PyTorch Geometric: Cluster-GCN, TGN and SchNet.

Parameter counts are for the default data (the 32-feature, 8-block SBM graph; the generated
event stream of 500 users and 500 items, 8-wide messages; G2 molecules), since a graph model's input and output
widths come from its data.
"""

from garden.declared import Declared
from garden.entries import TaskEntry
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: models.yaml (the curated entries), results.json (bench/results.py --write) and measurements.json
#: (registry measure --write), beside this file
DECLARED = Declared.beside(__file__)

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
    return DECLARED.models()


@hookimpl
def garden_tasks():
    return TASKS


@hookimpl
def garden_config_dir():
    return "pkg://garden_graph.conf"
