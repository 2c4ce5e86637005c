"""A run of a model: what it needs, the loops that drive a backend, and what it leaves behind.

    prepared.py    Prepared, prepare, family_of, load_model: entry, family, task, weights, data
    data.py        the seeded loader and each replica's share of every batch
    loops.py       train, evaluate, infer: one loop for every backend
    checkpoint.py  resumable checkpoints
    outputs.py     metrics.json, the Hub-ready model folder and its model card, the final tables
    execution.py   execute and run: config -> prepared -> backend -> loop -> outputs

    >>> from garden.runs import prepare, run     # doctest: +SKIP
"""

from garden.runs.execution import execute, run
from garden.runs.prepared import Prepared, family_of, load_model, prepare

__all__ = ["Prepared", "execute", "family_of", "load_model", "prepare", "run"]
