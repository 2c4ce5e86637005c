"""garden: a declarative, plugin-based model garden for PyTorch.

    >>> import garden
    >>> [e.name for e in garden.list_models("vit*")]        # doctest: +SKIP
    ['vit']
    >>> model = garden.load_model("vit", task="classify", variant="tiny", weights="random")  # doctest: +SKIP
    >>> result = garden.run(["model=vit", "task=classify", "preset=smoke"])                # doctest: +SKIP
    >>> losses = [r["loss"] for r in garden.history(result["output_dir"]) if "loss" in r]   # doctest: +SKIP
    >>> predict = garden.predictor("vit", task="classify", weights=result["output_dir"] + "/model")  # doctest: +SKIP
    >>> predict(["photos/*.png"])[0]["prediction"]                                        # doctest: +SKIP
    '7'

Importing garden is cheap: torch, transformers and Hydra load only when a run needs them
(docs/notebooks.md describes this API as the notebooks use it).
"""

from garden.errors import GardenError
from garden.registry import list_models, search

__version__ = "0.1.0"
__all__ = ["GardenError", "compose", "get_entry", "history", "list_models", "load_model", "plan", "predictor",
           "run", "search"]


def get_entry(name: str):
    """The registry entry called ``name``; ``hf:<repo-id>[@<revision>]`` or ``hf:<folder>`` makes
    one from the checkpoint's config, as a run does (see :func:`garden.runs.prepared.entry_of`)."""
    from garden.runs.prepared import entry_of

    return entry_of(name)


def load_model(*args, **kwargs):
    """See :func:`garden.runs.prepared.load_model`."""
    from garden.runs.prepared import load_model as _load_model

    return _load_model(*args, **kwargs)


def compose(overrides):
    """See :func:`garden.config.compose`."""
    from garden.config import compose as _compose

    return _compose(overrides)


def run(overrides_or_cfg, output_dir=None):
    """See :func:`garden.runs.execution.run`: the run's metrics, and its folder as ``output_dir``."""
    from garden.runs.execution import run as _run

    return _run(overrides_or_cfg, output_dir)


def history(run_dir):
    """A run's metrics history as a list of dicts, one per training step (``step``, ``epoch``,
    ``loss``, ``lr``, ``samples_per_second``) and one per evaluation (``step``, ``eval_<metric>``);
    readable while the run is going on. See :mod:`garden.runs.history`."""
    from garden.runs.history import read_history

    return read_history(run_dir)


def predictor(model, task=None, *, variant="default", weights="auto", overrides=()):
    """A model loaded once that predicts raw images, audio or text; see :mod:`garden.runs.predictor`."""
    from garden.runs.predictor import predictor as _predictor

    return _predictor(model, task, variant=variant, weights=weights, overrides=overrides)


def plan(overrides):
    """The stage plan ``python -m garden plan OVERRIDES --json`` prints, as a dict (``stages`` with
    each one's blocks, params, FLOPs, memory and cost share; ``bottleneck_ratio``); draw it with
    ``garden.plots.stage_costs``."""
    from garden.runs.planned import plan_summary

    return plan_summary(list(overrides))
