"""Task families: data -> batches, loss, metrics and readable predictions.

A family maps each task name to a Task class by import path (``ModelFamily.tasks``), so a
third-party model gets a core task such as image classification for free.
"""

from __future__ import annotations

import importlib
from typing import Any


def import_path(path: str) -> Any:
    """Resolve ``"package.module:Name"`` to the object it names."""
    module, _, name = path.partition(":")
    obj = importlib.import_module(module)
    for part in name.split(".") if name else []:
        obj = getattr(obj, part)
    return obj


def load_task(path: str, family: Any):
    """Instantiate the Task class at ``path`` for ``family``."""
    return import_path(path)(family)
