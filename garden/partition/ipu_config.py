"""Optimum Graphcore's ``ipu_config.json``, read and written without optimum or poptorch.

Field names, defaults and fallbacks follow ``optimum.graphcore.IPUConfig`` (its ``__init__``
and ``_validate_ipu_config``), so a Hub file such as ``Graphcore/bert-base-ipu``'s reads as-is
and what :func:`write_ipu_config` writes loads with ``IPUConfig.from_pretrained(folder)``::

    >>> cfg = IPUConfig(layers_per_ipu=[0, 4, 4, 4], matmul_proportion=[0.1, 0.15, 0.15, 0.15])
    >>> training_layout(cfg), inference_layout(cfg)
    (([0, 4, 4, 4], 4), ([0, 4, 4, 4], 4))

Fields garden does not use (:data:`IGNORED_FIELDS`, ``optimum_version``, ...) are kept in
``extra`` and written back unchanged, so a read-modify-write loses nothing; :func:`ignored_fields`
names those a config sets, for the one warning per field a run prints. A file with any other
field (``layers_per_ipuu``) is refused, naming it, rather than have the misspelt setting ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from garden.errors import ConfigError
from garden.files import write_atomic

IPU_CONFIG_NAME = "ipu_config.json"
OUTPUT_MODES = ("all", "sum", "final", "default")


@dataclass
class IPUConfig:
    """The optimum ``IPUConfig`` fields garden reads; ``ipus_per_replica`` defaults to the list's length.

    ``inference_*`` fields left ``None`` fall back to the training values, as in optimum.
    ``embedding_serialization_factor`` is ``None`` only when ``serialized_embedding_splits_per_ipu``
    (kept in ``extra``) places the embedding instead; optimum refuses both at once.
    ``executable_cache_dir`` is ``""`` for no cache, optimum's default.
    """

    layers_per_ipu: list[int] = field(default_factory=lambda: [-1])
    ipus_per_replica: int | None = None
    inference_layers_per_ipu: list[int] | None = None
    inference_ipus_per_replica: int | None = None
    matmul_proportion: float | list[float] = 0.2
    inference_matmul_proportion: float | list[float] | None = None
    replication_factor: int = 1
    inference_replication_factor: int = 1
    gradient_accumulation_steps: int = 1
    device_iterations: int = 1
    inference_device_iterations: int = 1
    embedding_serialization_factor: int | None = 1
    recompute_checkpoint_every_layer: bool = False
    enable_half_partials: bool = True
    executable_cache_dir: str = ""
    output_mode: str = "final"
    seed: int | None = None
    optimizer_state_offchip: bool = False
    replicated_tensor_sharding: bool = False
    auto_loss_scaling: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.ipus_per_replica is None:
            self.ipus_per_replica = len(self.layers_per_ipu)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object optimum reads: every field by its optimum name, plus ``extra``."""
        known = {name: getattr(self, name) for name in _FIELD_NAMES}
        return {**self.extra, **known}


#: optimum-graphcore ``IPUConfig`` fields that backend=ipu does not apply, and why (docs/ipu.md
#: lists these with the applied ones). A run warns once about each one its config sets.
IGNORED_FIELDS = {
    "inference_embedding_serialization_factor": "one model serves training and inference, serialised by "
                                                "embedding_serialization_factor",
    "serialized_embedding_splits_per_ipu": "garden places the word embedding with its block; use "
                                           "embedding_serialization_factor",
    "inference_serialized_embedding_splits_per_ipu": "as serialized_embedding_splits_per_ipu",
    "projection_serialization_factor": "optimum's SplitProjection/SerializedLinear for untied heads is not "
                                       "implemented; a tied LM head follows embedding_serialization_factor",
    "inference_projection_serialization_factor": "as projection_serialization_factor",
    "serialized_projection_splits_per_ipu": "as projection_serialization_factor",
    "inference_serialized_projection_splits_per_ipu": "as projection_serialization_factor",
    "explicit_ir_inference": "an experimental PopART option (opts._Popart) garden does not set",
    "parallelize_kwargs": "keyword arguments of optimum's per-model parallelize(); garden places blocks "
                          "from its own stage plan",
    "inference_parallelize_kwargs": "as parallelize_kwargs",
    "execute_encoder_on_cpu_for_generation": "optimum itself raises NotImplementedError for it",
    "sharded_execution_for_inference": "deprecated in optimum: inference always runs sharded",
    "enable_half_first_order_momentum": "deprecated in optimum",
}

