"""Hydra composition: the core ``conf/`` plus every plugin's config directory.

The schemas below are the structured configs behind the YAML: a wrong key or a wrongly typed
value fails at compose time, and :func:`compose` turns Hydra's report into one line naming the
key. Plugins' config directories are appended to Hydra's search path by a ``SearchPathPlugin``
registered here (Hydra's own ``hydra_plugins`` scan misses editable installs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from omegaconf import MISSING

from garden import registry
from garden.compat import strip_prefix
from garden.errors import ConfigError
from garden.plugins import discover

CORE_CONFIG = "pkg://garden.conf"


MODES = ("train", "infer", "eval")
BACKENDS = ("auto", "local", "pipeline", "ipu", "onnxruntime", "openvino")


def number(default: Any, *, at_least: float | None = None, above: float | None = None,
           below: float | None = None, means: str = "") -> Any:
    """A schema field whose value must lie in a range (``None`` stays allowed where the default
    is ``None``); :func:`check_values` enforces it after composition, so ``data.batch_size=0``
    stops with one line naming the key instead of a torch traceback several layers down."""
    bounds = {k: v for k, v in (("at_least", at_least), ("above", above), ("below", below)) if v is not None}
    return field(default=default, metadata={"bounds": bounds, "means": means})


def one_of(default: str, *allowed: str) -> Any:
    """A schema field that takes one of ``allowed`` words."""
    return field(default=default, metadata={"one_of": allowed})


@dataclass
class ModelConfig:
    name: str = MISSING
    variant: str = "default"
    options: Dict[str, Any] = field(default_factory=dict)
    #: the module lists of repeated layers that stages cut at (``model=hf:...``; comma-separated),
    #: when garden's choice is not the one wanted
    blocks: Optional[str] = None
    #: the branch, tag or commit of an ``hf:`` model (``model=hf:org/name@REV`` sets it); the run
    #: records the full commit it resolved to
    revision: Optional[str] = None


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
    limit: Optional[int] = number(None, at_least=1, means="training examples kept; null keeps all")
    eval_limit: Optional[int] = number(None, at_least=1, means="held-out examples kept; null keeps all")
    eval_fraction: float = number(0.2, above=0, below=1, means="the share of examples held out")
    batch_size: int = number(16, at_least=1, means="examples per training step")
    eval_batch_size: Optional[int] = number(None, at_least=1, means="examples per evaluation batch")
    num_workers: int = number(0, at_least=0, means="data-loading processes; 0 loads in the run's own")
    image_size: Optional[int] = number(None, at_least=1, means="pixels per side")
    max_length: Optional[int] = number(None, at_least=1, means="tokens per example")
    truncation: bool = True
    sample_rate: int = number(16000, at_least=1, means="audio samples per second")
    #: an image, audio file or text line that cannot be read stops the run, naming it; true skips
    #: such inputs with one warning that counts them (training and inference alike)
    skip_unreadable: bool = False
    options: Dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainerConfig:
    epochs: float = number(3.0, above=0, means="passes over the training data")
    max_steps: Optional[int] = number(None, at_least=0, means="optimizer steps, 0 saves the initial model; null follows trainer.epochs")
    optimizer: str = one_of("adamw", "adamw", "sgd")
    lr: float = number(5e-4, above=0, means="the learning rate")
    weight_decay: float = number(0.01, at_least=0, means="decoupled weight decay")
    warmup_steps: int = number(0, at_least=0, means="steps of linear warm-up")
    scheduler: str = one_of("linear", "linear", "constant")
    grad_clip: Optional[float] = number(1.0, above=0, means="the gradient norm clipped to; null clips nothing")
    precision: str = one_of("fp32", "fp32", "bf16", "fp16")
    eval: bool = True
    log_every: int = number(10, at_least=1, means="steps between loss updates")
    threads: Optional[int] = number(None, at_least=1, means="torch CPU threads; null lets torch choose")
    #: write a resumable checkpoint every N optimizer steps and at the end (0: only on SIGINT/SIGTERM)
    checkpoint_every: int = number(0, at_least=0, means="steps between checkpoints; 0 only on a stop signal")
    #: how many good checkpoints to keep in RUN_DIR/checkpoints
    keep_checkpoints: int = number(2, at_least=1, means="checkpoints kept")


@dataclass
class InferConfig:
    inputs: Optional[str] = None
    top_k: int = number(3, at_least=1, means="predictions shown per input")
    max_new_tokens: int = number(20, at_least=1, means="tokens generated per input")
    do_sample: bool = False
    #: auto (chosen per machine, garden.backends.plans), fp32, bf16, fp16 or int8-dynamic, each
    #: optionally +compile (torch.compile)
    precision: str = "auto"
    #: a quantised plan is kept only if its top-1 agrees with fp32's on this share of the first batches
    min_agreement: float = number(0.99, at_least=0, means="share of top-1 agreement a quantised plan must keep")
    #: how many of the run's first batches check a quantised plan against fp32 (0: trust it unchecked)
    check_batches: int = number(2, at_least=0, means="batches checked against fp32")
    #: auto compiles only runs of at least this many batches (the warm-up takes tens of seconds)
    compile_min_batches: int = number(100, at_least=1, means="batches a run needs before auto compiles")


@dataclass
class WeightsConfig:
    source: str = "auto"
    allow_pickle: bool = False


@dataclass
class IPUConfig:
    layers_per_ipu: List[int] = field(default_factory=lambda: [-1])
    ipus_per_replica: Optional[int] = number(None, at_least=1, means="pipeline stages per replica")
    inference_layers_per_ipu: Optional[List[int]] = None
    inference_ipus_per_replica: Optional[int] = number(None, at_least=1, means="pipeline stages for inference")
    matmul_proportion: Any = 0.2
    replication_factor: int = number(1, at_least=1, means="data-parallel replicas")
    gradient_accumulation_steps: int = number(1, at_least=1, means="micro-steps per optimizer step")
    device_iterations: int = number(1, at_least=1, means="batches per device call")
    embedding_serialization_factor: int = number(1, at_least=1, means="pieces the embedding is split into")
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
    cost: str = one_of("flops", "flops", "params", "measured")
    memory_budget: Optional[str] = None
    micro_batches: int = number(4, at_least=1, means="micro-batches per pipeline step")
    schedule: str = one_of("1F1B", "1F1B", "GPipe")


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
    mode: str = one_of("train", *MODES)
    backend: str = one_of("auto", *BACKENDS)
    seed: int = number(0, at_least=0, means="the random seed")
    weights: WeightsConfig = field(default_factory=WeightsConfig)
    data: DataConfig = field(default_factory=DataConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    infer: InferConfig = field(default_factory=InferConfig)
    ipu: IPUConfig = field(default_factory=IPUConfig)
    resume: ResumeConfig = field(default_factory=ResumeConfig)
    #: ``tensorboard``: also write the history as TensorBoard event files (RUN_DIR/tensorboard)
    logger: str = "none"


def check_values(cfg: Any, schema: type = RunConfig, prefix: str = "") -> None:
    """Raise a one-line :class:`ConfigError` for the first value outside its schema field's range
    or choices (:func:`number`, :func:`one_of`), naming the key and a value that would do."""
    for f in dataclasses.fields(schema):
        key, value = f"{prefix}{f.name}", getattr(cfg, f.name, None)
        if isinstance(f.default_factory, type) and dataclasses.is_dataclass(f.default_factory):
            if value is not None:
                check_values(value, f.default_factory, f"{key}.")
            continue
        allowed = f.metadata.get("one_of")
        if allowed and value not in allowed:
            raise ConfigError(f"{key}={value} is not one of: {', '.join(allowed)}")
        bounds = f.metadata.get("bounds")
        if not bounds or value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        low, above, below = bounds.get("at_least"), bounds.get("above"), bounds.get("below")
        if (low is None or value >= low) and (above is None or value > above) and (below is None or value < below):
            continue
        wanted = " and ".join(filter(None, [
            f"of at least {low}" if low is not None else "", f"above {above}" if above is not None else "",
            f"below {below}" if below is not None else ""]))
        kind = "a whole number" if "int" in str(f.type) else "a number"
        null = " (or null)" if f.default is None else ""
        raise ConfigError(f"{key}={value} is out of range ({f.metadata['means']}); give {kind} {wanted}{null}, "
                          f"e.g. {key}={f.default if f.default is not None else low if low is not None else 1}")




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
#: ``model=hf:<repo-id>[@<revision>]`` (or ``hf:<folder>``): any transformers model, no plugin
HF = "hf:"


def sugar(overrides: list[str]) -> list[str]:
    """Accept ``weights=SOURCE`` as short for ``weights.source=SOURCE``, ``resume=RUN_DIR``
    for ``resume.run=RUN_DIR``, and ``model=hf:ID`` for ``model=hf model.name=hf:ID`` (the
    core's ``model/hf.yaml`` with the Hub id as the model's name; ``@REV`` as ``model.revision=REV``)."""
    out = []
    for o in overrides:
        key, sep, value = o.partition("=")
        short = key.lstrip("+~")
        if sep and short == "model" and value.strip("'\"").startswith(HF):
            name, at, revision = value.strip("'\"").partition("@")
            out += ["model=hf", f"model.name={name}", *([f"model.revision={revision}"] if at else [])]
        else:
            out.append(f"{SHORTHANDS[short]}={value}" if sep and short in SHORTHANDS else o)
    return out


def model_name(picked: dict[str, str]) -> str:
    """The model a command line names (``picked``: its :func:`choices`): ``model=vit`` gives
    ``vit``, ``model=hf:org/name`` (``model=hf model.name=hf:org/name``) gives ``hf:org/name``."""
    name = picked["model"]
    if name == "hf":
        return picked.get("model.name", "").strip("'\"")
    return name


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
    name = model_name(picked)
    if name.startswith(HF):  # the architecture, and so its tasks, is known once its config is read
        if "task" not in picked:
            raise ConfigError(f"no task chosen for model '{name}'; add task=NAME (show {name} lists its tasks)")
    elif picked["model"] == "hf":
        raise ConfigError("model=hf needs a Hub repo or a folder: model=hf:org/name[@revision] or model=hf:./folder")
    else:
        entry = registry.get(name)
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
        override = strip_prefix(head, "Error merging override").strip()
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
    check_values(cfg)
    return cfg
