"""garden: a declarative, plugin-based model garden for PyTorch.

    >>> import garden
    >>> [e.name for e in garden.list_models("vit*")]        # doctest: +SKIP
    ['vit']
    >>> model = garden.load_model("vit", task="classify", variant="tiny", weights="random")  # doctest: +SKIP
    >>> metrics = garden.run(["model=vit", "task=classify", "preset=smoke"])               # doctest: +SKIP

Importing garden is cheap: torch, transformers and Hydra load only when a run needs them.
"""

from garden.errors import GardenError
from garden.registry import get as get_entry
from garden.registry import list_models, search

__version__ = "0.1.0"
__all__ = ["GardenError", "compose", "get_entry", "list_models", "load_model", "run", "search"]


def load_model(*args, **kwargs):
    """See :func:`garden.runs.prepared.load_model`."""
    from garden.runs.prepared import load_model as _load_model

    return _load_model(*args, **kwargs)


def compose(overrides):
    """See :func:`garden.config.compose`."""
    from garden.config import compose as _compose

    return _compose(overrides)


def run(overrides_or_cfg, output_dir=None):
    """See :func:`garden.runs.execution.run`."""
    from garden.runs.execution import run as _run

    return _run(overrides_or_cfg, output_dir)