#: what optimum's ``to_json_file`` records beside the fields: the versions that wrote the file
VERSION_FIELDS = ("optimum_version", "transformers_version")

#: what an ignored field holds when it asks for nothing (no warning then)
_NOTHING = (None, False, 0, 1, {}, [])


def ignored_fields(cfg: IPUConfig) -> dict[str, str]:
    """The :data:`IGNORED_FIELDS` ``cfg`` sets to something, with why each is ignored."""
    return {name: why for name, why in IGNORED_FIELDS.items()
            if name in cfg.extra and not any(cfg.extra[name] == nothing and type(cfg.extra[name]) is type(nothing)
                                             for nothing in _NOTHING)}


def training_layout(cfg: IPUConfig) -> tuple[list[int], int]:
    """``(layers_per_ipu, ipus_per_replica)`` for training, as optimum resolves them.

    A one-IPU replica holds every layer whatever the list says: ``([-1], 1)``.
    """
    return _one_ipu_holds_everything(list(cfg.layers_per_ipu), cfg.ipus_per_replica)


def inference_layout(cfg: IPUConfig) -> tuple[list[int], int]:
    """``(layers_per_ipu, ipus_per_replica)`` for inference, with optimum's fallbacks.

    An unset ``inference_layers_per_ipu`` is the training list; an unset
    ``inference_ipus_per_replica`` is the length of the inference list, except that a ``[-1]``
    list under an explicit ``ipus_per_replica`` keeps that count: ``layers_per_ipu=[-1],
    ipus_per_replica=4`` gives ``([-1], 4)`` for inference too.
    """
    layers = list(cfg.inference_layers_per_ipu or cfg.layers_per_ipu)
    ipus = cfg.inference_ipus_per_replica
    if not ipus:
        ipus = cfg.ipus_per_replica
        if cfg.ipus_per_replica == len(cfg.layers_per_ipu) or layers != [-1]:
            ipus = len(layers)
    return _one_ipu_holds_everything(layers, ipus)


def ipu_config_from_dict(data: dict[str, Any], source: str = "ipu_config") -> IPUConfig:
    """Validate an optimum-style mapping and build the config; errors name ``source`` and the field.

    ``ipu_config_from_dict({"layers_per_ipu": [6, 6]})`` gives ``ipus_per_replica == 2``.
    """
    for name, (expected, accepts) in _FIELD_TYPES.items():
        if name in data and not accepts(data[name]):
            raise ConfigError(f"{source}: {name} must be {expected}, got {data[name]!r}")
    known = {name: data[name] for name in _FIELD_NAMES if name in data}
    if "embedding_serialization_factor" not in data and data.get("serialized_embedding_splits_per_ipu"):
        known["embedding_serialization_factor"] = None
    cfg = IPUConfig(**known, extra={k: v for k, v in data.items() if k not in _FIELD_NAMES})
    _check_consistent(cfg, source)
    return cfg


