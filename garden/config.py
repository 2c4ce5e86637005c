"""Hydra composition: the core ``conf/`` plus every plugin's config directory.

The schemas below are the structured configs behind the YAML: a wrong key or a wrongly typed
value fails at compose time, and :func:`compose` turns Hydra's report into one line naming the
key. Plugins' config directories are appended to Hydra's search path by a ``SearchPathPlugin``
registered here (Hydra's own ``hydra_plugins`` scan misses editable installs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from omegaconf import MISSING

from garden import registry
from garden.errors import ConfigError
from garden.plugins import discover

CORE_CONFIG = "pkg://garden.conf"


@dataclass
class ModelConfig:
    name: str = MISSING
    variant: str = "default"
    options: Dict[str, Any] = field(default_factory=dict)


@dataclass
class TaskConfig:
    name: str = MISSING
    prefix: Optional[str] = None
    options: Dict[str, Any] = field(default_factory=dict)


@dataclass
class DataConfig:
    source: str = "default"
    path: Optional[str] = None
    hub: Optional[str] = None
    limit: Optional[int] = None
    eval_limit: Optional[int] = None
    eval_fraction: float = 0.2
    batch_size: int = 16
    eval_batch_size: Optional[int] = None
    num_workers: int = 0
    image_size: Optional[int] = None
    max_length: Optional[int] = None
    truncation: bool = True
    sample_rate: int = 16000
    options: Dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainerConfig:
    epochs: float = 3.0
    max_steps: Optional[int] = None
    optimizer: str = "adamw"
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup_steps: int = 0
    scheduler: str = "linear"
    grad_clip: Optional[float] = 1.0
    precision: str = "fp32"
    eval: bool = True
    log_every: int = 10
    threads: Optional[int] = None
    #: write a resumable checkpoint every N optimizer steps and at the end (0: only on SIGINT/SIGTERM)
    checkpoint_every: int = 0
    #: how many good checkpoints to keep in RUN_DIR/checkpoints
    keep_checkpoints: int = 2


@dataclass
class InferConfig:
    inputs: Optional[str] = None
    top_k: int = 3
    max_new_tokens: int = 20
    do_sample: bool = False
    #: auto (chosen per machine, garden.backends.plans), fp32, bf16, fp16 or int8-dynamic, each
    #: optionally +compile (torch.compile)
    precision: str = "auto"
    #: a quantised plan is kept only if its top-1 agrees with fp32's on this share of the first batches
    min_agreement: float = 0.99
    #: how many of the run's first batches check a quantised plan against fp32 (0: trust it unchecked)
    check_batches: int = 2
    #: auto compiles only runs of at least this many batches (the warm-up takes tens of seconds)
    compile_min_batches: int = 100


@dataclass
class WeightsConfig:
    source: str = "auto"
    allow_pickle: bool = False


@dataclass
class IPUConfig:
    layers_per_ipu: List[int] = field(default_factory=lambda: [-1])
    ipus_per_replica: Optional[int] = None
    inference_layers_per_ipu: Optional[List[int]] = None
    inference_ipus_per_replica: Optional[int] = None
    matmul_proportion: Any = 0.2
    replication_factor: int = 1
    gradient_accumulation_steps: int = 1
    device_iterations: int = 1
    embedding_serialization_factor: int = 1
    recompute_checkpoint_every_layer: bool = False
    executable_cache_dir: str = ""
    enable_half_partials: bool = True
    optimizer_state_offchip: bool = False
    replicated_tensor_sharding: bool = False
    auto_loss_scaling: bool = False
    #: garden's own: the fp16 loss scaling factor handed to poptorch's optimizer (optimum's
    #: IPUTrainingArguments.loss_scaling); unset: poptorch's default, 1
    loss_scaling: Optional[float] = None
    config_file: Optional[str] = None
    cost: str = "flops"
    memory_budget: Optional[str] = None
    micro_batches: int = 4
    schedule: str = "1F1B"


@dataclass
class ResumeConfig:
    """``resume=RUN_DIR`` (short for ``resume.run=RUN_DIR``) continues a stopped run in its folder."""

    #: ``true`` (the latest unfinished run of this model and task under outputs/, or the one in
    #: hydra.run.dir when it is given) or RUN_DIR
    run: Optional[str] = None
    #: settings that may differ from the checkpoint's although they change the result, e.g.
    #: ``[trainer.max_steps]`` or ``[data.*]``; any other difference is refused
    allow_changes: List[str] = field(default_factory=list)


@dataclass
class RunConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    task: TaskConfig = field(default_factory=TaskConfig)
    mode: str = "train"
    backend: str = "auto"
    seed: int = 0
    weights: WeightsConfig = field(default_factory=WeightsConfig)
    data: DataConfig = field(default_factory=DataConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    infer: InferConfig = field(default_factory=InferConfig)
    ipu: IPUConfig = field(default_factory=IPUConfig)
    resume: ResumeConfig = field(default_factory=ResumeConfig)


MODES = ("train", "infer", "eval")
BACKENDS = ("auto", "local", "pipeline", "ipu", "onnxruntime", "openvino")


def unique_suffix() -> str:
    """Six hex digits drawn once per process, the end of a new run's default folder name
    (``outputs/DATE/HH-MM-SS-xxxxxx``: ``${garden_unique:}`` in ``conf/config.yaml``).

    Random rather than the pid, which repeats across the nodes of a job array and across
    containers (where every job may be pid 1). Two runs started in the same second on one file
    system get the same folder about once in 8 million pairs, and then the second one stops at
    the first one's lock (``garden.runs.rundir``) instead of mixing their files.
    """
    global _UNIQUE
    if _UNIQUE is None:
        import secrets

        _UNIQUE = secrets.token_hex(3)
    return _UNIQUE


_UNIQUE: str | None = None


def register() -> None:
    """Put the schemas in Hydra's ConfigStore, garden's search path among Hydra's plugins and
    the ``garden_unique`` resolver (a new run's folder name) in OmegaConf."""
    from hydra.core.config_search_path import ConfigSearchPath
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins
    from hydra.plugins.search_path_plugin import SearchPathPlugin

    from omegaconf import OmegaConf

    ConfigStore.instance().store(name="garden_schema", node=RunConfig)
    OmegaConf.register_new_resolver("garden_unique", unique_suffix, replace=True)

    class GardenSearchPath(SearchPathPlugin):
        """Appends each loaded plugin's config directory after garden's own."""

        def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
            for directory in discover().config_dirs:
                search_path.append(provider="garden-plugin", path=directory)

    plugins = Plugins.instance()
    if not any(getattr(p, "__name__", "") == "GardenSearchPath" for p in plugins.class_name_to_class.values()):
        plugins.register(GardenSearchPath)


SHORTHANDS = {"weights": "weights.source", "resume": "resume.run"}


def sugar(overrides: list[str]) -> list[str]:
    """Accept ``weights=SOURCE`` as short for ``weights.source=SOURCE`` and ``resume=RUN_DIR``
    for ``resume.run=RUN_DIR``."""
    out = []
    for o in overrides:
        key, sep, value = o.partition("=")
        short = key.lstrip("+~")
        out.append(f"{SHORTHANDS[short]}={value}" if sep and short in SHORTHANDS else o)
    return out


def choices(overrides: list[str]) -> dict[str, str]:
    """The plain ``key=value`` choices on a command line (``model``, ``task``, ...)."""
    found = {}
    for o in overrides:
        key, sep, value = o.partition("=")
        if sep and not key.startswith(("+", "~", "hydra")):
            found[key] = value
    return found


def validate_choices(overrides: list[str]) -> None:
    """Check model, task, mode and backend before Hydra sees them, for one-line errors."""
    picked = choices(overrides)
    if "model" not in picked:
        raise ConfigError("no model chosen; add model=NAME (python -m garden list shows them)")
    entry = registry.get(picked["model"])
    if "task" not in picked:
        raise ConfigError(
            f"no task chosen for model '{entry.name}'; add task=NAME, one of: {', '.join(entry.tasks)}"
        )
    registry.check_task(entry, picked["task"])
    for key, allowed in (("mode", MODES), ("backend", BACKENDS)):
        if key in picked and picked[key] not in allowed:
            raise ConfigError(f"{key}={picked[key]} is not one of: {', '.join(allowed)}")


def explain(err: Exception) -> str:
    """Hydra's and OmegaConf's multi-line reports, as one line that names the key."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    head = lines[0] if lines else type(err).__name__
    cause = err.__cause__ or err.__context__
    if head.startswith("Error merging override") and cause is not None:
        override = head.removeprefix("Error merging override").strip()
        detail = str(cause).strip().splitlines()[0]
        return f"bad value {override}: {detail}"
    if head.startswith("Could not override"):
        key = head.split("'")[1] if "'" in head else head
        return f"unknown key '{key}' (Hydra: {head}); check its spelling in the config"
    if "Could not find" in head:
        options = [ln for ln in lines[1:] if not ln.startswith(("Available", "Config search", "provider="))]
        return f"{head.split(':', 1)[-1].strip()}" + (f"; available: {', '.join(options)}" if options else "")
    key = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("full_key:")), None)
    return f"{key}: {head}" if key and key not in head else head


def compose(overrides: list[str]):
    """Compose the run config for ``overrides`` (a list of Hydra overrides), validated.

    >>> cfg = compose(["model=vit", "task=classify", "preset=smoke"])   # doctest: +SKIP
    >>> cfg.trainer.max_steps                                           # doctest: +SKIP
    20
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    overrides = sugar(list(overrides))
    validate_choices(overrides)
    register()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="garden.conf", version_base=None):
            cfg = hydra_compose(config_name="config", overrides=overrides)
    except Exception as err:  # Hydra and OmegaConf raise many types; all are bad config
        raise ConfigError(explain(err)) from None
    finally:
        GlobalHydra.instance().clear()
    return cfg
