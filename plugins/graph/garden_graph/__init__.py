"""garden-graph: graph neural networks (Cluster-GCN, TGN, SchNet) as a separately published plugin.

The core finds it only through its ``garden.plugins`` entry point (``garden_graph.plugin``).
"""