def read_ipu_config(path: str | os.PathLike) -> IPUConfig:
    """Read ``ipu_config.json`` (or the folder holding it), e.g. a ``Graphcore/bert-base-ipu`` download."""
    file = Path(path)
    if file.is_dir():
        file = file / IPU_CONFIG_NAME
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"no IPU config at {file}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read IPU config {file}: {err}") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{file} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file} must hold a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_FIELD_NAMES) - set(IGNORED_FIELDS) - set(VERSION_FIELDS))
    if unknown:  # a misspelt field would otherwise be kept in extra and silently do nothing
        import difflib

        close = difflib.get_close_matches(unknown[0], [*_FIELD_NAMES, *IGNORED_FIELDS], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        more = f" (and {', '.join(unknown[1:])})" if unknown[1:] else ""
        raise ConfigError(f"{file}: '{unknown[0]}'{more} is not a field of optimum-graphcore's IPUConfig{hint}; "
                          "fix or remove it (docs/ipu.md lists the fields garden applies and those it ignores)")
    return ipu_config_from_dict(data, source=str(file))


def write_ipu_config(cfg: IPUConfig, path: str | os.PathLike) -> Path:
    """Write ``cfg`` atomically and return the file; ``path`` is a ``.json`` file or a folder.

    Written like optimum's ``to_json_file`` (sorted keys, two-space indent), through a
    temporary file and ``os.replace`` so a reader never sees half a file. The config is
    validated first, so garden never writes a file optimum would refuse.
    """
    file = Path(path)
    if file.suffix != ".json":
        file = file / IPU_CONFIG_NAME
    data = cfg.to_dict()
    ipu_config_from_dict(data, source=str(file))
    file.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(file, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return file


def _one_ipu_holds_everything(layers: list[int], ipus: int) -> tuple[list[int], int]:
    """Optimum ignores the list on a one-IPU replica and puts every layer on IPU 0."""
    return ([-1], 1) if ipus == 1 else (layers, ipus)


def _check_consistent(cfg: IPUConfig, source: str) -> None:
    """The cross-field checks of optimum's ``_validate_ipu_config``, for training and inference."""
    if isinstance(cfg.matmul_proportion, list) and len(cfg.matmul_proportion) != cfg.ipus_per_replica:
        raise ConfigError(
            f"{source}: matmul_proportion={cfg.matmul_proportion} needs one entry per IPU, "
            f"but ipus_per_replica={cfg.ipus_per_replica}"
        )
    inference_ipus = inference_layout(cfg)[1]
    if isinstance(cfg.inference_matmul_proportion, list) and len(cfg.inference_matmul_proportion) != inference_ipus:
        raise ConfigError(
            f"{source}: inference_matmul_proportion={cfg.inference_matmul_proportion} needs one entry per IPU, "
            f"but inference_ipus_per_replica={inference_ipus}"
        )
    for prefix, layers, ipus in (
        ("", cfg.layers_per_ipu, cfg.ipus_per_replica),
        ("inference_", cfg.inference_layers_per_ipu or cfg.layers_per_ipu, inference_ipus),
    ):
        if -1 not in layers and len(layers) != ipus:
            raise ConfigError(
                f"{source}: {prefix}layers_per_ipu={layers} has {len(layers)} entries "
                f"but {prefix}ipus_per_replica={ipus}; give one entry per IPU or use -1"
            )
    if cfg.embedding_serialization_factor and cfg.extra.get("serialized_embedding_splits_per_ipu"):
        raise ConfigError(
            f"{source}: set only one of embedding_serialization_factor and serialized_embedding_splits_per_ipu"
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int_at_least(floor: int) -> tuple[str, Callable[[Any], bool]]:
    return f"an integer >= {floor}", lambda v: _is_int(v) and v >= floor


def _optional(spec: tuple[str, Callable[[Any], bool]]) -> tuple[str, Callable[[Any], bool]]:
    expected, accepts = spec
    return f"{expected} or null", lambda v: v is None or accepts(v)


def _of_type(kind: type) -> tuple[str, Callable[[Any], bool]]:
    return {bool: "true or false", str: "a string"}[kind], lambda v: isinstance(v, kind)


_LAYERS = (
    "a non-empty list of layer counts (integers >= -1)",
    lambda v: isinstance(v, list) and bool(v) and all(_is_int(n) and n >= -1 for n in v),
)
_PROPORTION = (
    "a number >= 0 or a non-empty list of them",
    lambda v: (_is_number(v) and v >= 0)
    or (isinstance(v, list) and bool(v) and all(_is_number(p) and p >= 0 for p in v)),
)
_FIELD_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "layers_per_ipu": _LAYERS,
    "ipus_per_replica": _optional(_int_at_least(1)),
    "inference_layers_per_ipu": _optional(_LAYERS),
    "inference_ipus_per_replica": _optional(_int_at_least(1)),
    "matmul_proportion": _PROPORTION,
    "inference_matmul_proportion": _optional(_PROPORTION),
    "replication_factor": _int_at_least(1),
    "inference_replication_factor": _int_at_least(1),
    "gradient_accumulation_steps": _int_at_least(1),
    "device_iterations": _int_at_least(1),
    "inference_device_iterations": _int_at_least(1),
    "embedding_serialization_factor": _optional(_int_at_least(1)),
    "recompute_checkpoint_every_layer": _of_type(bool),
    "enable_half_partials": _of_type(bool),
    "executable_cache_dir": _of_type(str),
    "output_mode": (f"one of {OUTPUT_MODES}", lambda v: v in OUTPUT_MODES),
    "seed": _optional(("an integer", _is_int)),
    "optimizer_state_offchip": _of_type(bool),
    "replicated_tensor_sharding": _of_type(bool),
    "auto_loss_scaling": _of_type(bool),
}
_FIELD_NAMES = tuple(f.name for f in fields(IPUConfig) if f.name != "extra")
