"""The contract between garden's core and its model plugins.

A plugin is a module (or object) named by an entry point in the ``garden.plugins`` group::

    [project.entry-points."garden.plugins"]
    vit = "garden_vit.plugin"

It implements some of the hooks below with ``@hookimpl``. Hooks are called once, at discovery,
and must be cheap: they return data and import paths, never torch modules, so that
``python -m garden list`` stays fast. The code that builds and runs a model lives in a
:class:`ModelFamily` subclass named by each entry's ``builder`` and imported only by a run.

Read this module top to bottom and you know everything a plugin can do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pluggy


if TYPE_CHECKING:  # pragma: no cover - types only
    import torch

    from garden.entries import ModelEntry, TaskEntry, Variant

PROJECT = "garden"
#: The plugin API this core speaks. A plugin states the version it was written for as
#: ``GARDEN_API_VERSION`` in its plugin module; a different major version is refused.
API_VERSION = "1.0"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class GardenSpec:
    """Hook specifications; pluggy checks every ``@hookimpl`` against these signatures."""

    @hookspec
    def garden_models(self) -> "Sequence[ModelEntry]":
        """Return the model entries this plugin contributes.

        Called once per process at discovery. Must not import torch or build anything.

        Example return value::

            [ModelEntry(name="vit", family="vit", domain="vision",
                        description="Vision Transformer (Dosovitskiy et al.)",
                        tasks=("classify",), builder="garden_vit.family:ViT",
                        variants=(Variant("tiny", config={"hidden_size": 64}),
                                  Variant("base", hub_id="google/vit-base-patch16-224",
                                          revision="3f49326eb077187dfe1c2a2bb15fbd74e6ab91e3")))]
        """

    @hookspec
    def garden_tasks(self) -> "Sequence[TaskEntry]":
        """Return the tasks this plugin contributes: each a name, the domain whose models it
        serves, and the import path of its Task class.

        Called once per process at discovery. Must not import torch or the Task classes. The
        task's Hydra config is ``task/<name>.yaml`` in this plugin's config directory
        (``garden_config_dir``). garden's own tasks arrive through this hook too, from a
        built-in plugin (``garden.tasks.plugin``). A new domain needs nothing more than a task
        and a model that name it.

        Example return value::

            [TaskEntry(name="detect", domain="detection", builder="garden_detect.task:Detection",
                       description="boxes and classes of the objects in an image")]
        """

    @hookspec
    def garden_config_dir(self) -> str | None:
        """Return this plugin's Hydra config directory as a search-path entry.

        The directory holds ``model/<name>.yaml`` for each model, ``task/<name>.yaml`` for each
        task, and may hold ``recipe/<model>/<task>.yaml`` (per-task defaults, ``# @package _global_``).

        Example return value: ``"pkg://garden_vit.conf"``
        """

    @hookspec
    def garden_checkpoint_keys(self, model: str, keys: "list[str]") -> "dict[str, str] | None":
        """Rename checkpoint tensors this plugin knows onto ``model``'s parameter names.

        Called before loading a checkpoint for ``model`` (every plugin is asked; answer only for
        your own models, return ``None`` otherwise). ``keys`` are the checkpoint's tensor names.
        Use it for older or converted checkpoints whose names differ from the model's.

        Example return value: ``{"bert.encoder.layer.0.attention.self.q.weight":
        "bert.encoder.layer.0.attention.self.query.weight"}``
        """


@dataclass(frozen=True)
class BuildSpec:
    """Everything a family needs to build one model for one run.

    ``weights_dir`` is a local folder in Hugging Face layout (``config.json`` and
    ``*.safetensors``) whose weights the model should start from, or ``None`` for random init.
    ``labels`` are the class names the task found in its data (``None`` when it has none).
    """

    entry: "ModelEntry"
    variant: "Variant"
    task: str
    labels: tuple[str, ...] | None = None
    weights_dir: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Block:
    """One unit of a model's stage layout: embeddings, one repeated layer, or a head.

    ``modules`` are the submodule paths the block owns; ``run`` carries the activations
    through it: ``run(model, *carry) -> tuple`` (the first block receives the task's model
    inputs, the last returns ``(logits,)``). ``kind`` is ``"embedding"``, ``"layer"`` or
    ``"head"``; only layers count towards ``layers_per_ipu``. ``tied_to`` names a block whose
    parameters this one shares (a tied LM head), which must sit on the same stage.
    """

    name: str
    kind: str
    modules: tuple[str, ...]
    run: Callable[..., tuple]
    tied_to: str | None = None


class ModelFamily:
    """Builds and describes the models of one family; named by ``ModelEntry.builder``.

    Subclass it (or :class:`garden.families.transformers.TransformersFamily` for a
    transformers model, which implements everything from a few class attributes).
    """

    #: task name -> import path of a Task class, only for a task this family runs its own way; a
    #: task's class otherwise comes from the plugins' ``garden_tasks``, by its name and the model's
    #: domain (which must register every task the model lists either way, for its config)
    tasks: dict[str, str] = {}
    #: why the family's models cannot run with backend=ipu (``None``: they can), said in one line
    #: when a run asks for IPUs, e.g. ``"its ops need PopTorch Geometric's fixed-size batches"``
    ipu_unsupported: str | None = None

    def build(self, spec: BuildSpec) -> "torch.nn.Module":
        """Return the model for ``spec``: random init, or from ``spec.weights_dir``."""
        raise NotImplementedError

    def preprocessor(self, spec: BuildSpec) -> Any:
        """Return what turns raw inputs into model inputs (an image processor, a tokenizer)."""
        return None

    def check_weights(self, spec: BuildSpec) -> None:
        """Raise :class:`garden.errors.WeightsError` when ``spec.weights_dir`` holds another kind
        of model, naming what it holds; called before :meth:`preprocessor` and :meth:`build`
        read the folder, whose own errors would be far from the cause. The default checks nothing."""

    def stage_blocks(self, model: "torch.nn.Module", task: str) -> "list[Block]":
        """The model as an ordered list of blocks, for pipeline partitioning."""
        raise NotImplementedError

    def save(self, model: "torch.nn.Module", preprocessor: Any, folder: Path) -> None:
        """Write ``model`` (and its preprocessor) to ``folder`` so ``build`` can reload it."""
        raise NotImplementedError
