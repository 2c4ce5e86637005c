"""Model entries: what the registry knows about a model, as plain data.

An entry is facts, not code (like timm's ``PretrainedCfg``): listing, searching and showing
entries never imports torch. The code that builds the model is named by ``builder``, an import
path resolved only when a run needs it.

>>> ModelEntry(name="vit", family="vit", domain="vision", description="Vision Transformer",
...            tasks=("classify",), builder="garden_vit:ViT",
...            variants=(Variant("tiny", params=105_000),)).default_variant.name
'tiny'
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from garden.errors import ConfigError

#: what a domain's name looks like; the set of domains is open (a plugin brings a new one by using it)
DOMAIN_NAME = re.compile(r"[a-z][a-z0-9-]*")

#: a full Hub commit hash: the only revision that names the same files for ever (a branch moves,
#: and a 7-character prefix is how the Hub shows a commit, not an id that stays unique)
COMMIT_HASH = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Variant:
    """One size of a model: its Hub checkpoint (pinned) or a config to build from scratch.

    ``hub_id``/``revision`` name the pretrained weights (``revision`` a full commit hash, so a
    run is reproducible; ``registry build`` refuses anything else); ``config`` holds config
    overrides for variants without weights (``tiny``).
    ``params``, ``flops`` (one forward pass on ``flops_input``) and ``file_size`` describe the
    model garden builds for the entry's first task; ``registry measure`` computes and checks them.
    ``weights_format`` is ``"pickle"`` for a Hub checkpoint that has only ``pytorch_model.bin``: its
    printed command then carries ``weights.allow_pickle=true``, the user's explicit trust.
    """

    name: str
    hub_id: str | None = None
    revision: str | None = None
    params: int | None = None
    flops: int | None = None
    flops_input: str | None = None
    file_size: int | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    weights_format: str = "safetensors"

    def pin_problem(self) -> str | None:
        """Why the Hub checkpoint is not pinned to one commit, or ``None`` (also without one)::

            >>> Variant("base", hub_id="org/name", revision="3f49326").pin_problem()
            "pins org/name to '3f49326', not a full 40-character commit hash"
        """
        if self.hub_id is None:
            return None
        if self.revision is None:
            return f"names {self.hub_id} without a pinned revision"
        if not COMMIT_HASH.fullmatch(self.revision):
            return f"pins {self.hub_id} to '{self.revision}', not a full 40-character commit hash"
        return None

    @property
    def run_overrides(self) -> tuple[str, ...]:
        """What a command running this variant must add beyond ``model.variant``::

            >>> Variant("base", hub_id="org/name", weights_format="pickle").run_overrides
            ('weights.allow_pickle=true',)
        """
        return ("weights.allow_pickle=true",) if self.hub_id and self.weights_format == "pickle" else ()


@dataclass(frozen=True)
class ModelEntry:
    """A model a plugin contributes: name, family, domain, tasks, variants and provenance.

    ``layouts`` maps an IPU count to Graphcore's published ``layers_per_ipu`` for it, e.g.
    ``{4: (3, 3, 3, 3)}`` for ViT-base; ``plugin`` and ``plugin_version`` are filled in by
    discovery from the distribution that contributed the entry.
    """

    name: str
    family: str
    domain: str
    description: str
    tasks: tuple[str, ...]
    builder: str
    variants: tuple[Variant, ...]
    default: str | None = None
    paper: str | None = None
    paper_url: str | None = None
    license: str | None = None
    layouts: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    results: tuple[Mapping[str, Any], ...] = ()
    plugin: str | None = None
    plugin_version: str | None = None

    @property
    def default_variant(self) -> Variant:
        """The variant used when a run names none: ``default``, else the first listed."""
        named = [v for v in self.variants if v.name == self.default]
        return named[0] if named else self.variants[0]

    @property
    def smallest_variant(self) -> Variant:
        """The variant with the fewest parameters (what ``preset=smoke`` runs)."""
        return min(self.variants, key=lambda v: v.params if v.params is not None else float("inf"))

    def variant(self, name: str) -> Variant:
        """The variant called ``name``; ``"default"`` and ``"smallest"`` are understood too."""
        for v in self.variants:
            if v.name == name:
                return v
        if name == "default":
            return self.default_variant
        if name == "smallest":
            return self.smallest_variant
        names = ", ".join(v.name for v in self.variants)
        raise ConfigError(
            f"model '{self.name}' has no variant '{name}' (model.variant); choose one of: {names}"
        )

    @property
    def params(self) -> int | None:
        """Parameter count of the default variant."""
        return self.default_variant.params

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["layouts"] = {str(k): list(v) for k, v in self.layouts.items()}
        d["tasks"] = list(self.tasks)
        d["variants"] = [dict(v, config=dict(v["config"])) for v in d["variants"]]
        d["results"] = [dict(r) for r in self.results]
        return d


@dataclass(frozen=True)
class TaskEntry:
    """A task a plugin contributes: what ``task=NAME`` runs for the models of one domain.

    ``builder`` is the import path of its :class:`garden.tasks.base.Task` subclass, imported only
    when a run needs it; the task's Hydra config is ``task/<name>.yaml`` in the plugin's config
    directory (``garden_config_dir``). One name may serve several domains, each with its own class
    (``classify`` reads images for vision and sentences for nlp), so a task is known by its name
    and domain. ``tied_head`` says the task's head predicts the vocabulary with the token
    embeddings' weights, so a stage layout places it beside them. ``plugin`` is filled in by
    discovery.

    >>> TaskEntry(name="detect", domain="detection", builder="garden_detect.task:Detection",
    ...           description="boxes and classes of the objects in an image").key
    ('detect', 'detection')
    """

    name: str
    domain: str
    builder: str
    description: str = ""
    tied_head: bool = False
    plugin: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.domain)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
