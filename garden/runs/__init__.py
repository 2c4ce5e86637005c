"""A run of a model: what it needs, the loops that drive a backend, and what it leaves behind.

    prepared.py    Prepared, prepare, family_of, load_model: entry, family, task, weights, data
    data.py        the seeded loader and each replica's share of every batch
    loops.py       train, evaluate, infer: one loop for every backend
    checkpoint.py  resumable checkpoints
    history.py     history.jsonl as the run goes; plots/ and TensorBoard at the end
    outputs.py     metrics.json, the Hub-ready model folder and its model card, the final tables
    execution.py   execute and run: config -> prepared -> backend -> loop -> outputs
    predictor.py   Predictor: raw images, audio and text in, predictions out
    planned.py     plan_run, plan_summary: a run's stage plan without running it

    >>> from garden.runs import prepare, run     # doctest: +SKIP

The names below load on first use, so reading a run's history (``garden.runs.history``)
imports no torch.
"""

from importlib import import_module
from typing import Any

__all__ = ["Prepared", "execute", "family_of", "load_model", "prepare", "run"]

_HOMES = {"Prepared": "prepared", "family_of": "prepared", "load_model": "prepared", "prepare": "prepared",
          "execute": "execution", "run": "execution"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f"garden.runs.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'garden.runs' has no attribute {name!r}")
